/*
 * bench/plt_lib.c - the library of bench/plt_loop.c: one tiny function, called through the
 * program's PLT (built as libpltbench.so, not instrumented).
 */
__attribute__((noinline)) long plt_tiny(long x)
{
	return x * 3 + 1;
}
