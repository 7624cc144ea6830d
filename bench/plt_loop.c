/*
 * bench/plt_loop.c - the traced program of bench/run-plt: what one library call through the
 * PLT costs when it is recorded (libmcount's PLT hooks, uftrace's).
 *
 * N calls of plt_tiny() (bench/plt_lib.c, a shared library: every call goes through the PLT),
 * timed inside the program with CLOCK_MONOTONIC, printed as `phase_ns=<ns> calls=<N>`; N from
 * argv, so bench/run-plt takes (phase(N) - phase(0)) / N per call. Built with -pg so that the
 * runtimes start, but run() and now_ns() are not instrumented: the phase holds the N library
 * calls and nothing else that is traced.
 *
 * Usage: plt_loop N
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

long plt_tiny(long x);

__attribute__((no_instrument_function)) static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline, noclone, no_instrument_function)) long run(long n)
{
	long sum = 0;

	for (long i = 0; i < n; i++)
		sum += plt_tiny(i);
	return sum;
}

int main(int argc, char **argv)
{
	long n, sum;
	long long t0, t1;

	if (argc != 2) {
		fprintf(stderr, "usage: %s N\n", argv[0]);
		return 2;
	}
	n = strtol(argv[1], NULL, 0);
	t0 = now_ns();
	sum = run(n);
	t1 = now_ns();
	printf("phase_ns=%lld calls=%ld sum=%ld\n", t1 - t0, n, sum);
	return 0;
}
