/*
 * basic.c - one thread, plain nested calls, a loop and a recursive fib(15).
 * The baseline case: every hook flavour must record exactly these counts.
 */
#include <stdio.h>
#include "e2e.h"

E2E_SINK_DEFINE;

FN int bs_leaf(int x)
{
	e2e_sink += x;
	return x + 1;
}

FN int bs_mid(int x)
{
	return bs_leaf(x) + bs_leaf(x + 1);
}

FN int bs_loop(int n)
{
	int sum = 0;

	for (int i = 0; i < n; i++)
		sum += bs_mid(i);
	return sum;
}

/* fib(15) makes 2 * fib(16) - 1 = 1973 calls */
FN int bs_fib(int n)
{
	e2e_sink++;
	return n < 2 ? n : bs_fib(n - 1) + bs_fib(n - 2);
}

int main(void)
{
	int a = bs_loop(100);
	int b = bs_fib(15);

	printf("basic: loop=%d fib=%d\n", a, b);
	return 0;
}
