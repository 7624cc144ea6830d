/*
 * libcall_lib: the library of the libcall/nest cases (built as liblcnest.so with no
 * instrumentation): its calls to libc go through its own PLT, which only --nest-libcall hooks.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int lc_lib_work(int n)
{
	char *p = malloc(16);
	int r;

	strcpy(p, "nested");
	r = (int)strlen(p) + n + (getpid() > 0);
	free(p);
	return r;
}
