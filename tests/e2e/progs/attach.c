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
 *   attach MS spin   as `attach MS`, and a fourth thread calls at_spin() every ~10 us of busy
 *               waiting for MS milliseconds (a thread never far from at_spin's patch site and
 *               in no system call, for the cases that step it inside), then prints
 *               "spin: done".
 * Built with -DAT_NEST (attach/libcall-nest), each at_worker call also calls lc_lib_work of
 * liblcnest.so (progs/libcall_lib.c), whose own library calls go through its own PLT.
 * The output and exit status depend on nothing but MS: an attached run must print exactly
 * what an unattached one does. No .expect file: the counts depend on when we attach.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long at_ms;

#ifdef AT_NEST
int lc_lib_work(int n);
#endif

__attribute__((noinline)) long at_leaf(long x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) long at_mid(long x)
{
	return at_leaf(x) + at_leaf(x + 1);
}

__attribute__((noinline)) long at_spin(long x)
{
	return x ^ (x >> 3);
}

static void *at_spinner(void *arg)
{
	struct timespec now, end;
	long acc = (long)arg;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += at_ms / 1000;
	end.tv_nsec += at_ms % 1000 * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	do {
		for (int i = 0; i < 64; i++) {
			acc += at_spin(acc + i);
			/* ~10 us: a trace of a few MB a second, and a few hundred single
			 * steps to at_spin */
			for (int j = 0; j < 256; j++)
				__builtin_ia32_pause();
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec < end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
	return (void *)acc; /* depends on the time: not printed */
}

static void *at_worker(void *arg)
{
	long id = (long)arg, acc = 0;
	struct timespec ts = { 0, 1000000L };

	for (long i = 0; i < at_ms; i++) {
		acc += at_mid(i + id);
#ifdef AT_NEST
		acc += lc_lib_work((int)(i & 1023));
#endif
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
	pthread_t t[3], spinner;
	long total = 0;
	int spin;

	at_ms = argc > 1 ? atol(argv[1]) : 1000;
	if (argc > 2 && !strcmp(argv[2], "pthexit")) {
		pthread_create(&t[0], NULL, at_lone_worker, NULL);
		pthread_exit(NULL);
	}
	spin = argc > 2 && !strcmp(argv[2], "spin");
	if (spin)
		pthread_create(&spinner, NULL, at_spinner, NULL);
	for (long i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, at_worker, (void *)i);
	for (int i = 0; i < 3; i++) {
		void *r;
		pthread_join(t[i], &r);
		total += (long)r;
		printf("worker %d: %ld\n", i, (long)r);
	}
	if (spin) {
		pthread_join(spinner, NULL);
		printf("spin: done\n");
	}
	printf("total %ld\n", total);
	return (int)(total % 7);
}
