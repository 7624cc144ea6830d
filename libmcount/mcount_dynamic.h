/*
 * mcount_dynamic: dynamic patching, uftrace's -P/-U (FLIGHTREC_PATCH, FLIGHTREC_UNPATCH):
 * at the session start, the patchable nops of the selected functions become calls to
 * libmcount's __fentry__ or mcount, so that a binary built with -fpatchable-function-entry or
 * -mnop-mcount records as a -pg build does, only where asked. See mcount_dynamic.c.
 */
#ifndef MCOUNT_DYNAMIC_H
#define MCOUNT_DYNAMIC_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/* FLIGHTREC_PATCH or FLIGHTREC_UNPATCH is set: the session starts even when the program
 * imports no hook (its functions only have nops) */
int mc_dyn_wanted(void);
/* Read and compile the patterns (rec_frontend.check): 0, or -1 with the reason in why. */
int mc_dyn_check(char *why, size_t len);
/* Patch the selected functions of the modules loaded now (the session is active). */
void mc_dyn_patch(void);
/* A thread of the program as the tracer stopped it on detach (mc_attach_unhook): the tracer
 * sets every field; mc_dyn_unpatch may change ip and sp, which the tracer then sets. */
struct mc_attach_th {
	uint64_t tp;	 /* its thread pointer */
	uint64_t ip, sp; /* where it stopped, then where it resumes */
	uint64_t inside; /* it stays inside libmcount's code (its state is left alone) */
};
/* Attached (`flightrec record -p`), on detach: put back every site mc_dyn_patch wrote, move
 * the N threads TH the old bytes would trap, and unmap the stub pages none of them is on. */
void mc_dyn_unpatch(struct mc_attach_th *th, size_t n);
/* The same for the module dlopen() just loaded at BIAS, file NAME (its link_map's l_addr and
 * l_name). */
void mc_dyn_dlopen(uintptr_t bias, const char *name);

#pragma GCC visibility pop

#endif
