/*
 * dso case: an instrumented program calling into an instrumented library it links (a_mid) and
 * one it dlopens, calls (b_top) and dlcloses, twice. With a second argument N, a thread calls
 * a_mid N times meanwhile, and the library is opened and closed N / 50 more times: the
 * patching of a dlopen'ed object and its unloading race with calls through the other.
 * With "api" instead (linked with libxray-rt.a), the program unpatches every sled
 * (__xray_unpatch) after its first a_mid, opens and calls the library unpatched, then patches
 * every sled again (__xray_patch) and calls a_mid and the library once more.
 * Prints the sum of the results (the same with or without recording).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int a_mid(int x);
/* compiler-rt's API, weak: the program links without a runtime too */
extern int __xray_patch(void) __attribute__((weak));
extern int __xray_unpatch(void) __attribute__((weak));

static const char *lib_b;
static int loops;

__attribute__((noinline)) int call_b(int x)
{
	void *h = dlopen(lib_b, RTLD_NOW);
	int (*f)(int);
	int r;

	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		exit(2);
	}
	f = (int (*)(int))dlsym(h, "b_top");
	r = f ? f(x) : -1000;
	dlclose(h);
	return r;
}

static void *worker(void *arg)
{
	long s = 0;

	(void)arg;
	for (int i = 0; i < loops; i++)
		s += a_mid(i & 7);
	return (void *)s;
}

int main(int argc, char **argv)
{
	pthread_t t;
	void *ts = NULL;
	long s;

	if (argc < 2)
		return 2;
	lib_b = argv[1];
	if (argc > 2 && strcmp(argv[2], "api") == 0) {
		if (!__xray_patch || !__xray_unpatch)
			return 4;
		s = a_mid(2);
		if (__xray_unpatch() != 1)
			return 5;
		s += call_b(5);
		if (__xray_patch() != 1)
			return 6;
		s += a_mid(3) + call_b(6);
		printf("%ld\n", s);
		return 0;
	}
	loops = argc > 2 ? atoi(argv[2]) : 0;
	if (loops && pthread_create(&t, NULL, worker, NULL))
		return 3;
	s = a_mid(2);
	s += call_b(5);
	s += call_b(6);
	for (int i = 0; i < loops / 50; i++)
		s += call_b(i);
	if (loops)
		pthread_join(t, &ts);
	printf("%ld\n", s + (long)ts);
	return 0;
}
