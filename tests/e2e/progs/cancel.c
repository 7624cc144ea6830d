/*
 * cancel.c - pthread_cancel of a thread blocked deep in traced frames, and backtrace().
 *
 * 3 threads, one at a time: ca_thread -> ca_mid (pushes the cleanup handler ca_cleanup) ->
 * ca_leaf, which says it is ready and blocks in pause(), a cancellation point. main cancels
 * it and joins: the thread must end as cancelled (PTHREAD_CANCELED) with its cleanup handler
 * run. The forced unwind walks the thread's stack through frames whose return addresses a -pg
 * runtime has hijacked: it must find the real callers (it crashed the program before).
 * Then main calls ca_outer -> ca_bt, which takes a backtrace() through hijacked frames too.
 * tests/e2e-xray builds it too: there the unwind skips the exit sleds of the cancelled
 * frames, and the runtime must end them at the thread's exit.
 */
#include <execinfo.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include "e2e.h"

E2E_SINK_DEFINE;

#define NTHREADS 3

static volatile int ready;
static volatile int cleaned;

FN void ca_cleanup(void *arg)
{
	e2e_sink += (long)arg;
	cleaned++;
}

FN void ca_leaf(long id)
{
	e2e_sink += id;
	ready = 1;
	for (;;)
		pause();
}

FN void ca_mid(long id)
{
	pthread_cleanup_push(ca_cleanup, (void *)id);
	ca_leaf(id);
	pthread_cleanup_pop(0);
}

FN void *ca_thread(void *arg)
{
	ca_mid((long)arg);
	return NULL; /* never reached */
}

FN int ca_bt(void)
{
	void *frames[64];
	return backtrace(frames, 64);
}

FN int ca_outer(void)
{
	return ca_bt() + 0 * (int)e2e_sink;
}

int main(void)
{
	for (long i = 0; i < NTHREADS; i++) {
		pthread_t t;
		void *ret;

		ready = 0;
		if (pthread_create(&t, NULL, ca_thread, (void *)(i + 1)) != 0)
			return 1;
		while (!ready)
			usleep(1000);
		pthread_cancel(t);
		pthread_join(t, &ret);
		printf("thread %ld: %s, cleanups %d\n", i + 1,
		       ret == PTHREAD_CANCELED ? "cancelled" : "not cancelled", cleaned);
	}
	printf("backtrace: %s\n", ca_outer() >= 4 ? "at least 4 frames" : "too short");
	return 0;
}
