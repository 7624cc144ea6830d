/*
 * dlopen_lib.c - the library tests/e2e/progs/dlopen.c loads while recording (built as
 * libdlopen_lib.so with the program's hook flavour).
 */
#include "e2e.h"

E2E_SINK_DEFINE;

FN int dl_leaf(int x)
{
	e2e_sink += x;
	return 2 * x;
}

FN int dl_entry(int x)
{
	return dl_leaf(x) + 1;
}
