/*
 * mcount_fast: the common case of the -pg/__fentry__ entry and of the hijacked return, as
 * leaf functions: no call, so no callee-saved register to spill and no frame (this file is
 * built with -fomit-frame-pointer and -mgeneral-regs-only). The trampolines save the
 * registers these may clobber and, when one answers "not handled", call the complete
 * version in mcount_hooks.c, which handles every case (first event of a thread, busy
 * guard, depth limit, unwinding, full chunk, no TSC).
 *
 * The fast path writes exactly what the complete version would, in the same order with
 * respect to the busy guard, so the two can be mixed freely within one thread.
 */
#include "libmcount/internal.h"
#include "librecord/uftrace_format.h"

#define barrier() __asm__ __volatile__("" ::: "memory")

/* 0 when the entry is recorded; 1 when mcount_entry() must handle it */
int mcount_entry_fast(uintptr_t *parent_loc, uintptr_t child_ip)
{
	struct rec_thread *t = rec_self;
	struct mc_thread *mt;
	struct uftrace_record *r;
	struct mc_frame *f;
	uint32_t d;

	if (unlikely((uintptr_t)t <= REC_THREAD_SENTINEL_MAX))
		return 1;
	/* busy and fe_hold are tested as two byte loads: one 16-bit load right after the last
	 * hook's byte store to busy could not be forwarded from the store buffer and would
	 * stall. */
	if (unlikely(t->busy || t->fe_hold))
		return 1;
	/* The guard goes up before the depth and the write position are read: a signal handler
	 * that records between the test and this store leaves them consistent again when it
	 * returns, one that comes after it records nothing. (Read before the guard, they went
	 * stale under a signal storm: the handler's records were overwritten, and when it had
	 * switched chunks `pos` was left in the old chunk, past `end`, and ran off the ring.) */
	t->busy = 1;
	barrier();
	mt = mc_thread_of(t);
	d = mt->depth;
	r = (struct uftrace_record *)t->pos;
	/* mc_fast_max_stack is 0 when there is no TSC */
	if (unlikely(d >= mc_fast_max_stack || (size_t)(t->end - (uint8_t *)r) < sizeof(*r))) {
		barrier();
		t->busy = 0;
		return 1;
	}
	f = &mt->rstack[d];
	f->parent_loc = parent_loc;
	f->parent_ip = *parent_loc;
	f->child_ip = child_ip;
	f->kind = MC_FRAME_HIJACK;
	f->restored = 0;
	*parent_loc = (uintptr_t)mcount_return;
	mt->depth = d + 1;
	t->pos = (uint8_t *)(r + 1);
	r->time = rec_clock_tsc_to_ns(rec_clock_tsc());
	/* d < 1024 here: no need to mask it */
	r->word = UFTRACE_ENTRY | (UFTRACE_RECORD_MAGIC << 3) | ((uint64_t)d << 6) | (child_ip << 16);
	rec_commit(t);
	barrier();
	t->busy = 0;
	return 0;
}

/* the real return address when the exit is recorded; 0 when mcount_exit() must handle it */
uintptr_t mcount_exit_fast(uintptr_t *sp)
{
	struct rec_thread *t = rec_self;
	struct mc_thread *mt;
	struct uftrace_record *r;
	struct mc_frame *f;
	uintptr_t ret;
	uint32_t d;

	if (unlikely((uintptr_t)t <= REC_THREAD_SENTINEL_MAX || t->busy))
		return 0;
	t->busy = 1; /* before the state is read: see mcount_entry_fast */
	barrier();
	mt = mc_thread_of(t);
	d = mt->depth;
	r = (struct uftrace_record *)t->pos;
	f = &mt->rstack[d - 1];
	/* the returning frame must be the top one (else frames were skipped: slow path) */
	if (unlikely(d == 0 || f->parent_loc != sp - 1 || !mc_fast_max_stack ||
		     (size_t)(t->end - (uint8_t *)r) < sizeof(*r))) {
		barrier();
		t->busy = 0;
		return 0;
	}
	/* read before the guard comes down: once depth says the frame is gone, a signal
	 * handler's first hook reuses its slot (the load used to come after the store to busy,
	 * and a storm of instrumented handlers made functions return into the handler) */
	ret = f->parent_ip;
	mt->depth = d - 1;
	t->pos = (uint8_t *)(r + 1);
	r->time = rec_clock_tsc_to_ns(rec_clock_tsc());
	r->word = UFTRACE_EXIT | (UFTRACE_RECORD_MAGIC << 3) | ((uint64_t)(d - 1) << 6) |
		  (f->child_ip << 16);
	rec_commit(t);
	barrier();
	t->busy = 0;
	return ret;
}
