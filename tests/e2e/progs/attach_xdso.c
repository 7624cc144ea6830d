/*
 * attach_xdso.c - the program of attach/xray-dso (tests/e2e/run, AttachCases.case_xray_dso):
 * an XRay build (clang -fxray-instrument) that links libattach-xl.so and dlopens
 * libattach-xd.so (its path: argv[2]) at start, both XRay builds too (progs/attach_xlib.c).
 *
 *   attach_xdso MS LIB   two threads each call ax_step() every millisecond for MS
 *               milliseconds; ax_step calls xl_mid (linked) and xd_mid (dlopened), each of
 *               which calls its leaf twice; then prints each thread's sum and the total, and
 *               exits with total % 7.
 * The output and exit status depend on nothing but MS: an attached run must print exactly
 * what an unattached one does.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

long xl_mid(long x);

static long ax_ms;
static long (*ax_xd_mid)(long);

__attribute__((noinline)) long ax_step(long x)
{
	return xl_mid(x) + ax_xd_mid(x + 1);
}

static void *ax_worker(void *arg)
{
	long id = (long)arg, acc = 0;
	struct timespec ts = { 0, 1000000L };

	for (long i = 0; i < ax_ms; i++) {
		acc += ax_step(i + id);
		nanosleep(&ts, NULL);
	}
	return (void *)acc;
}

int main(int argc, char **argv)
{
	pthread_t t[2];
	long total = 0;
	void *h;

	if (argc < 3) {
		fprintf(stderr, "usage: attach_xdso MS LIB\n");
		return 2;
	}
	ax_ms = atol(argv[1]);
	h = dlopen(argv[2], RTLD_NOW);
	if (!h || !(ax_xd_mid = (long (*)(long))dlsym(h, "xd_mid"))) {
		fprintf(stderr, "attach_xdso: %s\n", dlerror());
		return 2;
	}
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, ax_worker, (void *)i);
	for (int i = 0; i < 2; i++) {
		void *r;
		pthread_join(t[i], &r);
		total += (long)r;
		printf("worker %d: %ld\n", i, (long)r);
	}
	printf("total %ld\n", total);
	return (int)(total % 7);
}
