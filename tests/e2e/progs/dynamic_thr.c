/*
 * dynamic_thr.c - libdynamic_thr.so, preloaded beside libmcount.so by DynamicCases'
 * threads-before case (built with -fpatchable-function-entry=5): its constructor starts a
 * thread that is already running when libmcount's constructor patches, and that calls dt_hot
 * in a tight loop all the while (so it is often stopped inside dt_hot's five nops, which -P
 * rewrites). The destructor stops it and says how many calls it made ("dt_hot N" on stderr).
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static volatile int dt_stop;
static volatile long dt_sink, dt_calls;
static pthread_t dt_thread;
static int dt_started;

__attribute__((noinline)) void dt_hot(void)
{
	dt_sink++;
}

static void *dt_run(void *arg)
{
	struct timespec t0, t;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!dt_stop) {
		for (int i = 0; i < 1000; i++)
			dt_hot();
		dt_calls += 1000;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 20)
			break; /* never spin forever */
	}
	return NULL;
}

__attribute__((constructor)) static void dt_start(void)
{
	dt_started = pthread_create(&dt_thread, NULL, dt_run, NULL) == 0;
}

__attribute__((destructor)) static void dt_end(void)
{
	dt_stop = 1;
	if (dt_started && pthread_join(dt_thread, NULL) == 0)
		fprintf(stderr, "dt_hot %ld\n", dt_calls);
}
