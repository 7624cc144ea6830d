/*
 * replay.c - control flow where flightrec's trace and uftrace's own recording of the same
 * binary may differ, one case per argument (tests/e2e/run, ReplayCases, compares the two
 * `uftrace replay` outputs):
 *
 *   signal   raise(SIGUSR1) from main: the handler and its callee run inside raise(), which
 *            neither tool traces with --no-libcall, so they are one level under main.
 *   tsd      a thread stores a value under a key with a destructor and returns: glibc runs the
 *            destructor in that thread after its start routine has returned.
 *   pthexit  two threads (one at a time) call pthread_exit two frames below their start
 *            routine: none of those frames returns.
 *   longjmp  a longjmp skips two traced frames, then a second one skips two others.
 *
 * Every run prints one deterministic line.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "e2e.h"

E2E_SINK_DEFINE;

/* --- signal --- */

FN void rp_sig_leaf(int x)
{
	e2e_sink += x;
}

FN void rp_on_sig(int sig)
{
	rp_sig_leaf(sig);
}

FN void rp_before(void)
{
	e2e_sink++;
}

NOTRACE static int rp_signal(void)
{
	signal(SIGUSR1, rp_on_sig);
	rp_before();
	raise(SIGUSR1);
	rp_before();
	return printf("signal: sink=%ld\n", (long)e2e_sink) < 0;
}

/* --- tsd --- */

static pthread_key_t rp_key;
static volatile int rp_dtor_calls;

FN void rp_tsd_dtor(void *p)
{
	rp_dtor_calls++;
	free(p);
}

FN void *rp_tsd_thread(void *arg)
{
	pthread_setspecific(rp_key, malloc(16));
	return arg;
}

NOTRACE static int rp_tsd(void)
{
	pthread_t t;

	pthread_key_create(&rp_key, rp_tsd_dtor);
	pthread_create(&t, NULL, rp_tsd_thread, NULL);
	pthread_join(t, NULL);
	pthread_key_delete(rp_key);
	return printf("tsd: destructor ran %d time(s)\n", rp_dtor_calls) < 0;
}

/* --- pthexit --- */

FN void rp_quit(long v)
{
	e2e_sink += v;
	pthread_exit(NULL);
}

FN void rp_step(long v)
{
	rp_quit(v);
	e2e_sink++; /* never reached */
}

FN void *rp_exit_thread(void *arg)
{
	rp_step((long)arg);
	return NULL; /* never reached */
}

FN void rp_after(void)
{
	e2e_sink++;
}

NOTRACE static int rp_pthexit(void)
{
	for (long i = 1; i <= 2; i++) {
		pthread_t t;

		pthread_create(&t, NULL, rp_exit_thread, (void *)i);
		pthread_join(t, NULL);
	}
	rp_after();
	return printf("pthexit: done\n") < 0;
}

/* --- longjmp --- */

static jmp_buf rp_env;

FN void rp_jump_inner(int v)
{
	e2e_sink += v;
	longjmp(rp_env, v);
}

FN void rp_jump_outer(int v)
{
	rp_jump_inner(v);
	e2e_sink++; /* never reached */
}

FN int rp_jumps(void)
{
	volatile int rounds = 0;

	/* setjmp as the whole controlling expression, as the C standard allows */
	switch (setjmp(rp_env)) {
	case 0:
		rp_jump_outer(1);
		break;
	case 1:
		rounds++;
		rp_jump_outer(2);
		break;
	default:
		rounds++;
		break;
	}
	rp_after();
	return rounds;
}

NOTRACE static int rp_longjmp(void)
{
	return printf("longjmp: %d jumps\n", rp_jumps()) < 0;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";

	if (!strcmp(what, "signal"))
		return rp_signal();
	if (!strcmp(what, "tsd"))
		return rp_tsd();
	if (!strcmp(what, "pthexit"))
		return rp_pthexit();
	if (!strcmp(what, "longjmp"))
		return rp_longjmp();
	fprintf(stderr, "usage: replay signal|tsd|pthexit|longjmp\n");
	return 2;
}
