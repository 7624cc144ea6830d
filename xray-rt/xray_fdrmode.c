/*
 * xray_fdrmode: compiler-rt 14's FDR logging mode, "xray-fdr", for a program that drives it
 * through the logging API (__xray_log_init_mode, finalize, process_buffers, flushLog). Our own
 * recording (the rings, one log at exit) stays what a program that asks nothing gets; once
 * the program initializes "xray-fdr" itself, the events go to these handlers and it gets
 * what compiler-rt gives it:
 *   - XRAY_FDR_OPTIONS (func_duration_threshold_us, grace_period_ms, buffer_size, buffer_max,
 *     no_file_flush), read at each init: defaults, then the environment (when it is empty,
 *     XRAY_OPTIONS' deprecated xray_fdr_log_func_duration_threshold_us and
 *     xray_fdr_log_grace_period_ms), then the configuration string, the last word winning;
 *   - a queue of buffer_max buffers of buffer_size bytes: each thread writes into the buffer
 *     it holds, gives it back when full and takes the next; with none free it records nothing
 *     (compiler-rt's BufferQueue, with its slots, "used" marks and generations);
 *   - calls shorter than the threshold are unwritten at their exit (entry records of the same
 *     buffer, and tail exits before them), an enter-with-argument never is (FDRController);
 *   - __xray_log_process_buffers, once finalized: the 32-byte file header, then each used
 *     buffer as a BufferExtents record and the bytes it holds, empty ones included;
 *   - flushLog, once finalized: after grace_period_ms, the log <base><program>.XXXXXX
 *     (header, then every used buffer that holds records), announced at verbosity=1, or no
 *     file with no_file_flush; then the mode can be initialized again.
 *
 * Invariants: a thread writes only into the buffer it holds, and only while the queue's
 * generation is the one it took the buffer in; a buffer's extent (bytes written) is stored
 * after its bytes, so the iterator and the flush read whole records. Backing stores are never
 * unmapped: a thread may still hold a buffer of an earlier generation when the program
 * re-initializes with another geometry (compiler-rt reference-counts them instead); a store of
 * the same geometry is reused (a writer preempted between its generation check and its write
 * could then leave one record in a buffer of the new generation: trace data, never the
 * program's memory). None of this is on our own recording's path: the trampolines call these
 * handlers only once the program has installed them.
 */
#include "xray-rt/internal.h"
#include "formats/xray/fdr_encode.h"
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

/* XRayLogInitStatus, XRayLogFlushStatus */
enum {
	XF_UNINITIALIZED = 0,
	XF_INITIALIZING = 1,
	XF_INITIALIZED = 2,
	XF_FINALIZING = 3,
	XF_FINALIZED = 4
};
enum { XF_NOT_FLUSHING = 0, XF_FLUSHING = 1, XF_FLUSHED = 2 };
/* XRayEntryType */
enum { XF_ENTRY = 0, XF_EXIT = 1, XF_TAIL = 2, XF_LOG_ARGS_ENTRY = 3 };

struct xf_flags {
	long threshold_us, grace_ms, buffer_size, buffer_max;
	int no_file_flush;
};

/* compiler-rt's BufferQueue: slots in a ring, each naming a buffer; a slot is "used" once
 * a buffer was handed out from it or given back into it */
struct xf_slot {
	uint32_t buf;
	uint8_t used;
};

static struct {
	uint8_t *mem;  /* count * bsize bytes */
	uint64_t *ext; /* per buffer: bytes written */
	struct xf_slot *slots;
	uint8_t *scratch; /* the iterator's serialized buffer: extents record + bytes */
	size_t bsize, map_size;
	uint32_t count, next, first, live;
	uint64_t gen; /* 0: never initialized */
	int finalizing;
	int lock;
} xf_q = {.finalizing = 1};

static struct xf_flags xf_fl;
static int xf_status = XF_UNINITIALIZED, xf_flush_status = XF_NOT_FLUSHING;
static uint64_t xf_threshold; /* ticks */
static pthread_key_t xf_key;
static int xf_key_ok;

/* a thread's FDRController state */
struct xf_tld {
	uint64_t gen; /* the generation its buffer was taken in */
	uint32_t buf; /* the buffer it holds, when have */
	uint8_t have, ctl, first, keyed;
	uint32_t off; /* next record's offset in the buffer */
	uint64_t latest_tsc, last_entry_tsc;
	uint16_t latest_cpu;
	uint32_t undo_enters, undo_tails;
};

static __thread struct xf_tld xf_tld __attribute__((tls_model("initial-exec")));
static __thread uint8_t xf_running __attribute__((tls_model("initial-exec")));

/* compiler-rt's Report(): "==<pid>==" then the message, on stderr; no stdio */
static void xf_report(const char *msg, const char *arg)
{
	char buf[512];
	size_t n =
		rec_snprintf(buf, sizeof(buf), "==%d==%s%s\n", (int)getpid(), msg, arg ? arg : "");
	rec_stderr_write(buf, n < sizeof(buf) ? n : sizeof(buf) - 1);
}

static void xf_qlock(void)
{
	while (__atomic_exchange_n(&xf_q.lock, 1, __ATOMIC_ACQUIRE))
		sched_yield();
}

static void xf_qunlock(void)
{
	__atomic_store_n(&xf_q.lock, 0, __ATOMIC_RELEASE);
}

static int xf_finalizing(void)
{
	return __atomic_load_n(&xf_q.finalizing, __ATOMIC_ACQUIRE);
}

/* BufferQueue::init: only once finalized (or never initialized) */
static int xf_queue_init(size_t bsize, uint32_t count)
{
	size_t size;
	uint8_t *m;

	if (!xf_finalizing() || bsize == 0 || count == 0)
		return -1;
	size = bsize * count + count * sizeof(uint64_t) + count * sizeof(struct xf_slot) + bsize +
	       FDR_META_SIZE;
	size = (size + 4095) & ~(size_t)4095;
	if (!xf_q.mem || xf_q.bsize != bsize || xf_q.count != count) {
		m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return -1;
		/* the old store stays mapped: see the top */
		xf_q.mem = m;
		xf_q.map_size = size;
		xf_q.ext = (uint64_t *)(m + bsize * count);
		xf_q.slots = (struct xf_slot *)(xf_q.ext + count);
		xf_q.scratch = (uint8_t *)(xf_q.slots + count);
	}
	xf_q.bsize = bsize;
	xf_q.count = count;
	for (uint32_t i = 0; i < count; i++) {
		xf_q.slots[i].buf = i;
		xf_q.slots[i].used = 0;
		__atomic_store_n(&xf_q.ext[i], 0, __ATOMIC_RELEASE);
	}
	xf_q.next = xf_q.first = xf_q.live = 0;
	__atomic_add_fetch(&xf_q.gen, 1, __ATOMIC_ACQ_REL);
	__atomic_store_n(&xf_q.finalizing, 0, __ATOMIC_RELEASE);
	return 0;
}

/* BufferQueue::getBuffer: the next slot's buffer, when one is free */
static int xf_get_buffer(struct xf_tld *t)
{
	uint32_t s;

	if (xf_finalizing())
		return -1;
	xf_qlock();
	if (xf_q.live == xf_q.count) {
		xf_qunlock();
		return -1;
	}
	s = xf_q.next++;
	if (xf_q.next == xf_q.count)
		xf_q.next = 0;
	xf_q.live++;
	t->buf = xf_q.slots[s].buf;
	t->gen = __atomic_load_n(&xf_q.gen, __ATOMIC_ACQUIRE);
	xf_q.slots[s].used = 1;
	xf_qunlock();
	t->have = 1;
	return 0;
}

/* BufferQueue::releaseBuffer: a buffer of another generation is only dropped */
static void xf_release_buffer(struct xf_tld *t)
{
	uint32_t s;

	if (!t->have)
		return;
	t->have = 0;
	xf_qlock();
	if (t->gen != xf_q.gen || xf_q.live == 0) {
		xf_qunlock();
		return;
	}
	xf_q.live--;
	s = xf_q.first++;
	if (xf_q.first == xf_q.count)
		xf_q.first = 0;
	xf_q.slots[s].buf = t->buf;
	xf_q.slots[s].used = 1;
	xf_qunlock();
}

static int xf_valid(const struct xf_tld *t)
{
	return t->have && t->gen == __atomic_load_n(&xf_q.gen, __ATOMIC_ACQUIRE);
}

static uint8_t *xf_at(const struct xf_tld *t)
{
	return xf_q.mem + (size_t)t->buf * xf_q.bsize + t->off;
}

/* append n bytes (the caller made sure they fit), then publish the extent */
static void xf_write(struct xf_tld *t, const void *p, size_t n)
{
	memcpy(xf_at(t), p, n);
	t->off += (uint32_t)n;
	__atomic_store_n(&xf_q.ext[t->buf], t->off, __ATOMIC_RELEASE);
}

static void xf_undo(struct xf_tld *t, size_t n)
{
	t->off -= (uint32_t)n;
	__atomic_store_n(&xf_q.ext[t->buf], t->off, __ATOMIC_RELEASE);
}

static void xf_reset(struct xf_tld *t)
{
	t->off = 0;
	__atomic_store_n(&xf_q.ext[t->buf], 0, __ATOMIC_RELEASE);
}

static void xf_meta(struct xf_tld *t, unsigned kind, const void *payload, size_t len)
{
	uint8_t r[FDR_META_SIZE];
	fdr_put_meta(r, kind, payload, len);
	xf_write(t, r, sizeof(r));
}

/* FDRController::setupNewBuffer: NewBuffer (tid), WalltimeMarker, Pid */
static int xf_setup_new_buffer(struct xf_tld *t)
{
	struct timespec ts = {0, 0};
	uint8_t pl[12];
	int32_t tid, pid, usec;
	int64_t sec;

	if (xf_finalizing())
		return -1;
	tid = (int32_t)syscall(SYS_gettid);
	pid = (int32_t)getpid();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	sec = ts.tv_sec;
	usec = (int32_t)(ts.tv_nsec / 1000);
	xf_meta(t, FDR_NEW_BUFFER, &tid, 4);
	memcpy(pl, &sec, 8);
	memcpy(pl + 8, &usec, 4);
	xf_meta(t, FDR_WALLCLOCK, pl, 12);
	xf_meta(t, FDR_PID, &pid, 4);
	return 0;
}

static int xf_return_buffer(struct xf_tld *t)
{
	t->first = 1;
	xf_release_buffer(t);
	return xf_finalizing() ? -1 : 0;
}

static int xf_get_new_buffer(struct xf_tld *t)
{
	if (xf_get_buffer(t) < 0)
		return -1;
	xf_reset(t);
	t->latest_tsc = 0;
	t->latest_cpu = 0;
	t->first = 1;
	t->undo_enters = t->undo_tails = 0;
	return 0;
}

/* FDRController::prepareBuffer: room for s bytes, a fresh buffer when the one held is full */
static int xf_prepare(struct xf_tld *t, size_t s)
{
	if (xf_finalizing()) {
		xf_return_buffer(t);
		return -1;
	}
	if (!xf_valid(t) || t->off + s > xf_q.bsize) {
		if (xf_return_buffer(t) < 0 || xf_get_new_buffer(t) < 0 ||
		    xf_setup_new_buffer(t) < 0)
			return -1;
	}
	if (t->first) {
		t->first = 0;
		xf_reset(t);
		return xf_setup_new_buffer(t);
	}
	return 0;
}

/* FDRController::recordPreamble: NewCPUId or TSCWrap when needed; 1 when one was written,
 * -1 when the buffer is no longer valid */
static int xf_preamble(struct xf_tld *t, uint64_t tsc, uint16_t cpu)
{
	uint8_t r[FDR_META_SIZE];

	if (t->latest_cpu != cpu || t->latest_tsc == 0) {
		t->latest_tsc = tsc;
		t->latest_cpu = cpu;
		if (!xf_valid(t))
			return -1;
		fdr_put_new_cpu(r, cpu, tsc);
		xf_write(t, r, sizeof(r));
		return 1;
	}
	if (t->latest_tsc > tsc || tsc - t->latest_tsc > 0x7fffffffull) {
		t->latest_tsc = tsc;
		if (!xf_valid(t))
			return -1;
		fdr_put_tsc_wrap(r, tsc);
		xf_write(t, r, sizeof(r));
		return 1;
	}
	return 0;
}

static uint32_t xf_delta_of(const uint8_t *rec)
{
	uint32_t d;
	memcpy(&d, rec + 4, 4);
	return d;
}

static void xf_fn(struct xf_tld *t, unsigned type, int32_t fid, uint64_t delta)
{
	uint8_t r[FDR_FN_SIZE];
	fdr_put_fn(r, type, (uint32_t)fid & ((1u << 29) - 1), (uint32_t)delta);
	xf_write(t, r, sizeof(r));
}

/* FDRController::rewindRecords: the exit of a call shorter than the threshold takes its entry
 * back, and the tail exits (with their entries) before it that were short too */
static void xf_rewind(struct xf_tld *t, uint64_t tsc)
{
	const uint8_t *base = xf_q.mem + (size_t)t->buf * xf_q.bsize;
	uint64_t rtsc;
	uint32_t at;

	xf_undo(t, FDR_FN_SIZE);
	t->latest_tsc -= xf_delta_of(base + t->off);
	if (--t->undo_enters != 0) {
		t->last_entry_tsc -= xf_delta_of(base + t->off);
		return;
	}
	t->last_entry_tsc = 0;
	rtsc = t->latest_tsc;
	at = t->off - FDR_FN_SIZE;
	while (t->undo_tails) {
		if (!xf_valid(t))
			return;
		rtsc -= xf_delta_of(base + at);
		at -= FDR_FN_SIZE;
		if (tsc - rtsc >= xf_threshold) {
			t->undo_tails = 0;
			return;
		}
		t->undo_tails--;
		xf_undo(t, 2 * FDR_FN_SIZE);
		t->latest_tsc = rtsc;
	}
}

/* Every record's start: room for s bytes (xf_prepare), then the thread's metadata where the
 * buffer or the CPU changed (xf_preamble). Its result is xf_preamble's; -1 with the buffer
 * given back when there is no room. */
static int xf_begin(struct xf_tld *t, size_t s, uint64_t tsc, uint16_t cpu)
{
	int pre = xf_prepare(t, s) < 0 ? -1 : xf_preamble(t, tsc, cpu);

	if (pre < 0)
		xf_return_buffer(t);
	return pre;
}

static void xf_enter(struct xf_tld *t, int32_t fid, uint64_t tsc, uint16_t cpu)
{
	int pre = xf_begin(t, FDR_META_SIZE + FDR_FN_SIZE, tsc, cpu);

	if (pre < 0)
		return;
	if (pre == 1) {
		t->undo_enters = 1;
		t->undo_tails = 0;
	} else {
		t->undo_enters++;
	}
	uint64_t d = tsc - t->latest_tsc;
	t->last_entry_tsc = tsc;
	t->latest_tsc = tsc;
	xf_fn(t, FDR_ENTER, fid, d);
}

static void xf_exit(struct xf_tld *t, int32_t fid, uint64_t tsc, uint16_t cpu, int tail)
{
	int pre = xf_begin(t, FDR_META_SIZE + FDR_FN_SIZE, tsc, cpu);

	if (pre < 0)
		return;
	if (pre == 0 && t->undo_enters != 0 && tsc - t->last_entry_tsc < xf_threshold) {
		xf_rewind(t, tsc);
		return;
	}
	if (tail) {
		t->undo_tails = t->undo_enters ? t->undo_tails + 1 : 0;
		t->undo_enters = 0;
	} else {
		t->undo_enters = t->undo_tails = 0;
	}
	uint64_t d = tsc - t->latest_tsc;
	t->latest_tsc = tsc;
	xf_fn(t, tail ? FDR_TAIL_EXIT : FDR_EXIT, fid, d);
}

static void xf_enter_arg(struct xf_tld *t, int32_t fid, uint64_t tsc, uint16_t cpu, uint64_t arg)
{
	uint8_t r[FDR_META_SIZE];

	if (xf_begin(t, 2 * FDR_META_SIZE + FDR_FN_SIZE, tsc, cpu) < 0)
		return;
	uint64_t d = tsc - t->latest_tsc;
	t->latest_tsc = tsc;
	t->last_entry_tsc = 0;
	t->undo_enters = t->undo_tails = 0;
	xf_fn(t, FDR_ENTER_ARGS, fid, d);
	fdr_put_call_arg(r, arg);
	xf_write(t, r, sizeof(r));
}

static void xf_custom(struct xf_tld *t, uint64_t tsc, uint16_t cpu, const void *ev, int32_t size)
{
	uint8_t r[FDR_META_SIZE];

	if (size < 0 || (size_t)size + 2 * FDR_META_SIZE > xf_q.bsize) {
		xf_return_buffer(t);
		return;
	}
	if (xf_begin(t, 2 * FDR_META_SIZE + (size_t)size, tsc, cpu) < 0)
		return;
	uint64_t d = tsc - t->latest_tsc;
	t->latest_tsc = tsc;
	t->undo_enters = t->undo_tails = 0;
	fdr_put_custom_v5(r, size, (int32_t)d);
	memcpy(xf_at(t), r, sizeof(r));
	memcpy(xf_at(t) + sizeof(r), ev, (size_t)size);
	t->off += (uint32_t)(sizeof(r) + (size_t)size);
	__atomic_store_n(&xf_q.ext[t->buf], t->off, __ATOMIC_RELEASE);
}

/* at thread exit (pthread key destructor), the buffer goes back to the queue */
static void xf_thread_gone(void *p)
{
	struct xf_tld *t = p;
	if (t)
		xf_release_buffer(t);
}

/* setupTLD: nothing once finalizing (the buffer held goes back), a buffer taken at first use */
static struct xf_tld *xf_setup(void)
{
	struct xf_tld *t = &xf_tld;
	int st = __atomic_load_n(&xf_status, __ATOMIC_ACQUIRE);

	if (st == XF_FINALIZING || st == XF_FINALIZED) {
		if (t->ctl) {
			xf_return_buffer(t);
			t->ctl = 0;
		}
		return NULL;
	}
	if (!t->ctl) {
		if (__atomic_load_n(&xf_q.gen, __ATOMIC_ACQUIRE) == 0)
			return NULL;
		if (t->have && !xf_valid(t))
			xf_release_buffer(t);
		if (xf_get_buffer(t) < 0)
			return NULL;
		if (!t->keyed && xf_key_ok) {
			t->keyed = 1;
			pthread_setspecific(xf_key, t);
		}
		xf_reset(t);
		t->first = 1;
		t->latest_tsc = t->last_entry_tsc = 0;
		t->latest_cpu = 0;
		t->undo_enters = t->undo_tails = 0;
		t->ctl = 1;
	}
	return t;
}

/* compiler-rt's probeRequiredCPUFeatures: rdtscp and a known TSC frequency, else no TSC at
 * all (its "Missing rdtscp support." is not repeated here) */
static int xf_tsc_ok(void)
{
	static int ok = -1;
	unsigned a, b, c, d;

	if (ok < 0) {
		int r = __get_cpuid(0x80000001, &a, &b, &c, &d) && (d & (1u << 27)) &&
			rec_clock_g.tsc_hz;
		__atomic_store_n(&ok, r, __ATOMIC_RELEASE);
	}
	return ok;
}

/* compiler-rt's readTSC: rdtscp, the CPU as the low byte of TSC_AUX; without the features,
 * CLOCK_REALTIME nanoseconds on CPU 0 */
static uint64_t xf_now(uint16_t *cpu)
{
	uint32_t lo, hi, aux;
	struct timespec ts;

	if (xf_tsc_ok()) {
		__asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
		*cpu = (uint8_t)aux;
		return ((uint64_t)hi << 32) | lo;
	}
	*cpu = 0;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* the header's cycle frequency, and the threshold's ticks per second */
static uint64_t xf_hz(void)
{
	return xf_tsc_ok() ? rec_clock_g.tsc_hz : 1000000000ull;
}

/* One call's record, arg NULL for the plain handler (an entry with an argument gets the
 * argument record after it, as compiler-rt's handleArg1) */
static void xf_handle(int32_t fid, int type, const uint64_t *arg)
{
	uint16_t cpu;
	uint64_t tsc = xf_now(&cpu);
	struct xf_tld *t;

	if (xf_running)
		return;
	xf_running = 1;
	t = xf_setup();
	if (t) {
		if (type == XF_ENTRY || type == XF_LOG_ARGS_ENTRY) {
			if (arg)
				xf_enter_arg(t, fid, tsc, cpu, *arg);
			else
				xf_enter(t, fid, tsc, cpu);
		} else if (type == XF_EXIT || type == XF_TAIL) {
			xf_exit(t, fid, tsc, cpu, type == XF_TAIL);
		}
	}
	xf_running = 0;
}

void xf_handle_arg0(int32_t fid, int type)
{
	xf_handle(fid, type, NULL);
}

static void xf_handle_arg1(int32_t fid, int type, uint64_t arg)
{
	xf_handle(fid, type, &arg);
}

static void xf_handle_custom(void *ev, size_t size)
{
	uint16_t cpu;
	uint64_t tsc = xf_now(&cpu);
	struct xf_tld *t;

	if (xf_running)
		return;
	xf_running = 1;
	t = xf_setup();
	if (t)
		xf_custom(t, tsc, cpu, ev, size > 0x7fffffff ? 0x7fffffff : (int32_t)size);
	xf_running = 0;
}

/* --- the options ------------------------------------------------------------------------ */

static void xf_parse(struct xf_flags *f, const char *s)
{
	const char *name;
	size_t nlen;
	char v[32];

	while (xray_flag_next_value(&s, &name, &nlen, v, sizeof(v))) {
		if (xray_flag_is(name, nlen, "func_duration_threshold_us"))
			f->threshold_us = atol(v);
		else if (xray_flag_is(name, nlen, "grace_period_ms"))
			f->grace_ms = atol(v);
		else if (xray_flag_is(name, nlen, "buffer_size"))
			f->buffer_size = atol(v);
		else if (xray_flag_is(name, nlen, "buffer_max"))
			f->buffer_max = atol(v);
		else if (xray_flag_is(name, nlen, "no_file_flush"))
			f->no_file_flush = xray_flag_true(v);
	}
}

/* XRAY_OPTIONS' value of a deprecated flag, the last one given; 0 when absent */
static int xf_old_flag(const char *key, long *out)
{
	const char *s = rec_getenv("XRAY_OPTIONS"), *name, *val;
	size_t nlen, vlen, klen = strlen(key);
	int found = 0;

	while (s && xray_flag_next(&s, &name, &nlen, &val, &vlen))
		if (nlen == klen && strncmp(name, key, klen) == 0) {
			*out = atol(val);
			found = 1;
		}
	return found;
}

static void xf_flags_read(struct xf_flags *f, const char *config)
{
	const char *env = rec_getenv("XRAY_FDR_OPTIONS");

	*f = (struct xf_flags){
		.threshold_us = 5, .grace_ms = 100, .buffer_size = 16384, .buffer_max = 100};
	if (!env)
		env = "";
	xf_parse(f, env);
	if (!*env) {
		/* compiler-rt then takes the deprecated flags' values, defaults included */
		f->threshold_us = 5;
		f->grace_ms = 100;
		xf_old_flag("xray_fdr_log_func_duration_threshold_us", &f->threshold_us);
		xf_old_flag("xray_fdr_log_grace_period_ms", &f->grace_ms);
	}
	xf_parse(f, config);
}

/* --- the mode's lifecycle ------------------------------------------------------------- */

int xf_init(size_t bsize_unused, size_t max_unused, void *config, size_t size)
{
	int st = XF_UNINITIALIZED;
	struct xf_flags f;

	(void)bsize_unused;
	(void)max_unused;
	(void)size;
	if (!config)
		return XF_UNINITIALIZED;
	if (!__atomic_compare_exchange_n(&xf_status, &st, XF_INITIALIZING, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		if (xr_verbosity())
			xf_report("Cannot initialize already initialized implementation.", NULL);
		return st;
	}
	if (xr_verbosity())
		xf_report("Initializing FDR mode with options: ", config);
	xf_flags_read(&f, config);
	xf_fl = f;
	if (f.buffer_size <= 0 || f.buffer_max <= 0 || f.buffer_max > (1l << 24) ||
	    xf_queue_init((size_t)f.buffer_size, (uint32_t)f.buffer_max) < 0) {
		/* compiler-rt leaves its status at INITIALIZING here, and so do we */
		if (xr_verbosity())
			xf_report("Failed to re-initialize global buffer queue. Init failed.",
				  NULL);
		return XF_UNINITIALIZED;
	}
	if (!xf_key_ok && pthread_key_create(&xf_key, xf_thread_gone) == 0)
		xf_key_ok = 1;
	__atomic_store_n(&xf_threshold,
			 (uint64_t)((unsigned __int128)xf_hz() *
				    (uint64_t)(f.threshold_us < 0 ? 0 : f.threshold_us) / 1000000),
			 __ATOMIC_RELEASE);
	/* the arg1 handler first: a log-args sled must not fall back to arg0 meanwhile */
	xr_api_set_arg1((uintptr_t)xf_handle_arg1);
	xr_api_set_fn((uintptr_t)xf_handle_arg0);
	xr_api_set_custom((uintptr_t)xf_handle_custom);
	xr_log_set_iterator(xf_iterator);
	/* the program's mode writes the program's logs: ours, holding what came before, would be
	 * a second xray-log.* under the same name (compiler-rt writes none at exit) */
	xr_log_dropped_why = "the program initialized xray-fdr, which writes its own logs";
	__atomic_store_n(&xf_status, XF_INITIALIZED, __ATOMIC_RELEASE);
	if (xr_verbosity())
		xf_report("XRay FDR init successful.", NULL);
	return XF_INITIALIZED;
}

int xf_finalize(void)
{
	int st = XF_INITIALIZED;

	if (!__atomic_compare_exchange_n(&xf_status, &st, XF_FINALIZING, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		if (xr_verbosity())
			xf_report("Cannot finalize log, implementation not initialized.", NULL);
		return st;
	}
	__atomic_store_n(&xf_q.finalizing, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&xf_status, XF_FINALIZED, __ATOMIC_RELEASE);
	return XF_FINALIZED;
}

/* the file header, as compiler-rt's FDR mode writes it (constant and nonstop TSC) */
static uint8_t xf_header[FDR_HEADER_SIZE];

static void xf_make_header(void)
{
	fdr_put_header(xf_header, FDR_VERSION, 3, xf_hz(), xf_q.bsize);
}

/* compiler-rt's fdrIterator: {NULL, 0} gives the header, the header the first used buffer,
 * each buffer the next; {NULL, 0} at the end */
struct xr_buffer xf_iterator(struct xr_buffer b)
{
	static uint32_t slot;
	uint64_t ext;
	uint32_t buf;

	if (!xf_q.mem || !xf_finalizing()) {
		if (xr_verbosity())
			xf_report("XRay FDR: Failed global buffer queue is null or not finalizing!",
				  NULL);
		return (struct xr_buffer){NULL, 0};
	}
	if (b.data == NULL && b.size == 0) {
		xf_make_header();
		return (struct xr_buffer){xf_header, sizeof(xf_header)};
	}
	if (b.data == xf_header)
		slot = 0;
	while (slot < xf_q.count && !xf_q.slots[slot].used)
		slot++;
	if (slot >= xf_q.count)
		return (struct xr_buffer){NULL, 0};
	buf = xf_q.slots[slot++].buf;
	ext = __atomic_load_n(&xf_q.ext[buf], __ATOMIC_ACQUIRE);
	fdr_put_meta(xf_q.scratch, FDR_BUFFER_EXTENTS, &ext, 8);
	memcpy(xf_q.scratch + FDR_META_SIZE, xf_q.mem + (size_t)buf * xf_q.bsize, ext);
	return (struct xr_buffer){xf_q.scratch, FDR_META_SIZE + ext};
}

int xf_flush(void)
{
	uint8_t rec[FDR_META_SIZE];
	char path[REC_PATH_MAX + 300];
	int fd, bad = 0;

	if (__atomic_load_n(&xf_status, __ATOMIC_ACQUIRE) != XF_FINALIZED) {
		if (xr_verbosity())
			xf_report("Not flushing log, implementation is not finalized.", NULL);
		return XF_NOT_FLUSHING;
	}
	if (__atomic_exchange_n(&xf_flush_status, XF_FLUSHING, __ATOMIC_ACQ_REL) == XF_FLUSHING) {
		if (xr_verbosity())
			xf_report("Not flushing log, implementation is still flushing.", NULL);
		return XF_NOT_FLUSHING;
	}
	if (xf_fl.grace_ms > 0) {
		struct timespec ts = {xf_fl.grace_ms / 1000, (xf_fl.grace_ms % 1000) * 1000000};
		while (nanosleep(&ts, &ts) < 0)
			;
	}
	xr_log_set_iterator(NULL);
	/* this thread's buffer goes back first: a lone thread's records are in the log */
	xf_return_buffer(&xf_tld);
	xf_tld.ctl = 0;
	if (xf_fl.no_file_flush) {
		if (xr_verbosity())
			xf_report("XRay FDR: Not flushing to file, 'no_file_flush=true'.", NULL);
	} else {
		xr_log_announce = xr_verbosity() > 0;
		fd = xr_log_create(path, sizeof(path));
		xr_log_announce = 0;
		if (fd < 0) {
			__atomic_store_n(&xf_flush_status, XF_NOT_FLUSHING, __ATOMIC_RELEASE);
			__atomic_store_n(&xf_status, XF_UNINITIALIZED, __ATOMIC_RELEASE);
			return XF_NOT_FLUSHING;
		}
		xf_make_header();
		bad = rec_write_all(fd, xf_header, sizeof(xf_header)) < 0;
		for (uint32_t s = 0; s < xf_q.count && !bad; s++) {
			uint32_t buf = xf_q.slots[s].buf;
			uint64_t ext = __atomic_load_n(&xf_q.ext[buf], __ATOMIC_ACQUIRE);
			if (!xf_q.slots[s].used || ext == 0)
				continue;
			fdr_put_meta(rec, FDR_BUFFER_EXTENTS, &ext, 8);
			bad = rec_write_all(fd, rec, sizeof(rec)) < 0 ||
			      rec_write_all(fd, xf_q.mem + (size_t)buf * xf_q.bsize, ext) < 0;
		}
		if (close(fd) < 0 || bad)
			rec_warn("xray-rt: cannot write the XRay FDR log %s:", path);
	}
	__atomic_store_n(&xf_flush_status, XF_FLUSHED, __ATOMIC_RELEASE);
	__atomic_store_n(&xf_status, XF_UNINITIALIZED, __ATOMIC_RELEASE);
	return XF_FLUSHED;
}
