/*
 * xray_wrap: library functions xray-rt interposes so that the log stays consistent with
 * control flow that leaves instrumented frames without running their exit sleds.
 *
 *   longjmp family   frames below the jump's target get their exits before the jump (compiler-
 *                    rt writes none, and `llvm-xray account` then rejects the log). Jumps we
 *                    do not see (libc-internal ones) are caught up at the next exit: an exit
 *                    pops every frame below its own first (xray_hooks.c).
 *   __cxa_begin_catch  frames an exception unwound (below the catching frame) end at the catch
 *                    (without it they would end at the catching frame's next exit)
 *   pthread_exit     the thread's open frames end now
 *   dlopen, dlclose  a shared object with sleds loaded later is patched (and named in the
 *                    uftrace format: DLOP lines for it and the objects with sleds it brought);
 *                    one unloaded is forgotten (xray_patch.c)
 * exec* and _exit are librecord's (rec_wrap_exec.c): the log is written first (xr_finish).
 * Preloaded, these come first in symbol lookup; linked statically (libxray-rt.a) they
 * interpose the program's calls the same way. The real functions come from dlsym(RTLD_NEXT).
 */
#include "xray-rt/internal.h"
#include "librecord/rec_dlcaller.h"
#include "librecord/rec_util.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <unistd.h>

#define XR_EXPORT __attribute__((visibility("default")))

static void *xr_real(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);
	if (!p)
		rec_warn("xray-rt: cannot find the real %s", name);
	return p;
}

#define XR_REAL(var, name)                                                                         \
	do {                                                                                       \
		if (!(var))                                                                        \
			*(void **)&(var) = xr_real(name);                                          \
	} while (0)

/* --- longjmp ------------------------------------------------------------------------ */

/* glibc's jmp_buf keeps rsp in slot 6, mangled: xor with the pointer guard (%fs:0x30), then
 * rotated left by 0x11 */
static uintptr_t xr_jmpbuf_sp(const void *env)
{
	uintptr_t v = ((const uintptr_t *)env)[6], guard;

	__asm__("mov %%fs:0x30, %0" : "=r"(guard));
	v = (v >> 0x11) | (v << (64 - 0x11));
	return v ^ guard;
}

typedef void (*xr_jump_fn)(void *, int) __attribute__((noreturn));
static xr_jump_fn xr_real_longjmp, xr_real__longjmp, xr_real_siglongjmp, xr_real_longjmp_chk;

XR_EXPORT __attribute__((noreturn)) void longjmp(void *env, int val)
{
	XR_REAL(xr_real_longjmp, "longjmp");
	xr_unwind_to(xr_jmpbuf_sp(env));
	xr_real_longjmp(env, val);
}

XR_EXPORT __attribute__((noreturn)) void _longjmp(void *env, int val)
{
	XR_REAL(xr_real__longjmp, "_longjmp");
	xr_unwind_to(xr_jmpbuf_sp(env));
	xr_real__longjmp(env, val);
}

XR_EXPORT __attribute__((noreturn)) void siglongjmp(void *env, int val)
{
	XR_REAL(xr_real_siglongjmp, "siglongjmp");
	xr_unwind_to(xr_jmpbuf_sp(env));
	xr_real_siglongjmp(env, val);
}

XR_EXPORT __attribute__((noreturn)) void __longjmp_chk(void *env, int val)
{
	XR_REAL(xr_real_longjmp_chk, "__longjmp_chk");
	xr_unwind_to(xr_jmpbuf_sp(env));
	xr_real_longjmp_chk(env, val);
}

/* --- C++ exceptions ------------------------------------------------------------------- */

typedef void *(*xr_catch_fn)(void *);
static xr_catch_fn xr_real_cxa_begin_catch;

/* Called from the catching function's landing pad: that frame is live, every instrumented
 * frame below its stack pointer was unwound. (Built with frame pointers: our frame address
 * + 16 is the caller's stack pointer before the call.) */
XR_EXPORT void *__cxa_begin_catch(void *exc)
{
	XR_REAL(xr_real_cxa_begin_catch, "__cxa_begin_catch");
	xr_unwind_to((uintptr_t)__builtin_frame_address(0) + 16);
	return xr_real_cxa_begin_catch(exc);
}

/* --- threads ------------------------------------------------------------------------ */

typedef void (*xr_pthread_exit_fn)(void *) __attribute__((noreturn));
static xr_pthread_exit_fn xr_real_pthread_exit;

XR_EXPORT __attribute__((noreturn)) void pthread_exit(void *ret)
{
	XR_REAL(xr_real_pthread_exit, "pthread_exit");
	xr_unwind_to(UINTPTR_MAX);
	xr_real_pthread_exit(ret);
}

/* --- shared objects ----------------------------------------------------------------- */

typedef void *(*xr_dlopen_fn)(const char *, int);
typedef int (*xr_dlclose_fn)(void *);
static xr_dlopen_fn xr_real_dlopen;
static xr_dlclose_fn xr_real_dlclose;

XR_EXPORT void *dlopen(const char *file, int mode)
{
	struct link_map *lm;
	void *h;

	XR_REAL(xr_real_dlopen, "dlopen");
	if (!xr_real_dlopen)
		return NULL;
	/* called as from the program: the loader searches its RUNPATH, expands its $ORIGIN */
	h = rec_dlopen_tracked(xr_real_dlopen, file, mode, __builtin_return_address(0), &lm);
	/* a module already loaded adds nothing (nor a DLOP line: uftrace writes none either) */
	if (lm) {
		int saved = errno;
		xr_dso_sync(lm->l_name, (uintptr_t)lm->l_addr);
		errno = saved;
	}
	return h;
}

XR_EXPORT int dlclose(void *h)
{
	int r, saved;

	XR_REAL(xr_real_dlclose, "dlclose");
	if (!xr_real_dlclose)
		return -1;
	xr_dso_close_begin();
	r = xr_real_dlclose(h);
	saved = errno;
	xr_dso_close_end();
	errno = saved;
	return r;
}
