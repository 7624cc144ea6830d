/*
 * bench/bench_util.h - the timing helpers the bench programs share (loop.c, tp_loop.c,
 * floor.c, xray_floor.c): the phase's clock and the floors' timestamp.
 *
 * now_ns() is a plain static function, not inline: the compilers make the same choice for it
 * as for any of the program's own functions (in the -finstrument-functions build of loop.c it
 * stays a function of its own, instrumented like the rest), so the programs' code is what it
 * would be with the helper written in each. xray_loop.c keeps its own (xray_never_instrument,
 * a clang attribute), as does cacheray_loop.c (built with Cacheray's instrumentation).
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in ns: each program times its own phase with it */
static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* plain rdtsc (not rdtscp, no fence): the cheapest timestamp a recorder can take */
static inline uint64_t bench_rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

#endif
