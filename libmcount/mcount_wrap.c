/*
 * mcount_wrap: library functions libmcount interposes to keep the shadow stack and the
 * trace consistent with control flow that does not return normally.
 *
 *   longjmp family      frames between the jump and its target get their exits
 *   __cxa_throw/rethrow the real return addresses go back in place, so the unwinder can walk
 *                       the stack; __cxa_begin_catch gives exits to the unwound frames and
 *                       hijacks the survivors again
 *   pthread_exit        exits for every frame, real return addresses back (forced unwind)
 * exec* and _exit are librecord's (rec_wrap_exec.c): the trace is finished first.
 * The real functions are found with dlsym(RTLD_NEXT) when first needed.
 */
#include "libmcount/internal.h"
#include "librecord/rec_util.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MC_EXPORT __attribute__((visibility("default")))

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
