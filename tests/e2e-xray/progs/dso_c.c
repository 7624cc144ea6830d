/* dso/dep case: a shared library with XRay sleds that another one (dso_d.c) needs */
__attribute__((noinline)) int c_work(int x)
{
	__asm__ __volatile__("" ::: "memory");
	return x * 5;
}
