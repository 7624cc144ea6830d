/*
 * rec_thread: per-thread recording state, reached through ONE initial-exec TLS pointer.
 *
 * The TLS pointer holds NULL (this thread has not recorded yet), REC_THREAD_DEAD (it went
 * through its TSD destructor: events are counted as lost_dead), REC_THREAD_OFF (recording is
 * off for it: setup failed, AT_SECURE, or attaching right now, so a nested hook stops here)
 * or the thread's state. State is mmap'ed, never malloc'ed: a first event may come from a
 * signal handler that interrupted malloc.
 *
 * Fields in the first cache line are touched by every event; the rest by slow paths. Only
 * the owning thread writes the hot fields; the flusher reads `chunk` contents through the
 * chunk's own release/acquire protocol (rec_ring.h), and `exited` (release/acquire).
 * A front end keeps its own per-thread state right after this struct (rec_thread_fe()).
 */
#ifndef REC_THREAD_H
#define REC_THREAD_H


#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "librecord/rec_ring.h"

/* internal to the runtime: direct (not GOT) access from the hot path */
#pragma GCC visibility push(hidden)

enum rec_lost_kind {
	REC_LOST_FULL,   /* no free chunk (drop policy, block time-out, overwritten chunk) */
	REC_LOST_NESTED, /* a hook ran inside another hook on the same thread (signal) */
	REC_LOST_DEAD,   /* the thread had already been closed */
	REC_LOST_DEPTH,  /* deeper than max_stack */
	REC_LOST_KINDS,
};

struct rec_thread {
	/* --- hot: every event --- */
	uint8_t *pos;              /* next free byte in the current chunk (NULL: no chunk) */
	uint8_t *end;              /* end of the current chunk's data */
	struct rec_chunk *chunk;   /* current FILLING chunk, or NULL */
	uint64_t events;           /* events committed by this thread, all chunks */
	uint8_t busy;              /* reentrancy guard, set by the front end around a hook */
	uint8_t fe_hold;           /* front end's: non-zero sends its hooks to the slow path */
	uint8_t pad0[6];
	uint64_t lost_pending;     /* lost since the current chunk was taken */
	uint64_t pad1[2];

	/* --- slow path: chunk switch, counters --- */
	uint64_t lost[REC_LOST_KINDS];
	uint64_t events_at_chunk;  /* `events` when the current chunk was taken */
	uint64_t overwritten;      /* events in chunks the overwrite policy reused */
	uint64_t overwritten_told; /* ... of which the sink has been told */
	uint8_t *ring;             /* mapping of the ring file */
	size_t ring_size;
	int ring_fd;
	uint32_t next_idx;         /* index of the chunk to take next */
	uint64_t seq;              /* seq of the current/last taken chunk */

	/* --- flusher side --- */
	uint32_t flush_idx;        /* next chunk the flusher expects to write */
	uint64_t flush_seq;        /* seq of the last chunk written */
	uint64_t bytes;            /* bytes handed to the sink */
	/* events of chunks the sink failed to write (disk full, a read-only remount, ...):
	 * committed, so in `events`, but not in the trace; reported as lost_full */
	uint64_t unwritten;
	uint64_t unwritten_told;   /* ... of which a later write (or close) told the sink */
	uint32_t exited;           /* set (release) by the TSD destructor */
	uint32_t closed;           /* flusher/finish closed it (sink close_thread done) */
	uint32_t prefaulted;       /* chunks 0..prefaulted-1 are faulted in (flusher's job) */
	uint32_t drain_lock;       /* 1 while the flusher, a writer or (help policy) the producer
				    * drains */
	int dtor_rounds;
	/* a producer that waits for a chunk to be written (block, help) sleeps on free_seq; a
	 * drainer that frees a chunk while free_waiting is set bumps it and wakes it */
	uint32_t free_seq;
	uint32_t free_waiting;

	/* --- identity and sink --- */
	pid_t tid;
	pid_t pid;
	pid_t vfork_pid;           /* a vfork child's own state (rec_vfork_*): its pid, else 0 */
	int sink_fd;               /* a sink's per-thread file, -1 if none */
	struct rec_fd_id sink_id;  /* ... what it named when first seen (rec_thread_sink_fd_ok) */
	int sink_id_fd;            /* the sink_fd sink_id is of, -1 if none */
	void *sink_priv;
	uint64_t sink_room;         /* a sink's own: where the blocks it took ahead end */
	/* a spare ring taken without the helper (rec_thread_open_late): 1 until the helper or
	 * a drainer has named it after the thread and run the sink's open_thread, 2 while one
	 * does, 3 while one does and another waits for it (futex word) */
	uint32_t open_pending;
	/* the sink's late open_thread failed (drainers only): its chunks are counted lost, and
	 * no per-write open may create the file open_thread did not (no TASK line for it) */
	uint8_t open_failed;
	/* a drainer closing an exited thread in its own table (rec_thread_drain_close): 1, its
	 * last writes may keep the per-write descriptor open for the close; 2 while they do */
	uint8_t sink_keep;
	uint32_t pool_named;       /* its file is still pool.<pid>.<pool_id> */
	uint32_t pool_id;
	uint64_t attach_ns;        /* rec_clock_ns() when it attached (late_open's stamps) */
	struct rec_thread *next;   /* registry link (rec_session.threads) */
	struct rec_thread *reaped_next; /* unlinked, waiting to be freed (rec_session.reaped) */
	size_t alloc_size;
	uint64_t fe_state[] __attribute__((aligned(64))); /* front end's per-thread state */
};

#define REC_THREAD_DEAD ((struct rec_thread *)1)
#define REC_THREAD_OFF ((struct rec_thread *)2)
#define REC_THREAD_SENTINEL_MAX ((uintptr_t)2)

extern __thread struct rec_thread *rec_self __attribute__((tls_model("initial-exec")));
/*
 * Set while this thread runs the runtime's own set-up code (session start, the flusher's
 * creation, finish) that calls libc: libc may call the program's own malloc (a program that
 * defines malloc, or hooks it), which is instrumented and enters a hook. Such a hook is the
 * runtime's doing, not a call the program made: it records nothing and counts nothing (and
 * must never take the start lock again, which this thread holds). Slow paths only.
 */
extern __thread uint8_t rec_in_runtime __attribute__((tls_model("initial-exec")));

static inline void *rec_thread_fe(struct rec_thread *t)
{
	return t->fe_state;
}

/*
 * Hook files are compiled with -mgeneral-regs-only so their trampolines save no SSE/x87
 * state. The slow paths call libc, which may use those registers, so such files define
 * REC_HOOK_FPSAFE and reach the slow paths through thunks that fxsave/fxrstor around them.
 */
#ifdef REC_HOOK_FPSAFE
#define rec_thread_get_slow rec_thread_get_slow_fpsafe
#define rec_reserve_slow rec_reserve_slow_fpsafe
#endif

/* Out of line: attach on first use, count events of dead threads; NULL means "do not record". */
struct rec_thread *rec_thread_get_slow(void);
/* rec_thread_get_slow for a hook that stands for no event (e.g. a function entry a format
 * does not record, called only to attach early): when the thread cannot attach, nothing is
 * counted lost for this call. */
struct rec_thread *rec_thread_get_quiet(void);
/* Another thread, stopped by a tracer (`flightrec record -p` detaching), whose thread pointer
 * is TP: it is inside rec_thread_get_slow's attach, its hook still to go on. */
int rec_thread_attaching_at(uintptr_t tp);
/* A thread that took a spare ring without the helper (sink late_open): name its ring file
 * after it and open it in the sink, once; a drainer calls this before it writes or closes
 * the thread (a table of our own: the flusher's, the helper's, finish's), slow paths only. */
void rec_thread_open_late(struct rec_thread *t);
/* The same for a thread whose open_pending the caller moved from 1 to 2 (the helper). */
void rec_thread_open_late_run(struct rec_thread *t);
/* A reaped thread's state, no walker left on it (the flusher): kept for the next attach, or
 * unmapped when enough are kept. */
void rec_thread_state_free(struct rec_thread *t);
/* Out of line: switch chunks under the policy; NULL means the event was dropped (counted). */
void *rec_reserve_slow(struct rec_thread *t, size_t n);

/* The calling thread's state, attaching it on first use; NULL: do not record this event. */
static inline struct rec_thread *rec_thread_get(void)
{
	struct rec_thread *t = rec_self;
	if (likely((uintptr_t)t > REC_THREAD_SENTINEL_MAX))
		return t;
	return rec_thread_get_slow();
}

/* Reserve n bytes for one record in the current chunk; NULL if dropped (already counted). */
static inline void *rec_reserve(struct rec_thread *t, size_t n)
{
	uint8_t *p = t->pos;
	if (unlikely((size_t)(t->end - p) < n))
		return rec_reserve_slow(t, n);
	t->pos = p + n;
	return p;
}

/* Publish the reserved record(s). Pairs with the acquire load of `committed` in the flusher,
 * finish and salvage: the record's bytes are visible before the length that covers them. */
static inline void rec_commit(struct rec_thread *t)
{
	t->events++;
	__atomic_store_n(&t->chunk->committed, (uint64_t)(t->pos - rec_chunk_data(t->chunk)),
			 __ATOMIC_RELEASE);
}

/* *p += n in one instruction: a signal handler of this thread that counts too (a nested
 * hook) cannot land between the load and the store. No lock prefix: only this thread and
 * its handlers write these counters. */
static inline void rec_sigsafe_add(uint64_t *p, uint64_t n)
{
	__asm__ __volatile__("addq %1, %0" : "+m"(*p) : "er"(n));
}

/* Count n events that could not be recorded; they are reported with the next chunk. */
static inline void rec_count_lost(struct rec_thread *t, enum rec_lost_kind kind, uint64_t n)
{
	struct rec_ring_hdr *h = (struct rec_ring_hdr *)t->ring;

	rec_sigsafe_add(&t->lost[kind], n);
	rec_sigsafe_add(&t->lost_pending, n);
	/* in the ring file too, so that a SIGKILL does not make the loss silent (rec_ring.h) */
	__atomic_store_n(&h->lost_for_seq, t->seq + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&h->lost_pending, t->lost_pending, __ATOMIC_RELEASE);
}

/* Events lost because the thread was already closed (no state to count them in). */
void rec_count_lost_dead(uint64_t n);

/*
 * vfork (rec_thread.c): the child runs on the forking thread's memory, TLS and stack until
 * it execs or exits, so with the thread's own state it would record into the parent's ring
 * under the parent's tid, and leave its frames on the parent's shadow stack. A front end
 * that sees the vfork call, and whose return it catches in both processes, calls
 * rec_vfork_enter at the call (this thread's state is the parent's); while rec_vfork_pid is
 * set, each return it catches calls rec_vfork_return first: in the child, the first one
 * gives the child a state of its own (a copy of the parent's front-end state through
 * fork_thread, a ring, the child's tid); in the parent, the return puts the parent's back
 * and ends the child's. The exec and _exit wrappers write the child's records before the
 * next image appends to the same <tid>.dat (rec_vfork_child_end) and take them up again
 * if the exec fails (rec_vfork_child_resume). A child that cannot have a state of its own
 * records nothing (OFF) and leaves the parent's untouched.
 */
extern __thread pid_t rec_vfork_pid __attribute__((tls_model("initial-exec")));
#ifdef REC_HOOK_FPSAFE
#define rec_vfork_enter rec_vfork_enter_fpsafe
#define rec_vfork_return rec_vfork_return_fpsafe
#define rec_vfork_stateless_parent rec_vfork_stateless_parent_fpsafe
#endif
void rec_vfork_enter(void);
void rec_vfork_return(void);
void rec_vfork_child_end(void);
void rec_vfork_child_resume(void);
/* Is this the vfork child of a vfork rec_vfork_enter saw (slow paths: a getpid then)? */
int rec_vfork_in_child(void);
/* In a vfork child that could not have a state of its own (it records nothing): the parent's
 * state, to be read only (the real return address of a frame hijacked before the vfork);
 * NULL elsewhere. Slow path (a getpid). */
struct rec_thread *rec_vfork_stateless_parent(void);

#pragma GCC visibility pop

#endif
