/*
 * mcount_wrap: library functions libmcount interposes to keep the shadow stack and the
 * trace consistent with control flow that does not return normally.
 *
 *   longjmp family      frames between the jump and its target get their exits (none when
 *                       the target is a setjmp traced through the PLT, as uftrace does)
 *   __cxa_throw/rethrow the real return addresses go back in place, so the unwinder can walk
 *                       the stack; __cxa_begin_catch gives exits to the unwound frames and
 *                       hijacks the survivors again
 *   pthread_exit        real return addresses back (forced unwind); the frames end with no
 *                       exit record: the thread ends inside them (uftrace's way)
 *   dlopen              a library loaded while recording gets its DLOP line and .sym file
 *                       (uftrace's way), so readers name its functions
 *   _dl_find_object     libgcc's unwinder asks it for every frame it steps through: the
 *                       real return addresses go back before it reads the first hijacked
 *                       slot, so any stack walk (pthread_cancel's forced unwind, backtrace(),
 *                       an exception thrown where __cxa_throw is not seen) finds the real
 *                       callers instead of mcount_return, which has no unwind information:
 *                       without this a cancelled thread crashed the program
 *   backtrace           the same walk, but the frames live on: their returns are hijacked
 *                       again after it (as uftrace's wrapper does), or none would have an exit
 * exec* and _exit are librecord's (rec_wrap_exec.c): the trace is finished first.
 * The real functions are found with dlsym(RTLD_NEXT) when first needed. Attached to a running
 * process (`flightrec record -p`), they are reached through the GOT slots the tracer points
 * at them, as the hooks are, but dlopen, exec*, posix_spawn and _exit.
 */
#include "libmcount/internal.h"
#include "libmcount/mcount_plt.h"
#include "libmcount/mcount_dynamic.h"
#include "librecord/rec_dlcaller.h"
#include "librecord/rec_util.h"
#include "formats/uftrace/sink_uftrace.h"

#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MC_EXPORT __attribute__((visibility("default")))

static void *mc_real(const char *name)
{
	/* attached (mcount_attach.c), we were loaded by dlopen, RTLD_LOCAL: the objects after us
	 * are our own dependencies only (no libstdc++), and the program's global scope never
	 * holds us, so its first definition is the real one */
	void *p = dlsym(mc_attached ? RTLD_DEFAULT : RTLD_NEXT, name);
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

	if (!t)
		return;
	/* to a setjmp traced through the PLT: the skipped frames end as uftrace ends them, with
	 * no exit record (mcount_plt.c), else each gets its exit now */
	if (mc_plt_setjmp_known(env))
		mc_unwind_quiet(t, mc_jmpbuf_sp(env));
	else
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
	mc_plt_fix_pending(); /* the next pthread_exit through the PLT is traced too */
	if (t)
		mc_exit_all(t);
	mc_real_pthread_exit(ret);
}

/* --- stack walks ---------------------------------------------------------------------- */

struct dl_find_object;
typedef int (*mc_find_object_fn)(void *, struct dl_find_object *);
static mc_find_object_fn mc_real_find_object;

/* Found before any unwinding: the unwinder may run where dlsym could not (a signal handler,
 * under the loader's lock). */
__attribute__((constructor)) static void mc_find_object_init(void)
{
	*(void **)&mc_real_find_object = dlvsym(RTLD_NEXT, "_dl_find_object", "GLIBC_2.35");
}

/* Called by libgcc's unwinder for each frame's pc, before it reads that frame's return slot:
 * put the thread's real return addresses back (once: restored frames are skipped), as the
 * __cxa_throw wrapper does; the hold that follows ends at a catch, when the restored frames
 * are gone, or at thread exit. */
static void mc_unwinder_asks(void)
{
	struct rec_thread *t = mc_self();
	int saved = errno;

	if (t && !t->busy && mc_returns_hijacked(t)) {
		t->busy = 1;
		__asm__ __volatile__("" ::: "memory");
		mc_restore_returns(t);
		__asm__ __volatile__("" ::: "memory");
		t->busy = 0;
	}
	errno = saved;
}

MC_EXPORT int _dl_find_object(void *pc, struct dl_find_object *result)
{
	mc_unwinder_asks();
	if (!mc_real_find_object)
		return -1; /* glibc < 2.35: nobody calls this */
	return mc_real_find_object(pc, result);
}

/* backtrace(): the walk finds the real callers (the real return addresses are put back, by
 * the _dl_find_object wrapper or here); every frame walked is alive and returns later, so
 * their returns are hijacked again when it is done, unless a throw or a forced unwind had
 * them restored already (its catch or the thread's exit ends that hold). */
typedef int (*mc_backtrace_fn)(void **, int);
static mc_backtrace_fn mc_real_backtrace;

MC_EXPORT int backtrace(void **buf, int size)
{
	struct rec_thread *t = mc_self();
	int n, walked = 0;

	MC_REAL(mc_real_backtrace, "backtrace");
	if (!mc_real_backtrace)
		return 0;
	if (t && !t->busy && !mc_in_exception(t) && mc_returns_hijacked(t)) {
		mc_unwinder_asks();
		walked = 1;
	}
	n = mc_real_backtrace(buf, size);
	if (walked && mc_in_exception(t)) {
		int saved = errno;
		t->busy = 1;
		__asm__ __volatile__("" ::: "memory");
		mc_rehijack_returns(t);
		__asm__ __volatile__("" ::: "memory");
		t->busy = 0;
		errno = saved;
	}
	return n;
}

/* --- libraries loaded while recording --------------------------------------------------- */

typedef void *(*mc_dlopen_fn)(const char *, int);
static mc_dlopen_fn mc_real_dlopen;

/* The program's return address in SLOT, the return-address slot of a wrapper: a call that came
 * through the PLT hooker has mc_plt_return there, and the real one in the hooker's frame. */
static const void *mc_caller_in(uintptr_t *slot)
{
	struct rec_thread *t = rec_self;
	struct mc_thread *mt;

	if ((uintptr_t)t > REC_THREAD_SENTINEL_MAX) {
		mt = mc_thread_of(t);
		for (uint32_t i = mt->depth; i-- > 0;) {
			const struct mc_frame *f = &mt->rstack[i];

			if (f->kind != MC_FRAME_CYG && f->parent_loc == slot && !f->restored)
				return (const void *)f->parent_ip;
		}
	}
	return (const void *)*slot;
}

MC_EXPORT void *dlopen(const char *file, int mode)
{
	struct link_map *lm;
	void *h;

	MC_REAL(mc_real_dlopen, "dlopen");
	if (!mc_real_dlopen)
		return NULL;
	/* called as from the program: the loader searches its RUNPATH, expands its $ORIGIN */
	h = rec_dlopen_tracked(mc_real_dlopen, file, mode,
			       mc_caller_in((uintptr_t *)__builtin_frame_address(0) + 1), &lm);
	/* a module already loaded adds nothing: uftrace writes no DLOP for it either */
	if (lm) {
		int saved = errno;
		uftrace_note_dlopen(lm->l_name, (uintptr_t)lm->l_addr);
		mc_dyn_dlopen((uintptr_t)lm->l_addr, lm->l_name); /* -P/-U */
		errno = saved;
	}
	return h;
}
