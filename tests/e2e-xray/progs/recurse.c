/*
 * recurse.c - a 5000-deep recursion (within xray-rt's default 16384-frame shadow stack),
 * then a few calls at depth 1 that must be recorded as such.
 */
#include <stdio.h>
#include "xe2e.h"

XE2E_SINK_DEFINE;

FN long rc_bottom(long n)
{
	xe2e_sink += n;
	return n;
}

FN long rc_descend(long n)
{
	long r;

	if (n == 0)
		return rc_bottom(n);
	r = rc_descend(n - 1) + 1; /* not a tail call */
	xe2e_sink += r;
	return r;
}

FN long rc_after(long x)
{
	xe2e_sink += x;
	return x;
}

int main(void)
{
	long r = rc_descend(4999);

	for (int i = 0; i < 3; i++)
		r += rc_after(i);
	printf("recurse: %ld\n", r);
	return 0;
}
