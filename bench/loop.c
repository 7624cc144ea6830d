/*
 * bench/loop.c - the traced program of `make bench`.
 *
 * What it measures: the time of one phase, N calls of a tiny noinline leaf, timed inside the
 * program with CLOCK_MONOTONIC and printed as `phase_ns=<ns> calls=<N>`.
 *
 * Why it looks like this:
 * - bench/run builds this one file three ways (-pg, -pg -mfentry, -finstrument-functions, all
 *   with gcc -O2 -fno-optimize-sibling-calls) and runs each build plain, under flightrec's
 *   libmcount.so and under `uftrace record`.  Tracer start-up and shut-down (attach, ring
 *   allocation, the final flush, metadata files) happen outside the timed phase, so they cancel
 *   out; main() itself is already recorded when the clock starts.
 * - N comes from argv, so N=0 is the very same binary with the same start-up; bench/run takes
 *   (phase(N) - phase(0)) / N as the cost of one instrumented call (one entry + one exit event,
 *   including the ~2 ns of the bare call and loop, which the floor pays too).
 * - tiny() is noinline/noclone and its result is summed and printed, so the compiler can neither
 *   inline nor drop the call; -fno-optimize-sibling-calls keeps run() from tail-calling it.
 *
 * Usage: loop N
 */
#include <stdio.h>
#include <stdlib.h>
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
	if (argc != 2) {
		fprintf(stderr, "usage: %s N\n", argv[0]);
		return 2;
	}
	long n = strtol(argv[1], NULL, 0);
	long long t0 = now_ns();
	long sum = run(n);
	long long t1 = now_ns();

	printf("phase_ns=%lld calls=%ld sum=%ld\n", t1 - t0, n, sum);
	return 0;
}
