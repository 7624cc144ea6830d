/*
 * rec_tp: the tracepoint table and the recording of a hit (see rec_tp.h).
 *
 * rec_tp_hit runs in hooks, with the program's SSE/x87 state live: this file is built for
 * general registers only (pragma below), copies with 8-byte moves, and reaches libc (a
 * thread's first event, a chunk switch, the stack bounds) only through fxsave thunks.
 *
 * The stack slice: [rsp, rsp + FLIGHTREC_TP_STACK) clipped to the thread's stack, whose
 * bounds are found once per thread: the main thread's from the [stack] line of
 * /proc/self/maps (read at setup) and RLIMIT_STACK, another thread's with
 * pthread_getattr_np. A hit whose rsp is on neither (a signal's alternate stack) keeps
 * no stack, rather than read memory that may not be mapped.
 */
#pragma GCC target("general-regs-only")
#define REC_HOOK_FPSAFE 1
#include "librecord/rec_tp.h"
#include "librecord/rec_session.h"
#include "librecord/rec_symtab.h"
#include "librecord/rec_thread.h"
#include "librecord/rec_util.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define barrier() __asm__ __volatile__("" ::: "memory")

static struct rec_tp rec_tp_table[REC_TP_MAX];
struct rec_tp *rec_tps = rec_tp_table;
uint32_t rec_ntp;
uint32_t rec_tp_stack = 512;
uint64_t rec_tp_max_frames = 1000;

/* tracepoints sorted by address, for rec_tp_find */
static uintptr_t rec_tp_lo[REC_TP_MAX], rec_tp_hi[REC_TP_MAX];
static struct rec_tp *rec_tp_sorted[REC_TP_MAX];

/* the main thread's stack */
static uintptr_t rec_tp_main_lo, rec_tp_main_hi;
/* this thread's stack, found at its first hit (0: not yet; lo = hi: unknown) */
static __thread uintptr_t rec_tp_stk_lo __attribute__((tls_model("initial-exec")));
static __thread uintptr_t rec_tp_stk_hi __attribute__((tls_model("initial-exec")));

static void rec_tp_main_stack(void)
{
	char line[1024], *end;
	struct rlimit rl;
	struct rec_lines in;
	/* read(2), not stdio: the session start may not call the program's malloc (rec_util.h) */
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	rec_lines_init(&in, fd);
	while (rec_lines_next(&in, line, sizeof(line)) >= 0) {
		unsigned long long lo = strtoull(line, &end, 16), hi = 0;
		if (*end == '-')
			hi = strtoull(end + 1, &end, 16);
		if (strstr(line, " [stack]") && hi > lo) {
			rec_tp_main_hi = (uintptr_t)hi;
			rec_tp_main_lo = (uintptr_t)lo;
			/* the mapping grows down on demand, up to the limit */
			if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
			    rl.rlim_cur < hi)
				rec_tp_main_lo = (uintptr_t)(hi - rl.rlim_cur);
			else if (hi > (1ull << 30))
				rec_tp_main_lo = (uintptr_t)(hi - (1ull << 30));
		}
	}
	close(fd);
}

static int rec_tp_cmp(const void *a, const void *b)
{
	const struct rec_tp *x = *(struct rec_tp *const *)a, *y = *(struct rec_tp *const *)b;
	return (x->addr > y->addr) - (x->addr < y->addr);
}

static int rec_tp_add(const struct rec_module *m, size_t mi, const struct rec_sym *s,
		      const char *name)
{
	struct rec_tp *tp;
	uintptr_t end = s->size ? s->addr + s->size : s->addr + 1;

	if (rec_ntp == REC_TP_MAX) {
		rec_warn("more than %d tracepoints: %s and the rest are ignored", REC_TP_MAX, name);
		return -1;
	}
	for (uint32_t i = 0; i < rec_ntp; i++)
		if (rec_tps[i].addr == s->addr)
			return 0; /* named twice */
	tp = &rec_tps[rec_ntp];
	memset(tp, 0, sizeof(*tp));
	tp->addr = s->addr;
	tp->end = end;
	tp->bias = m->bias;
	tp->num = rec_ntp + 1;
	tp->module = (uint32_t)mi;
	rec_snprintf(tp->name, sizeof(tp->name), "%s", name);
	rec_ntp++;
	return 0;
}

/* the lookup arrays, sorted by address, over the current table */
static void rec_tp_index(void)
{
	for (uint32_t i = 0; i < rec_ntp; i++)
		rec_tp_sorted[i] = &rec_tps[i];
	rec_sort(rec_tp_sorted, rec_ntp, sizeof(rec_tp_sorted[0]), rec_tp_cmp);
	for (uint32_t i = 0; i < rec_ntp; i++) {
		rec_tp_lo[i] = rec_tp_sorted[i]->addr;
		rec_tp_hi[i] = rec_tp_sorted[i]->end;
	}
}

int rec_tp_setup(const char *spec, uint32_t stack, uint32_t max_frames)
{
	char buf[REC_PATH_MAX], *save = NULL, *name;

	rec_ntp = 0;
	rec_tps = rec_tp_table;
	rec_tp_stack = stack;
	rec_tp_max_frames = max_frames;
	rec_tp_main_stack();
	if (!spec || !*spec)
		return 0;
	if (rec_symtab_load() < 0) {
		rec_warn("cannot read the program's symbols: no tracepoint is set");
		return 0;
	}
	rec_snprintf(buf, sizeof(buf), "%s", spec);
	for (name = strtok_r(buf, ", \t", &save); name; name = strtok_r(NULL, ", \t", &save)) {
		struct rec_sym *syms[16];
		const struct rec_module *mods[16];
		size_t n = rec_symtab_lookup(name, syms, mods, 16);

		if (n == 0) {
			rec_warn("tracepoint %s: no function of that name in the program or its "
				 "libraries",
				 name);
			continue;
		}
		for (size_t i = 0; i < n && i < 16; i++) {
			size_t mi = 0;
			while (rec_symtab_module_at(mi) != mods[i])
				mi++;
			if (rec_tp_add(mods[i], mi, syms[i], name) < 0)
				break;
		}
	}
	rec_tp_index();
	return (int)rec_ntp;
}

void rec_tp_move(struct rec_tp *to)
{
	rec_tps = to;
	rec_tp_index();
}

struct rec_tp *rec_tp_find(uintptr_t pc)
{
	uint32_t lo = 0, hi = rec_ntp;

	/* the last tracepoint starting at or below pc */
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (rec_tp_lo[mid] <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || pc >= rec_tp_hi[lo - 1])
		return NULL;
	return rec_tp_sorted[lo - 1];
}

/* libc, through the fxsave thunk (rec_tp_fpsafe.S) */
void rec_tp_thread_stack(uintptr_t *lo, uintptr_t *hi);
void rec_tp_thread_stack_fpsafe(uintptr_t *lo, uintptr_t *hi);

void rec_tp_thread_stack(uintptr_t *lo, uintptr_t *hi)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;

	*lo = *hi = 1; /* unknown: no stack is kept */
	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return;
	if (pthread_attr_getstack(&attr, &addr, &size) == 0 && size) {
		*lo = (uintptr_t)addr;
		*hi = (uintptr_t)addr + size;
	}
	pthread_attr_destroy(&attr);
}

/* How many bytes from sp are this thread's stack, up to `want`. */
static uint32_t rec_tp_stack_len(uintptr_t sp, uint32_t want)
{
	uintptr_t lo = rec_tp_stk_lo, hi = rec_tp_stk_hi;

	if (want == 0)
		return 0;
	if (sp >= rec_tp_main_lo && sp < rec_tp_main_hi) {
		lo = rec_tp_main_lo;
		hi = rec_tp_main_hi;
	} else if (hi == 0) {
		rec_tp_thread_stack_fpsafe(&lo, &hi);
		rec_tp_stk_lo = lo;
		rec_tp_stk_hi = hi;
	}
	if (sp < lo || sp >= hi)
		return 0;
	return hi - sp < want ? (uint32_t)(hi - sp) : want;
}

/* 8-byte moves (memcpy could use SSE registers); n is a multiple of 8 */
static inline void rec_tp_copy8(uint64_t *dst, const uint64_t *src, size_t n)
{
	for (size_t i = 0; i < n / 8; i++)
		dst[i] = src[i];
}

/* Aligned: where the linker puts it changes what a hit costs (its copy loops against the
 * CPU's 32/64-byte fetch and uop-cache lines): the same code 48 bytes off a 64-byte boundary
 * took 82 ns a hit instead of 58 (bench/tp_loop, -pg -mfentry, 512-byte slices). */
__attribute__((aligned(64))) void rec_tp_hit(struct rec_tp *tp, const struct rec_tp_regs *r)
{
	struct rec_thread *t = rec_thread_get();
	struct rec_tp_frame *f;
	uint64_t hit;
	uint32_t len;
	size_t size;

	if (unlikely(!t))
		return;
	if (unlikely(t->busy)) {
		rec_count_lost(t, REC_LOST_NESTED, 1);
		return;
	}
	t->busy = 1;
	barrier();
	hit = __atomic_add_fetch(&tp->hits, 1, __ATOMIC_RELAXED);
	if (hit > rec_tp_max_frames)
		goto out; /* counted in tp->hits: tstatus says how many frames were not kept */
	len = rec_tp_stack_len(r->gpr[REC_TP_RSP], rec_tp_stack);
	size = rec_tp_frame_size(len);
	f = rec_reserve(t, size);
	if (unlikely(!f))
		goto out; /* counted as lost by the ring */
	f->size = (uint32_t)size;
	f->magic = REC_TP_FRAME_MAGIC;
	f->tpnum = (uint16_t)tp->num;
	f->tid = (uint32_t)t->tid;
	f->stack_len = len;
	f->ns = rec_clock_ns();
	f->hit = hit;
	rec_tp_copy8((uint64_t *)&f->regs, (const uint64_t *)r, sizeof(*r));
	if (len) {
		const uint8_t *src = (const uint8_t *)r->gpr[REC_TP_RSP];
		uint8_t *dst = (uint8_t *)(f + 1);
		size_t whole = len & ~(size_t)7;
		rec_tp_copy8((uint64_t *)dst, (const uint64_t *)src, whole);
		for (size_t i = whole; i < len; i++)
			dst[i] = src[i];
	}
	rec_commit(t);
out:
	barrier();
	t->busy = 0;
}
