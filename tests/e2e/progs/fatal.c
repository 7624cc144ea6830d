/*
 * fatal.c - the process ends without exit(): fatal <mode> with mode _exit, abort or segv.
 *
 * main -> ft_level1 -> ft_level2 -> ft_die, after 10 x ft_leaf, then _exit(3), abort() or a
 * write through a null pointer (SIGSEGV).  No atexit handler or destructor runs (or, for the
 * signals, only the runtime's own handler), yet the trace must be complete and readable:
 * every count below, none of the four frames returning.  The output line is flushed by hand
 * because stdio is not flushed on these paths.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "e2e.h"

E2E_SINK_DEFINE;

static int *volatile ft_null;

FN void ft_leaf(int i)
{
	e2e_sink += i;
}

FN void ft_die(const char *mode)
{
	for (int i = 0; i < 10; i++)
		ft_leaf(i);
	printf("fatal: %s from depth 3\n", mode);
	fflush(stdout);
	if (strcmp(mode, "_exit") == 0)
		_exit(3);
	if (strcmp(mode, "abort") == 0)
		abort();
	if (strcmp(mode, "segv") == 0)
		*ft_null = 1; /* a real fault: the compiler cannot see that the pointer is null */
	exit(4);
}

FN void ft_level2(const char *mode)
{
	ft_die(mode);
	e2e_sink++; /* never reached */
}

FN void ft_level1(const char *mode)
{
	ft_level2(mode);
	e2e_sink++; /* never reached */
}

int main(int argc, char **argv)
{
	ft_level1(argc > 1 ? argv[1] : "none");
	return 1; /* never reached */
}
