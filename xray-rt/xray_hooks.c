/*
 * xray_hooks: the complete hooks, for everything the leaf fast paths (xray_fast.c) decline:
 *   - the first event of a thread (attach: ring, sink spool, thread state);
 *   - a hook running inside another hook of the same thread (a signal handler): it records
 *     nothing and counts what it lost (2 events for an entry: its exit will be skipped too);
 *   - owed exits: an exit record that could not be written (full ring under the drop policy, or
 *     the block policy timing out) leaves its frame on the stack marked `owed`, and the next
 *     hook of the thread writes it first, so the stream stays balanced;
 *   - frames skipped by longjmp, an exception or a signal handler that never returned: an exit
 *     whose slot is above the top frame's pops the frames below it with exit records;
 *   - an exit with no frame (entered before recording started, beyond the depth limit, or its
 *     entry lost): nothing is written, so no exit ever comes without its entry;
 *   - entries with an argument (xray_log_args) and custom events;
 *   - the chunk switch, after which the next record starts with a NewCPUId, so that a chunk
 *     the policy had to drop never leaves a wrong time base behind it.
 *
 * Built as if with -mgeneral-regs-only (pragma below); the librecord slow paths are reached
 * through the fxsave thunks (REC_HOOK_FPSAFE). No libc call: the custom event payload is
 * copied with `rep movsb`.
 */
#pragma GCC target("general-regs-only")
#define REC_HOOK_FPSAFE 1
#include "xray-rt/internal.h"

#define barrier() __asm__ __volatile__("" ::: "memory")

uint32_t xr_max_stack = 1024;
long xr_cpu_off;

/*
 * Room for `need` bytes of records: in the current chunk, or at the start of a new one (which
 * then must begin with a NewCPUId: `need` counts it). NULL if the event is dropped (counted).
 * The caller sets t->pos to the end of what it wrote.
 */
static uint8_t *xr_room(struct rec_thread *t, struct xr_thread *xt, size_t need)
{
	uint8_t *p = t->pos;

	if (likely((size_t)(t->end - p) >= need))
		return p;
	xt->cpu = 0;
	return rec_reserve_slow(t, need);
}

/* One function record (with its time reference and argument); 0 when written. */
static int xr_write_fn(struct rec_thread *t, struct xr_thread *xt, unsigned type, uint32_t fid,
		       const uint64_t *arg)
{
	size_t need = FDR_META_SIZE + FDR_FN_SIZE + (arg ? FDR_META_SIZE : 0);
	uint8_t *p = xr_room(t, xt, need);
	uint32_t delta;

	if (unlikely(!p))
		return -1;
	p = xr_put_time(xt, p, xr_rdtsc(), xr_cpu_now(), &delta);
	fdr_put_fn(p, type, fid, delta);
	p += FDR_FN_SIZE;
	if (arg) {
		fdr_put_call_arg(p, *arg);
		p += FDR_META_SIZE;
	}
	t->pos = p;
	rec_commit(t);
	return 0;
}

/* An exit that could not be written stays owed and is written later (a retry too): the
 * ring's drop counted it lost (rec_reserve_drop), which it is not, so that count is undone at
 * once, in the same hook, before any chunk could carry it (adding (uint64_t)-1 is -1). Before,
 * each owed exit was counted once per attempt and was in the trace in the end: the drop policy
 * over-counted its losses by ~20 % with 4 KiB rings. */
static inline void xr_exit_owed(struct rec_thread *t, struct xr_frame *f)
{
	rec_count_lost(t, REC_LOST_FULL, (uint64_t)-1);
	f->owed = 1;
	xr_hold(t) = 1;
}

/*
 * Pop, with an exit record each, the frames that are owed an exit and those whose slot is
 * below `limit` (skipped). Stops at the first record that cannot be written: that frame stays
 * owed (and the hold makes every hook come here until it is paid). 0 when all done.
 */
static int xr_pop_below(struct rec_thread *t, struct xr_thread *xt, uintptr_t limit)
{
	while (xt->depth) {
		struct xr_frame *f = &xt->stack[xt->depth - 1];
		if (!f->owed && f->slot >= limit)
			break;
		if (xr_write_fn(t, xt, FDR_EXIT, f->fid, NULL) < 0) {
			xr_exit_owed(t, f);
			return -1;
		}
		xt->depth--;
	}
	xr_hold(t) = 0;
	return 0;
}

void xray_entry_hook(uint32_t fid, uintptr_t slot, uint32_t type, uint64_t arg)
{
	struct rec_thread *t = rec_thread_get();
	struct xr_thread *xt;
	uint32_t d;

	if (unlikely(!t))
		return;
	if (unlikely(t->busy)) {
		rec_count_lost(t, REC_LOST_NESTED, 2);
		return;
	}
	t->busy = 1;
	barrier();
	xt = xr_thread_of(t);
	if (unlikely(xr_hold(t)) && xr_pop_below(t, xt, 0) < 0) {
		/* the ring is still full: this call is lost too (its exit will find no frame) */
		rec_count_lost(t, REC_LOST_FULL, 2);
		goto out;
	}
	d = xt->depth;
	if (unlikely(d >= xr_max_stack)) {
		rec_count_lost(t, REC_LOST_DEPTH, 2);
		goto out;
	}
	if (xr_write_fn(t, xt, type, fid, type == FDR_ENTER_ARGS ? &arg : NULL) < 0) {
		rec_count_lost(t, REC_LOST_FULL, 1); /* the exit, which will find no frame */
		goto out;
	}
	xt->stack[d].slot = slot;
	xt->stack[d].fid = fid;
	xt->stack[d].owed = 0;
	xt->depth = d + 1;
out:
	barrier();
	t->busy = 0;
}

void xray_exit_hook(uint32_t fid, uintptr_t slot, uint32_t type)
{
	struct rec_thread *t = rec_self;
	struct xr_thread *xt;
	struct xr_frame *f;

	(void)fid;
	/* never attached, closed or off: no entry of ours can be open */
	if (unlikely((uintptr_t)t <= REC_THREAD_SENTINEL_MAX))
		return;
	if (unlikely(t->busy))
		return; /* a handler's exit: its entry was counted lost (2) */
	t->busy = 1;
	barrier();
	xt = xr_thread_of(t);
	/* frames below this one were skipped (longjmp, exception): they end now */
	if (xr_pop_below(t, xt, slot) < 0) {
		/* the ring is still full: this frame's exit is owed too (its exit has happened;
		 * left as it was, it was neither written nor counted) */
		for (uint32_t i = xt->depth; i-- > 0;)
			if (xt->stack[i].slot == slot) {
				xt->stack[i].owed = 1;
				break;
			}
		goto out;
	}
	if (xt->depth == 0)
		goto out;
	f = &xt->stack[xt->depth - 1];
	if (f->slot != slot)
		goto out; /* not ours: entered before recording, too deep, or its entry was lost */
	if (xr_write_fn(t, xt, type, f->fid, NULL) < 0) {
		xr_exit_owed(t, f);
		goto out;
	}
	xt->depth--;
out:
	barrier();
	t->busy = 0;
}

static inline void xr_copy(uint8_t *dst, const void *src, size_t n)
{
	__asm__ __volatile__("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

void xray_custom_hook(const void *data, size_t size, uintptr_t ret)
{
	struct rec_thread *t;
	struct xr_thread *xt;
	uint32_t delta;
	uint8_t *p;

	/* the program patched this function with compiler-rt's runtime: its event, not ours */
	if (unlikely(xr_custom_to_crt(data, size, ret)))
		return;
	if (size == 0 || !data)
		return; /* llvm-xray rejects empty custom events */
	t = rec_thread_get();
	if (unlikely(!t))
		return;
	if (unlikely(t->busy)) {
		rec_count_lost(t, REC_LOST_NESTED, 1);
		return;
	}
	t->busy = 1;
	barrier();
	xt = xr_thread_of(t);
	if (unlikely(xr_hold(t)) && xr_pop_below(t, xt, 0) < 0) {
		rec_count_lost(t, REC_LOST_FULL, 1);
		goto out;
	}
	/* an event larger than a chunk is dropped by the ring's slow path (and counted) */
	if (size > (size_t)INT32_MAX - 2 * FDR_META_SIZE) {
		rec_count_lost(t, REC_LOST_FULL, 1);
		goto out;
	}
	p = xr_room(t, xt, 2 * FDR_META_SIZE + size);
	if (!p)
		goto out;
	p = xr_put_time(xt, p, xr_rdtsc(), xr_cpu_now(), &delta);
	fdr_put_custom_v5(p, (int32_t)size, (int32_t)delta);
	p += FDR_META_SIZE;
	xr_copy(p, data, size);
	t->pos = p + size;
	rec_commit(t);
out:
	barrier();
	t->busy = 0;
}

void xr_unwind_to(uintptr_t sp)
{
	struct rec_thread *t = rec_self;
	struct xr_thread *xt;

	if ((uintptr_t)t <= REC_THREAD_SENTINEL_MAX)
		return;
	xt = xr_thread_of(t);
	/*
	 * Hooks never jump, so a busy thread here is a signal handler leaving a hook it
	 * interrupted for good (siglongjmp): that hook will not finish. Take over: the next
	 * record re-announces the CPU and time in case it was cut short after moving them.
	 */
	t->busy = 1;
	barrier();
	xt->cpu = 0;
	xr_pop_below(t, xt, sp);
	barrier();
	t->busy = 0;
}
