/*
 * tpthreads.c - target() from 4 threads, 6 calls each, x = thread * 100 + call: every frame
 * must name its own thread ($tid) and arguments, and the frames come in time order.
 */
#include <pthread.h>
#include <stdio.h>

#if defined(__clang__)
#define FN __attribute__((noinline, used))
#else
#define FN __attribute__((noinline, noipa, used))
#endif

#define NTHREADS 4
#define NCALLS	 6

volatile long tp_sink;

FN long target(int x, long y)
{
	tp_sink += x + y;
	return x + y;
}

static void *worker(void *arg)
{
	long t = (long)arg;

	for (int i = 0; i < NCALLS; i++)
		target((int)(t * 100 + i), t);
	return NULL;
}

int main(void)
{
	pthread_t th[NTHREADS];

	for (long t = 0; t < NTHREADS; t++)
		pthread_create(&th[t], NULL, worker, (void *)(t + 1));
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	printf("tpthreads: %ld\n", tp_sink);
	return 0;
}
