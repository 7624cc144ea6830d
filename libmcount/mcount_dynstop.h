/*
 * mcount_dynstop: the program's other threads held still while -P writes code (see
 * mcount_dynstop.c). Slow path only.
 */
#ifndef MCOUNT_DYNSTOP_H
#define MCOUNT_DYNSTOP_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

#define MC_STOP_MAX 4000 /* threads one stop holds */

struct mc_stop {
	struct mc_stop_page *page; /* shared with the stopping process */
	int pid;		   /* that process */
	size_t n;		   /* threads stopped */
	const uintptr_t *ip;	   /* the n instruction pointers where they stopped */
	uintptr_t *to;		   /* where each resumes instead (set by the caller), or 0 */
};

/* Stop every thread of this process but the caller and the runtime's own. 0, or -1 with the
 * reason in WHY (nothing stopped then). Between this and mc_stop_resume the caller must not
 * take a lock another thread may hold (no malloc, stdio, dl_iterate_phdr). */
int mc_stop_others(struct mc_stop *s, char *why, size_t len);
/* Let them go on. */
void mc_stop_resume(struct mc_stop *s);

#pragma GCC visibility pop

#endif
