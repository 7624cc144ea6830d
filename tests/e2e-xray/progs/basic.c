/*
 * basic.c - nested calls, recursion, a tail call (a tail sled at -O2) and an argument-logging
 * function (xray_log_args: an EnterWithArgs record and a CallArgument).
 */
#include <stdio.h>
#include "xe2e.h"

XE2E_SINK_DEFINE;

FN long bs_leaf(long x)
{
	xe2e_sink += x;
	return x * 3 + 1;
}

FN long bs_mid(long x)
{
	return bs_leaf(x) + bs_leaf(x + 1);
}

/* becomes `jmp bs_leaf` at -O2: a tail-exit record for bs_tail, then bs_leaf's entry */
FN long bs_tail(long x)
{
	xe2e_sink++;
	return bs_leaf(x * 2);
}

/* the store after the calls keeps clang -O2 from turning one of them into a loop */
FN long bs_fib(long n)
{
	long r = n < 2 ? n : bs_fib(n - 1) + bs_fib(n - 2);

	xe2e_sink += r;
	return r;
}

__attribute__((noinline, used, xray_always_instrument, xray_log_args(1))) long bs_arg(long v)
{
	xe2e_sink += v;
	return v + 1;
}

FN long bs_loop(void)
{
	long s = 0;

	for (long i = 0; i < 100; i++)
		s += bs_mid(i);
	for (long i = 0; i < 50; i++)
		s += bs_tail(i);
	for (long i = 0; i < 7; i++)
		s += bs_arg(i * 10);
	return s + bs_fib(15);
}

int main(void)
{
	printf("basic: %ld\n", bs_loop());
	return 0;
}
