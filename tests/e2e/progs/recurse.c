/*
 * recurse.c - recursion 2000 deep, deeper than the 1024-entry shadow stack.
 *
 * Like uftrace's --max-stack (default 1024), calls made while the shadow stack is full are not
 * recorded at all; calls made after the stack has unwound below the limit again are.  main is
 * stack entry 0, so rc_descend is recorded for levels 1..1023 (1023 entries) and rc_bottom,
 * called at level 2001, is not recorded.  rc_after runs at depth 1 afterwards and must be
 * recorded all 3 times (the runtime must have recovered from the overflow).
 */
#include <stdio.h>
#include "e2e.h"

E2E_SINK_DEFINE;

#define DEPTH 2000

FN void rc_bottom(void)
{
	e2e_sink++;
}

FN long rc_descend(int level)
{
	long r;

	e2e_sink++;
	if (level == DEPTH) {
		rc_bottom();
		return level;
	}
	r = rc_descend(level + 1);
	return r + 1; /* not a tail call */
}

FN void rc_after(int i)
{
	e2e_sink += i;
}

int main(void)
{
	long r = rc_descend(1);

	for (int i = 0; i < 3; i++)
		rc_after(i);
	printf("recurse: depth=%d result=%ld\n", DEPTH, r);
	return 0;
}
