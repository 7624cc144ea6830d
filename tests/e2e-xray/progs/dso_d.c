/* dso/dep case: a shared library with XRay sleds, linked with libdso_c.so: dlopen'ing it loads
 * both (b_top: the name dso_many.c calls) */
int c_work(int x);

__attribute__((noinline)) int b_top(int x)
{
	return c_work(x) + 1;
}
