/*
 * cacheray-rt internal header: the inline hot path shared by the callback files (prefix cr_).
 * The records' bytes are formats/cacheray/cacheray_encode.h's. A record is written whole into the thread's current chunk (rec_reserve), so a chunk holds
 * whole records only and the trace file, a concatenation of chunks, stays framed.
 *
 * The hot path (cr_access): one TLS load, the busy guard (one byte load; the front end never
 * sets fe_hold), the room check, three stores for the record, the bump of `pos` and the
 * store-release of the committed length. No lock, no atomic read-modify-write, no syscall, no call.
 * Everything else (first event of a thread, full chunk, nested hook, disabled recording) goes to
 * cr_access_slow, which handles every case.
 *
 * The busy guard: a hook that runs while another hook of the same thread is between reserving
 * and committing (an instrumented signal handler) must not write into the same bytes; it takes
 * the slow path, which records nothing and counts the event as lost_nested.
 */
#ifndef CACHERAY_RT_INTERNAL_H
#define CACHERAY_RT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "librecord/rec_session.h"
#include "librecord/rec_thread.h"
#include "librecord/rec_util.h"
#include "formats/cacheray/cacheray_encode.h"
#include "formats/cacheray/sink_cacheray.h"

/* internal to the runtime: direct (not GOT) access from the hot path */
#pragma GCC visibility push(hidden)

#define CR_EXPORT    __attribute__((visibility("default")))
#define CR_BARRIER() __asm__ __volatile__("" ::: "memory")

/* CACHERAY_OPTIONS and what start-up decided (cr_main.c) */
struct cr_options {
	char tracefile[REC_PATH_MAX]; /* as given: absolute, or relative to the output directory */
	int enabled;		      /* enabled=0: record nothing, write nothing */
	int malloc_mode;	      /* malloc=0|1|auto: RTTA records for malloc & co. */
	int memfuncs;		      /* memfuncs=0|1: record memcpy/memset/memmove ranges */
	int tracefile_set;	      /* tracefile= was given */
};

enum { CR_MALLOC_OFF = 0, CR_MALLOC_ON = 1, CR_MALLOC_AUTO = 2 };

/* Parse "key=value:key=value" into o (defaults first); unknown keys and bad values get one
 * warning each, as Cacheray's own parser does (cr_options.c). Pure: no global state. */
void cr_options_parse(const char *s, struct cr_options *o);
void cr_options_defaults(struct cr_options *o);

extern struct cr_options cr_opts;
/* 1 once start-up found recording disabled (enabled=0, AT_SECURE, failed set-up) */
extern int cr_disabled;

/* --- the hot path ------------------------------------------------------------------------- */

/* Every case the inline path declines: first event, nested hook, full chunk, recording off. */
void cr_access_slow(unsigned tag, uintptr_t addr, unsigned size);

static inline __attribute__((always_inline)) void cr_access(unsigned tag, uintptr_t addr,
							    unsigned size)
{
	struct rec_thread *t = rec_self;
	uint8_t *p;

	if (unlikely((uintptr_t)t <= REC_THREAD_SENTINEL_MAX)) {
		cr_access_slow(tag, addr, size);
		return;
	}
	/* a byte load: a wider one would straddle the byte stores below and miss store forwarding
	 */
	if (unlikely(*(volatile uint8_t *)&t->busy)) {
		cr_access_slow(tag, addr, size);
		return;
	}
	/* The guard goes up before the write position is read: a signal handler that records
	 * between the test and this store leaves pos consistent again when it returns, one that
	 * comes after it records nothing. (Read before the guard, pos went stale under a storm of
	 * instrumented handlers: their records were overwritten, and when one had switched
	 * chunks pos was left past `end` and ran off the ring: the program crashed.) */
	t->busy = 1;
	CR_BARRIER();
	p = t->pos;
	if (unlikely((size_t)(t->end - p) < CR_ACCESS_BYTES)) {
		CR_BARRIER();
		t->busy = 0;
		cr_access_slow(tag, addr, size);
		return;
	}
	cr_put_access(p, tag, addr, size, (uint64_t)(uint32_t)t->tid);
	t->pos = p + CR_ACCESS_BYTES;
	rec_commit(t);
	CR_BARRIER();
	t->busy = 0;
}

/* The UNALIGNED flag of an access that the compiler reported as aligned: set when the address
 * is not a multiple of the (power of two) size. */
static inline unsigned cr_misaligned(uintptr_t addr, unsigned size)
{
	return (addr & (size - 1)) ? CR_UNALIGNED : 0;
}

/* The first record's size for the range [addr, addr + n): all of it up to CR_SIZE_MAX bytes,
 * else the longest piece of at most CR_SIZE_MAX bytes that ends on a 64-byte boundary (at least
 * 192 bytes), so that no cache line is counted twice for one range. */
static inline size_t cr_range_piece(uintptr_t addr, size_t n)
{
	size_t piece;

	if (n <= CR_SIZE_MAX)
		return n;
	piece = CR_SIZE_MAX - ((addr + CR_SIZE_MAX) & 63);
	return piece < n ? piece : n;
}

/* A range [addr, addr + n) as records of at most CR_SIZE_MAX bytes (cr_access.c). */
void cr_range(unsigned tag, uintptr_t addr, size_t n);

/* elemsize x elemcount as two u32 with the same product when there is one (sizes beyond 32
 * bits are moved between the two by powers of two), saturated otherwise. */
static inline void cr_rtta_dims(uint64_t size, uint64_t count, uint32_t *es, uint32_t *ec)
{
	while (size > UINT32_MAX && !(size & 1) && count <= UINT32_MAX / 2) {
		size >>= 1;
		count <<= 1;
	}
	while (count > UINT32_MAX && !(count & 1) && size <= UINT32_MAX / 2) {
		count >>= 1;
		size <<= 1;
	}
	*es = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
	*ec = count > UINT32_MAX ? UINT32_MAX : (uint32_t)count;
}

/* RTTA records (cr_rtta.c); both start the session if needed. */
void cr_rtta_add(uintptr_t addr, const char *name, uint64_t elem_size, uint64_t elem_count);
void cr_rtta_remove(uintptr_t addr);

/* The calling thread's state for a record, starting the session when `start` (a __tsan_*
 * hook or the RTTA API; interposed libc functions never start it). NULL: do not record. */
struct rec_thread *cr_thread(int start);
/* cr_thread's `start` from a hook that records nothing itself (__tsan_init, function entry):
 * it only attaches early, so it is no event lost when the thread cannot get a ring */
#define CR_ATTACH 2

/* --- instrumented code (cr_modules.c) ----------------------------------------------------- */

/* Note the instrumented modules loaded since the last call (__tsan_init). */
void cr_module_note(void);
/* Is `pc` in the code of an instrumented module? (lock-free; a few compares) */
int cr_module_has(uintptr_t pc);
/* Is `pc` in an instrumented module that does not call the MallocTracker hooks itself? */
int cr_module_wants_malloc_rtta(uintptr_t pc);

/* --- start-up (cr_main.c) ----------------------------------------------------------------- */

/* Read CACHERAY_OPTIONS once (idempotent, any thread). */
void cr_init_once(void);
/* Finish this image's trace (destructor, _exit, exec); a vfork child does nothing. */
void cr_finish(void);
/* Interposed libc functions (cr_intercept.c): find the real ones (constructor). */
void cr_intercept_init(void);

#pragma GCC visibility pop

#endif
