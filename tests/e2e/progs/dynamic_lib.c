/*
 * dynamic_lib.c - libdynamic_lib.so for tests/e2e/progs/dynamic.c built with -DDY_LIB:
 * patched by FUNC@libdynamic_lib patterns.
 */
#include "e2e.h"

extern volatile long e2e_sink;

FN int dy_lib_c(int x)
{
	e2e_sink += x;
	return x * 3;
}

FN int dy_lib_b(int x)
{
	return dy_lib_c(x) + 1;
}

FN int dy_lib_a(int x)
{
	return dy_lib_b(x) - 1;
}
