/*
 * attach.c - the program of the `attach/...` cases (tests/e2e/run, AttachCases): a process
 * started without flightrec that `flightrec record -p` attaches to while it runs.
 *
 *   attach MS   three threads each call at_mid() (which calls at_leaf() twice) every
 *               millisecond for MS milliseconds (the main thread waits in pthread_join);
 *               then prints each thread's sum and the total, and exits with total % 7.
 *   attach MS pthexit   one such thread, which prints its sum; the main thread leaves
 *               through pthread_exit at once (a zombie while the process runs on: /proc/PID
 *               has no memory map then), the process exits 0 when the thread ends.
 * The output and exit status depend on nothing but MS: an attached run must print exactly
 * what an unattached one does. No .expect file: the counts depend on when we attach.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long at_ms;

__attribute__((noinline)) long at_leaf(long x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) long at_mid(long x)
{
	return at_leaf(x) + at_leaf(x + 1);
}

static void *at_worker(void *arg)
{
	long id = (long)arg, acc = 0;
	struct timespec ts = { 0, 1000000L };

	for (long i = 0; i < at_ms; i++) {
		acc += at_mid(i + id);
		nanosleep(&ts, NULL);
	}
	return (void *)acc;
}

static void *at_lone_worker(void *arg)
{
	printf("worker: %ld\n", (long)at_worker(arg));
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[3];
	long total = 0;

	at_ms = argc > 1 ? atol(argv[1]) : 1000;
	if (argc > 2 && !strcmp(argv[2], "pthexit")) {
		pthread_create(&t[0], NULL, at_lone_worker, NULL);
		pthread_exit(NULL);
	}
	for (long i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, at_worker, (void *)i);
	for (int i = 0; i < 3; i++) {
		void *r;
		pthread_join(t[i], &r);
		total += (long)r;
		printf("worker %d: %ld\n", i, (long)r);
	}
	printf("total %ld\n", total);
	return (int)(total % 7);
}
