/*
 * bench/xray_loop.c - the traced program of bench/run-xray.
 *
 * What it measures: the time of one phase, N calls of a tiny noinline leaf, timed inside the
 * program with CLOCK_MONOTONIC and printed as `phase_ns=<ns> calls=<N>` (the same phase as
 * bench/loop.c). bench/run-xray builds it with clang -O2 -fxray-instrument
 * -fxray-instruction-threshold=1 (tiny() and run() get sleds, main() does not) and runs it
 *   - untouched (sleds not patched),
 *   - under compiler-rt's FDR mode: with BENCH_XRAY_FDR set, the program drives compiler-rt's
 *     API as FDR mode requires (init with the flags in BENCH_XRAY_FDR, patch; finalize and
 *     flush after the phase), outside the timed phase;
 *   - under flightrec's xray-rt (preloaded, or linked in as libxray-rt.a).
 * Built with -DBENCH_LOG_ARGS too: tiny() logs its argument (the rows "log-args").
 * N comes from argv, so N=0 is the same binary with the same start-up: per call = (phase(N) -
 * phase(0)) / N, one entry and one exit event each.
 *
 * Usage: xray_loop N
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* compiler-rt's XRay API, weak: a build without compiler-rt's runtime links too */
extern int __xray_log_init_mode(const char *mode, const char *config) __attribute__((weak));
extern int __xray_log_finalize(void) __attribute__((weak));
extern int __xray_log_flushLog(void) __attribute__((weak));
extern int __xray_patch(void) __attribute__((weak));

/* -DBENCH_LOG_ARGS: an argument-logging function (a log-args sled; its first argument in an
 * EnterWithArgs record and a CallArgument) */
#ifdef BENCH_LOG_ARGS
__attribute__((noinline, xray_always_instrument, xray_log_args(1))) long tiny(long x)
#else
__attribute__((noinline)) long tiny(long x)
#endif
{
	return x * 3 + 1;
}

__attribute__((noinline)) long run(long n)
{
	long sum = 0;

	for (long i = 0; i < n; i++)
		sum += tiny(i);
	return sum;
}

__attribute__((xray_never_instrument)) static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
	const char *fdr = getenv("BENCH_XRAY_FDR");

	if (argc != 2) {
		fprintf(stderr, "usage: %s N\n", argv[0]);
		return 2;
	}
	if (fdr) {
		if (!__xray_log_init_mode || __xray_log_init_mode("xray-fdr", fdr) != 2) {
			fprintf(stderr, "xray_loop: cannot initialise compiler-rt's FDR mode\n");
			return 1;
		}
		__xray_patch();
	}
	long n = strtol(argv[1], NULL, 0);
	long long t0 = now_ns();
	long sum = run(n);
	long long t1 = now_ns();

	if (fdr) {
		__xray_log_finalize();
		__xray_log_flushLog();
	}
	printf("phase_ns=%lld calls=%ld sum=%ld\n", t1 - t0, n, sum);
	return 0;
}
