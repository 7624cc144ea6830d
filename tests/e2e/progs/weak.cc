/*
 * weak.cc - C++ functions the compiler emits as weak symbols: a constructor, inline members
 * (defined in the class) and template instances, next to ordinary global functions.
 *
 * The runtime's .sym file must give them a type uftrace 0.13 reads ('w', as uftrace writes
 * it): a line it does not read is dropped and the function is either missing from the trace
 * or named after the symbol before it. 4 rounds of wk::round -> wk::Acc::Acc, wk::Acc::add x2,
 * wk::twice<int>, wk::twice<long>, wk::Acc::get, wk::plain.
 */
#include <cstdio>
#include "e2e.h"

E2E_SINK_DEFINE;

namespace wk {

struct Acc {
	long n;
	FN Acc(long start) : n(start)
	{
		e2e_sink++;
	}
	FN void add(long by)
	{
		n += by;
		e2e_sink += by;
	}
	FN long get() const
	{
		e2e_sink++;
		return n;
	}
};

template <typename T> FN T twice(T x)
{
	e2e_sink++;
	return x + x;
}

FN long plain(long x)
{
	e2e_sink += x;
	return x;
}

FN long round(int i)
{
	Acc a(i);

	a.add(1);
	a.add(2);
	return twice<int>(i) + twice<long>(a.get()) + plain(i);
}

} // namespace wk

int main()
{
	long sum = 0;

	for (int i = 0; i < 4; i++)
		sum += wk::round(i);
	std::printf("weak: sum=%ld\n", sum);
	return 0;
}
