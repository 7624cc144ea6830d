/*
 * bench/cacheray_loop.c - the loop of bench/run-cacheray: N iterations of b[j] = a[j] + i, one
 * 8-byte read and one 8-byte write per iteration (the benchmark of
 * shared/anchors/cacheray.md section 4, where Cacheray's own runtime costs 66 ns per access).
 *
 * Built three ways by bench/run-cacheray: without instrumentation (plain loads and stores),
 * and with clang -fsanitize=thread linked with flightrec's libcacheray-rt.so or with
 * bench/cacheray_ref.c (Cacheray's runtime design). -fno-vectorize keeps one callback per
 * access. The program times its own phase with CLOCK_MONOTONIC and prints
 * `phase_ns=<ns> accesses=<2N>`, so start-up and the final flush are not counted; with
 * N = 0 it measures that nothing else costs.
 *
 * Usage: cacheray_loop N
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define LEN 4096 /* 2 x 32 KiB: the arrays stay in L1/L2, the trace is the only big stream */

long a[LEN], b[LEN];

__attribute__((noinline)) void phase(long n)
{
	for (long i = 0; i < n; i++) {
		long j = i & (LEN - 1);
		b[j] = a[j] + i;
	}
}

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000000;
	long long t0, t1;

	phase(LEN); /* warm up: first-touch, the thread's ring */
	t0 = now_ns();
	phase(n);
	t1 = now_ns();
	printf("phase_ns=%lld accesses=%ld check=%ld\n", t1 - t0, 2 * n, b[LEN - 1]);
	return 0;
}
