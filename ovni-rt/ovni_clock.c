/*
 * ovni_clock: start and discipline the TSC clock of ovni_clock_now() (see ovni_clock.h).
 *
 * Invariants: only the holder of oclk_lock writes `oclk` (and the rate anchors); every
 * published piece has a positive slope and starts where the previous one is at that point
 * (or above it, when the clock has fallen more than OCLK_STEP_NS behind), so the clock never
 * goes backwards.
 */
#include "ovni-rt/ovni_clock.h"

#include <string.h>

#define OCLK_FIRST_PERIOD_MS 10 /* first resyncs come early: the rate is least known */
#define OCLK_PERIOD_MS 100
#define OCLK_MARGIN_US 1000   /* a new piece starts this far after the resync */
#define OCLK_MAX_SLEW_PPM 500 /* the slope stays within this of the measured rate */
#define OCLK_STEP_NS 1000000  /* further behind than this: jump forward */
#define OCLK_ANCHOR_S 30      /* the rate is measured over 30 to 60 s once possible */
#define OCLK_SAMPLES 7

struct oclk_state oclk;

static uint32_t oclk_lock;
static int oclk_started;
static uint64_t oclk_hz; /* ticks per second */
static uint64_t oclk_period_ms;
static struct {
	uint64_t tsc, ns;
} oclk_old, oclk_mid; /* rate anchors */

/* (tsc, CLOCK_MONOTONIC) taken as close together as the machine lets us. */
static void oclk_sample(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	*tsc = *ns = 0;

	for (int i = 0; i < OCLK_SAMPLES; i++) {
		uint64_t t0 = rec_clock_tsc();
		uint64_t n = rec_clock_mono_ns();
		uint64_t t1 = rec_clock_tsc();
		if (t1 - t0 < best) {
			best = t1 - t0;
			*tsc = t0 + (t1 - t0) / 2;
			*ns = n;
		}
	}
}

static uint64_t oclk_eval(const struct oclk_piece *p, uint64_t tsc)
{
	return p->ns0 + (uint64_t)(((unsigned __int128)(tsc - p->tsc0) * p->mult) >> 32);
}

/* The current function at tsc (writer side: plain reads, we hold the lock). */
static uint64_t oclk_at(uint64_t tsc)
{
	return oclk_eval(tsc < oclk.switch_tsc ? &oclk.a : &oclk.b, tsc);
}

static void oclk_publish(const struct oclk_piece *a, uint64_t switch_tsc,
			 const struct oclk_piece *b, uint64_t resync_tsc)
{
	uint32_t seq = oclk.seq;

	__atomic_store_n(&oclk.seq, seq + 1, __ATOMIC_RELAXED);
	/* the odd seq is visible before any field changes (pairs with the readers' acquire
	 * fence before their second seq load) */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&oclk.a.tsc0, a->tsc0, __ATOMIC_RELAXED);
	__atomic_store_n(&oclk.a.ns0, a->ns0, __ATOMIC_RELAXED);
	__atomic_store_n(&oclk.a.mult, a->mult, __ATOMIC_RELAXED);
	__atomic_store_n(&oclk.b.tsc0, b->tsc0, __ATOMIC_RELAXED);
	__atomic_store_n(&oclk.b.ns0, b->ns0, __ATOMIC_RELAXED);
	__atomic_store_n(&oclk.b.mult, b->mult, __ATOMIC_RELAXED);
	__atomic_store_n(&oclk.switch_tsc, switch_tsc, __ATOMIC_RELAXED);
	__atomic_store_n(&oclk.resync_tsc, resync_tsc, __ATOMIC_RELAXED);
	/* the fields are visible before the even seq (pairs with the readers' acquire load) */
	__atomic_store_n(&oclk.seq, seq + 2, __ATOMIC_RELEASE);
}

static uint64_t oclk_ticks(uint64_t ns)
{
	return (uint64_t)((unsigned __int128)ns * oclk_hz / 1000000000ull);
}

void oclk_start(void)
{
	struct oclk_piece p;
	uint64_t tsc;

	if (oclk_started || !rec_clock_g.use_tsc || !rec_clock_g.mult)
		return;
	while (__atomic_exchange_n(&oclk_lock, 1, __ATOMIC_ACQUIRE))
		;
	if (!oclk_started) {
		oclk_hz = rec_clock_g.tsc_hz;
		oclk_period_ms = OCLK_FIRST_PERIOD_MS;
		p.tsc0 = rec_clock_g.base_tsc;
		p.ns0 = rec_clock_g.base_ns;
		p.mult = rec_clock_g.mult;
		oclk_old.tsc = oclk_mid.tsc = p.tsc0;
		oclk_old.ns = oclk_mid.ns = p.ns0;
		tsc = rec_clock_tsc();
		oclk_publish(&p, 0, &p, tsc + oclk_ticks(oclk_period_ms * 1000000ull));
		oclk_started = 1;
	}
	__atomic_store_n(&oclk_lock, 0, __ATOMIC_RELEASE);
}

static void oclk_resync(void)
{
	uint64_t tm, mm, s, v, target, period, rate, lo, hi, mult;
	struct oclk_piece a, b;
	int64_t err;

	oclk_sample(&tm, &mm);
	if (tm < oclk.resync_tsc || tm <= oclk_old.tsc)
		return; /* someone resynced meanwhile, or the TSC went backwards: keep the line */
	/* rate anchors: the oldest is 30-60 s back once the process has lived that long */
	if (tm - oclk_mid.tsc >= oclk_ticks(OCLK_ANCHOR_S * 1000000000ull)) {
		oclk_old = oclk_mid;
		oclk_mid.tsc = tm;
		oclk_mid.ns = mm;
	}
	if (mm > oclk_old.ns)
		rate = (uint64_t)(((unsigned __int128)(mm - oclk_old.ns) << 32) /
				  (tm - oclk_old.tsc));
	else
		rate = rec_clock_g.mult;

	period = oclk_ticks(oclk_period_ms * 1000000ull);
	s = tm + oclk_ticks(OCLK_MARGIN_US * 1000ull);
	v = oclk_at(s);
	err = (int64_t)(oclk_at(tm) - mm);
	if (err < -(int64_t)OCLK_STEP_NS) {
		/* far behind (a stopped TSC?): jump forward, which keeps it monotonic */
		uint64_t want = mm + (uint64_t)(((unsigned __int128)(s - tm) * rate) >> 32);
		if (want > v)
			v = want;
	}
	/* where CLOCK_MONOTONIC will be one period after s: aim the new piece there */
	target = mm + (uint64_t)(((unsigned __int128)(s + period - tm) * rate) >> 32);
	lo = rate - rate / 1000000 * OCLK_MAX_SLEW_PPM;
	hi = rate + rate / 1000000 * OCLK_MAX_SLEW_PPM;
	if (target <= v)
		mult = lo;
	else
		mult = (uint64_t)(((unsigned __int128)(target - v) << 32) / period);
	if (mult < lo)
		mult = lo;
	if (mult > hi)
		mult = hi;

	a = tm < oclk.switch_tsc ? oclk.a : oclk.b; /* the piece in effect now */
	b.tsc0 = s;
	b.ns0 = v;
	b.mult = mult;
	if (oclk_period_ms < OCLK_PERIOD_MS)
		oclk_period_ms =
			oclk_period_ms * 2 > OCLK_PERIOD_MS ? OCLK_PERIOD_MS : oclk_period_ms * 2;
	oclk_publish(&a, s, &b, tm + oclk_ticks(oclk_period_ms * 1000000ull));
}

uint64_t oclk_slow(uint64_t tsc, uint64_t ns)
{
	(void)tsc;
	if (!__atomic_load_n(&oclk_started, __ATOMIC_ACQUIRE))
		return rec_clock_mono_ns();
	/* one resyncer; the others keep the value they computed, which stays valid */
	if (__atomic_exchange_n(&oclk_lock, 1, __ATOMIC_ACQUIRE))
		return ns;
	oclk_resync();
	__atomic_store_n(&oclk_lock, 0, __ATOMIC_RELEASE);
	return ns;
}

void oclk_fork_child(void)
{
	oclk_lock = 0;
}
