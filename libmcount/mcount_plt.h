/*
 * mcount_plt: library calls through the program's PLT (mcount_plt.c). Set up once, from
 * libmcount's constructor, after the session started.
 */
#ifndef MCOUNT_PLT_H
#define MCOUNT_PLT_H

#include <stdint.h>
#include <string.h>

#include "librecord/rec_util.h"

#pragma GCC visibility push(hidden)

/* Hook the program's PLT (and the libraries' with FLIGHTREC_NEST_LIBCALL), unless
 * FLIGHTREC_NO_LIBCALL says not to. */
void mc_plt_setup(void);
/* --nest-libcall is asked for (and --no-libcall is not): the libraries' PLT calls are recorded
 * too, so the filter and argument tables name them (inline: the filter's unit test links
 * without this file's code) */
static inline int mc_plt_nest_wanted(void)
{
	const char *n = rec_getenv("FLIGHTREC_NEST_LIBCALL");
	const char *o = rec_getenv("FLIGHTREC_NO_LIBCALL");

	return n && *n && strcmp(n, "0") && !(o && *o && strcmp(o, "0"));
}
/* Attached, on detach (every thread stopped): every slot the hooking changed put back, and,
 * unless INSIDE (a thread stays inside our code), the tables unmapped, with the -fno-plt
 * stubs none of the N threads TH (mcount_dynamic.h) stopped on. */
struct mc_attach_th;
void mc_plt_unhook(const struct mc_attach_th *th, size_t n, int inside);
/* the trampolines' C halves (mcount_plt_tramp.S) */
uintptr_t mc_plt_entry(uintptr_t *ret_loc, uintptr_t idx, uintptr_t id, uintptr_t *resolver,
		       const uintptr_t *regs);
uintptr_t mc_plt_exit(uintptr_t *sp);
/* re-point the slot of a call this thread sent to the resolver and that did not return
 * (pthread_exit: before the thread ends) */
void mc_plt_fix_pending(void);
/* a setjmp(env) of this thread was traced through the PLT: a longjmp to env is uftrace's (and
 * lands at that setjmp's return: asked by the longjmp wrappers only) */
int mc_plt_setjmp_known(const void *env);

#pragma GCC visibility pop

#endif
