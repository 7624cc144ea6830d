/*
 * bench/tp_loop.c - the traced program of bench/run-tfile.
 *
 * What it measures: the time of one phase, N calls of a noinline function with three
 * arguments, timed inside the program with CLOCK_MONOTONIC and printed as
 * `phase_ns=<ns> calls=<N>` (the phase of bench/loop.c). bench/run-tfile puts a tracepoint on
 * target() (every call a hit) or on setup() only (target's hooks run, nothing is recorded).
 * setup() runs once before the phase and is always a tracepoint, so that the thread's first
 * hit (the runtime attaches the thread then: ring file, mapping) is not timed.
 *
 * Usage: tp_loop N
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_util.h"

struct pair {
	long a, b;
};

__attribute__((noinline)) long target(long x, long y, struct pair *p)
{
	p->a += x;
	return x * 3 + y;
}

__attribute__((noinline)) void setup(struct pair *p)
{
	p->b = 1;
	__asm__ __volatile__("" ::: "memory");
}

__attribute__((noinline)) long run(long n, struct pair *p)
{
	long sum = 0;

	for (long i = 0; i < n; i++)
		sum += target(i, i + 1, p);
	return sum;
}

int main(int argc, char **argv)
{
	struct pair pr = {0, 0};
	long n, sum;
	long long t0, t1;

	if (argc != 2) {
		fprintf(stderr, "usage: %s N\n", argv[0]);
		return 2;
	}
	n = atol(argv[1]);
	setup(&pr);
	t0 = now_ns();
	sum = run(n, &pr);
	t1 = now_ns();
	printf("phase_ns=%lld calls=%ld sum=%ld a=%ld\n", t1 - t0, n, sum, pr.a);
	return 0;
}
