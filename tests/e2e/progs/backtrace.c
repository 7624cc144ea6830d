/*
 * backtrace.c - backtrace() deep in a call chain (as uftrace's t123_backtrace). glibc's
 * backtrace walks the stack with libgcc's unwinder, which cannot step through a return
 * address a -pg runtime has hijacked: the runtime puts the real ones back for the walk, and
 * must hijack them again after it, or every frame on the stack returns unseen and loses its
 * exit (the trace then has entries without exits).
 *
 * main -> bt_outer x 2 -> bt_mid -> bt_inner -> bt_walk (backtrace), then bt_after x 2 at
 * each level on the way back: the exits of the frames that were on the stack, and calls
 * made after the walk, are where they belong.
 */
#include <execinfo.h>
#include <stdio.h>
#include "e2e.h"

E2E_SINK_DEFINE;

FN void bt_after(int i)
{
	e2e_sink += i;
}

FN int bt_walk(void)
{
	void *buf[64];
	int n = backtrace(buf, 64);

	e2e_sink += n;
	return n;
}

FN int bt_inner(void)
{
	int n = bt_walk();

	bt_after(3);
	return n;
}

FN int bt_mid(void)
{
	int n = bt_inner();

	bt_after(2);
	return n;
}

FN int bt_outer(void)
{
	int n = bt_mid();

	bt_after(1);
	return n;
}

int main(void)
{
	int ok = 1;

	for (int i = 0; i < 2; i++)
		ok &= bt_outer() >= 5; /* bt_walk, bt_inner, bt_mid, bt_outer, main at least */
	printf("backtrace: %s\n", ok ? "the whole chain walked" : "short walk");
	return 0;
}
