/*
 * threads.c - 8 threads running at the same time (a barrier holds them until all exist),
 * each making the same deterministic calls; main spawns and joins them from traced functions.
 * main itself is not traced, so a worker may well record before the main thread does.
 */
#include <pthread.h>
#include <stdio.h>
#include "xe2e.h"

XE2E_SINK_DEFINE;

#ifndef NTHREADS
#define NTHREADS 8
#endif
#define NITER 300

static pthread_barrier_t th_barrier;

FN long th_leaf(long x)
{
	xe2e_sink += x;
	return x * 2;
}

FN long th_step(long x)
{
	return th_leaf(x) + 1;
}

FN void *th_worker(void *arg)
{
	long id = (long)arg, sum = 0;

	pthread_barrier_wait(&th_barrier);
	for (long i = 0; i < NITER; i++)
		sum += th_step(id + i);
	return (void *)sum;
}

FN void th_spawn(pthread_t *t, long id)
{
	pthread_create(t, NULL, th_worker, (void *)id);
}

FN long th_join(pthread_t t)
{
	void *ret;

	pthread_join(t, &ret);
	return (long)ret;
}

NOTRACE int main(void)
{
	pthread_t t[NTHREADS];
	long total = 0;

	pthread_barrier_init(&th_barrier, NULL, NTHREADS);
	for (long i = 0; i < NTHREADS; i++)
		th_spawn(&t[i], i);
	for (int i = 0; i < NTHREADS; i++)
		total += th_join(t[i]);
	printf("threads: %d threads, total=%ld\n", NTHREADS, total);
	return 0;
}
