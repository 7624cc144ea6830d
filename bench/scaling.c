/*
 * bench/scaling.c - the traced program of bench/run-scaling: what one event costs a thread
 * when T threads record at the same time.
 *
 * What it measures: T threads, each doing the same loop of N iterations, started together
 * (a barrier), each timing its own loop with CLOCK_MONOTONIC; the program prints the mean
 * over threads as `loop_ns=<ns> loop_cpu_ns=<ns> threads=<T> iters=<N>` (wall, and the
 * thread's own CPU time: on a shared machine the wall time includes other people's load).
 * bench/run-scaling runs it with N and with 0 and takes (loop_ns(N) - loop_ns(0)) / N, as
 * bench/run does for one thread, so the constant costs (clock reads, a hook's first event)
 * cancel out. Thread start, the final flush and the tracer's set-up are outside the loop:
 * the whole-process cost is another row of bench/run-scaling.
 *
 * One source, built several ways (the work per iteration is the same in every build of a
 * group, so the untraced build is the floor of the traced ones):
 *   (default)        N calls of a tiny noinline leaf: gcc -pg (libmcount, uftrace record),
 *                    clang -fxray-instrument (xray-rt; compiler-rt's FDR mode when
 *                    BENCH_XRAY_FDR is set, as bench/xray_loop.c), and untraced.
 *   -DBENCH_FLOOR    the same calls with bench/floor.c's hand-made recording around each
 *                    (2 rdtsc, two 16-byte records into a per-thread 1 MiB ring): the least
 *                    work that records a call, per thread.
 *   -DBENCH_ACCESS   N iterations of b[j] = a[j] + i on arrays of the thread's own (one
 *                    8-byte read and one write), as bench/cacheray_loop.c: built with
 *                    clang -fsanitize=thread for cacheray-rt and Cacheray's runtime design.
 * ovni has its own program (bench/ovni_bench.c, which already takes a thread count).
 *
 * Why the loop is timed inside each thread: T threads on fewer cores than T are time-sliced,
 * and a thread's loop then takes T/cores times longer in wall time; the mean per-thread wall
 * is what the traced program sees, which is the figure issue 19 tabulates.
 *
 * Usage: scaling THREADS N
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#define MAX_THREADS 256

#ifdef __clang__
#define NO_XRAY __attribute__((xray_never_instrument))
#else
#define NO_XRAY
#endif

static long iters;
static pthread_barrier_t start;

struct worker {
	pthread_t th;
	long long loop_ns, cpu_ns;
	long sum;
} __attribute__((aligned(64))); /* no false sharing between the threads' results */

#ifdef BENCH_FLOOR
#define FLOOR_RING (1 << 20)
struct floor_ring {
	uint64_t *pos, *end, *start;
};

static __thread struct floor_ring *floor_tls __attribute__((tls_model("initial-exec")));

__attribute__((noinline)) static void floor_rewind(struct floor_ring *r)
{
	r->pos = r->start;
}

static inline void floor_record(int type, uintptr_t addr)
{
	struct floor_ring *r = floor_tls;
	uint64_t *p = r->pos;

	p[0] = bench_rdtsc();
	p[1] = type | 5 << 3 | 2ull << 6 | (uint64_t)addr << 16;
	r->pos = p + 2;
	if (__builtin_expect(r->pos == r->end, 0))
		floor_rewind(r);
}

__attribute__((noipa)) long tiny(long x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) static long run(long n)
{
	long sum = 0;

	for (long i = 0; i < n; i++) {
		floor_record(0, (uintptr_t)tiny);
		sum += tiny(i);
		floor_record(1, (uintptr_t)tiny);
	}
	return sum;
}

/* the thread's ring, pre-faulted before the barrier (as a recorder's ring is at attach) */
static int setup(void)
{
	static __thread struct floor_ring ring;

	ring.start = aligned_alloc(64, FLOOR_RING);
	if (!ring.start)
		return -1;
	memset(ring.start, 0, FLOOR_RING);
	ring.pos = ring.start;
	ring.end = ring.start + FLOOR_RING / 8;
	floor_tls = &ring;
	return 0;
}

#elif defined(BENCH_ACCESS)
#define LEN 4096 /* 2 x 32 KiB per thread: L1/L2, the trace is the only big stream */
static __thread long *arr_a, *arr_b;

__attribute__((noinline)) static long run(long n)
{
	long *a = arr_a, *b = arr_b;

	for (long i = 0; i < n; i++) {
		long j = i & (LEN - 1);
		b[j] = a[j] + i;
	}
	return b[LEN - 1];
}

static int setup(void)
{
	arr_a = calloc(LEN, sizeof(long));
	arr_b = calloc(LEN, sizeof(long));
	if (!arr_a || !arr_b)
		return -1;
	run(LEN); /* first touch, and the thread's ring attached outside the loop */
	return 0;
}

#else
__attribute__((noinline, noclone)) long tiny(long x)
{
	return x * 3 + 1;
}

__attribute__((noinline, noclone)) static long run(long n)
{
	long sum = 0;

	for (long i = 0; i < n; i++)
		sum += tiny(i);
	return sum;
}

static int setup(void)
{
	tiny(0); /* the thread attached (ring made) outside the loop */
	return 0;
}
#endif

/* compiler-rt's XRay API, weak: only the FDR build (BENCH_XRAY_FDR set) calls it */
extern int __xray_log_init_mode(const char *mode, const char *config) __attribute__((weak));
extern int __xray_log_finalize(void) __attribute__((weak));
extern int __xray_log_flushLog(void) __attribute__((weak));
extern int __xray_patch(void) __attribute__((weak));

/* the calling thread's CPU time: what its loop cost it, whoever else shares the cores */
NO_XRAY static long long cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

NO_XRAY static void *worker(void *arg)
{
	struct worker *w = arg;
	long long t0, t1, c0, c1;

	if (setup() != 0) {
		perror("scaling: setup");
		exit(1);
	}
	pthread_barrier_wait(&start);
	c0 = cpu_ns();
	t0 = now_ns();
	w->sum = run(iters);
	t1 = now_ns();
	c1 = cpu_ns();
	w->loop_ns = t1 - t0;
	w->cpu_ns = c1 - c0;
	return NULL;
}

NO_XRAY int main(int argc, char **argv)
{
	static struct worker w[MAX_THREADS];
	const char *fdr = getenv("BENCH_XRAY_FDR");
	long nthreads, sum = 0;
	long long total = 0, cpu = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: %s THREADS N\n", argv[0]);
		return 2;
	}
	nthreads = atol(argv[1]);
	iters = atol(argv[2]);
	if (nthreads < 1 || nthreads > MAX_THREADS || iters < 0) {
		fprintf(stderr, "scaling: bad arguments\n");
		return 2;
	}
	if (fdr) {
		if (!__xray_log_init_mode || __xray_log_init_mode("xray-fdr", fdr) != 2) {
			fprintf(stderr, "scaling: cannot initialise compiler-rt's FDR mode\n");
			return 1;
		}
		__xray_patch();
	}
	pthread_barrier_init(&start, NULL, (unsigned)nthreads);
	for (long i = 0; i < nthreads; i++)
		if (pthread_create(&w[i].th, NULL, worker, &w[i]) != 0) {
			perror("pthread_create");
			return 1;
		}
	for (long i = 0; i < nthreads; i++) {
		pthread_join(w[i].th, NULL);
		total += w[i].loop_ns;
		cpu += w[i].cpu_ns;
		sum += w[i].sum;
	}
	if (fdr) {
		__xray_log_finalize();
		__xray_log_flushLog();
	}
	printf("loop_ns=%lld loop_cpu_ns=%lld threads=%ld iters=%ld sum=%ld\n", total / nthreads,
	       cpu / nthreads, nthreads, iters, sum);
	return 0;
}
