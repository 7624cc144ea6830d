/*
 * attach_xlib.c - the shared libraries of attach/xray-dso (tests/e2e/run,
 * AttachCases.case_xray_dso), built with clang -fxray-instrument -fPIC -shared twice: as
 * libattach-xl.so (xl_mid, xl_leaf), which progs/attach_xdso.c links, and with -DXL_DLOPEN as
 * libattach-xd.so (xd_mid, xd_leaf), which it dlopens. Their functions have XRay sleds and
 * nothing else: only record -p's patching of every module's sleds records them.
 */
#ifdef XL_DLOPEN
#define XL_FN(n) xd_##n
#else
#define XL_FN(n) xl_##n
#endif

__attribute__((noinline)) long XL_FN(leaf)(long x)
{
	return x * 5 + 2;
}

__attribute__((noinline)) long XL_FN(mid)(long x)
{
	return XL_FN(leaf)(x) - XL_FN(leaf)(x / 2);
}
