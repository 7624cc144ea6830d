/*
 * mcount_hooks: the hot path of libmcount, called by the trampolines (mcount, __fentry__,
 * mcount_return) and directly by -finstrument-functions code.
 *
 * Compiled with -mgeneral-regs-only: nothing here touches SSE/x87 registers, so the
 * trampolines save only the integer argument/return registers; slow paths are reached
 * through librecord's fxsave thunks (REC_HOOK_FPSAFE).
 *
 * Per event: one TLS load, the busy guard, a shadow-stack push or pop, rdtsc, a 16-byte
 * record and a store-release of the committed length. No lock, no atomic RMW, no syscall.
 *
 * The busy guard: a hook that runs while another hook of the same thread is in progress (a
 * signal handler) records nothing and counts what it lost. A -pg frame entered then is not
 * hijacked (no exit will come); a -finstrument-functions frame is counted in `nested` so its
 * exit, which also comes before the interrupted hook resumes, is matched.
 *
 * Record-time filters (-F -N -D -t, mcount_filter.h): when one is set, mc_fast_max_stack is 0
 * so every hook comes here, and the complete hooks take their filtering branch (mc_filter_*
 * below, uftrace 0.13's mcount_entry_filter_check / mcount_exit_filter_record /
 * record_trace_data). Without a filter that branch is one predicted test on the complete
 * paths, and the fast paths are as they were.
 */
#define REC_HOOK_FPSAFE 1
#include "libmcount/internal.h"
#include "formats/uftrace/uftrace_format.h"

#include "libmcount/mcount_asm.h"
#include "libmcount/mcount_filter.h"
#include "libmcount/mcount_args.h"
#include "libmcount/mcount_read.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef MC_CLOCK
#define MC_CLOCK() rec_clock_ns()
#endif
#define barrier() __asm__ __volatile__("" ::: "memory")

/* the offsets the assembly fast paths use (mcount_asm.h) */
_Static_assert(REC_T_FE + offsetof(struct mc_thread, depth) == MC_X_DEPTH, "MC_X_DEPTH");
_Static_assert(REC_T_FE + offsetof(struct mc_thread, rstack) == MC_X_STACK, "MC_X_STACK");
_Static_assert(sizeof(struct mc_frame) == 1u << MC_FRAME_SHIFT, "MC_FRAME_SHIFT");
_Static_assert(offsetof(struct mc_frame, parent_loc) == MC_F_PARENT_LOC, "MC_F_PARENT_LOC");
_Static_assert(offsetof(struct mc_frame, parent_ip) == MC_F_PARENT_IP, "MC_F_PARENT_IP");
_Static_assert(offsetof(struct mc_frame, child_ip) == MC_F_CHILD_IP, "MC_F_CHILD_IP");
_Static_assert(offsetof(struct mc_frame, kind) == MC_F_KIND &&
		       offsetof(struct mc_frame, restored) == MC_F_KIND + 4,
	       "MC_F_KIND: one 8-byte store clears kind and restored");
_Static_assert(MC_FRAME_HIJACK == 0, "the fast path stores kind = 0");
_Static_assert(offsetof(struct rec_clock, base_tsc) == MC_CLK_BASE_TSC, "MC_CLK_BASE_TSC");
_Static_assert(offsetof(struct rec_clock, base_ns) == MC_CLK_BASE_NS, "MC_CLK_BASE_NS");
_Static_assert(offsetof(struct rec_clock, mult) == MC_CLK_MULT, "MC_CLK_MULT");

uint32_t mc_max_stack = 1024;
uint32_t mc_fast_max_stack;

static inline void mc_record(struct rec_thread *t, unsigned type, unsigned depth, uintptr_t addr)
{
	struct uftrace_record *r = rec_reserve(t, sizeof(*r));
	if (unlikely(!r))
		return;
	r->time = MC_CLOCK();
	r->word = uftrace_record_word(type, depth, addr);
	rec_commit(t);
}

static inline void mc_record_at(struct rec_thread *t, unsigned type, unsigned depth,
				uintptr_t addr, uint64_t time)
{
	struct uftrace_record *r = rec_reserve(t, sizeof(*r));
	if (unlikely(!r))
		return;
	r->time = time;
	r->word = uftrace_record_word(type, depth, addr);
	rec_commit(t);
}

static void mc_fthread_init(struct mc_fthread *fs)
{
	*fs = (struct mc_fthread){ .ready = 1,
				   .fdepth = mc_fconf.depth ? mc_fconf.depth : UINT32_MAX,
				   .time = mc_fconf.time,
				   .size = mc_fconf.min_size,
				   .enable_cached = mc_tracing_on };
}

/* Frame d is written (-t, a caller filter, a trace_off or finish trigger): first the entries of
 * the recorded frames under it that are not (from the newest written one up; never those
 * entered while tracing was off), then its own (uftrace's record_trace_data). regs, stack:
 * what frame d's entry hook saw (mcount_entry), so that its entry is written with its
 * arguments (-A); NULL from an exit. */
static void mc_filter_flush(struct rec_thread *t, struct mc_thread *mt, uint32_t d,
			    const uintptr_t *regs, const uintptr_t *stack)
{
	uint32_t i = d;

	while (i > 0 && !(mc_fframe_of(mt, i - 1)->flags & MC_FF_WRITTEN))
		i--;
	for (; i <= d; i++) {
		struct mc_fframe *ff = mc_fframe_of(mt, i);
		if (ff->flags & (MC_FF_NORECORD | MC_FF_WRITTEN | MC_FF_DISABLED))
			continue;
		uintptr_t ip = mt->rstack[i].child_ip;

		/* -A: with its arguments if it has a spec, those its entry hook saw (regs) or
		 * those kept while it was held (mc_args_hold) */
		if (!(mc_args_on &&
		      (i == d && regs ?
			       mcount_args_capture(t, ff->rec_depth, ip, ff->start, regs, stack) :
			       mc_args_write_held(t, i, ff->rec_depth, ip, ff->start))))
			mc_record_at(t, UFTRACE_ENTRY, ff->rec_depth, ip, ff->start);
		/* read=: its values right after its entry (uftrace's record_ret_stack) */
		if (unlikely(ff->flags & MC_FF_READ))
			mc_read_write_entry(t, i, ff->start);
		ff->flags |= MC_FF_WRITTEN;
	}
}

/* recover: the hijacked frames below d (-pg and library calls) get their real return
 * addresses while d runs (uftrace's mcount_rstack_restore at its entry, mcount_rstack_reset at
 * its exit) */
static void mc_recover(struct mc_thread *mt, uint32_t d, int back)
{
	for (uint32_t i = 0; i < d; i++) {
		struct mc_frame *f = &mt->rstack[i];
		if (f->kind == MC_FRAME_CYG || f->restored == (uint32_t)back)
			continue;
		*f->parent_loc = back ? f->parent_ip : mc_frame_tramp(f->kind);
		f->restored = (uint32_t)back;
	}
}

/*
 * A new frame at depth d, function ip, under the filters and triggers: uftrace 0.13's
 * mcount_entry_filter_check then mcount_entry_filter_record. 0: -pg frames left out entirely
 * (uftrace's FILTER_OUT: not hijacked, no shadow-stack entry; skip_ok; what the check changed
 * stays changed, as in uftrace); else the frame's filter state is set (a frame left out with
 * skip_ok 0, a -finstrument-functions one, whose exit hook comes anyway, is kept with
 * MC_FF_NORECORD) and its entry written, unless it is held (a time filter, a caller filter,
 * tracing off) for its exit or a descendant to write.
 */
static int mc_filter_enter(struct rec_thread *t, struct mc_thread *mt, uint32_t d, uintptr_t ip,
			   int skip_ok, const uintptr_t *regs, const uintptr_t *stack)
{
	struct mc_fthread *fs = mc_fthread_of(mt);
	struct mc_fframe *ff = mc_fframe_of(mt, d);
	const struct mc_frange *r = NULL;
	uint32_t trf = 0, flags = 0;

	if (unlikely(!fs->ready))
		mc_fthread_init(fs);
	mt->rstack[d].child_ip = ip; /* a flush below writes it */
	ff->saved_fdepth = fs->fdepth;
	ff->saved_time = fs->time;
	ff->saved_size = fs->size;
	ff->rec_depth = (uint16_t)fs->rec_depth;
	if (mc_finished || fs->out_count)
		goto out; /* finished, or under a -N function */
	r = mc_ftable_find(&mc_fconf.table, ip);
	if (r)
		trf = r->tr.flags;
	if (trf & MC_TR_FILTER) {
		if (r->tr.fmode == MC_FILTER_IN) {
			fs->in_count++;
			flags = MC_FF_IN;
		} else {
			fs->out_count++;
			flags = MC_FF_OUT;
		}
		/* a match starts the -D count again */
		fs->fdepth = mc_fconf.depth ? mc_fconf.depth : UINT32_MAX;
	} else if (mc_fconf.table.has_in && !fs->in_count) {
		goto out; /* outside every -F function */
	}
	/* -L: this function alone, after the -F count (uftrace's order) */
	if ((trf & MC_TR_LOC_OUT) || (mc_fconf.table.has_loc_in && !(trf & MC_TR_LOC_IN)))
		goto out;
	if (trf & (MC_TR_DEPTH | MC_TR_TRACE_ON | MC_TR_TRACE_OFF | MC_TR_TIME | MC_TR_SIZE)) {
		if (trf & MC_TR_DEPTH)
			fs->fdepth = r->tr.depth;
		if (trf & MC_TR_TRACE_ON)
			mc_tracing_on = 1;
		if (trf & MC_TR_TRACE_OFF)
			mc_tracing_on = 0;
		if (trf & MC_TR_TIME)
			fs->time = r->tr.time;
		if (trf & MC_TR_SIZE)
			fs->size = r->tr.size;
	}
	if (fs->fdepth == 0)
		goto out; /* too deep */
	fs->fdepth--;
	/* uftrace's mcount_entry_filter_record */
	if (fs->out_count || (mc_fconf.table.has_in && !fs->in_count) ||
	    (fs->size && (r ? r->symsize : 0) < fs->size))
		flags |= MC_FF_NORECORD;
	if (trf & MC_TR_CALLER)
		flags |= MC_FF_CALLER;
	if (trf & MC_TR_TRACE)
		flags |= MC_FF_TRACE;
	ff->flags = (uint16_t)flags;
	ff->start = MC_CLOCK();
	if (unlikely(trf & MC_TR_FINISH)) {
		/* what is held is written, this entry too (without -A's values: uftrace's
		 * finish returns before save_argument); then nothing more */
		if (d > 0)
			mc_filter_flush(t, mt, d - 1, NULL, NULL);
		if (!(flags & MC_FF_NORECORD)) {
			mc_record_at(t, UFTRACE_ENTRY, ff->rec_depth, ip, ff->start);
			ff->flags |= MC_FF_WRITTEN;
		}
		mc_finished = 1;
		return 1;
	}
	if (flags & MC_FF_NORECORD)
		return 1;
	fs->rec_depth++;
	if (unlikely(trf & MC_TR_READ) && mc_tracing_on) {
		/* read= (uftrace reads only while tracing is on), before a flush writes it */
		mc_read_enter(t, d, r->tr.read);
		ff->flags |= MC_FF_READ;
	}
	if (!mc_tracing_on) {
		ff->flags |= MC_FF_DISABLED;
		if (fs->enable_cached)
			/* the held entries below, not its own */
			mc_filter_flush(t, mt, d, NULL, NULL);
	} else if (!fs->time && !mc_fconf.table.has_caller) {
		/* written now (uftrace writes it at its exit or a descendant's, all the same
		 * without a time filter); with the entries held below it (time=0 under -t) */
		mc_filter_flush(t, mt, d, regs, stack);
	} else if (mc_args_on && regs) {
		/* held (a time or caller filter): -A's values are kept with it */
		mc_args_hold(t, d, ip, regs, stack);
	}
	if ((trf & MC_TR_RECOVER) && skip_ok) {
		mc_recover(mt, d, 1);
		ff->flags |= MC_FF_RECOVER;
	}
	if (trf & (MC_TR_TRACE_ON | MC_TR_TRACE_OFF))
		fs->enable_cached = mc_tracing_on;
	return 1;
out:
	if (skip_ok)
		return 0;
	ff->flags = (uint16_t)(flags | MC_FF_NORECORD);
	return 1;
}

/* Frame d (just taken off the shadow stack) ends: the filter state it changed goes back, and
 * its exit is written if it is recorded (write 0: it cannot be now, counted lost;
 * MC_EXIT_QUIET: a frame a longjmp to a traced setjmp skipped, no exit as uftrace writes
 * none); uftrace's mcount_exit_filter_record. */
#define MC_EXIT_QUIET 2
static void mc_filter_exit(struct rec_thread *t, struct mc_thread *mt, uint32_t d, int write,
			   const uintptr_t *rv)
{
	struct mc_fthread *fs = mc_fthread_of(mt);
	struct mc_fframe *ff = mc_fframe_of(mt, d);
	uint64_t limit = fs->time, now;

	if (ff->flags & MC_FF_IN)
		fs->in_count--;
	else if (ff->flags & MC_FF_OUT)
		fs->out_count--;
	if (unlikely(ff->flags & MC_FF_RECOVER) && !mc_in_exception(t))
		mc_recover(mt, d, 0); /* (an unwinder going through keeps them restored) */
	fs->fdepth = ff->saved_fdepth;
	fs->time = ff->saved_time;
	fs->size = ff->saved_size;
	if (ff->flags & MC_FF_NORECORD)
		return;
	fs->rec_depth = ff->rec_depth;
	if (write == MC_EXIT_QUIET)
		return;
	if (!write) {
		if (ff->flags & MC_FF_WRITTEN)
			rec_count_lost(t, REC_LOST_NESTED, 1);
		return;
	}
	if (!mc_tracing_on || mc_finished)
		return;
	now = MC_CLOCK();
	if (!(ff->flags & (MC_FF_WRITTEN | MC_FF_TRACE))) {
		/* uftrace keeps a function longer than the threshold, not one as long; with no
		 * threshold (none, or time=0), every one: on a clock that moves in steps (this
		 * VM's TSC: 10 ns) a call between two quick hooks can last 0 ns, and a caller
		 * filter's held frame of 0 ns went, its callers' with it (e2e filter/caller: 1
		 * run in 5; uftrace's slower hooks never read 0). With a caller filter, only the
		 * callers' frames write */
		if ((limit && now - ff->start <= limit) ||
		    (mc_fconf.table.has_caller && !(ff->flags & MC_FF_CALLER)))
			return;
	}
	mc_filter_flush(t, mt, d, NULL, NULL);
	/* read=: the differences since its entry, before its exit */
	if (unlikely(ff->flags & MC_FF_READ))
		mc_read_exit(t, d, now, 1);
	/* -R: with its return value if it has a spec and returned (rv) */
	if (!(mc_args_on && rv && mc_args_exit(t, ff->rec_depth, mt->rstack[d].child_ip, now, rv)))
		mc_record_at(t, UFTRACE_EXIT, ff->rec_depth, mt->rstack[d].child_ip, now);
}

size_t mc_filter_area_size(void)
{
	if (!mc_fconf.active)
		return 0;
	return sizeof(struct mc_fthread) + (size_t)mc_max_stack * sizeof(struct mc_fframe);
}

/* Pop the top frame with an exit record (a frame whose return we will not see). */
static void mc_pop_frame(struct rec_thread *t, struct mc_thread *mt)
{
	uint32_t d = --mt->depth;

	if (unlikely(mc_fconf.active))
		mc_filter_exit(t, mt, d, 1, NULL);
	else
		mc_record(t, UFTRACE_EXIT, d, mt->rstack[d].child_ip);
}

/* Keep a frame taken off the shadow stack that may return later (struct mc_grave). */
static void mc_bury(struct mc_thread *mt, const struct mc_frame *f)
{
	if (!mt->graves) {
		void *p = mmap(NULL, MC_GRAVES * sizeof(struct mc_grave), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return;
		mt->graves = p;
	}
	mt->graves[mt->grave_next % MC_GRAVES] =
		(struct mc_grave){ .parent_loc = f->parent_loc, .parent_ip = f->parent_ip };
	mt->grave_next++;
}

/* Read a word that may not be mapped any more (a stack freed since): 0 if it is not. */
static int mc_peek(uintptr_t addr, uintptr_t *out)
{
	struct iovec local = { out, sizeof(*out) }, remote = { (void *)addr, sizeof(*out) };
	int saved = errno;
	ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);

	errno = saved;
	return n == (ssize_t)sizeof(*out);
}

/*
 * Pop the top frame with an exit record, because control left it without its return: a jump
 * we did not see (the frame is dead, below the current stack pointer), or a switch to another
 * stack (swapcontext, a coroutine library's own switch: the frame is alive there and returns
 * some day, through its slot). Its real return address goes back in its slot if the slot is
 * still mapped and still holds mcount_return, so that an alive frame returns without us
 * (before, it came back to a shadow stack that no longer had it and returned into the wrong
 * function). For a dead frame the write lands in unused stack, harmless, except where the
 * caller's own frames are now: slots in [busy_lo, busy_hi) are left alone.
 */
#define MC_FORGET_BURY 1  /* keep it among the graves */
#define MC_FORGET_QUIET 2 /* no exit record (uftrace's longjmp to a traced setjmp) */
static void mc_forget_frame(struct rec_thread *t, struct mc_thread *mt, uintptr_t busy_lo,
			    uintptr_t busy_hi, int how)
{
	struct mc_frame *f = &mt->rstack[mt->depth - 1];
	uintptr_t loc = (uintptr_t)f->parent_loc, now;

	if (f->kind != MC_FRAME_CYG && !f->restored) {
		if (how & MC_FORGET_BURY)
			mc_bury(mt, f);
		if ((loc < busy_lo || loc >= busy_hi) && mc_peek(loc, &now) &&
		    now == mc_frame_tramp(f->kind))
			*f->parent_loc = f->parent_ip;
	}
	if (how & MC_FORGET_QUIET) {
		uint32_t d = --mt->depth;

		if (mc_fconf.active)
			mc_filter_exit(t, mt, d, MC_EXIT_QUIET, NULL);
	} else {
		mc_pop_frame(t, mt);
	}
}

/* A return through mcount_return that no live frame owns: a buried frame's (newest first),
 * taken out of the ring. 0 if there is none. */
static uintptr_t mc_unbury(struct mc_thread *mt, uintptr_t *slot)
{
	if (!mt->graves)
		return 0;
	for (uint32_t i = 1; i <= MC_GRAVES; i++) {
		struct mc_grave *g = &mt->graves[(mt->grave_next - i) % MC_GRAVES];
		if (g->parent_loc == slot) {
			g->parent_loc = NULL;
			return g->parent_ip;
		}
	}
	return 0;
}

__attribute__((noreturn)) static void mc_fatal(const char *msg, size_t len)
{
	(void)!write(STDERR_FILENO, msg, len);
	abort();
}

/*
 * A hijacked return in a vfork child that has no state of its own (rec_thread.h): the frame
 * is the parent's, still on the parent's shadow stack, which the parent returns through once
 * the child has exec'ed or died. Its real return address is read, nothing is written: the
 * newest frame with this slot (vfork's own on the child's first return), else a buried one.
 */
static __attribute__((noinline)) uintptr_t mc_vfork_child_exit(uintptr_t *slot, uint32_t kind,
								uintptr_t *child_ip)
{
	static const char no_stack[] = "flightrec: libmcount: a hijacked return has no shadow "
				       "stack entry; aborting\n";
	struct rec_thread *p = rec_vfork_stateless_parent();
	struct mc_thread *mt;

	if (!p)
		mc_fatal(no_stack, sizeof(no_stack) - 1);
	mt = mc_thread_of(p);
	for (uint32_t d = mt->depth; d-- > 0;) {
		if (mt->rstack[d].parent_loc == slot && mt->rstack[d].kind == kind) {
			if (child_ip)
				*child_ip = mt->rstack[d].child_ip;
			return mt->rstack[d].parent_ip;
		}
	}
	for (uint32_t i = 1; mt->graves && i <= MC_GRAVES; i++) {
		const struct mc_grave *g = &mt->graves[(mt->grave_next - i) % MC_GRAVES];

		if (g->parent_loc == slot)
			return g->parent_ip;
	}
	mc_fatal(no_stack, sizeof(no_stack) - 1);
}

void mcount_entry(uintptr_t *parent_loc, uintptr_t child_ip, const uintptr_t *regs)
{
	mc_hijack_entry(parent_loc, child_ip, MC_FRAME_HIJACK, regs);
}

/* regs: the entry hook's saved registers for -A (SAVE_ARGS's layout, mcount_save_asm.h: the
 * -pg trampolines' and the PLT hooker's), NULL where there are none */
void mc_hijack_entry(uintptr_t *parent_loc, uintptr_t child_ip, uint32_t kind,
		     const uintptr_t *regs)
{
	struct rec_thread *t = rec_thread_get();
	struct mc_thread *mt;
	struct mc_frame *f;
	uint32_t d;

	if (unlikely(!t || mc_tp_mode))
		return; /* mc_tp_mode: the tfile entry points could not be patched in */
	if (unlikely(t->busy)) {
		rec_count_lost(t, REC_LOST_NESTED, 2);
		return;
	}
	t->busy = 1;
	barrier();
	mt = mc_thread_of(t);
	if (unlikely(mc_in_exception(t))) {
		/* unwinding: frames at or below this new frame's slot are gone */
		while (mt->depth && mt->rstack[mt->depth - 1].parent_loc <= parent_loc)
			mc_pop_frame(t, mt);
		/* restored frames are a bottom prefix of the stack: none left, nothing more to
		 * catch up with, the fast paths may run again (a stack walk that was not an
		 * exception, e.g. backtrace(), leaves no catch to end the hold) */
		if (mt->depth == 0 || !mt->rstack[0].restored)
			mc_in_exception(t) = 0;
	}
	d = mt->depth;
	if (unlikely(d >= mc_max_stack)) {
		/* not hijacked: neither its entry nor its exit will be in the trace */
		rec_count_lost(t, REC_LOST_DEPTH, 2);
		goto out;
	}
	/* a frame the filters leave out is not hijacked: no exit will come */
	if (unlikely(mc_fconf.active) &&
	    !mc_filter_enter(t, mt, d, child_ip, kind != MC_FRAME_PLT, regs, parent_loc))
		goto out;
	f = &mt->rstack[d];
	f->parent_loc = parent_loc;
	f->parent_ip = *parent_loc;
	f->child_ip = child_ip;
	f->kind = kind;
	f->restored = 0;
	*parent_loc = mc_frame_tramp(kind);
	mt->depth = d + 1;
	if (likely(!mc_fconf.active))
		mc_record(t, UFTRACE_ENTRY, d, child_ip);
out:
	barrier();
	t->busy = 0;
}

/* `sp` is the stack pointer mcount_return arrived with: the slot just consumed is sp - 1. */
uintptr_t mcount_exit(uintptr_t *sp)
{
	return mc_hijack_exit(sp, MC_FRAME_HIJACK, NULL);
}

uintptr_t mc_hijack_exit(uintptr_t *sp, uint32_t kind, uintptr_t *child_ip)
{
	static const char no_stack[] = "flightrec: libmcount: a hijacked return has no shadow "
				       "stack entry; aborting\n";
	struct rec_thread *t = rec_self;
	struct mc_thread *mt;
	uintptr_t *slot = sp - 1, ret;
	uint32_t d;
	uint8_t busy;

	if (child_ip)
		*child_ip = 0;
	if (unlikely((uintptr_t)t <= REC_THREAD_SENTINEL_MAX))
		return mc_vfork_child_exit(slot, kind, child_ip);
	mt = mc_thread_of(t);
	busy = t->busy;
	t->busy = 1;
	barrier();
	/* the frame this return belongs to: the newest with this slot (the fast path declined,
	 * so it is not the top one, or the thread is busy) */
	for (d = mt->depth; d-- > 0;)
		if (mt->rstack[d].parent_loc == slot && mt->rstack[d].kind == kind)
			break;
	if (unlikely(d == UINT32_MAX)) {
		/* a frame forgotten while its stack was switched away, back now */
		ret = mc_unbury(mt, slot);
		if (!ret)
			mc_fatal(no_stack, sizeof(no_stack) - 1);
		barrier();
		t->busy = busy;
		return ret;
	}
	/* the frames above it lost their returns: skipped by a jump we did not see (dead, below
	 * this slot) or left on another stack by a switch (alive: they get their real return
	 * addresses back, and are buried for a return through a copy of their slot). Our own
	 * frames are between this slot and a little below here. */
	while (mt->depth > d + 1)
		mc_forget_frame(t, mt, (uintptr_t)__builtin_frame_address(0) - 256, (uintptr_t)slot,
				MC_FORGET_BURY);
	ret = mt->rstack[d].parent_ip;
	if (child_ip)
		*child_ip = mt->rstack[d].child_ip;
	mt->depth = d;
	if (unlikely(mc_fconf.active))
		mc_filter_exit(t, mt, d, !busy, sp - 1); /* mcount_return pushed rax there */
	else if (likely(!busy))
		mc_record(t, UFTRACE_EXIT, d, mt->rstack[d].child_ip);
	else
		rec_count_lost(t, REC_LOST_NESTED, 1);
	barrier();
	t->busy = busy;
	return ret;
}

/* -finstrument-functions entry, every case; sp is the instrumented function's stack pointer */
__attribute__((noinline)) static void mc_cyg_enter_complete(void *fn, uintptr_t sp)
{
	struct rec_thread *t = rec_thread_get();
	struct mc_thread *mt;
	struct mc_frame *f;
	uint32_t d;

	if (unlikely(!t))
		return;
	mt = mc_thread_of(t);
	if (unlikely(t->busy)) {
		mt->nested++;
		rec_count_lost(t, REC_LOST_NESTED, 2);
		return;
	}
	t->busy = 1;
	barrier();
	d = mt->depth;
	if (unlikely(d >= mc_max_stack)) {
		mt->overflow++;
		rec_count_lost(t, REC_LOST_DEPTH, 2);
		goto out;
	}
	f = &mt->rstack[d];
	f->parent_loc = (uintptr_t *)sp;
	f->parent_ip = 0;
	f->child_ip = (uintptr_t)fn;
	f->kind = MC_FRAME_CYG;
	f->restored = 0;
	mt->depth = d + 1;
	if (unlikely(mc_fconf.active))
		/* its exit hook comes anyway; no arguments (uftrace 0.13 has none either) */
		mc_filter_enter(t, mt, d, (uintptr_t)fn, 0, NULL, NULL);
	else
		mc_record(t, UFTRACE_ENTRY, d, (uintptr_t)fn);
out:
	barrier();
	t->busy = 0;
}

/* -finstrument-functions exit, every case */
__attribute__((noinline)) static void mc_cyg_exit_complete(void *fn)
{
	struct rec_thread *t = rec_self;
	struct mc_thread *mt;
	uint32_t i;

	if (unlikely((uintptr_t)t <= REC_THREAD_SENTINEL_MAX))
		return; /* its entry was counted lost (or never seen) */
	mt = mc_thread_of(t);
	if (unlikely(t->busy)) {
		if (mt->nested)
			mt->nested--;
		return;
	}
	t->busy = 1;
	barrier();
	if (unlikely(mt->overflow)) {
		mt->overflow--;
		goto out;
	}
	/* the frame of fn; frames above it were skipped (longjmp) and get their exits now */
	i = mt->depth;
	while (i && mt->rstack[i - 1].child_ip != (uintptr_t)fn)
		i--;
	if (unlikely(i == 0))
		goto out; /* entered before recording started */
	while (mt->depth >= i)
		mc_pop_frame(t, mt);
out:
	barrier();
	t->busy = 0;
}

/*
 * The -finstrument-functions hooks are ordinary calls, so their fast paths are in C: no call
 * on the common path (the complete versions above are reached by a tail call), the busy guard
 * raised before the depth and write position are read, as in the trampolines.
 *
 * Patchable entries: the tfile format turns them into jumps (mcount_tp.c); 16 nops before
 * the entry (the jump's 5 bytes are the last of them) keep the entry itself aligned.
 */
__attribute__((visibility("default"), patchable_function_entry(18, 16))) void
__cyg_profile_func_enter(void *fn, void *call_site)
{
	/* the instrumented function's stack pointer: our frame pointer + saved rbp + return */
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0) + 16;
	struct rec_thread *t = rec_self;

	(void)call_site;
	/* two byte loads, as the trampolines': gcc merged the two tests into one 16-bit load,
	 * which cannot be forwarded from the byte store of busy the last hook made (a store
	 * forwarding stall on each entry) */
	if (likely((uintptr_t)t > REC_THREAD_SENTINEL_MAX &&
		   !(__atomic_load_n(&t->busy, __ATOMIC_RELAXED) |
		     __atomic_load_n(&t->fe_hold, __ATOMIC_RELAXED)))) {
		struct mc_thread *mt = mc_thread_of(t);
		struct uftrace_record *r;
		struct mc_frame *f;
		uint32_t d;

		t->busy = 1;
		barrier();
		d = mt->depth;
		r = (struct uftrace_record *)t->pos;
		if (likely(d < mc_fast_max_stack && (size_t)(t->end - (uint8_t *)r) >= sizeof(*r))) {
			f = &mt->rstack[d];
			f->parent_loc = (uintptr_t *)sp;
			f->parent_ip = 0;
			f->child_ip = (uintptr_t)fn;
			f->kind = MC_FRAME_CYG;
			f->restored = 0;
			mt->depth = d + 1;
			r->time = rec_clock_tsc_to_ns(rec_clock_tsc());
			/* d < 1024 here: no mask */
			r->word = UFTRACE_ENTRY | (UFTRACE_RECORD_MAGIC << 3) | ((uint64_t)d << 6) |
				  ((uintptr_t)fn << 16);
			t->pos = (uint8_t *)(r + 1);
			rec_commit(t);
			barrier();
			t->busy = 0;
			return;
		}
		barrier();
		t->busy = 0;
	}
	mc_cyg_enter_complete(fn, sp);
}

__attribute__((visibility("default"), patchable_function_entry(2))) void
__cyg_profile_func_exit(void *fn, void *call_site)
{
	struct rec_thread *t = rec_self;

	(void)call_site;
	if (likely((uintptr_t)t > REC_THREAD_SENTINEL_MAX && !t->busy)) {
		struct mc_thread *mt = mc_thread_of(t);
		struct uftrace_record *r;
		uint32_t d;

		t->busy = 1;
		barrier();
		d = mt->depth;
		r = (struct uftrace_record *)t->pos;
		if (likely(d && !mt->overflow && mt->rstack[d - 1].child_ip == (uintptr_t)fn &&
			   mc_fast_max_stack && (size_t)(t->end - (uint8_t *)r) >= sizeof(*r))) {
			mt->depth = d - 1;
			r->time = rec_clock_tsc_to_ns(rec_clock_tsc());
			r->word = UFTRACE_EXIT | (UFTRACE_RECORD_MAGIC << 3) |
				  ((uint64_t)(d - 1) << 6) | ((uintptr_t)fn << 16);
			t->pos = (uint8_t *)(r + 1);
			rec_commit(t);
			barrier();
			t->busy = 0;
			return;
		}
		barrier();
		t->busy = 0;
	}
	mc_cyg_exit_complete(fn);
}

/* the two hooks by names that bind to this library: dlopen'ed (attached), the exported ones
 * bind to libc's no-op __cyg_profile_func_* first (mcount_tp.c patches ours) */
extern __typeof__(__cyg_profile_func_enter) mc_cyg_enter_self
	__attribute__((alias("__cyg_profile_func_enter"), visibility("hidden")));
extern __typeof__(__cyg_profile_func_exit) mc_cyg_exit_self
	__attribute__((alias("__cyg_profile_func_exit"), visibility("hidden")));

static void mc_unwind(struct rec_thread *t, uintptr_t sp, int how)
{
	struct mc_thread *mt = mc_thread_of(t);
	uint8_t busy = t->busy;
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);

	t->busy = 1;
	barrier();
	/* frames below the target: ended by the jump (a switch to another stack leaves them
	 * alive there: their real return addresses go back). Ours and our callers' up to the
	 * jump wrapper are within a little of here. */
	while (mt->depth && (uintptr_t)mt->rstack[mt->depth - 1].parent_loc < sp)
		mc_forget_frame(t, mt, here - 256, here + 512, how);
	barrier();
	t->busy = busy;
}

void mc_unwind_to(struct rec_thread *t, uintptr_t sp)
{
	mc_unwind(t, sp, 0);
}

void mc_unwind_quiet(struct rec_thread *t, uintptr_t sp)
{
	mc_unwind(t, sp, MC_FORGET_QUIET);
}

uintptr_t mc_setjmp_return(uintptr_t *sp, uint32_t d, uintptr_t parent_ip, uintptr_t child_ip,
			   uint32_t rec_depth, int written)
{
	struct rec_thread *t = rec_self;
	uint8_t busy;

	if (unlikely((uintptr_t)t <= REC_THREAD_SENTINEL_MAX))
		return parent_ip;
	mc_unwind_quiet(t, (uintptr_t)sp);
	busy = t->busy;
	t->busy = 1;
	barrier();
	if (likely(!busy && !mc_fconf.active)) {
		mc_record(t, UFTRACE_EXIT, d, child_ip);
	} else if (!busy && written) {
		/* the filtering paths (-A/-R turn them on too): the depth its entry was written
		 * at, the return value longjmp gave it (mc_plt_return pushed rax at sp - 1); what
		 * follows is recorded as after its first return */
		mc_fthread_of(mc_thread_of(t))->rec_depth = rec_depth;
		if (mc_tracing_on && !mc_finished) {
			uint64_t now = MC_CLOCK();

			if (!(mc_args_on && mc_args_exit(t, rec_depth, child_ip, now, sp - 1)))
				mc_record_at(t, UFTRACE_EXIT, rec_depth, child_ip, now);
		}
	}
	barrier();
	t->busy = busy;
	return parent_ip;
}

void mc_restore_returns(struct rec_thread *t)
{
	struct mc_thread *mt = mc_thread_of(t);

	/* newest first: frames sharing a slot (tail calls) leave the oldest value in place.
	 * Restored frames are a bottom prefix (frames pushed since are above them): the first
	 * restored one ends the walk, so that a stack walk asking once per frame
	 * (mc_unwinder_asks) costs O(1) after its first question. */
	for (uint32_t i = mt->depth; i-- > 0;) {
		struct mc_frame *f = &mt->rstack[i];
		if (f->kind == MC_FRAME_CYG)
			continue;
		if (f->restored)
			break;
		*f->parent_loc = f->parent_ip;
		f->restored = 1;
	}
	mc_in_exception(t) = 1;
}

/*
 * The thread ends inside every frame on the shadow stack (pthread_exit, a cancellation): they
 * leave it with no exit record, the guard up meanwhile. None of them returns, and nothing of
 * the thread comes after them, so uftrace's readers show them as they show uftrace's own
 * recording of the same thread: open, listed under "uftrace stopped tracing with remaining
 * functions" (uftrace 0.13 writes no exit for them either, with or without --no-libcall).
 */
static void mc_drop_all(struct rec_thread *t, struct mc_thread *mt)
{
	uint8_t busy = t->busy;

	t->busy = 1;
	barrier();
	mt->depth = 0;
	if (mc_fconf.active)
		*mc_fthread_of(mt) = (struct mc_fthread){ 0 };
	mc_in_exception(t) = 0;
	barrier();
	t->busy = busy;
}

int mc_returns_hijacked(struct rec_thread *t)
{
	struct mc_thread *mt = mc_thread_of(t);

	/* the newest -pg frame tells: restored frames are a bottom prefix */
	for (uint32_t i = mt->depth; i-- > 0;)
		if (mt->rstack[i].kind != MC_FRAME_CYG)
			return !mt->rstack[i].restored;
	return 0;
}

void mc_thread_exit(struct rec_thread *t)
{
	struct mc_thread *mt = mc_thread_of(t);

	if (mt->graves) {
		munmap(mt->graves, MC_GRAVES * sizeof(struct mc_grave));
		mt->graves = NULL;
	}
	if (mc_args_on)
		mc_args_thread_exit();
	if (mc_fconf.active)
		mc_read_thread_exit();
	if (t->busy || !mt->depth)
		return;
	/* the frames are gone (the thread was cancelled, its stack unwound to start_thread):
	 * they end without exits, and no write to their old return-address slots */
	mc_drop_all(t, mt);
}

void mc_rehijack_returns(struct rec_thread *t)
{
	struct mc_thread *mt = mc_thread_of(t);

	for (uint32_t i = 0; i < mt->depth; i++) {
		struct mc_frame *f = &mt->rstack[i];
		if (f->kind != MC_FRAME_CYG && f->restored) {
			*f->parent_loc = mc_frame_tramp(f->kind);
			f->restored = 0;
		}
	}
	mc_in_exception(t) = 0;
}

void mc_attach_close_frames(struct rec_thread *t)
{
	struct mc_thread *mt = mc_thread_of(t);
	uint64_t now = MC_CLOCK();

	if (t->busy || mc_fconf.active)
		return; /* (filters: their held entries decide; left open) */
	t->busy = 1;
	barrier();
	for (uint32_t d = mt->depth; d-- > 0;)
		mc_record_at(t, UFTRACE_EXIT, d, mt->rstack[d].child_ip, now);
	barrier();
	t->busy = 0;
}

void mc_exit_all(struct rec_thread *t)
{
	struct mc_thread *mt = mc_thread_of(t);

	/* -t: the entries held for the frames the thread ends in are written, with no exit
	 * (uftrace's pthread_exit "records the final call": the newest frame's, unless it is
	 * not recorded, and the held ones under it) */
	if (unlikely(mc_fconf.active) && mt->depth && !t->busy && !mc_finished &&
	    mc_tracing_on && !(mc_fframe_of(mt, mt->depth - 1)->flags & MC_FF_NORECORD)) {
		t->busy = 1;
		barrier();
		mc_filter_flush(t, mt, mt->depth - 1, NULL, NULL);
		barrier();
		t->busy = 0;
	}
	mc_restore_returns(t);
	mc_drop_all(t, mc_thread_of(t));
}
