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
 *   exec*            the log is written before the image is replaced; a custom environment
 *                    gets LD_PRELOAD and FLIGHTREC_DIR back so the next image records too
 *   _exit, _Exit     the log is written first (exit() is covered by the destructor)
 * Preloaded, these come first in symbol lookup; linked statically (libxray-rt.a) they
 * interpose the program's calls the same way. The real functions come from dlsym(RTLD_NEXT).
 */
#include "xray-rt/internal.h"
#include "librecord/rec_util.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define XR_EXPORT __attribute__((visibility("default")))

extern char **environ;
void xr_finish(void);

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

/* --- exec and _exit ------------------------------------------------------------------- */

static char xr_saved_preload[4096];

__attribute__((constructor)) static void xr_save_preload(void)
{
	const char *pre = getenv("LD_PRELOAD");

	if (pre && strlen(pre) < sizeof(xr_saved_preload))
		memcpy(xr_saved_preload, pre, strlen(pre) + 1);
}

static int xr_env_has(char *const envp[], const char *prefix)
{
	size_t n = strlen(prefix);

	for (; envp && *envp; envp++)
		if (strncmp(*envp, prefix, n) == 0)
			return 1;
	return 0;
}

static size_t xr_count(char *const v[])
{
	size_t n = 0;

	while (v && v[n])
		n++;
	return n;
}

/* envp copied into out[] (room for n + 3) with what the next image needs to record */
static char *const *xr_exec_env(char *const envp[], char **out, size_t n, char *dirvar,
				size_t dirsize, char *preload, size_t presize)
{
	size_t k = 0;

	if (envp == environ || !envp || rec_sess.state != REC_SESSION_ACTIVE)
		return envp;
	for (size_t i = 0; i < n; i++)
		out[k++] = envp[i];
	if (!xr_env_has(envp, "FLIGHTREC_DIR=")) {
		rec_snprintf(dirvar, dirsize, "FLIGHTREC_DIR=%s", rec_sess.dir);
		out[k++] = dirvar;
	}
	if (xr_saved_preload[0] && !xr_env_has(envp, "LD_PRELOAD=")) {
		rec_snprintf(preload, presize, "LD_PRELOAD=%s", xr_saved_preload);
		out[k++] = preload;
	}
	out[k] = NULL;
	return out;
}

#define XR_WITH_ENV(envp, newenv)                                                                  \
	size_t xr_n_ = xr_count(envp);                                                             \
	char *xr_buf_[xr_n_ + 3], xr_dir_[REC_PATH_MAX + 16],                                      \
		xr_pre_[sizeof(xr_saved_preload) + 16];                                            \
	char *const *newenv = xr_exec_env(envp, xr_buf_, xr_n_, xr_dir_, sizeof(xr_dir_), xr_pre_, \
					  sizeof(xr_pre_))

typedef int (*xr_execve_fn)(const char *, char *const[], char *const[]);
typedef int (*xr_execv_fn)(const char *, char *const[]);
typedef int (*xr_fexecve_fn)(int, char *const[], char *const[]);
static xr_execve_fn xr_real_execve, xr_real_execvpe;
static xr_execv_fn xr_real_execv, xr_real_execvp;
static xr_fexecve_fn xr_real_fexecve;

XR_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	XR_REAL(xr_real_execve, "execve");
	XR_WITH_ENV(envp, env);
	xr_finish();
	return xr_real_execve(path, argv, env);
}

XR_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	XR_REAL(xr_real_execvpe, "execvpe");
	XR_WITH_ENV(envp, env);
	xr_finish();
	return xr_real_execvpe(file, argv, env);
}

XR_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	XR_REAL(xr_real_fexecve, "fexecve");
	XR_WITH_ENV(envp, env);
	xr_finish();
	return xr_real_fexecve(fd, argv, env);
}

XR_EXPORT int execv(const char *path, char *const argv[])
{
	XR_REAL(xr_real_execv, "execv");
	xr_finish();
	return xr_real_execv(path, argv);
}

XR_EXPORT int execvp(const char *file, char *const argv[])
{
	XR_REAL(xr_real_execvp, "execvp");
	xr_finish();
	return xr_real_execvp(file, argv);
}

/* execl*: gather the variadic arguments, then go through the wrappers above */
#define XR_GATHER_ARGS(arg0, ap, argv)                                                             \
	size_t xr_argc_ = 1;                                                                       \
	va_start(ap, arg0);                                                                        \
	while (va_arg(ap, char *))                                                                 \
		xr_argc_++;                                                                        \
	va_end(ap);                                                                                \
	char *argv[xr_argc_ + 1];                                                                  \
	argv[0] = (char *)(arg0);                                                                  \
	va_start(ap, arg0);                                                                        \
	for (size_t i_ = 1; i_ <= xr_argc_; i_++)                                                  \
	argv[i_] = va_arg(ap, char *)

XR_EXPORT int execl(const char *path, const char *arg0, ...)
{
	va_list ap;
	XR_GATHER_ARGS(arg0, ap, argv);
	va_end(ap);
	return execv(path, argv);
}

XR_EXPORT int execlp(const char *file, const char *arg0, ...)
{
	va_list ap;
	XR_GATHER_ARGS(arg0, ap, argv);
	va_end(ap);
	return execvp(file, argv);
}

XR_EXPORT int execle(const char *path, const char *arg0, ...)
{
	va_list ap;
	XR_GATHER_ARGS(arg0, ap, argv);
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	return execve(path, argv, envp);
}

XR_EXPORT __attribute__((noreturn)) void _exit(int status)
{
	xr_finish();
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

XR_EXPORT __attribute__((noreturn)) void _Exit(int status)
{
	_exit(status);
}
