/*
 * bench/hook_floor.c - the hook floor of `make bench`: the least a preloaded
 * -finstrument-functions runtime can do per call, built as a shared library and preloaded
 * under bench/loop.c's -finstrument-functions build.
 *
 * What it measures: bench/floor.c's work (per call 2 rdtsc and two 16-byte uftrace-layout
 * records into a per-thread ring) done where a runtime has to do it: in
 * __cyg_profile_func_enter/exit, reached through the program's PLT, with the thread's ring
 * and its call depth found through initial-exec TLS. No guard against recursion or signals,
 * no state check, no shadow stack, no flush, no file: what is left between this row and
 * bench/floor.c's is the price of being a hook at all (two calls through the PLT, their
 * argument setup, the TLS reads), which no runtime of this kind can avoid. flightrec's
 * -finstrument-functions row is compared with it in bench/run ("over the hook floor").
 *
 * Why it looks like this: the ring is 1 MiB, pre-faulted at load, rewound at its end on an
 * out-of-line path, as in bench/floor.c; the depth is kept because uftrace's records carry
 * it (bench/floor.c writes a constant one).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define RING_BYTES (1u << 20)
#define REC_ENTRY 0
#define REC_EXIT 1
#define REC_MAGIC 5

struct hook_ring {
	uint64_t *pos;
	uint64_t *end;
	uint64_t *start;
	uint32_t depth;
};

static __thread struct hook_ring hook_tls __attribute__((tls_model("initial-exec")));

static inline uint64_t hook_rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* a thread's first record (the ring made, pre-faulted) or the ring's end (rewound) */
__attribute__((noinline, no_instrument_function)) static void hook_slow(struct hook_ring *r)
{
	if (!r->start) {
		r->start = malloc(RING_BYTES);
		if (!r->start)
			abort();
		memset(r->start, 0, RING_BYTES);
		r->end = r->start + RING_BYTES / sizeof(uint64_t);
	}
	r->pos = r->start;
}

__attribute__((no_instrument_function)) static inline void hook_record(int type, uint32_t depth,
								       void *fn)
{
	struct hook_ring *r = &hook_tls;
	uint64_t *p = r->pos;

	if (__builtin_expect(p == r->end, 0)) { /* also the first: both NULL */
		hook_slow(r);
		p = r->pos;
	}
	p[0] = hook_rdtsc();
	p[1] = (uint64_t)type | REC_MAGIC << 3 | (uint64_t)(depth & 1023) << 6 |
	       (uint64_t)(uintptr_t)fn << 16;
	r->pos = p + 2;
}

__attribute__((visibility("default"), no_instrument_function)) void
__cyg_profile_func_enter(void *fn, void *call_site)
{
	(void)call_site;
	hook_record(REC_ENTRY, hook_tls.depth++, fn);
}

__attribute__((visibility("default"), no_instrument_function)) void
__cyg_profile_func_exit(void *fn, void *call_site)
{
	(void)call_site;
	hook_record(REC_EXIT, --hook_tls.depth, fn);
}
