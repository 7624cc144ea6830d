/*
 * bench/ovni_floor.c - the floor of bench/run-ovni: the least a libovni.so.1 can do per event.
 *
 * What it is: a shared library with libovni's soname and the 12 functions bench/ovni_bench.c
 * calls, so that the very binary bench/run-ovni measures on ovni-rt and on libovni runs on it
 * too (LD_LIBRARY_PATH). Per event it does only what any recorder behind libovni's API must:
 *   ovni_clock_now   one plain rdtsc, converted to nanoseconds (a multiply and a shift, the
 *                    rate calibrated once against CLOCK_MONOTONIC)
 *   set_clock/mcv    the stores into the caller's struct ovni_ev
 *   payload_add      a copy of the bytes at the offset the flags byte gives
 *   ovni_ev_emit     the event (12 + payload bytes) copied into a per-thread buffer
 * and the program pays the calls through its PLT, as for every library. Two floors:
 *   memory  (default) the buffer (1 MiB) wraps: nothing reaches a file. The cost of the calls
 *           and the clock alone.
 *   write   (OVNI_FLOOR_WRITE=1) each full buffer is write()n, from the thread, to an unlinked
 *           file in the current directory, its blocks allocated ahead (fallocate, 64 MiB at a
 *           time: the cheapest appends, as ovni-rt makes them): the above plus the kernel's
 *           copy of every byte into the page cache, which every recorder of a trace pays too.
 * Nothing else: no stream header, no checks, no flush markers, no metadata, no valid trace.
 * It is a yardstick for the benchmark, never a runtime: the other 23 libovni functions are
 * absent (a program calling them does not link).
 *
 * Why so: ovni_clock_now() must return a time (the program may use it for anything), and each
 * event builder is a separate call the program makes through its PLT (about 2 ns each on this
 * machine, 7 calls per 28-byte event); those costs bound every implementation alike, ovni-rt
 * included, and the floor shows how close to them it is.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define OVNI_NO_INLINE /* the functions below, not the header's inline event builders */
#include "ovni.h"

#define FLOOR_BUF (1u << 20)
#define FLOOR_PREALLOC (64 << 20)

#define EXPORT __attribute__((visibility("default")))

struct floor_buf {
	uint8_t *pos, *end, *start;
	int fd; /* write floor: the unlinked file the buffer goes to; -1: it wraps */
	uint64_t written, prealloc; /* bytes written; blocks allocated up to here */
};

static __thread struct floor_buf fb __attribute__((tls_model("initial-exec")));
static uint64_t floor_tsc0, floor_ns0, floor_mult; /* ns = ns0 + (tsc - tsc0) * mult >> 32 */
static int floor_write;
static uint64_t floor_written; /* bytes all threads wrote: told at ovni_proc_fini */

static inline uint64_t floor_tsc(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

static uint64_t floor_mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

EXPORT void ovni_version_check_str(const char *version)
{
	(void)version;
}

EXPORT void ovni_proc_init(int app, const char *loom, int pid)
{
	uint64_t t0 = floor_tsc(), n0 = floor_mono(), t1, n1;
	struct timespec ms = { 0, 20000000 };
	const char *w = getenv("OVNI_FLOOR_WRITE");

	(void)app, (void)loom, (void)pid;
	floor_write = w && *w == '1';
	nanosleep(&ms, NULL);
	t1 = floor_tsc();
	n1 = floor_mono();
	floor_tsc0 = t1;
	floor_ns0 = n1;
	floor_mult = (uint64_t)(((unsigned __int128)(n1 - n0) << 32) / (t1 - t0));
}

/* What was written, so that bench/run-ovni can check the write floor did write everything. */
EXPORT void ovni_proc_fini(void)
{
	if (floor_write)
		fprintf(stderr, "floor_written=%llu\n",
			(unsigned long long)__atomic_load_n(&floor_written, __ATOMIC_RELAXED));
}

EXPORT void ovni_add_cpu(int index, int phyid)
{
	(void)index, (void)phyid;
}

EXPORT void ovni_thread_init(pid_t tid)
{
	uint8_t *b = mmap(NULL, FLOOR_BUF + 64, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	char name[64];

	if (b == MAP_FAILED) {
		perror("ovni_floor: mmap");
		exit(1);
	}
	fb.start = fb.pos = b;
	fb.end = b + FLOOR_BUF; /* 64 bytes of slack past the end: an event never straddles */
	fb.fd = -1;
	fb.written = fb.prealloc = 0;
	if (floor_write) {
		snprintf(name, sizeof(name), "ovni_floor.%d.tmp", (int)tid);
		fb.fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fb.fd < 0) {
			perror("ovni_floor: open");
			exit(1);
		}
		unlink(name);
	}
}

static void __attribute__((noinline)) floor_full(void)
{
	size_t n = (size_t)(fb.pos - fb.start);

	if (fb.fd < 0) {
		fb.pos = fb.start;
		return;
	}
	/* blocks allocated ahead, as ovni-rt does: appending into them is the cheapest write */
	if (fb.written + n > fb.prealloc &&
	    fallocate(fb.fd, FALLOC_FL_KEEP_SIZE, (off_t)fb.prealloc, FLOOR_PREALLOC) == 0)
		fb.prealloc += FLOOR_PREALLOC;
	if (write(fb.fd, fb.start, n) != (ssize_t)n) {
		perror("ovni_floor: write");
		exit(1);
	}
	fb.written += n;
	fb.pos = fb.start;
}

EXPORT void ovni_flush(void)
{
	floor_full();
}

EXPORT void ovni_thread_free(void)
{
	floor_full();
	if (fb.fd >= 0)
		close(fb.fd);
	__atomic_fetch_add(&floor_written, fb.written, __ATOMIC_RELAXED);
	munmap(fb.start, FLOOR_BUF + 64);
}

EXPORT uint64_t ovni_clock_now(void)
{
	return floor_ns0 + (uint64_t)(((unsigned __int128)(floor_tsc() - floor_tsc0) * floor_mult) >> 32);
}

EXPORT void ovni_ev_set_clock(struct ovni_ev *ev, uint64_t clock)
{
	ev->header.clock = clock;
}

EXPORT void ovni_ev_set_mcv(struct ovni_ev *ev, const char *mcv)
{
	ev->header.model = (uint8_t)mcv[0];
	ev->header.category = (uint8_t)mcv[1];
	ev->header.value = (uint8_t)mcv[2];
}

/* The usual sizes by predicted branches, not an offset computed from the flags byte the
 * previous call stored an instant ago (a store-forwarding wait on every call). */
EXPORT void ovni_payload_add(struct ovni_ev *ev, const uint8_t *buf, int size)
{
	uint8_t f = ev->header.flags;
	size_t have;

	if (f == 0)
		have = 0;
	else if (f == 3)
		have = 4;
	else if (f == 7)
		have = 8;
	else if (f == 11)
		have = 12;
	else
		have = (f & 0x0f) + 1u;
	__asm__("" : "+r"(have));
	if (size == 4)
		memcpy(&ev->payload.u8[have], buf, 4);
	else if (size == 8)
		memcpy(&ev->payload.u8[have], buf, 8);
	else
		memcpy(&ev->payload.u8[have], buf, (size_t)size);
	ev->header.flags = (uint8_t)(have + (size_t)size - 1);
}

/* A fixed 28-byte copy in pieces that each fall inside one store the program made (the
 * header bytes, the clock, the payload words: a wider load waits for all the stores it spans), then the length by predicted branches. */
EXPORT void ovni_ev_emit(struct ovni_ev *ev)
{
	uint8_t *p = fb.pos, f = ev->header.flags;
	uint32_t w[4];
	uint64_t clock;
	size_t n;

	w[0] = (uint32_t)f | (uint32_t)ev->header.model << 8 | (uint32_t)ev->header.category << 16 |
	       (uint32_t)ev->header.value << 24;
	memcpy(&clock, (uint8_t *)ev + 4, 8);
	memcpy(p, &w[0], 4);
	memcpy(p + 4, &clock, 8);
	if (f) {
		for (int i = 0; i < 4; i++) {
			memcpy(&w[i], &ev->payload.u8[4 * i], 4);
			__asm__("" : "+r"(w[i]));
		}
		memcpy(p + 12, w, 16);
	}
	n = f == 0 ? 12 : f == 15 ? 28 : 12 + (f & 0x0f) + 1u;
	fb.pos = p + n;
	if (fb.pos >= fb.end)
		floor_full();
}
