/*
 * mainexit.c - the main thread leaves with pthread_exit from nested frames; the process lives
 * on in a worker and ends when the last thread is gone (glibc then calls exit(0)).
 *
 * main -> mx_nested1 -> mx_nested2 -> pthread_exit, while a worker (started before, released
 * by a barrier at the same moment) makes 2000 traced calls and prints one line.  The worker
 * usually outlives the main thread, so its calls are recorded after the main thread's exit,
 * and the process ends from the worker's thread; either order gives the same counts.  The
 * runtime must let the process end when the last program thread ends: a helper thread of its
 * own must not keep it alive.
 *
 * (A worker that pthread_join()s the main thread first would make the order certain, but
 * uftrace 0.13 loses that worker entirely in -pg builds, so it would give no reference.)
 */
#include <pthread.h>
#include <stdio.h>
#include "e2e.h"

E2E_SINK_DEFINE;

#define NCALLS 2000

static pthread_barrier_t mx_barrier;

FN void mx_leaf(long x)
{
	e2e_sink += x;
}

FN long mx_work(int n)
{
	for (int i = 0; i < n; i++)
		mx_leaf(i);
	return n;
}

FN void *mx_worker(void *arg)
{
	long n;

	pthread_barrier_wait(&mx_barrier);
	n = mx_work(NCALLS);
	printf("mainexit: worker made %ld calls\n", n);
	fflush(stdout);
	return arg;
}

FN void mx_nested2(void)
{
	e2e_sink++;
	pthread_barrier_wait(&mx_barrier);
	pthread_exit(NULL);
}

FN void mx_nested1(void)
{
	mx_nested2();
	e2e_sink++; /* never reached */
}

int main(void)
{
	pthread_t t;

	pthread_barrier_init(&mx_barrier, NULL, 2);
	pthread_create(&t, NULL, mx_worker, NULL);
	mx_nested1();
	return 1; /* never reached */
}
