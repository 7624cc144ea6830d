/*
 * bench/attach_loop.c - the program of bench/run-attach: bench/loop.c's phase (N calls of a
 * tiny noinline leaf, timed inside the program, printed as `phase_ns=<ns> calls=<N>`), started
 * when the bench says so, so that `flightrec record -p` can attach first.
 *
 * Usage: attach_loop N go     the phase at once (run under `flightrec record`)
 *        attach_loop N wait   the phase once SIGUSR1 comes (blocked, taken with sigwait: no
 *                             handler, so the attach changes nothing the program sees)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"

__attribute__((noinline, noclone)) long tiny(long x)
{
	return x * 3 + 1;
}

__attribute__((noinline, noclone)) long run(long n)
{
	long sum = 0;

	for (long i = 0; i < n; i++)
		sum += tiny(i);
	return sum;
}

int main(int argc, char **argv)
{
	sigset_t set;
	int sig;

	if (argc != 3) {
		fprintf(stderr, "usage: %s N go|wait\n", argv[0]);
		return 2;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if (!strcmp(argv[2], "wait"))
		sigwait(&set, &sig);
	long n = strtol(argv[1], NULL, 0);
	long long t0 = now_ns();
	long sum = run(n);
	long long t1 = now_ns();

	printf("phase_ns=%lld calls=%ld sum=%ld\n", t1 - t0, n, sum);
	return 0;
}
