/*
 * srcline.c - the program of tests/e2e/run's SrclineCases (--srcline, replay's -L): its own
 * functions in this file, and calls into a library of its own built from srcline_lib.c with
 * the same flavour and -g, so that the source locations of two modules are recorded and
 * uftrace replay -L can tell the files apart.
 */
#include <stdio.h>
#include "e2e.h"

E2E_SINK_DEFINE;

int sl_lib_a(int n);

FN void sl_leaf(int x)
{
	e2e_sink += x;
}

FN void sl_main_work(int x)
{
	sl_leaf(x);
	e2e_sink += sl_lib_a(x);
}

int main(void)
{
	sl_main_work(1);
	sl_leaf(2);
	printf("srcline: %d\n", e2e_sink != 0);
	return 0;
}
