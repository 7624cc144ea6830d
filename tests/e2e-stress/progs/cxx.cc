// cxx: instrumented C++ frames that throw and catch (stress.c's "except" mode).
#include <stdexcept>
#include <stdint.h>

extern "C" uint64_t n_cxx;
uint64_t n_cxx;

__attribute__((noinline)) static void thrower(int i)
{
	__atomic_fetch_add(&n_cxx, 1, __ATOMIC_RELAXED);
	if (i >= 0)
		throw std::runtime_error("stress");
}

__attribute__((noinline)) static void middle(int i)
{
	__atomic_fetch_add(&n_cxx, 1, __ATOMIC_RELAXED);
	thrower(i);
}

extern "C" __attribute__((noinline)) int catcher(int i)
{
	__atomic_fetch_add(&n_cxx, 1, __ATOMIC_RELAXED);
	try {
		middle(i);
	} catch (const std::exception &) {
		return 1;
	}
	return 0;
}
