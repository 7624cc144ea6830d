/*
 * libmcount internal state: the per-thread shadow stack of the function hooks.
 *
 * Three hook flavours feed one stack:
 *   -pg (mcount) and -pg -mfentry (__fentry__): entry only; the exit is caught by replacing
 *     the return address in the caller's frame (*parent_loc) with mcount_return, which
 *     records the exit and returns to the saved address (return-address hijacking).
 *   -finstrument-functions: explicit entry and exit hooks; nothing is hijacked.
 * A frame's `parent_loc` orders frames by stack position (the stack grows down: a live
 * caller's slot is always above its callees'), which is how frames skipped by longjmp or an
 * exception are found and given their exits.
 */
#ifndef MCOUNT_INTERNAL_H
#define MCOUNT_INTERNAL_H


#include <stddef.h>
#include <stdint.h>

#include "librecord/rec_session.h"
#include "librecord/rec_thread.h"

/* internal to the runtime: direct (not GOT) access from the hot path */
#pragma GCC visibility push(hidden)

enum mc_frame_kind {
	MC_FRAME_HIJACK = 0, /* -pg / __fentry__: *parent_loc was replaced by mcount_return */
	MC_FRAME_CYG = 1,    /* -finstrument-functions: parent_loc is the caller's stack pointer */
	MC_FRAME_PLT = 2,    /* a call through the PLT (mcount_plt.c): as HIJACK, but its return
			      * comes through mc_plt_return */
};

struct mc_frame {
	uintptr_t *parent_loc; /* HIJACK: the slot of the return address; CYG: caller's sp */
	uintptr_t parent_ip;   /* HIJACK: the original return address */
	uintptr_t child_ip;    /* the address recorded (function or a few bytes into it) */
	uint32_t kind;         /* enum mc_frame_kind */
	uint32_t restored;     /* HIJACK: the real return address is back in place (unwinding) */
};

/* A hijacked frame taken off the shadow stack while it may still be alive on another stack
 * (a coroutine switched away): its return may still come through mcount_return, through its
 * slot or a copy of it (swapcontext saves the return address it was called with). */
struct mc_grave {
	uintptr_t *parent_loc;
	uintptr_t parent_ip;
};
#define MC_GRAVES 4096 /* a ring: the oldest is overwritten */

struct mc_thread {
	uint32_t depth;        /* frames on rstack, = uftrace depth of the next entry */
	uint32_t overflow;     /* CYG frames entered beyond max_stack (their exits are skipped) */
	uint32_t nested;       /* CYG frames entered while the thread was busy (signal in hook) */
	uint32_t grave_next;   /* the next slot of `graves` to fill */
	struct mc_grave *graves; /* MC_GRAVES, mapped at the first forgotten frame */
	uint64_t pad;
	struct mc_frame rstack[]; /* mc_max_stack entries */
};

/*
 * The filtering paths' state (mcount_filter.h; only while mc_fconf.active, when the fast
 * paths always decline): struct mc_fthread then one struct mc_fframe per rstack entry, after
 * rstack[mc_max_stack]. Without a filter the thread has no such area at all.
 */
struct mc_fthread {
	uint32_t ready;	    /* set up (mc_fthread_init) */
	uint32_t fdepth;    /* levels left to record (uftrace's filter.depth): -D, reset by a
			     * filter match, set by depth=; 0: the next frame is not recorded */
	uint32_t in_count;  /* -F frames on the stack */
	uint32_t out_count; /* -N frames on the stack */
	uint32_t rec_depth; /* recorded frames on the stack: the uftrace depth of the next one */
	uint32_t size;	    /* -Z / size=: smaller functions are not recorded */
	uint64_t time;	    /* -t / time=: shorter functions are not recorded */
	uint32_t enable_cached; /* mc_tracing_on as this thread last saw it (uftrace's) */
	uint32_t pad;
};

struct mc_fframe {
	uint64_t start;	       /* the entry time, for a frame whose entry is held */
	uint64_t saved_time;   /* the thread's time filter before it, back at its exit */
	uint32_t saved_fdepth; /* fdepth before it, back at its exit */
	uint32_t saved_size;   /* size before it */
	uint16_t rec_depth;    /* its depth in the trace */
	uint16_t flags;	       /* MC_FF_* */
	uint32_t pad;
};
#define MC_FF_NORECORD 1 /* on the shadow stack only (a -N frame or under one, filtered out) */
#define MC_FF_IN 2	 /* matched by -F: in_count counts it */
#define MC_FF_OUT 4	 /* matched by -N: out_count counts it */
#define MC_FF_WRITTEN 8	 /* its entry is in the trace */
#define MC_FF_DISABLED 16 /* entered while tracing was off: its entry is never written */
#define MC_FF_TRACE 32	  /* the trace action: written whatever its time */
#define MC_FF_CALLER 64	  /* a caller filter matched it */
#define MC_FF_RECOVER 128 /* recover: the frames below got their return addresses back */
#define MC_FF_READ 256	  /* read=: its entry read what its trigger names (mcount_read.h) */

extern uint32_t mc_max_stack;
/* what the fast paths may use: mc_max_stack, or 0 without a TSC (the complete hooks then
 * read the fallback clock) */
extern uint32_t mc_fast_max_stack;

/* rec_thread.fe_hold: set while return addresses are restored for a C++ throw (until the
 * catch), so that every hook takes the complete path */
#define mc_in_exception(t) ((t)->fe_hold)
/* the tfile format: hooks record tracepoint hits only (mcount_tp.c) */
extern int mc_tp_mode;
void mc_tp_start(void);
void mc_tp_stop(void); /* an attached session's detach: the entry points back */
extern const struct rec_frontend mc_frontend;

static inline struct mc_thread *mc_thread_of(struct rec_thread *t)
{
	return (struct mc_thread *)rec_thread_fe(t);
}

static inline struct mc_fthread *mc_fthread_of(struct mc_thread *mt)
{
	return (struct mc_fthread *)&mt->rstack[mc_max_stack];
}

static inline struct mc_fframe *mc_fframe_of(struct mc_thread *mt, uint32_t d)
{
	return (struct mc_fframe *)(mc_fthread_of(mt) + 1) + d;
}

/* the bytes of the filter area of a thread, 0 without a filter */
size_t mc_filter_area_size(void);

/* trampolines (mcount_trampoline.S, mcount_plt_tramp.S) */
void mcount_return(void);
void mc_plt_return(void);

/* where a hijacked frame of this kind returns to */
static inline uintptr_t mc_frame_tramp(uint32_t kind)
{
	return kind == MC_FRAME_PLT ? (uintptr_t)mc_plt_return : (uintptr_t)mcount_return;
}

/* complete hooks (mcount_hooks.c) */
/* regs: what SAVE_ARGS saved (mcount_args.h), for -A */
void mcount_entry(uintptr_t *parent_loc, uintptr_t child_ip, const uintptr_t *regs);
uintptr_t mcount_exit(uintptr_t *sp);
/* the same for a frame of KIND (HIJACK or PLT): the real return address, and in *child_ip the
 * address the frame was recorded at */
uintptr_t mc_hijack_exit(uintptr_t *sp, uint32_t kind, uintptr_t *child_ip);
/* Push a frame of KIND whose return address is at parent_loc, hijacked to its trampoline
 * (PLT frames: hijacked even when the filters leave them out, as uftrace does). */
void mc_hijack_entry(uintptr_t *parent_loc, uintptr_t child_ip, uint32_t kind,
		     const uintptr_t *regs);

/* Give exits to every frame below `sp` (longjmp target, catch frame), newest first. */
void mc_unwind_to(struct rec_thread *t, uintptr_t sp);
/* The same with no exit records (a longjmp to a setjmp traced through the PLT: uftrace's
 * way, its replay closes them at the setjmp's second return); with a filter, their filter
 * state goes back as at their exits, quietly too. */
void mc_unwind_quiet(struct rec_thread *t, uintptr_t sp);
/* A longjmp landed at the return of a setjmp traced through the PLT (at depth d; rec_depth
 * its depth in the trace, written: its entry was written, both for the filtering paths):
 * frames below sp end quietly, the setjmp returns again (its exit record, with -R's return
 * value: sp - 1 holds rax); the address to go to. */
uintptr_t mc_setjmp_return(uintptr_t *sp, uint32_t d, uintptr_t parent_ip, uintptr_t child_ip,
			   uint32_t rec_depth, int written);
/* Put the real return addresses back (before the C++ unwinder or a forced unwind walks the
 * stack) / hijack them again for the frames that survived. */
void mc_restore_returns(struct rec_thread *t);
/* Is a return address of this thread's stack hijacked now (not restored)? */
int mc_returns_hijacked(struct rec_thread *t);
/* `flightrec record -p`: this image was loaded into a running process (mcount_attach.c) */
int mc_attach_wanted(void);
/* set by the constructor of an image loaded by `flightrec record -p` */
extern int mc_attached;
/* attached: the library calls hooked (mcount_plt.c) when this session records them (the
 * uftrace format; FLIGHTREC_NO_LIBCALL not set) */
void mc_attach_libcalls(void);
void mc_rehijack_returns(struct rec_thread *t);
/* Real return addresses back, every frame off the stack with no exit record (pthread_exit:
 * the thread ends inside them, as uftrace records it). */
void mc_exit_all(struct rec_thread *t);
/* Attached, on detach, T's thread stopped by the tracer outside any hook (its ring ours to
 * write meanwhile): each frame still open gets an exit at this time, the end of the recorded
 * window (the call goes on unrecorded), so that every call in the trace is closed. Not with
 * filters (their held entries). */
void mc_attach_close_frames(struct rec_thread *t);
/* The thread is exiting with frames still on its shadow stack (pthread_cancel unwound them):
 * they end with no exit record, nothing written to the stack (rec_frontend.thread_exit). */
void mc_thread_exit(struct rec_thread *t);

#pragma GCC visibility pop

#endif
