/*
 * filtercxx.cc - the record-time filters on C++ names (tests/e2e/run FilterCases): uftrace 0.13
 * matches its patterns against the names its "simple" demangler gives (no parameters,
 * template arguments or return type; the anonymous namespace as _GLOBAL__N_1), so patterns
 * such as "ns::ns1::foo::bar" or "^ns::ns2" must pick the same functions here. It keeps what
 * new returns in a volatile global, so that no optimisation drops the call: it must link
 * libstdc++, whose __cxa_demangle libmcount uses.
 */
#include "e2e.h"

E2E_SINK_DEFINE;
int *volatile kept;

namespace ns {
namespace ns1 {
struct foo {
	FN foo() { e2e_sink++; }
	FN int bar(int x) const;
	FN static void s(int x);
};
FN int foo::bar(int x) const
{
	s(x);
	return x + 1;
}
FN void foo::s(int x)
{
	e2e_sink += x;
}
} // namespace ns1
namespace ns2 {
struct foo {
	FN int bar(int x)
	{
		ns1::foo::s(x);
		return x * 2;
	}
};
} // namespace ns2
} // namespace ns

namespace {
FN int anon(int x)
{
	return x * 2;
}
} // namespace

template <typename T> FN T tmpl(T x)
{
	return anon((int)x) + 1;
}

/* a template operator with a return type: demangled "ns::box<int> ns::operator+<int, long>(ns::
 * box<int> const&, long)", simply "ns::operator+" (std::string's operator+ is one) */
namespace ns {
template <typename T> struct box {
	T v;
};
template <typename T, typename U> FN box<T> operator+(const box<T> &a, U b)
{
	return box<T>{ a.v + (T)anon((int)b) };
}
} // namespace ns

int main()
{
	ns::ns1::foo f;
	ns::ns2::foo g;

	kept = new int(1);
	e2e_sink += f.bar(*kept) + g.bar(2) + tmpl<int>(3) + tmpl<long>(4);
	e2e_sink += (ns::box<int>{ 5 } + 6L).v;
	delete kept;
	return e2e_sink > 0 ? 0 : 1;
}
