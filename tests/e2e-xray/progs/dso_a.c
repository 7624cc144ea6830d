/* dso case: a shared library with XRay sleds the program links (loaded at start) */
__attribute__((noinline)) int a_leaf(int x)
{
	__asm__ __volatile__("" ::: "memory");
	return x * 3 + 1;
}

__attribute__((noinline)) int a_mid(int x)
{
	return a_leaf(x) + a_leaf(x + 1);
}
