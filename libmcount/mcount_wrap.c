/*
 * mcount_wrap: library functions libmcount interposes to keep the shadow stack and the
 * trace consistent with control flow that does not return normally.
 *
 *   longjmp family      frames between the jump and its target get their exits
 *   __cxa_throw/rethrow the real return addresses go back in place, so the unwinder can walk
 *                       the stack; __cxa_begin_catch gives exits to the unwound frames and
 *                       hijacks the survivors again
 *   pthread_exit        exits for every frame, real return addresses back (forced unwind)
 *   exec*               the trace is finished before the image is replaced; a custom
 *                       environment gets LD_PRELOAD and FLIGHTREC_DIR back
 *   _exit, _Exit        the trace is finished first (exit() is covered by the destructor)
 * A vfork child shares our memory: it must not finish the parent's trace (pid check).
 * The real functions are found with dlsym(RTLD_NEXT) when first needed.
 */
#include "libmcount/internal.h"
#include "librecord/rec_util.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MC_EXPORT __attribute__((visibility("default")))

extern char **environ;

static void *mc_real(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);
	if (!p)
		rec_warn("libmcount: cannot find the real %s", name);
	return p;
}

#define MC_REAL(var, name)                                                                 \
	do {                                                                               \
		if (!(var))                                                                \
			*(void **)&(var) = mc_real(name);                                  \
	} while (0)

static struct rec_thread *mc_self(void)
{
	struct rec_thread *t = rec_self;
	return (uintptr_t)t > REC_THREAD_SENTINEL_MAX ? t : NULL;
}

/* --- longjmp ------------------------------------------------------------------------ */

/* glibc keeps rsp mangled in jmp_buf slot 6: rol 0x11 after xor with the pointer guard
 * (tcbhead_t.pointer_guard at %fs:0x30). */
static uintptr_t mc_jmpbuf_sp(const void *env)
{
	uintptr_t v = ((const uintptr_t *)env)[6], guard;
	__asm__("mov %%fs:0x30, %0" : "=r"(guard));
	v = (v >> 0x11) | (v << (64 - 0x11));
	return v ^ guard;
}

static void mc_before_jump(const void *env)
{
	struct rec_thread *t = mc_self();
	if (t)
		mc_unwind_to(t, mc_jmpbuf_sp(env));
}

typedef void (*mc_jump_fn)(void *, int) __attribute__((noreturn));
static mc_jump_fn mc_real_longjmp, mc_real__longjmp, mc_real_siglongjmp, mc_real_longjmp_chk;

MC_EXPORT __attribute__((noreturn)) void longjmp(void *env, int val)
{
	MC_REAL(mc_real_longjmp, "longjmp");
	mc_before_jump(env);
	mc_real_longjmp(env, val);
}

MC_EXPORT __attribute__((noreturn)) void _longjmp(void *env, int val)
{
	MC_REAL(mc_real__longjmp, "_longjmp");
	mc_before_jump(env);
	mc_real__longjmp(env, val);
}

MC_EXPORT __attribute__((noreturn)) void siglongjmp(void *env, int val)
{
	MC_REAL(mc_real_siglongjmp, "siglongjmp");
	mc_before_jump(env);
	mc_real_siglongjmp(env, val);
}

MC_EXPORT __attribute__((noreturn)) void __longjmp_chk(void *env, int val)
{
	MC_REAL(mc_real_longjmp_chk, "__longjmp_chk");
	mc_before_jump(env);
	mc_real_longjmp_chk(env, val);
}

/* --- C++ exceptions ------------------------------------------------------------------- */

typedef void (*mc_throw_fn)(void *, void *, void (*)(void *)) __attribute__((noreturn));
typedef void (*mc_rethrow_fn)(void) __attribute__((noreturn));
typedef void *(*mc_catch_fn)(void *);
static mc_throw_fn mc_real_cxa_throw;
static mc_rethrow_fn mc_real_cxa_rethrow;
static mc_catch_fn mc_real_cxa_begin_catch;

MC_EXPORT __attribute__((noreturn)) void __cxa_throw(void *obj, void *tinfo, void (*dtor)(void *))
{
	struct rec_thread *t = mc_self();
	MC_REAL(mc_real_cxa_throw, "__cxa_throw");
	if (t)
		mc_restore_returns(t);
	mc_real_cxa_throw(obj, tinfo, dtor);
}

MC_EXPORT __attribute__((noreturn)) void __cxa_rethrow(void)
{
	struct rec_thread *t = mc_self();
	MC_REAL(mc_real_cxa_rethrow, "__cxa_rethrow");
	if (t)
		mc_restore_returns(t);
	mc_real_cxa_rethrow();
}

MC_EXPORT void *__cxa_begin_catch(void *exc)
{
	struct rec_thread *t = mc_self();
	MC_REAL(mc_real_cxa_begin_catch, "__cxa_begin_catch");
	if (t && mc_in_exception(t)) {
		/* the catching frame's stack pointer: frames below it were unwound */
		uintptr_t sp = (uintptr_t)__builtin_frame_address(0) + 16;
		mc_unwind_to(t, sp);
		mc_rehijack_returns(t);
	}
	return mc_real_cxa_begin_catch(exc);
}

/* --- threads ------------------------------------------------------------------------ */

typedef void (*mc_pthread_exit_fn)(void *) __attribute__((noreturn));
static mc_pthread_exit_fn mc_real_pthread_exit;

MC_EXPORT __attribute__((noreturn)) void pthread_exit(void *ret)
{
	struct rec_thread *t = mc_self();
	MC_REAL(mc_real_pthread_exit, "pthread_exit");
	if (t)
		mc_exit_all(t);
	mc_real_pthread_exit(ret);
}

/* --- exec and _exit ------------------------------------------------------------------- */

static int mc_in_own_process(void)
{
	return rec_sess.state == REC_SESSION_ACTIVE && getpid() == rec_sess.pid;
}

static int mc_env_has(char *const envp[], const char *prefix)
{
	size_t n = strlen(prefix);
	for (; envp && *envp; envp++)
		if (strncmp(*envp, prefix, n) == 0)
			return 1;
	return 0;
}

/* Copy envp into out[] (room for n + 3) adding what the next image needs to record. */
static char *const *mc_exec_env(char *const envp[], char **out, size_t n, char *dirvar,
				size_t dirsize, char *preload, size_t presize)
{
	const char *pre = mc_saved_preload[0] ? mc_saved_preload : NULL;
	size_t k = 0;

	if (envp == environ || !envp)
		return envp;
	for (size_t i = 0; i < n; i++)
		out[k++] = envp[i];
	if (!mc_env_has(envp, "FLIGHTREC_DIR=")) {
		rec_snprintf(dirvar, dirsize, "FLIGHTREC_DIR=%s", rec_sess.dir);
		out[k++] = dirvar;
	}
	if (pre && !mc_env_has(envp, "LD_PRELOAD=")) {
		rec_snprintf(preload, presize, "LD_PRELOAD=%s", pre);
		out[k++] = preload;
	}
	out[k] = NULL;
	return out;
}

static size_t mc_count(char *const v[])
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

static void mc_before_exec(void)
{
	if (mc_in_own_process())
		rec_session_finish();
}

typedef int (*mc_execve_fn)(const char *, char *const[], char *const[]);
typedef int (*mc_execv_fn)(const char *, char *const[]);
typedef int (*mc_fexecve_fn)(int, char *const[], char *const[]);
static mc_execve_fn mc_real_execve, mc_real_execvpe;
static mc_execv_fn mc_real_execv, mc_real_execvp;
static mc_fexecve_fn mc_real_fexecve;

#define MC_WITH_ENV(envp, newenv)                                                          \
	size_t mc_n_ = mc_count(envp);                                                     \
	char *mc_buf_[mc_n_ + 3], mc_dir_[REC_PATH_MAX + 16], mc_pre_[REC_PATH_MAX + 16];  \
	char *const *newenv = mc_exec_env(envp, mc_buf_, mc_n_, mc_dir_, sizeof(mc_dir_),  \
					  mc_pre_, sizeof(mc_pre_))

MC_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	MC_REAL(mc_real_execve, "execve");
	MC_WITH_ENV(envp, env);
	mc_before_exec();
	return mc_real_execve(path, argv, env);
}

MC_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	MC_REAL(mc_real_execvpe, "execvpe");
	MC_WITH_ENV(envp, env);
	mc_before_exec();
	return mc_real_execvpe(file, argv, env);
}

MC_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	MC_REAL(mc_real_fexecve, "fexecve");
	MC_WITH_ENV(envp, env);
	mc_before_exec();
	return mc_real_fexecve(fd, argv, env);
}

MC_EXPORT int execv(const char *path, char *const argv[])
{
	MC_REAL(mc_real_execv, "execv");
	mc_before_exec();
	return mc_real_execv(path, argv);
}

MC_EXPORT int execvp(const char *file, char *const argv[])
{
	MC_REAL(mc_real_execvp, "execvp");
	mc_before_exec();
	return mc_real_execvp(file, argv);
}

/* execl*: gather the variadic arguments, then go through the wrappers above */
#define MC_GATHER_ARGS(arg0, ap, argv)                                                     \
	size_t mc_argc_ = 1;                                                               \
	va_start(ap, arg0);                                                                \
	while (va_arg(ap, char *))                                                         \
		mc_argc_++;                                                                \
	va_end(ap);                                                                        \
	char *argv[mc_argc_ + 1];                                                          \
	argv[0] = (char *)(arg0);                                                          \
	va_start(ap, arg0);                                                                \
	for (size_t i_ = 1; i_ <= mc_argc_; i_++)                                          \
		argv[i_] = va_arg(ap, char *)

MC_EXPORT int execl(const char *path, const char *arg0, ...)
{
	va_list ap;
	MC_GATHER_ARGS(arg0, ap, argv);
	va_end(ap);
	return execv(path, argv);
}

MC_EXPORT int execlp(const char *file, const char *arg0, ...)
{
	va_list ap;
	MC_GATHER_ARGS(arg0, ap, argv);
	va_end(ap);
	return execvp(file, argv);
}

MC_EXPORT int execle(const char *path, const char *arg0, ...)
{
	va_list ap;
	MC_GATHER_ARGS(arg0, ap, argv);
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	return execve(path, argv, envp);
}

MC_EXPORT __attribute__((noreturn)) void _exit(int status)
{
	if (mc_in_own_process())
		rec_session_finish();
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

MC_EXPORT __attribute__((noreturn)) void _Exit(int status)
{
	_exit(status);
}
