/*
 * dynamic.c - dynamic patching (-P/-U, tests/e2e/run DynamicCases): built with patchable
 * nops only (-fpatchable-function-entry, -pg -mnop-mcount), so that nothing is recorded but
 * what the patterns select. Threads run patched functions (started after the patching, which
 * is done at start-up); with DY_LIB it calls into libdynamic_lib.so (patched with @MODULE),
 * with DY_DLOPEN it loads that library twice with dlopen (patched when it is loaded);
 * "exec": re-executes itself with an environment of its own (the -P/-U variables must reach
 * the new image as the other FLIGHTREC_* ones do).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "e2e.h"

E2E_SINK_DEFINE;

#ifdef DY_LIB
int dy_lib_a(int x);
#endif

FN int dy_leaf(int x)
{
	e2e_sink += x;
	return x + 1;
}

FN int dy_mid(int x)
{
	return dy_leaf(x) * 2;
}

FN int dy_top(int x)
{
	return dy_mid(x) + dy_leaf(x);
}

/* without FN's noipa: at -O2 gcc's -fipa-ra lets dy_ipa_loop keep its counters in registers
 * the psABI says a call clobbers, since it knows dy_ipa_leaf does not touch them ("ipa") */
__attribute__((noinline)) long dy_ipa_leaf(long x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) long dy_ipa_loop(long n)
{
	long s = 0;

	for (long i = 0; i < n; i++)
		s += dy_ipa_leaf(i);
	return s;
}

FN void *dy_thread(void *arg)
{
	e2e_sink += dy_top((int)(long)arg);
	return NULL;
}

#ifdef DY_DLOPEN
FN long dy_dlopen(void)
{
	long sum = 0;

	/* twice: the second load may land where the first was. By its full path: a bare
	 * name would be searched in the RUNPATH of the caller, and a preloaded dlopen wrapper
	 * (uftrace's, ours) is that caller */
	char lib[4096];
	ssize_t n = readlink("/proc/self/exe", lib, sizeof(lib) - 32);
	char *slash;

	lib[n > 0 ? n : 0] = '\0';
	slash = strrchr(lib, '/');
	strcpy(slash ? slash + 1 : lib, "libdynamic_lib.so");
	for (int i = 0; i < 2; i++) {
		void *h = dlopen(lib, RTLD_NOW);
		int (*fn)(int) = h ? (int (*)(int))dlsym(h, "dy_lib_a") : NULL;

		if (fn)
			sum += fn(i);
		if (h)
			dlclose(h);
	}
	return sum;
}
#endif

int main(int argc, char **argv)
{
	long sum = 0;

#ifdef DY_DLOPEN
	/* "early": the first thing the program does (our flusher is just starting) */
	if (argc > 1 && !strcmp(argv[1], "early"))
		sum += dy_dlopen();
#endif
	if (argc > 1 && !strcmp(argv[1], "ipa"))
		sum += dy_ipa_loop(100);
	for (int i = 0; i < 3; i++)
		sum += dy_top(i);
	/* one after the other: the replay's order does not depend on the scheduler */
	for (int i = 0; i < 2; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, dy_thread, (void *)(long)i) == 0)
			pthread_join(t, NULL);
	}
#ifdef DY_LIB
	sum += dy_lib_a(4);
#endif
#ifdef DY_DLOPEN
	if (argc < 2 || strcmp(argv[1], "early"))
		sum += dy_dlopen();
#endif
	if (argc > 1 && !strcmp(argv[1], "exec")) {
		char *args[] = {argv[0], "child", NULL}, *env[] = {"DY=1", NULL};

		fflush(stdout);
		execve("/proc/self/exe", args, env);
		return 1;
	}
	printf("dynamic: %ld\n", sum);
	return 0;
}
