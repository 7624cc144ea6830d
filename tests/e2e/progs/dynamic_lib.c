/*
 * dynamic_lib.c - libdynamic_lib.so for tests/e2e/progs/dynamic.c built with -DDY_LIB:
 * patched by FUNC@libdynamic_lib patterns.
 */
#include "e2e.h"

/* its own sink: a program that dlopens it exports none */
static volatile long dy_lib_sink;

FN int dy_lib_c(int x)
{
	dy_lib_sink += x;
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
