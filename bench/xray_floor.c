/*
 * bench/xray_floor.c - the floor of bench/run-xray: the least work that can record a call in
 * XRay's FDR format.
 *
 * What it measures: the same phase as bench/xray_loop.c (N calls of a tiny noinline leaf,
 * timed with CLOCK_MONOTONIC, printed as `phase_ns=<ns> calls=<N>`), built without any
 * instrumentation and with the recording done by hand around each call: per call, 2 rdtsc
 * and two 8-byte FDR function records (function id and type in the first word, the TSC delta
 * from the previous record in the second) stored into a per-thread buffer. That is the
 * physical minimum for an entry and an exit in this format: no sled, no call, no guard, no
 * CPU check, no flush. bench/run-xray reports (phase(N) - phase(0)) / N, so the bare call and
 * loop are in the floor as they are in every other row.
 *
 * Why it looks like this (as bench/floor.c, whose records are uftrace's 16-byte ones):
 * - the buffer is reached through an initial-exec TLS pointer and is a ring of RING_BYTES
 *   (default 1 MiB, argv[2]), pre-faulted, rewound at its end on an out-of-line path;
 * - tiny() is noipa, so the write pointer and the last TSC are reloaded and stored back for
 *   each event, as a hook would;
 * - rdtsc is plain (not rdtscp, no fence);
 * - a checksum of the ring is printed so the stores cannot be dropped.
 *
 * Usage: xray_floor N [RING_BYTES]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"

#define FN_ENTER 0
#define FN_EXIT 1
#define FID 1

struct xfloor_ring {
	uint64_t *pos; /* next free record */
	uint64_t *end; /* one past the last record */
	uint64_t *start;
	uint64_t last_tsc;
};

static __thread struct xfloor_ring *xfloor_tls __attribute__((tls_model("initial-exec")));

__attribute__((noinline)) static void xfloor_rewind(struct xfloor_ring *r)
{
	r->pos = r->start;
}

static inline void xfloor_record(unsigned type)
{
	struct xfloor_ring *r = xfloor_tls;
	uint64_t *p = r->pos, tsc = bench_rdtsc();

	*p = (uint64_t)(FID << 4 | type << 1) | (tsc - r->last_tsc) << 32;
	r->last_tsc = tsc;
	r->pos = p + 1;
	if (__builtin_expect(r->pos == r->end, 0))
		xfloor_rewind(r);
}

__attribute__((noipa)) long tiny(long x)
{
	return x * 3 + 1;
}

__attribute__((noinline, noclone)) long run(long n)
{
	long sum = 0;

	for (long i = 0; i < n; i++) {
		xfloor_record(FN_ENTER);
		sum += tiny(i);
		xfloor_record(FN_EXIT);
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
	size_t nrec = bytes / 8 ? bytes / 8 : 1;
	static struct xfloor_ring ring;

	ring.start = aligned_alloc(64, (nrec * 8 + 63) & ~(size_t)63);
	if (!ring.start) {
		perror("xray_floor: aligned_alloc");
		return 1;
	}
	memset(ring.start, 0, nrec * 8); /* pre-fault */
	ring.pos = ring.start;
	ring.end = ring.start + nrec;
	ring.last_tsc = bench_rdtsc();
	xfloor_tls = &ring;

	long long t0 = now_ns();
	long sum = run(n);
	long long t1 = now_ns();

	uint64_t check = 0;
	for (size_t i = 0; i < nrec; i++)
		check ^= ring.start[i];
	printf("phase_ns=%lld calls=%ld sum=%ld check=%llx\n", t1 - t0, n, sum,
	       (unsigned long long)check);
	return 0;
}
