/*
 * xray_profmode: compiler-rt 14's profiling mode, "xray-profiling", for a program that selects
 * and initializes it through the logging API (xray_profiling.cpp, xray_profile_collector.cpp,
 * xray_function_call_trie.h): each thread builds a function call trie (a node per call path:
 * its call count and its time spent outside its callees), handed to the collector when the
 * thread exits or sees the mode finalized; finalize serializes every thread's trie into one
 * block; __xray_log_process_buffers gives the file header then one buffer per block;
 * flushLog writes them to <base><program>.XXXXXX (unless XRAY_PROFILING_OPTIONS or the init
 * string say no_flush=true) and resets the collector. A mode still initialized at exit is
 * finalized and flushed then, as compiler-rt's atexit hook does.
 *
 * The file, as compiler-rt writes it: header {u64 magic "xrayprof" (0x7872617970726f66), u64
 * version 0x20180424, u64 wall-clock ns, u64 pid}, then per thread a block {u32 size (16 +
 * records), u32 block number, u64 tid} of records {i32 function ids from the node up to its
 * root, i32 0, u64 call count, u64 cumulative local time in TSC ticks}, nodes in compiler-rt's
 * depth-first order.
 *
 * Memory: every thread's trie lives in an arena taken from a pool of buffers_max / 4 arenas of
 * 4 * per_thread_allocator_max bytes (compiler-rt takes four buffers per thread from a queue of
 * buffers_max); a thread finding none records nothing. Arenas go back to the pool when the
 * collector is reset (flush, next init). Only the program's own handler slot leads here: none
 * of this is on our own recording's path.
 */
#include "xray-rt/internal.h"
#include "formats/xray/xray_flags.h"
#include "librecord/rec_clock.h"
#include "librecord/rec_util.h"

#include <cpuid.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum {
	XP_UNINITIALIZED = 0,
	XP_INITIALIZING = 1,
	XP_INITIALIZED = 2,
	XP_FINALIZING = 3,
	XP_FINALIZED = 4
};
enum { XP_NOT_FLUSHING = 0, XP_FLUSHING = 1, XP_FLUSHED = 2 };

#define XP_MAGIC       0x7872617970726f66ull
#define XP_VERSION     0x20180424ull
#define XP_MAX_THREADS 4096u

struct xp_flags {
	long per_thread_max, global_max, stack_max, grace_ms, buffers_max;
	int no_flush;
};

/* a trie node; indices are 1-based (0: none) */
struct xp_node {
	uint32_t parent, first_child, next_sibling;
	int32_t fid;
	uint64_t count, local;
};

struct xp_frame {
	uint64_t tsc;
	uint32_t node, pad;
};

/* an arena: this header, then nodes from the front, the shadow stack from the back */
struct xp_arena {
	uint32_t nnodes, max_nodes, depth, max_depth;
	uint32_t first_root, last_root;
	uint64_t overflowed; /* compiler-rt's OverflowedFunctions */
	int32_t tid;
	uint32_t pad;
};

static struct {
	uint8_t *mem;
	size_t arena_size, map_size;
	uint32_t narenas, taken; /* arenas handed out since the last reset */
	uint64_t gen; /* bumped by each reset: a thread's arena of an older one is gone */
	struct xp_arena *posted[XP_MAX_THREADS];
	uint32_t nposted;
	int collecting;	 /* compiler-rt's CollectorInitialized */
	uint8_t *blocks; /* serialized blocks, back to back */
	size_t blocks_size, blocks_map;
	uint32_t nblocks;
	size_t *block_off; /* nblocks offsets into blocks */
	int lock;
} xp_c;

static struct xp_flags xp_fl;
static int xp_status = XP_UNINITIALIZED, xp_flush_status = XP_NOT_FLUSHING;
static pthread_key_t xp_key;
static int xp_key_ok, xp_atexit_set;

struct xp_tld {
	struct xp_arena *a;
	uint64_t gen;
	uint8_t keyed, exiting;
};
static __thread struct xp_tld xp_tld __attribute__((tls_model("initial-exec")));
static __thread uint8_t xp_running __attribute__((tls_model("initial-exec")));

static uint8_t xp_header[32];

static void xp_report(const char *msg)
{
	char buf[256];
	size_t n = rec_snprintf(buf, sizeof(buf), "==%d==%s\n", (int)getpid(), msg);
	rec_stderr_write(buf, n < sizeof(buf) ? n : sizeof(buf) - 1);
}

static void xp_lock(void)
{
	while (__atomic_exchange_n(&xp_c.lock, 1, __ATOMIC_ACQUIRE))
		sched_yield();
}

static void xp_unlock(void)
{
	__atomic_store_n(&xp_c.lock, 0, __ATOMIC_RELEASE);
}

static void *xp_map(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* compiler-rt's readTSC (rdtscp when the CPU has it, else CLOCK_REALTIME ns) */
static uint64_t xp_now(void)
{
	static int ok = -1;
	unsigned a, b, c, d;
	uint32_t lo, hi, aux;
	struct timespec ts;

	if (ok < 0)
		ok = __get_cpuid(0x80000001, &a, &b, &c, &d) && (d & (1u << 27)) &&
		     rec_clock_g.tsc_hz;
	if (ok) {
		__asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
		return ((uint64_t)hi << 32) | lo;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct xp_node *xp_nodes(struct xp_arena *a)
{
	return (struct xp_node *)(a + 1);
}

static struct xp_frame *xp_stack(struct xp_arena *a)
{
	return (struct xp_frame *)((uint8_t *)a + xp_c.arena_size) - a->max_depth;
}

/* a thread's trie, its arena taken at first use; NULL when none is left or the mode is off */
static struct xp_arena *xp_thread_arena(void)
{
	struct xp_tld *t = &xp_tld;
	struct xp_arena *a;
	size_t room;

	if (t->exiting)
		return NULL;
	if (t->a && t->gen == __atomic_load_n(&xp_c.gen, __ATOMIC_ACQUIRE))
		return t->a;
	t->a = NULL;
	xp_lock();
	if (!xp_c.mem || xp_c.taken >= xp_c.narenas) {
		xp_unlock();
		return NULL;
	}
	a = (struct xp_arena *)(xp_c.mem + (size_t)xp_c.taken++ * xp_c.arena_size);
	t->gen = xp_c.gen;
	xp_unlock();
	room = xp_c.arena_size - sizeof(*a);
	memset(a, 0, sizeof(*a));
	a->max_depth = (uint32_t)(room / 4 / sizeof(struct xp_frame));
	a->max_nodes = (uint32_t)((room - a->max_depth * sizeof(struct xp_frame)) /
				  sizeof(struct xp_node));
	a->tid = (int32_t)syscall(SYS_gettid);
	t->a = a;
	if (!t->keyed && xp_key_ok) {
		t->keyed = 1;
		pthread_setspecific(xp_key, t);
	}
	return a;
}

/* FunctionCallTrie::enterFunction */
static void xp_enter(struct xp_arena *a, int32_t fid, uint64_t tsc)
{
	struct xp_node *n = xp_nodes(a);
	uint32_t top, id, *link;

	if (a->overflowed) {
		a->overflowed++;
		return;
	}
	if (a->depth == 0) {
		if (a->nnodes == a->max_nodes)
			return;
		id = ++a->nnodes;
		n[id - 1] = (struct xp_node){.fid = fid};
		if (a->last_root)
			n[a->last_root - 1].next_sibling = id;
		else
			a->first_root = id;
		a->last_root = id;
	} else {
		top = xp_stack(a)[a->depth - 1].node;
		for (id = n[top - 1].first_child; id && n[id - 1].fid != fid;
		     id = n[id - 1].next_sibling)
			;
		if (!id) {
			if (a->nnodes == a->max_nodes)
				return;
			id = ++a->nnodes;
			n[id - 1] = (struct xp_node){.parent = top, .fid = fid};
			for (link = &n[top - 1].first_child; *link;
			     link = &n[*link - 1].next_sibling)
				;
			*link = id;
		}
	}
	if (a->depth == a->max_depth) {
		a->overflowed++;
		return;
	}
	xp_stack(a)[a->depth++] = (struct xp_frame){.tsc = tsc, .node = id};
}

/* FunctionCallTrie::exitFunction: frames above the function's end with it */
static void xp_exit(struct xp_arena *a, int32_t fid, uint64_t tsc)
{
	struct xp_node *n = xp_nodes(a);
	uint64_t tree = 0;

	if (a->overflowed) {
		a->overflowed--;
		return;
	}
	while (a->depth) {
		struct xp_frame *f = &xp_stack(a)[a->depth - 1];
		struct xp_node *node = &n[f->node - 1];
		uint64_t local = f->tsc > tsc ? (UINT64_MAX - f->tsc) + tsc : tsc - f->tsc;
		node->count++;
		node->local += local - tree;
		tree += local;
		a->depth--;
		if (node->fid == fid)
			break;
	}
}

/* the collector takes a thread's trie (compiler-rt's post); dropped while it is not collecting */
static void xp_post(struct xp_tld *t)
{
	struct xp_arena *a = t->a;

	if (!a)
		return;
	t->a = NULL;
	xp_lock();
	if (t->gen == xp_c.gen && xp_c.collecting && xp_c.nposted < XP_MAX_THREADS)
		xp_c.posted[xp_c.nposted++] = a;
	xp_unlock();
}

static void xp_thread_gone(void *p)
{
	struct xp_tld *t = p;

	if (!t || t->exiting)
		return;
	t->exiting = 1;
	if (xp_running)
		return;
	xp_running = 1;
	xp_post(t);
	xp_running = 0;
}

void xp_handle_arg0(int32_t fid, int type)
{
	uint64_t tsc = xp_now();
	int st;
	struct xp_arena *a;

	if (xp_running)
		return;
	xp_running = 1;
	st = __atomic_load_n(&xp_status, __ATOMIC_ACQUIRE);
	if (st == XP_FINALIZING || st == XP_FINALIZED) {
		xp_post(&xp_tld);
	} else if (st == XP_INITIALIZED && (a = xp_thread_arena())) {
		if (type == 0 || type == 3)
			xp_enter(a, fid, tsc);
		else if (type == 1 || type == 2)
			xp_exit(a, fid, tsc);
	}
	xp_running = 0;
}

static void xp_handle_arg1(int32_t fid, int type, uint64_t arg)
{
	(void)arg;
	xp_handle_arg0(fid, type);
}

/* --- the collector ------------------------------------------------------------------------ */

static size_t xp_path_len(struct xp_node *n, uint32_t id)
{
	size_t len = 0;
	for (; id; id = n[id - 1].parent)
		len++;
	return len;
}

/* compiler-rt's populateRecords order: each root in turn, depth first, a node's callees
 * pushed in order (so the last one comes out first); visit() gets each node */
static int xp_walk(struct xp_arena *a, uint32_t *stk,
		   void (*visit)(void *, struct xp_node *, uint32_t), void *arg)
{
	struct xp_node *n = xp_nodes(a);
	uint32_t sp;

	for (uint32_t r = a->first_root; r; r = n[r - 1].next_sibling) {
		sp = 0;
		stk[sp++] = r;
		while (sp) {
			uint32_t id = stk[--sp];
			visit(arg, n, id);
			for (uint32_t c = n[id - 1].first_child; c; c = n[c - 1].next_sibling)
				stk[sp++] = c;
		}
	}
	return 0;
}

static void xp_size_of(void *arg, struct xp_node *n, uint32_t id)
{
	*(size_t *)arg += 20 + 4 * xp_path_len(n, id);
}

struct xp_put {
	uint8_t *p;
};

static void xp_put_record(void *arg, struct xp_node *n, uint32_t id)
{
	struct xp_put *w = arg;
	int32_t zero = 0;

	for (uint32_t k = id; k; k = n[k - 1].parent) {
		memcpy(w->p, &n[k - 1].fid, 4);
		w->p += 4;
	}
	memcpy(w->p, &zero, 4);
	memcpy(w->p + 4, &n[id - 1].count, 8);
	memcpy(w->p + 12, &n[id - 1].local, 8);
	w->p += 20;
}

/* serialize(): one block per posted trie that has a root, numbered from 0 */
static void xp_serialize(void)
{
	size_t total = 0, off = 0, stk_size;
	uint32_t *stk, i, nb = 0;
	uint8_t *m;

	xp_lock();
	if (!xp_c.collecting || !xp_c.mem) {
		xp_unlock();
		return;
	}
	if (xp_c.blocks)
		munmap(xp_c.blocks, xp_c.blocks_map);
	xp_c.blocks = NULL;
	xp_c.nblocks = 0;
	stk_size = (xp_c.arena_size / sizeof(struct xp_node) + 1) * sizeof(uint32_t);
	stk = xp_map(stk_size);
	if (!stk) {
		xp_unlock();
		return;
	}
	for (i = 0; i < xp_c.nposted; i++) {
		struct xp_arena *a = xp_c.posted[i];
		if (!a->first_root)
			continue;
		total += 16;
		xp_walk(a, stk, xp_size_of, &total);
		nb++;
	}
	xp_c.blocks_map = total + nb * sizeof(size_t) + 1;
	m = nb ? xp_map(xp_c.blocks_map) : NULL;
	if (m) {
		xp_c.block_off = (size_t *)m;
		xp_c.blocks = m;
		off = nb * sizeof(size_t);
		for (i = 0; i < xp_c.nposted; i++) {
			struct xp_arena *a = xp_c.posted[i];
			size_t size = 0;
			uint32_t bsize, num = xp_c.nblocks;
			uint64_t tid = (uint64_t)(uint32_t)a->tid;
			struct xp_put w;
			if (!a->first_root)
				continue;
			xp_walk(a, stk, xp_size_of, &size);
			bsize = (uint32_t)(16 + size);
			xp_c.block_off[xp_c.nblocks++] = off;
			memcpy(m + off, &bsize, 4);
			memcpy(m + off + 4, &num, 4);
			memcpy(m + off + 8, &tid, 8);
			w.p = m + off + 16;
			xp_walk(a, stk, xp_put_record, &w);
			off += bsize;
		}
	}
	munmap(stk, stk_size);
	xp_unlock();
}

static size_t xp_block_size(uint32_t i)
{
	uint32_t bsize;
	memcpy(&bsize, xp_c.blocks + xp_c.block_off[i], 4);
	return bsize;
}

/* nextBuffer: {NULL, 0} gives the file header (when there is a block), the header block 0,
 * a block the next one */
struct xr_buffer xp_iterator(struct xr_buffer b)
{
	struct xr_buffer r = {NULL, 0};
	uint32_t num;

	xp_lock();
	if (!xp_c.blocks || xp_c.nblocks == 0) {
		xp_unlock();
		return r;
	}
	if (b.data == NULL) {
		struct timespec ts;
		uint64_t v[4] = {XP_MAGIC, XP_VERSION, 0, (uint64_t)getpid()};
		clock_gettime(CLOCK_REALTIME, &ts);
		v[2] = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		memcpy(xp_header, v, sizeof(v));
		r = (struct xr_buffer){xp_header, sizeof(xp_header)};
	} else if (b.data == xp_header) {
		r = (struct xr_buffer){xp_c.blocks + xp_c.block_off[0], xp_block_size(0)};
	} else {
		memcpy(&num, (const uint8_t *)b.data + 4, 4);
		if (num + 1 < xp_c.nblocks)
			r = (struct xr_buffer){xp_c.blocks + xp_c.block_off[num + 1],
					       xp_block_size(num + 1)};
	}
	xp_unlock();
	return r;
}

/* reset(): the blocks and the posted tries dropped, every arena free again, collecting */
static int xp_reset(void)
{
	size_t arena = (size_t)xp_fl.per_thread_max * 4, size;
	uint32_t n = (uint32_t)(xp_fl.buffers_max / 4);

	xp_lock();
	xp_c.collecting = 0;
	if (xp_c.blocks)
		munmap(xp_c.blocks, xp_c.blocks_map);
	xp_c.blocks = NULL;
	xp_c.nblocks = 0;
	xp_c.nposted = 0;
	xp_c.taken = 0;
	__atomic_add_fetch(&xp_c.gen, 1, __ATOMIC_ACQ_REL);
	arena = (arena + 63) & ~(size_t)63;
	size = arena * n;
	/* a pool of another geometry: the old one stays mapped (a thread may still write to
	 * its arena until it sees the new generation) */
	if (!xp_c.mem || xp_c.arena_size != arena || xp_c.narenas != n) {
		uint8_t *m = n && arena > sizeof(struct xp_arena) + 64 ? xp_map(size) : NULL;
		if (!m) {
			xp_unlock();
			return -1;
		}
		xp_c.mem = m;
		xp_c.map_size = size;
		xp_c.arena_size = arena;
		xp_c.narenas = n;
	}
	xp_c.collecting = 1;
	xp_unlock();
	return 0;
}

/* --- the options and the lifecycle ------------------------------------------------------- */

static void xp_parse(struct xp_flags *f, const char *s)
{
	const char *name;
	size_t nlen;
	char v[32];

	while (xray_flag_next_value(&s, &name, &nlen, v, sizeof(v))) {
		if (xray_flag_is(name, nlen, "per_thread_allocator_max"))
			f->per_thread_max = atol(v);
		else if (xray_flag_is(name, nlen, "global_allocator_max"))
			f->global_max = atol(v);
		else if (xray_flag_is(name, nlen, "stack_allocator_max"))
			f->stack_max = atol(v);
		else if (xray_flag_is(name, nlen, "grace_period_ms"))
			f->grace_ms = atol(v);
		else if (xray_flag_is(name, nlen, "buffers_max"))
			f->buffers_max = atol(v);
		else if (xray_flag_is(name, nlen, "no_flush"))
			f->no_flush = xray_flag_true(v);
	}
}

static void xp_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	if (ms > 0)
		while (nanosleep(&ts, &ts) < 0)
			;
}

int xp_finalize(void)
{
	int st = XP_INITIALIZED;

	if (!__atomic_compare_exchange_n(&xp_status, &st, XP_FINALIZING, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		if (xr_verbosity())
			xp_report("Cannot finalize profile, the profiling is not initialized.");
		return st;
	}
	xp_sleep_ms(xp_fl.grace_ms);
	xp_running = 1;
	xp_post(&xp_tld);
	xp_running = 0;
	xp_serialize();
	__atomic_store_n(&xp_status, XP_FINALIZED, __ATOMIC_RELEASE);
	return XP_FINALIZED;
}

int xp_flush(void)
{
	char path[REC_PATH_MAX + 300];
	struct xr_buffer b;
	int fd, bad = 0;

	if (__atomic_load_n(&xp_status, __ATOMIC_ACQUIRE) != XP_FINALIZED) {
		if (xr_verbosity())
			xp_report("Not flushing profiles, profiling not been finalized.");
		return XP_NOT_FLUSHING;
	}
	if (__atomic_exchange_n(&xp_flush_status, XP_FLUSHING, __ATOMIC_ACQ_REL) == XP_FLUSHING) {
		if (xr_verbosity())
			xp_report("Not flushing profiles, implementation still flushing.");
		return XP_FLUSHING;
	}
	if (!xp_fl.no_flush) {
		b = xp_iterator((struct xr_buffer){NULL, 0});
		if (!b.data) {
			if (xr_verbosity())
				xp_report("profiling: No data to flush.");
		} else {
			xr_log_announce = xr_verbosity() > 0;
			fd = xr_log_create(path, sizeof(path));
			xr_log_announce = 0;
			if (fd < 0) {
				if (xr_verbosity())
					xp_report("profiling: Failed to flush to file, dropping "
						  "data.");
			} else {
				while (b.data && b.size && !bad) {
					bad = rec_write_all(fd, b.data, b.size) < 0;
					b = xp_iterator(b);
				}
				if (close(fd) < 0 || bad)
					rec_warn("xray-rt: cannot write the XRay profile %s:",
						 path);
			}
		}
	}
	xp_reset();
	__atomic_store_n(&xp_flush_status, XP_FLUSHED, __ATOMIC_RELEASE);
	__atomic_store_n(&xp_status, XP_UNINITIALIZED, __ATOMIC_RELEASE);
	return XP_FLUSHED;
}

/* compiler-rt's Atexit hook: a profile still being taken is finalized and written */
static void xp_at_exit(void)
{
	if (xp_tld.exiting)
		return;
	xp_tld.exiting = 1;
	if (xp_finalize() == XP_FINALIZED && xp_flush() == XP_FLUSHED && xr_verbosity())
		xp_report("XRay Profile flushed at exit.");
}

int xp_init(size_t bsize_unused, size_t max_unused, void *config, size_t size)
{
	int st = XP_UNINITIALIZED;
	struct xp_flags f = {.per_thread_max = 16384,
			     .global_max = 2 << 24,
			     .stack_max = 2 << 20,
			     .grace_ms = 1,
			     .buffers_max = 128};
	const char *env = rec_getenv("XRAY_PROFILING_OPTIONS");

	(void)bsize_unused;
	(void)max_unused;
	(void)size;
	if (xp_running)
		return XP_UNINITIALIZED;
	if (!__atomic_compare_exchange_n(&xp_status, &st, XP_INITIALIZING, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		if (xr_verbosity())
			xp_report(
				"Cannot initialize already initialised profiling implementation.");
		return st;
	}
	xp_parse(&f, env ? env : "");
	xp_parse(&f, config);
	xp_fl = f;
	if (f.per_thread_max <= 0 || f.buffers_max < 4 ||
	    f.buffers_max > 4 * (long)XP_MAX_THREADS || xp_reset() < 0) {
		if (xr_verbosity())
			xp_report("Failed to initialize preallocated memory buffers!");
		__atomic_store_n(&xp_status, XP_UNINITIALIZED, __ATOMIC_RELEASE);
		return XP_UNINITIALIZED;
	}
	if (!xp_atexit_set) {
		xp_atexit_set = 1;
		xp_key_ok = pthread_key_create(&xp_key, xp_thread_gone) == 0;
		atexit(xp_at_exit);
	}
	xr_log_set_iterator(xp_iterator);
	/* the program's mode writes the program's logs: ours, holding what came before, would be
	 * a second xray-log.* under the same name (compiler-rt writes none at exit) */
	xr_log_dropped_why = "the program initialized xray-profiling, which writes its own logs";
	xr_api_set_fn((uintptr_t)xp_handle_arg0);
	xr_api_set_arg1((uintptr_t)xp_handle_arg1);
	__atomic_store_n(&xp_status, XP_INITIALIZED, __ATOMIC_RELEASE);
	if (xr_verbosity())
		xp_report("XRay Profiling init successful.");
	return XP_INITIALIZED;
}
