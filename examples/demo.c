/*
 * demo: a small multi-threaded program to record with flightrec (built with gcc -pg).
 * Four workers each compute a few Fibonacci numbers recursively; main reports their sums.
 */
#include <pthread.h>
#include <stdio.h>

__attribute__((noinline)) static long fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) static long work(int id)
{
	long sum = 0;
	for (int i = 0; i < 3; i++)
		sum += fib(5 + id + i);
	return sum;
}

static void *worker(void *arg)
{
	return (void *)work((int)(long)arg);
}

int main(void)
{
	pthread_t th[4];
	void *ret;

	for (long i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], &ret);
		printf("worker %d: %ld\n", i, (long)ret);
	}
	return 0;
}
