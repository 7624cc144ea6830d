/*
 * logargs.c - argument-logging functions (xray_log_args(1)): each entry is an EnterWithArgs
 * record and a CallArgument holding the first argument (rdi, 64 bits), as compiler-rt's FDR
 * mode writes it. Values: small, negative, past 100000 (uftrace shows those in hex), an int
 * (rdi zero-extended by the caller), and a plain traced function in between.
 * With LA_CRT_FDR set, the program drives compiler-rt's own FDR mode through its API
 * (func_duration_threshold_us=0, patched, finalized and flushed at the end): the reference
 * log; without, whatever runtime records it (xray-rt).
 */
#include <stdio.h>
#include <stdlib.h>
#include "xe2e.h"

XE2E_SINK_DEFINE;

/* compiler-rt's API, weak: the binary links without compiler-rt's runtime too */
int __xray_log_init_mode(const char *mode, const char *config) __attribute__((weak));
int __xray_log_finalize(void) __attribute__((weak));
int __xray_log_flushLog(void) __attribute__((weak));
int __xray_patch(void) __attribute__((weak));

#define LOGARGS __attribute__((noinline, used, xray_always_instrument, xray_log_args(1)))

LOGARGS long la_long(long v)
{
	xe2e_sink += v;
	return v + 1;
}

LOGARGS int la_int(int v)
{
	xe2e_sink += v;
	return v * 2;
}

FN long la_plain(long v)
{
	xe2e_sink += v;
	return la_long(v) + 1;
}

NOTRACE int main(void)
{
	int fdr = getenv("LA_CRT_FDR") != NULL;
	long s = 0;

	if (fdr && (!__xray_log_init_mode ||
		    __xray_log_init_mode("xray-fdr", "func_duration_threshold_us=0") != 2)) {
		fprintf(stderr, "logargs: cannot initialise compiler-rt's FDR mode\n");
		return 1;
	}
	if (fdr)
		__xray_patch();
	for (long i = 0; i < 4; i++)
		s += la_long(i * 7 - 10) + la_long(i * 1000003) + la_int((int)i - 2);
	s += la_plain(42) + la_long(-200000);
	if (fdr) {
		__xray_log_finalize();
		__xray_log_flushLog();
	}
	printf("logargs: %ld\n", s);
	return 0;
}
