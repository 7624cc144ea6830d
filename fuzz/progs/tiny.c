/*
 * tiny: a small multi-threaded program whose trace, recorded by each of our runtimes, is one
 * of the fuzz targets' templates (fuzz/run): a few hundred calls in two threads, recursion,
 * a few memory accesses (Cacheray). With "kill" it ends by SIGKILL, leaving its rings for
 * salvage.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static int shared[64];

__attribute__((noinline)) static int fib(int n)
{
	shared[n & 63] += n;
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static void *worker(void *arg)
{
	long n = (long)arg;
	for (int i = 0; i < 4; i++)
		n += fib(6 + i % 2);
	return (void *)n;
}

int main(int argc, char **argv)
{
	pthread_t t;
	void *r;

	pthread_create(&t, NULL, worker, (void *)1L);
	worker(NULL);
	pthread_join(t, &r);
	if (argc > 1 && !strcmp(argv[1], "kill"))
		raise(SIGKILL);
	printf("%ld\n", (long)r);
	return 0;
}
