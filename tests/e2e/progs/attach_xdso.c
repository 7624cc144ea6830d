/*
 * attach_xdso.c - the program of attach/xray-dso (tests/e2e/run, AttachCases.case_xray_dso):
 * an XRay build (clang -fxray-instrument) that links libattach-xl.so and dlopens
 * libattach-xd.so (its path: argv[2]) at start, both XRay builds too (progs/attach_xlib.c).
 *
 *   attach_xdso MS LIB   two threads each call ax_step() every millisecond for MS
 *               milliseconds; ax_step calls xl_mid (linked) and xd_mid (dlopened), each of
 *               which calls its leaf twice; then prints each thread's sum and the total, and
 *               exits with total % 7.
 *   attach_xdso MS LIB spin   as above, and a third thread calls xd_leaf (through dlsym's
 *               pointer: no PLT) every ~10 us of busy waiting for MS milliseconds (never far
 *               from the library's sled, in no system call: the case that steps it there),
 *               then prints "spin: done".
 *   attach_xdso MS LIB reopen FILLER   as the first form, and at MS/2 milliseconds a third
 *               thread (the workers held off by a lock) dlcloses LIB, dlopens FILLER (which
 *               takes the place LIB had) and LIB again, elsewhere: a module closed and one
 *               loaded while the process lives, between two attaches.
 * The output and exit status depend on nothing but MS: an attached run must print exactly
 * what an unattached one does.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

long xl_mid(long x);

static long ax_ms;
static long (*ax_xd_mid)(long), (*ax_xd_leaf)(long);
static pthread_rwlock_t ax_lock = PTHREAD_RWLOCK_INITIALIZER; /* reopen: LIB in use */
static const char *ax_lib, *ax_filler;
static void *ax_handle;

__attribute__((noinline)) long ax_step(long x)
{
	return xl_mid(x) + ax_xd_mid(x + 1);
}

static void *ax_spinner(void *arg)
{
	struct timespec now, end;
	long acc = (long)arg;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += ax_ms / 1000;
	end.tv_nsec += ax_ms % 1000 * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	do {
		for (int i = 0; i < 64; i++) {
			acc += ax_xd_leaf(acc + i);
			for (int j = 0; j < 256; j++)
				__builtin_ia32_pause();
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec < end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
	return (void *)acc; /* depends on the time: not printed */
}

static void *ax_worker(void *arg)
{
	long id = (long)arg, acc = 0;
	struct timespec ts = { 0, 1000000L };

	for (long i = 0; i < ax_ms; i++) {
		pthread_rwlock_rdlock(&ax_lock);
		acc += ax_step(i + id);
		pthread_rwlock_unlock(&ax_lock);
		nanosleep(&ts, NULL);
	}
	return (void *)acc;
}

static void *ax_reopener(void *arg)
{
	struct timespec ts = { ax_ms / 2 / 1000, ax_ms / 2 % 1000 * 1000000L };

	(void)arg;
	nanosleep(&ts, NULL);
	pthread_rwlock_wrlock(&ax_lock);
	dlclose(ax_handle);
	if (!dlopen(ax_filler, RTLD_NOW) || !(ax_handle = dlopen(ax_lib, RTLD_NOW)) ||
	    !(ax_xd_mid = (long (*)(long))dlsym(ax_handle, "xd_mid"))) {
		fprintf(stderr, "attach_xdso: %s\n", dlerror());
		exit(2);
	}
	pthread_rwlock_unlock(&ax_lock);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[2], spinner, reopener;
	long total = 0;
	int spin, reopen;
	void *h;

	if (argc < 3) {
		fprintf(stderr, "usage: attach_xdso MS LIB\n");
		return 2;
	}
	ax_ms = atol(argv[1]);
	h = dlopen(argv[2], RTLD_NOW);
	if (!h || !(ax_xd_mid = (long (*)(long))dlsym(h, "xd_mid")) ||
	    !(ax_xd_leaf = (long (*)(long))dlsym(h, "xd_leaf"))) {
		fprintf(stderr, "attach_xdso: %s\n", dlerror());
		return 2;
	}
	spin = argc > 3 && !strcmp(argv[3], "spin");
	if (spin)
		pthread_create(&spinner, NULL, ax_spinner, NULL);
	reopen = argc > 4 && !strcmp(argv[3], "reopen");
	if (reopen) {
		ax_lib = argv[2];
		ax_filler = argv[4];
		ax_handle = h;
		pthread_create(&reopener, NULL, ax_reopener, NULL);
	}
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, ax_worker, (void *)i);
	for (int i = 0; i < 2; i++) {
		void *r;
		pthread_join(t[i], &r);
		total += (long)r;
		printf("worker %d: %ld\n", i, (long)r);
	}
	if (reopen)
		pthread_join(reopener, NULL);
	if (spin) {
		pthread_join(spinner, NULL);
		printf("spin: done\n");
	}
	printf("total %ld\n", total);
	return (int)(total % 7);
}
