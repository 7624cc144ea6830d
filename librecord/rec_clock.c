/*
 * rec_clock: calibration of the TSC against CLOCK_MONOTONIC (see rec_clock.h).
 *
 * Each end point is the (rdtsc, clock_gettime, rdtsc) triple with the smallest rdtsc spread
 * out of a few tries, so a preemption between the reads cannot skew it; the end points are
 * REC_CALIB_NS apart. With ~30 ns of jitter per end point the rate error is ~3e-5.
 */
#include "librecord/rec_clock.h"
#include "librecord/rec_util.h"

#include <cpuid.h>
#include <string.h>

#define REC_CALIB_NS 2000000ull
#define REC_CALIB_TRIES 16

struct rec_clock rec_clock_g;

int rec_clock_tsc_invariant(void)
{
	unsigned a, b, c, d;
	if (__get_cpuid(0x80000000, &a, &b, &c, &d) == 0 || a < 0x80000007)
		return 0;
	__get_cpuid(0x80000007, &a, &b, &c, &d);
	return (d >> 8) & 1;
}

static void rec_clock_sample(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < REC_CALIB_TRIES; i++) {
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

void rec_clock_calibrate(void)
{
	uint64_t t0, n0, t1, n1;

	memset(&rec_clock_g, 0, sizeof(rec_clock_g));
	rec_clock_sample(&t0, &n0);
	rec_clock_g.base_ns = n0;
	if (!rec_clock_tsc_invariant()) {
		rec_debug("TSC is not invariant: using clock_gettime");
		return;
	}
	do
		rec_clock_sample(&t1, &n1);
	while (n1 - n0 < REC_CALIB_NS);
	if (t1 <= t0) {
		rec_debug("TSC did not advance: using clock_gettime");
		return;
	}
	rec_clock_g.base_tsc = t0;
	rec_clock_g.mult = (uint64_t)((((unsigned __int128)(n1 - n0)) << 32) / (t1 - t0));
	rec_clock_g.tsc_hz = (uint64_t)((unsigned __int128)(t1 - t0) * 1000000000ull / (n1 - n0));
	rec_clock_g.use_tsc = 1;
}
