/*
 * cr_count: the driver of the Cacheray accounting cases (not instrumented): THREADS threads
 * each call work() (tests/e2e-salvage/progs/cr_work.c: one instrumented store per call) CALLS
 * times and end. The trace's records + the runtime's lost must be THREADS x CALLS, exactly.
 *
 *   cr_count THREADS CALLS
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

int work(int i);

static long calls;

static void *worker(void *arg)
{
	(void)arg;
	for (long i = 0; i < calls; i++)
		work((int)i);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[64];
	int n = argc > 2 ? atoi(argv[1]) : 0;

	if (n < 1 || n > 64)
		return 2;
	calls = atol(argv[2]);
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("writes=%ld\n", n * calls);
	return 0;
}
