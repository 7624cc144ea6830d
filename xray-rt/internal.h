/*
 * xray-rt internal state: the sled table, the per-thread shadow stack and the entry points
 * shared by the trampolines (xray_trampoline.S), the leaf fast paths (xray_fast.c), the
 * complete hooks (xray_hooks.c) and the wrappers (xray_wrap.c).
 *
 * The shadow stack: every recorded entry pushes {slot, fid}, where `slot` is the address of
 * the function's return address on the stack. Slots order frames (the stack grows down: a
 * live caller's slot is always above its callees'), which is how an exit finds its frame and
 * how frames skipped by longjmp or an exception are found and given their exits. Only frames
 * whose entry record was written are pushed, and an exit record is written only for a frame
 * on the stack, so every thread's stream in the log is balanced the way llvm-xray wants it:
 * no exit without its entry, and (once exits owed to dropped records are paid) every exit in
 * the order the entries were made.
 */
#ifndef XRAY_RT_INTERNAL_H
#define XRAY_RT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "librecord/rec_session.h"
#include "librecord/rec_thread.h"
#include "formats/xray/fdr_encode.h"
#include "formats/xray/sink_xray.h"
#include "xray-rt/xray_asm.h"

/* internal to the runtime: direct (not GOT) access from the hot path */
#pragma GCC visibility push(hidden)

struct xr_frame {
	uintptr_t slot; /* address of the function's return address */
	uint32_t fid;	/* function id written in its entry record */
	uint32_t owed;	/* its exit record could not be written yet (dropped): pay it first */
};

struct xr_thread {
	uint64_t last_tsc;	 /* TSC of the last timestamped record of this thread's stream */
	uint32_t cpu;		 /* CPU named by the stream's last NewCPUId, + XR_CPU_BIAS; 0:
				   * none yet, so the next record starts with a NewCPUId (new
				   * chunk, start) */
	uint32_t depth;		 /* frames on stack[] */
	struct xr_frame stack[]; /* xr_max_stack entries */
};

/* deepest shadow stack (FLIGHTREC_MAX_STACK, default XR_DEFAULT_MAX_STACK) */
#define XR_DEFAULT_MAX_STACK 16384u
extern uint32_t xr_max_stack;
/* %fs-relative offset of a 32-bit CPU number: rseq's cpu_id, or a constant 0 without rseq */
extern long xr_cpu_off;

/* rec_thread.fe_hold: exits are owed at the top of the stack; every hook takes the complete
 * path until they are written */
#define xr_hold(t) ((t)->fe_hold)

static inline struct xr_thread *xr_thread_of(struct rec_thread *t)
{
	return (struct xr_thread *)rec_thread_fe(t);
}

/* the CPU this thread runs on, + XR_CPU_BIAS (xr_thread.cpu's encoding) */
static inline uint32_t xr_cpu_now(void)
{
	uint32_t cpu;
	__asm__ __volatile__("movl %%fs:(%1), %0" : "=r"(cpu) : "r"(xr_cpu_off));
	return cpu + XR_CPU_BIAS;
}

static inline uint64_t xr_rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/*
 * Write the time reference a record at `tsc` on CPU `cpub` - XR_CPU_BIAS needs before it, if
 * any: a NewCPUId when the CPU changed (or the stream has none yet), a TSCWrap when the delta
 * from the previous record does not fit in 31 bits or went backwards. Returns where the record goes; *delta is
 * its delta. The caller made room for 16 more bytes than the record.
 */
static inline uint8_t *xr_put_time(struct xr_thread *xt, uint8_t *p, uint64_t tsc, uint32_t cpub,
				   uint32_t *delta)
{
	uint64_t d = tsc - xt->last_tsc;

	if (__builtin_expect(cpub != xt->cpu, 0)) {
		fdr_put_new_cpu(p, (uint16_t)(cpub - XR_CPU_BIAS), tsc);
		xt->cpu = cpub;
		p += FDR_META_SIZE;
		d = 0;
	} else if (__builtin_expect(d > FDR_DELTA_MAX, 0)) {
		fdr_put_tsc_wrap(p, tsc);
		p += FDR_META_SIZE;
		d = 0;
	}
	xt->last_tsc = tsc;
	*delta = (uint32_t)d;
	return p;
}

/* trampolines (xray_trampoline.S); addresses the sleds are patched to call or jump to */
void xray_tramp_entry(void);
void xray_tramp_exit(void);
void xray_tramp_tail(void);
void xray_tramp_args(void);
void xray_tramp_custom(void);
void xray_tramp_tp(void);

/* leaf fast paths (xray_fast.c): 0 when recorded, 1 when the complete hook must run */
int xray_entry_fast(uint32_t fid, uintptr_t slot);
int xray_exit_fast(uint32_t fid, uintptr_t slot, uint32_t type);

/* complete hooks (xray_hooks.c) */
void xray_entry_hook(uint32_t fid, uintptr_t slot, uint32_t type, uint64_t arg);
void xray_exit_hook(uint32_t fid, uintptr_t slot, uint32_t type);
void xray_custom_hook(const void *data, size_t size, uintptr_t ret);

/*
 * The program's own handlers, set through compiler-rt's API (xray_api.c), read by the
 * trampolines: 0 means ours (we record the event), anything else is called instead, the
 * no-op xr_api_none once the program removed its handler. xr_api_arg1 == 0 leaves log-args
 * sleds to xr_api_fn, as compiler-rt's arg1 trampoline does. The entry and exit fast paths
 * test xr_api_fn alone, once.
 */
extern uintptr_t xr_api_fn, xr_api_arg1, xr_api_custom;
/* the program has driven XRay through the API (its first call that changes anything) */
extern int xr_api_driven;
/* the handler setters without their exported names (which a program may interpose), and our
 * recording's slots on or off (xray_api.c) */
int xr_api_set_fn(uintptr_t fn);
int xr_api_set_arg1(uintptr_t fn);
void xr_api_ours(int on);
/* our FDR logging mode's handle_arg0 (xray_log.c): setting it as the handler means ours */
void xr_fdr_arg0(int32_t fid, int type);
/* XRAY_OPTIONS-style flags: copy the value of `key` into out; 0 when found */
int xr_flag(const char *flags, const char *key, char *out, size_t size);
/* XRAY_OPTIONS' verbosity, 0 by default */
int xr_verbosity(void);
/* a logging mode is current (compiler-rt writes a log only then); no lock: for finish */
int xr_log_mode_current(void);
/* start-up: the logging mode XRAY_OPTIONS chose, set up (xray_log.c) */
void xr_log_start(void);
/* struct XRayBuffer, as xray_log_interface.h lays it out */
struct xr_buffer {
	const void *data;
	size_t size;
};
/* __xray_log_set_buffer_iterator without its exported name; NULL: the one that gives none */
void xr_log_set_iterator(struct xr_buffer (*it)(struct xr_buffer));
/* the custom-event handler slot (xray_api.c), as __xray_set_customevent_handler sets it */
int xr_api_set_custom(uintptr_t fn);
/* compiler-rt's FDR mode, "xray-fdr", once the program initializes it (xray_fdrmode.c): its
 * XRayLogImpl and its buffer iterator */
int xf_init(size_t buffer_size, size_t max_buffers, void *config, size_t size);
int xf_finalize(void);
void xf_handle_arg0(int32_t fid, int type);
int xf_flush(void);
struct xr_buffer xf_iterator(struct xr_buffer b);
/* compiler-rt's profiling mode, "xray-profiling" (xray_profmode.c) */
int xp_init(size_t buffer_size, size_t max_buffers, void *config, size_t size);
int xp_finalize(void);
void xp_handle_arg0(int32_t fid, int type);
int xp_flush(void);
struct xr_buffer xp_iterator(struct xr_buffer b);

/* Give exits to every frame of the calling thread below `sp` (longjmp target); sp = 0 pops
 * none, UINTPTR_MAX pops all (pthread_exit, exit, exec). */
void xr_unwind_to(uintptr_t sp);
/* The image ends (exit, exec, _exit): every open frame ends, the log is written. */
void xr_finish(void);

/* sled table and patching (xray_patch.c) */
int xr_patch_all(void);
int xr_unpatch_all(void);
extern uint32_t xr_patched; /* sleds currently patched */
/* the sleds of function `id` to our trampolines (enable) or back; how many entry, exit and
 * tail sleds are so now, -1 when the text or the trampolines are out of reach */
int xr_patch_function(uint32_t id, int enable);
/* the instrumentation map is loaded (compiler-rt's "initialized"); its highest function id */
int xr_map_ready(void);
uint32_t xr_max_fid(void);
/* compiler-rt linked in and owning the function of the custom sled returning to `ret`: the
 * event went to its __xray_CustomEvent (1); 0: ours to record */
int xr_custom_to_crt(const void *data, size_t size, uintptr_t ret);
/* FLIGHTREC_DEBUG, at the end: the sleds compiler-rt's runtime took from us */
void xr_patch_report(void);
/* the function address of XRay id `fid`, 0 if none (the map's numbering; a shared object's
 * functions: its object id in the bits from XR_OBJ_SHIFT up) */
uintptr_t xr_fn_addr(uint32_t fid);

/* Shared objects with sleds (xray_patch.c): object ids 1 .. XR_OBJ_MAX - 1 (the executable is
 * 0), in the bits of a function id from XR_OBJ_SHIFT up, as later compiler-rt packs them; an
 * FDR function record holds 28 bits of id. */
#define XR_OBJ_SHIFT 24
#define XR_OBJ_MAX 16
/* find the loaded ones not known yet, patch them as the executable is: at start (the runtime
 * records: xr_dso_start), after a dlopen of `opened` (its link map's name, NULL if unknown)
 * that loaded it at `opened_bias` (xr_dso_sync: nothing before xr_dso_start); the uftrace
 * format gets a DLOP line for it and for each new object it brought */
void xr_dso_start(void);
void xr_dso_sync(const char *opened, uintptr_t opened_bias);
/* around the real dlclose: no object's text is written while one is under way, and the ones
 * it unloaded are forgotten after */
void xr_dso_close_begin(void);
void xr_dso_close_end(void);
/* how many were found so far (loaded or not) */
uint32_t xr_dso_count(void);
/* <log>.yaml, the instrumentation map of every object, when there are shared objects (the
 * sink calls it once the log is written): 0, or -1 when it could not be written */
int xr_write_objects_map(const char *log);
/* uftrace's -A spec of our log-args entries' arguments (".@arg1"), NULL when no sled logs one */
const char *xr_uftrace_argspec(void);
/* the patching lock (xray_api.c: one patching call at a time), waiting for it */
void xr_patch_lock(void);
void xr_patch_unlock(void);

#pragma GCC visibility pop

#endif
