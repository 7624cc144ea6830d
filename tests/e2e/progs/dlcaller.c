/*
 * dlcaller.c - dlopen's search on the program's behalf: the runtime's dlopen wrapper must leave
 * the program the loader's caller.
 *
 * Built with RUNPATH $ORIGIN/dlc (new dtags) and run with libdlcaller.so only in ./dlc beside
 * it. It dlopens the library by bare name (found only through the program's RUNPATH), by
 * "$ORIGIN/dlc/..." (expanded relative to the program), and by a relative path, and prints what
 * each load gave: the library's value, or the loader's error. The library's constructor takes
 * a backtrace from inside the dlopen. Traced, the output must be the untraced run's.
 */
#include <dlfcn.h>
#include <stdio.h>
#include "e2e.h"

E2E_SINK_DEFINE;

FN static int dc_load(const char *name)
{
	void *h = dlopen(name, RTLD_NOW);
	int (*val)(void);

	if (!h) {
		printf("%s: not loaded\n", name);
		return 0;
	}
	val = (int (*)(void))dlsym(h, "dcl_value");
	printf("%s: %d\n", name, val ? val() : -1);
	dlclose(h);
	return 1;
}

int main(void)
{
	static const char *const names[] = { "libdlcaller.so", "$ORIGIN/dlc/libdlcaller.so",
					     "dlc/../dlc/libdlcaller.so" };
	int n = 0;

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		n += dc_load(names[i]);
	printf("loaded %d\n", n);
	return 0;
}
