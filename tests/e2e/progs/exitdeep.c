/*
 * exitdeep.c - exit() from 5 traced frames deep; none of them returns.
 *
 * main -> ed_level1 -> ... -> ed_level5 -> exit(0).  An atexit handler (ed_at_exit, registered
 * by main) calls ed_cleanup: traced code that runs during exit(), before the runtime's own
 * destructor.  Output is flushed by exit() as usual.
 */
#include <stdio.h>
#include <stdlib.h>
#include "e2e.h"

E2E_SINK_DEFINE;

FN void ed_cleanup(void)
{
	e2e_sink++;
}

FN void ed_at_exit(void)
{
	ed_cleanup();
}

FN void ed_level5(int n)
{
	printf("exitdeep: exiting from depth %d\n", n);
	exit(0);
}

FN void ed_level4(int n)
{
	ed_level5(n + 1);
	e2e_sink++;
}

FN void ed_level3(int n)
{
	ed_level4(n + 1);
	e2e_sink++;
}

FN void ed_level2(int n)
{
	ed_level3(n + 1);
	e2e_sink++;
}

FN void ed_level1(int n)
{
	ed_level2(n + 1);
	e2e_sink++;
}

int main(void)
{
	atexit(ed_at_exit);
	ed_level1(1);
	return 1; /* never reached */
}
