/*
 * bench/args_loop.c - the traced program of bench/run's argument rows (-A/-R).
 *
 * What it measures: the time of one phase, N calls of a tiny noinline function taking two
 * ints (mode `two`) or a string (mode `str`), timed inside the program with CLOCK_MONOTONIC
 * and printed as `phase_ns=<ns> calls=<N>`, as bench/loop.c does (same method: bench/run
 * takes (phase(N) - phase(0)) / N, start-up and shut-down cancel out).
 *
 * The string is a short literal ("flightrec", 9 bytes): its recording costs the read of the
 * string from the program's memory, which is what the row is about.
 *
 * Usage: args_loop N two|str
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"

__attribute__((noinline, noclone)) int two(int a, int b)
{
	return a * 3 + b;
}

__attribute__((noinline, noclone)) int str(const char *s)
{
	return s[0] + 1;
}

__attribute__((noinline, noclone)) long run(long n, int mode)
{
	static const char *volatile text = "flightrec";
	long sum = 0;

	if (mode)
		for (long i = 0; i < n; i++)
			sum += str(text);
	else
		for (long i = 0; i < n; i++)
			sum += two((int)i, 7);
	return sum;
}

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[2], "two") && strcmp(argv[2], "str"))) {
		fprintf(stderr, "usage: %s N two|str\n", argv[0]);
		return 2;
	}
	long n = strtol(argv[1], NULL, 0);
	long long t0 = now_ns();
	long sum = run(n, !strcmp(argv[2], "str"));
	long long t1 = now_ns();

	printf("phase_ns=%lld calls=%ld sum=%ld\n", t1 - t0, n, sum);
	return 0;
}
