/* dso case: a shared library with XRay sleds the program dlopens (and dlcloses) */
__attribute__((noinline)) int b_leaf(int x)
{
	__asm__ __volatile__("" ::: "memory");
	return x - 1;
}

__attribute__((noinline)) int b_top(int x)
{
	return b_leaf(x) * 2;
}
