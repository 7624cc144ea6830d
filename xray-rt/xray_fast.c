/*
 * xray_fast: the common case of the entry, exit and tail-exit hooks, as leaf functions: no
 * call, so no frame and no callee-saved register to spill. Tail exits use these; entries and
 * exits take the same steps in assembly, inside their trampolines (xray_trampoline.S), which
 * is measurably cheaper; these remain the reference the assembly follows. The trampolines save the
 * registers these may clobber and, when one answers "not handled", call the complete hook
 * (xray_hooks.c), which handles every case: first event of a thread, busy guard, owed exits,
 * frames skipped by longjmp, a full chunk, the depth limit.
 *
 * Per event: one TLS load, the busy guard, rdtsc, the CPU from rseq (one %fs-relative load),
 * an 8-byte function record (16 more bytes before it when the CPU changed or the delta
 * overflowed), a shadow-stack push or pop and a store-release of the committed length.
 *
 * Order of the writes, for a signal handler that lands anywhere in here: `busy` is set before
 * anything is read, so a handler's hooks record nothing (and count it) while we work; the
 * record's bytes go in before `pos` moves and `pos` before the frame is pushed or popped.
 *
 * Built as if with -mgeneral-regs-only -fomit-frame-pointer (the pragmas below), so the
 * trampolines need not save SSE/x87 state.
 */
#pragma GCC target("general-regs-only")
#pragma GCC optimize("omit-frame-pointer")

#include "xray-rt/internal.h"
#include "xray-rt/xray_asm.h"

#include <stddef.h>

/* the assembly fast paths (xray_trampoline.S) see these structures through xray_asm.h */
_Static_assert(REC_T_FE + offsetof(struct xr_thread, last_tsc) == XR_X_LAST_TSC, "last_tsc");
_Static_assert(REC_T_FE + offsetof(struct xr_thread, cpu) == XR_X_CPU, "xray_asm.h: cpu");
_Static_assert(REC_T_FE + offsetof(struct xr_thread, depth) == XR_X_DEPTH, "xray_asm.h: depth");
_Static_assert(REC_T_FE + offsetof(struct xr_thread, stack) == XR_X_STACK, "xray_asm.h: stack");
_Static_assert(sizeof(struct xr_frame) == 1 << XR_FRAME_SHIFT, "xray_asm.h: frame size");
_Static_assert(offsetof(struct xr_frame, fid) == 8 && offsetof(struct xr_frame, owed) == 12,
	       "xray_asm.h: frame layout");
_Static_assert(FDR_META_SIZE + FDR_FN_SIZE == 24, "xray_asm.h: room for a record");

#define barrier() __asm__ __volatile__("" ::: "memory")

int xray_entry_fast(uint32_t fid, uintptr_t slot)
{
	struct rec_thread *t = rec_self;
	struct xr_thread *xt;
	struct xr_frame *f;
	uint32_t d, delta;
	uint64_t tsc;
	uint8_t *p;

	if (unlikely((uintptr_t)t <= REC_THREAD_SENTINEL_MAX))
		return 1;
	/* busy, and owed exits (fe_hold). Two byte loads, not one 16-bit load of both: the
	 * previous hook's byte store to `busy` is usually still in the store buffer, and a wider
	 * load cannot be forwarded from it (a stall of about a dozen cycles on every event) */
	if (unlikely(*(volatile uint8_t *)&t->busy | *(volatile uint8_t *)&xr_hold(t)))
		return 1;
	t->busy = 1;
	barrier();
	xt = xr_thread_of(t);
	d = xt->depth;
	p = t->pos;
	if (unlikely(d >= xr_max_stack || (size_t)(t->end - p) < FDR_META_SIZE + FDR_FN_SIZE)) {
		barrier();
		t->busy = 0;
		return 1;
	}
	tsc = xr_rdtsc();
	p = xr_put_time(xt, p, tsc, xr_cpu_now(), &delta);
	fdr_put_fn(p, FDR_ENTER, fid, delta);
	t->pos = p + FDR_FN_SIZE;
	f = &xt->stack[d];
	f->slot = slot;
	f->fid = fid;
	f->owed = 0;
	xt->depth = d + 1;
	rec_commit(t);
	barrier();
	t->busy = 0;
	return 0;
}

/* type: FDR_EXIT (exit sled: slot = the stack pointer the function returns with) or
 * FDR_TAIL_EXIT (tail sled: the slot the function was entered with, now reused) */
int xray_exit_fast(uint32_t fid, uintptr_t slot, uint32_t type)
{
	struct rec_thread *t = rec_self;
	struct xr_thread *xt;
	struct xr_frame *f;
	uint32_t d, delta;
	uint64_t tsc;
	uint8_t *p;

	(void)fid; /* the frame's own id is written: an entry and its exit always agree */
	if (unlikely((uintptr_t)t <= REC_THREAD_SENTINEL_MAX))
		return 1;
	if (unlikely(*(volatile uint8_t *)&t->busy | *(volatile uint8_t *)&xr_hold(t)))
		return 1;
	t->busy = 1;
	barrier();
	xt = xr_thread_of(t);
	d = xt->depth;
	p = t->pos;
	f = &xt->stack[d - 1];
	/* the returning frame must be the top one (else frames were skipped, or it was never
	 * pushed: the complete hook sorts it out) */
	if (unlikely(d == 0 || f->slot != slot ||
		     (size_t)(t->end - p) < FDR_META_SIZE + FDR_FN_SIZE)) {
		barrier();
		t->busy = 0;
		return 1;
	}
	tsc = xr_rdtsc();
	p = xr_put_time(xt, p, tsc, xr_cpu_now(), &delta);
	fdr_put_fn(p, type, f->fid, delta);
	t->pos = p + FDR_FN_SIZE;
	xt->depth = d - 1;
	rec_commit(t);
	barrier();
	t->busy = 0;
	return 0;
}
