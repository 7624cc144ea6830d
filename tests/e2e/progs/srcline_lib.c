/*
 * srcline_lib.c - the library of tests/e2e/run's SrclineCases (libslib.so), instrumented as
 * the program is: a chain of three calls whose lines uftrace replay --srcline shows and -L
 * srcline_lib.c selects.
 */
#include "e2e.h"

FN int sl_lib_c(int n)
{
	return n * 3;
}

FN int sl_lib_b(int n)
{
	return sl_lib_c(n) + 1;
}

FN int sl_lib_a(int n)
{
	return sl_lib_b(n) + 2;
}
