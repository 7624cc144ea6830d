/*
 * fdrapi.c - compiler-rt's own FDR mode, driven through its API as it must be (it writes
 * nothing otherwise): init with func_duration_threshold_us=0, patch, two threads of calls,
 * finalize, flush. Run with XRAY_OPTIONS="xray_mode=xray-fdr xray_logfile_base=DIR/".
 */
#include <pthread.h>
#include <stdio.h>
#include "xe2e.h"

/* compiler-rt's API (its headers are C++): XRayLogInitStatus 2 = XRAY_LOG_INITIALIZED */
int __xray_log_init_mode(const char *mode, const char *config);
int __xray_log_finalize(void);
int __xray_log_flushLog(void);
int __xray_patch(void);
#define XRAY_LOG_INITIALIZED 2

XE2E_SINK_DEFINE;

FN long fa_leaf(long x)
{
	xe2e_sink += x;
	return x + 1;
}

FN long fa_mid(long x)
{
	return fa_leaf(x) + fa_leaf(x + 1);
}

FN void *fa_worker(void *arg)
{
	long s = 0;

	for (long i = 0; i < 2000; i++)
		s += fa_mid(i + (long)arg);
	return (void *)s;
}

NOTRACE int main(void)
{
	pthread_t t;
	void *r;

	if (__xray_log_init_mode("xray-fdr", "func_duration_threshold_us=0") !=
	    XRAY_LOG_INITIALIZED) {
		fprintf(stderr, "fdrapi: cannot initialise FDR mode\n");
		return 1;
	}
	__xray_patch();
	pthread_create(&t, NULL, fa_worker, (void *)1);
	fa_worker(NULL);
	pthread_join(t, &r);
	__xray_log_finalize();
	__xray_log_flushLog();
	return 0;
}
