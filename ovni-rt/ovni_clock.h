/*
 * ovni_clock: the clock behind ovni_clock_now(), CLOCK_MONOTONIC nanoseconds read from the TSC.
 *
 * libovni reads clock_gettime(CLOCK_MONOTONIC) (about 35 ns here); reading the TSC and
 * converting it costs about half. A single calibration (librecord's, 2 ms) is off by ~1e-5,
 * i.e. tens of microseconds per second against CLOCK_MONOTONIC, and every process would drift
 * its own way; ovni needs clocks comparable across the threads and processes of a loom, and
 * programs may mix ovni_clock_now() with their own clock_gettime() stamps. So the conversion
 * is re-disciplined every OCLK_PERIOD_MS against CLOCK_MONOTONIC, keeping the error within
 * about a microsecond while staying strictly monotonic:
 *
 *   The conversion is a continuous, increasing, piecewise-linear function of the TSC. The
 *   published state holds two pieces: `a` applies below `switch_tsc`, `b` from there on. A
 *   resync (whoever reads the clock past `resync_tsc` and wins a try-lock) computes a new piece
 *   starting OCLK_MARGIN in the future, continuous with the current one at that point, whose
 *   slope brings the clock back onto CLOCK_MONOTONIC over the next period (slewed, at most
 *   OCLK_MAX_SLEW), and publishes {a = old b, b = new piece} under a sequence counter. A
 *   reader that raced with it retries; a reader holding the old state reads a TSC value below
 *   the new switch point (it was read before the update became visible, and the switch point
 *   lies OCLK_MARGIN later), so old and new states give it the same value.
 *
 * Before ovni_proc_init() (no calibration yet) or without an invariant TSC the clock is plain
 * clock_gettime(CLOCK_MONOTONIC).
 *
 * Hot path: one sequence load, rdtsc, a compare, a 64x64->128 multiply, two more loads.
 * No lock, no atomic read-modify-write, no syscall.
 */
#ifndef OVNI_CLOCK_H
#define OVNI_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "librecord/rec_clock.h"

#pragma GCC visibility push(hidden)

struct oclk_piece {
	uint64_t tsc0; /* start of the piece */
	uint64_t ns0;  /* value at tsc0 */
	uint64_t mult; /* ns per tick << 32 */
};

struct oclk_state {
	uint32_t seq; /* odd while the state is being written */
	uint32_t pad;
	uint64_t switch_tsc; /* piece a below, piece b from here on */
	uint64_t resync_tsc; /* a reader past this tries to resync (0: always slow path) */
	struct oclk_piece a, b;
} __attribute__((aligned(64)));

extern struct oclk_state oclk;

/* Out of line: resync (or plain clock_gettime when not calibrated); returns the time. */
uint64_t oclk_slow(uint64_t tsc, uint64_t ns);
/* Start the disciplined TSC clock from librecord's calibration (at ovni_proc_init). */
void oclk_start(void);
/* In a fork child: drop a resync lock another thread of the parent may have held. */
void oclk_fork_child(void);

static inline uint64_t oclk_ld(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static inline uint64_t oclk_now(void)
{
	for (;;) {
		/* acquire: the fields below are read after seq (pairs with the writer's
		 * release store of the even seq that ends an update) */
		uint32_t s1 = __atomic_load_n(&oclk.seq, __ATOMIC_ACQUIRE);
		uint64_t tsc = rec_clock_tsc();
		const struct oclk_piece *p = tsc < oclk_ld(&oclk.switch_tsc) ? &oclk.a : &oclk.b;
		uint64_t d = tsc - oclk_ld(&p->tsc0);
		uint64_t ns = oclk_ld(&p->ns0) +
			      (uint64_t)(((unsigned __int128)d * oclk_ld(&p->mult)) >> 32);
		uint64_t due = oclk_ld(&oclk.resync_tsc);

		/* the field loads above happen before seq is read again (pairs with the
		 * writer's release store of the odd seq that starts an update) */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__builtin_expect(__atomic_load_n(&oclk.seq, __ATOMIC_RELAXED) != s1 || (s1 & 1),
				     0))
			continue;
		if (__builtin_expect(tsc >= due, 0))
			return oclk_slow(tsc, ns);
		return ns;
	}
}

#pragma GCC visibility pop

#endif
