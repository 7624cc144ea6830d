/*
 * rec_clock: the time sources a format may ask for.
 *
 * rec_clock_tsc() is the raw time-stamp counter (XRay wants cycles). rec_clock_ns() turns it
 * into CLOCK_MONOTONIC nanoseconds with one 64x64->128 multiply: ns = base_ns + ((tsc -
 * base_tsc) * mult) >> 32, where mult is calibrated once per process image against
 * clock_gettime (a fork child inherits it, so parent and child stamps stay on one line).
 * The conversion is a fixed linear function for the life of the image, so stamps never go
 * backwards within a thread and are comparable across its threads. When the TSC is unusable
 * (not invariant), rec_clock_ns() falls back to clock_gettime.
 */
#ifndef REC_CLOCK_H
#define REC_CLOCK_H


#include <stdint.h>
#include <time.h>

/* internal to the runtime: direct (not GOT) access from the hot path */
#pragma GCC visibility push(hidden)

struct rec_clock {
	uint64_t base_tsc;
	uint64_t base_ns;
	uint64_t mult;        /* ns per cycle, << 32 */
	uint64_t tsc_hz;      /* cycles per second (XRay's cycle_frequency) */
	int use_tsc;          /* 0: rdtsc is not trusted, read clock_gettime */
};

extern struct rec_clock rec_clock_g;

static inline uint64_t rec_clock_tsc(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

static inline uint64_t rec_clock_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t rec_clock_tsc_to_ns(uint64_t tsc)
{
	uint64_t d = tsc - rec_clock_g.base_tsc;
	return rec_clock_g.base_ns + (uint64_t)(((unsigned __int128)d * rec_clock_g.mult) >> 32);
}

static inline uint64_t rec_clock_ns(void)
{
	if (__builtin_expect(!rec_clock_g.use_tsc, 0))
		return rec_clock_mono_ns();
	return rec_clock_tsc_to_ns(rec_clock_tsc());
}

/* 1 when the CPU says its TSC is invariant (CPUID 0x80000007, EDX bit 8); slow path. */
int rec_clock_tsc_invariant(void);

/* Calibrate (about 2 ms); called once per process image before any thread records. */
void rec_clock_calibrate(void);

#pragma GCC visibility pop

#endif
