/*
 * bench/floor.c - the floor of `make bench`: the least work that can record a call.
 *
 * What it measures: the same phase as bench/loop.c (N calls of a tiny noinline leaf, timed
 * with CLOCK_MONOTONIC, printed as `phase_ns=<ns> calls=<N>`), but built without any
 * instrumentation and with the recording done by hand around each call: per call, 2 rdtsc and
 * two 16-byte records (uftrace layout: u64 time, u64 type|magic|depth|addr) stored into a
 * per-thread buffer.  That is the physical minimum for recording an entry and an exit; no hook
 * call, no guard, no flush.  bench/run reports (phase(N) - phase(0)) / N, like for the traced
 * builds, so the bare call and loop (~2 ns) are in the floor as they are in every other row.
 *
 * Why it looks like this:
 * - The buffer is reached through an initial-exec TLS pointer and is a ring of RING_BYTES
 *   (default 1 MiB, argv[2] to change), pre-faulted, rewound at its end on an out-of-line
 *   path: about what a real per-thread ring chunk costs, without page faults or write-back.
 *   The size hardly matters on this machine (64 KiB, 1 MiB, 8 MiB: all ~20 ns per call;
 *   64 MiB: ~21 ns): the two rdtsc (~8.5 ns each here) are most of the floor.
 * - tiny() is noipa, so the compiler cannot prove that the call leaves the ring alone: the
 *   write pointer is reloaded from TLS and stored back for each event, as a hook would.
 * - rdtsc is plain (not rdtscp, no fence): the cheapest timestamp a recorder can take.
 * - The checksum of the ring is printed so the stores cannot be dropped.
 *
 * Usage: floor N [RING_BYTES]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"

#define REC_ENTRY 0
#define REC_EXIT  1
#define REC_MAGIC 5

struct floor_ring {
	uint64_t *pos; /* next free record */
	uint64_t *end; /* one past the last record */
	uint64_t *start;
};

static __thread struct floor_ring *floor_tls __attribute__((tls_model("initial-exec")));

__attribute__((noinline)) static void floor_rewind(struct floor_ring *r)
{
	r->pos = r->start;
}

static inline void floor_record(int type, int depth, uintptr_t addr)
{
	struct floor_ring *r = floor_tls;
	uint64_t *p = r->pos;

	p[0] = bench_rdtsc();
	p[1] = type | REC_MAGIC << 3 | (uint64_t)depth << 6 | (uint64_t)addr << 16;
	r->pos = p + 2;
	if (__builtin_expect(r->pos == r->end, 0))
		floor_rewind(r);
}

__attribute__((noipa)) long tiny(long x)
{
	return x * 3 + 1;
}

__attribute__((noinline, noclone)) long run(long n)
{
	long sum = 0;

	for (long i = 0; i < n; i++) {
		floor_record(REC_ENTRY, 2, (uintptr_t)tiny);
		sum += tiny(i);
		floor_record(REC_EXIT, 2, (uintptr_t)tiny);
	}
	return sum;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: %s N [RING_BYTES]\n", argv[0]);
		return 2;
	}
	long n = strtol(argv[1], NULL, 0);
	size_t bytes = argc > 2 ? strtoul(argv[2], NULL, 0) : 1 << 20;
	size_t nrec = bytes / 16 ? bytes / 16 : 1;
	static struct floor_ring ring;

	ring.start = aligned_alloc(64, (nrec * 16 + 63) & ~(size_t)63);
	if (!ring.start) {
		perror("floor: aligned_alloc");
		return 1;
	}
	memset(ring.start, 0, nrec * 16); /* pre-fault */
	ring.pos = ring.start;
	ring.end = ring.start + 2 * nrec;
	floor_tls = &ring;

	long long t0 = now_ns();
	long sum = run(n);
	long long t1 = now_ns();

	uint64_t check = 0;
	for (size_t i = 0; i < 2 * nrec; i++)
		check ^= ring.start[i];
	printf("phase_ns=%lld calls=%ld sum=%ld check=%llx\n", t1 - t0, n, sum,
	       (unsigned long long)check);
	return 0;
}
