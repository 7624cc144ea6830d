/*
 * xray_tp: xray-rt in the tfile format: a tracepoint hit at each entry of a traced function.
 * Only the entry sleds of the tracepoints' functions are patched (xray_patch.c), to
 * xray_tramp_tp, which captures the registers as they were at the function's first
 * instruction (the sled runs before the function's prologue; only r10 holds the sled's id).
 * The hit is placed right after the sled (same registers), where clang's debug information
 * knows where the arguments are.
 * Built for general registers only, as every hook.
 */
#pragma GCC target("general-regs-only")
#include "xray-rt/internal.h"
#include "librecord/rec_tp.h"

void xr_tp_entry(struct rec_tp_regs *r, uint32_t fid);
void xr_tp_entry(struct rec_tp_regs *r, uint32_t fid)
{
	uintptr_t fn = xr_fn_addr(fid);
	struct rec_tp *tp = fn ? rec_tp_find(fn) : NULL;

	if (!tp || tp->addr != fn)
		return;
	r->rip = tp->pc ? tp->pc : tp->addr; /* after the entry sled (xray_patch.c) */
	rec_tp_hit(tp, r);
}
