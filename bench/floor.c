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
 * Built with -DFLOOR_WRITE -pthread, it is the write-out floor: the same records, but the ring
 * is 8 chunks of 1 MiB (flightrec's default geometry) and a second thread writes each full
 * chunk into a file with one write(2) while the loop goes on, the loop waiting (futex) only
 * when the next chunk is still being written. That is the least a recorder that writes its
 * trace as it runs adds to the floor: the copy of every byte into the page cache, on another
 * core, and what that costs the producer's core (cache and memory traffic, the scheduler).
 * The file is unlinked once open (bench/run deletes every trace before write-back too).
 *
 * Usage: floor N [RING_BYTES]          floor-write N OUTPUT_FILE
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef FLOOR_WRITE
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

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

#ifndef FLOOR_WRITE
__attribute__((noinline)) static void floor_rewind(struct floor_ring *r)
{
	r->pos = r->start;
}
#else
#define FW_CHUNK (1u << 20)
#define FW_CHUNKS 8

static uint8_t *fw_base;
static uint32_t fw_full[FW_CHUNKS]; /* futex words: 1 while the writer has it */
static uint32_t fw_done;
static uint64_t fw_len[FW_CHUNKS];
static unsigned fw_cur;
static int fw_fd;

static void fw_futex(uint32_t *w, int op, uint32_t v)
{
	syscall(SYS_futex, w, op, v, NULL, NULL, 0);
}

/* the chunk just filled goes to the writer; the loop goes on in the next once it is free */
static void fw_hand_off(struct floor_ring *r, uint64_t len)
{
	fw_len[fw_cur] = len;
	__atomic_store_n(&fw_full[fw_cur], 1, __ATOMIC_RELEASE);
	fw_futex(&fw_full[fw_cur], FUTEX_WAKE_PRIVATE, 1);
	fw_cur = (fw_cur + 1) % FW_CHUNKS;
	while (__atomic_load_n(&fw_full[fw_cur], __ATOMIC_ACQUIRE))
		fw_futex(&fw_full[fw_cur], FUTEX_WAIT_PRIVATE, 1);
	r->start = (uint64_t *)(fw_base + (size_t)fw_cur * FW_CHUNK);
	r->pos = r->start;
	r->end = r->start + FW_CHUNK / 8;
}

__attribute__((noinline)) static void floor_rewind(struct floor_ring *r)
{
	fw_hand_off(r, FW_CHUNK);
}

static void *fw_writer(void *arg)
{
	unsigned k = 0;

	(void)arg;
	for (;;) {
		while (!__atomic_load_n(&fw_full[k], __ATOMIC_ACQUIRE)) {
			if (__atomic_load_n(&fw_done, __ATOMIC_ACQUIRE))
				return NULL;
			fw_futex(&fw_full[k], FUTEX_WAIT_PRIVATE, 0);
		}
		if (write(fw_fd, fw_base + (size_t)k * FW_CHUNK, fw_len[k]) != (ssize_t)fw_len[k]) {
			perror("floor-write: write");
			exit(1);
		}
		__atomic_store_n(&fw_full[k], 0, __ATOMIC_RELEASE);
		fw_futex(&fw_full[k], FUTEX_WAKE_PRIVATE, 1);
		k = (k + 1) % FW_CHUNKS;
	}
}
#endif

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

#ifdef FLOOR_WRITE
int main(int argc, char **argv)
{
	static struct floor_ring ring;
	pthread_t writer;

	if (argc != 3) {
		fprintf(stderr, "usage: %s N OUTPUT_FILE\n", argv[0]);
		return 2;
	}
	long n = strtol(argv[1], NULL, 0);
	fw_fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	fw_base = aligned_alloc(4096, (size_t)FW_CHUNKS * FW_CHUNK);
	if (fw_fd < 0 || !fw_base) {
		perror("floor-write");
		return 1;
	}
	unlink(argv[2]);
	memset(fw_base, 0, (size_t)FW_CHUNKS * FW_CHUNK); /* pre-fault */
	ring.start = ring.pos = (uint64_t *)fw_base;
	ring.end = ring.start + FW_CHUNK / 8;
	floor_tls = &ring;
	if (pthread_create(&writer, NULL, fw_writer, NULL)) {
		perror("floor-write: pthread_create");
		return 1;
	}

	long long t0 = now_ns();
	long sum = run(n);
	long long t1 = now_ns();

	/* the last chunk's part, then the writer ends (not timed: as a recorder's finish) */
	fw_hand_off(&ring, (uint64_t)((uint8_t *)ring.pos - (uint8_t *)ring.start));
	__atomic_store_n(&fw_done, 1, __ATOMIC_RELEASE);
	for (unsigned k = 0; k < FW_CHUNKS; k++)
		fw_futex(&fw_full[k], FUTEX_WAKE_PRIVATE, 1);
	pthread_join(writer, NULL);
	off_t size = lseek(fw_fd, 0, SEEK_END);
	printf("phase_ns=%lld calls=%ld sum=%ld written=%lld\n", t1 - t0, n, sum, (long long)size);
	return 0;
}
#else
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
#endif
