/*
 * dlopen.c - an instrumented library loaded while recording.
 *
 * main calls dl_before, then dlopens libdlopen_lib.so (built beside the program with the same
 * hook flavour from dlopen_lib.c), calls its dl_entry 3 times (each calls dl_leaf) and
 * closes it. The library was not mapped when recording started: its functions are named in
 * the trace only through the DLOP line and the .sym file written at the dlopen.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "e2e.h"

E2E_SINK_DEFINE;

FN void dl_before(void)
{
	e2e_sink++;
}

int main(void)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
	char *slash;
	void *h;
	int (*entry)(int);
	int sum = 0;

	dl_before();
	if (n <= 0)
		return 1;
	path[n] = '\0';
	slash = strrchr(path, '/');
	strcpy(slash + 1, "libdlopen_lib.so");
	h = dlopen(path, RTLD_NOW);
	if (!h) {
		printf("dlopen: %s\n", dlerror());
		return 1;
	}
	entry = (int (*)(int))dlsym(h, "dl_entry");
	for (int i = 0; i < 3; i++)
		sum += entry(i);
	printf("dlopen: sum %d\n", sum);
	dlclose(h);
	return 0;
}
