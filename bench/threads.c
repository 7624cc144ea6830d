/*
 * bench/threads.c - the traced program of bench/run-threads: what starting a thread costs.
 *
 * What it measures: T short-lived threads, each making K calls of a tiny noinline leaf (or,
 * built with -DBENCH_OVNI, each doing ovni_thread_init, K ovni events and ovni_thread_free),
 * started W at a time (a wave of W threads is created, then joined, then the next), timed
 * from the first pthread_create to the last join with CLOCK_MONOTONIC and printed as
 * `phase_ns=<ns> threads=<T> calls=<K>`. Thread pools and servers that spawn a thread per
 * request pay a tracer's per-thread set-up (ring, files) and tear-down on every thread, which
 * a one-thread loop never shows.
 *
 * Built by bench/run-threads with gcc -pg (libmcount), clang -fxray-instrument (xray-rt) and
 * against build/include/ovni.h (ovni-rt, libovni). Every thread's work is the same in every
 * build: the untraced run of the same binary is the floor.
 *
 * The file floor (BENCH_THREAD_FILES=DIR, the plain build): each thread also creates
 * DIR/<tid>.dat, writes the 32 bytes per call a uftrace record of entry and exit takes in one
 * write(2) and closes it: the least a trace format with a file per thread (uftrace.data's
 * <tid>.dat) costs per thread, whoever writes it. On ext4 that is an inode allocation, which
 * takes from microseconds to a millisecond depending on how many inodes were deleted in the
 * last minutes (ext4 skips recently deleted inodes one by one: `recently_deleted`).
 *
 * Usage: threads T K [W]   (W: threads alive at once, default 4)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench_util.h"

#ifdef BENCH_OVNI
#include <ovni.h>
#endif

static long calls;
static const char *file_dir; /* the file floor's directory, or NULL */
static char *file_buf;       /* its 32 bytes per call */

/* the file floor's per-thread file: created, written, closed */
static int thread_file(void)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%d.dat", file_dir, (int)gettid());
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, file_buf, (size_t)calls * 32) != calls * 32) {
		perror(path);
		exit(1);
	}
	return close(fd);
}

__attribute__((noinline)) long tiny(long x)
{
	return x * 3 + 1;
}

#ifdef BENCH_OVNI
static void emit(const char *mcv)
{
	struct ovni_ev ev = { 0 };

	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_emit(&ev);
}

/* OHx on a virtual CPU (as bench/ovni_bench.c): the trace is a valid one for its readers */
static void emit_ohx(void)
{
	struct ovni_ev ev = { 0 };
	int32_t cpu = -1, ctid = -1;
	uint64_t tag = 0;

	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_set_mcv(&ev, "OHx");
	ovni_payload_add(&ev, (uint8_t *)&cpu, sizeof(cpu));
	ovni_payload_add(&ev, (uint8_t *)&ctid, sizeof(ctid));
	ovni_payload_add(&ev, (uint8_t *)&tag, sizeof(tag));
	ovni_ev_emit(&ev);
}
#endif

__attribute__((noinline)) static void *worker(void *arg)
{
	long sum = 0;

	(void)arg;
#ifdef BENCH_OVNI
	ovni_thread_init(gettid());
	emit_ohx();
	for (long i = 0; i < calls; i++)
		emit(i & 1 ? "OU]" : "OU[");
	emit("OHe");
	ovni_thread_free();
	sum = calls;
#else
	for (long i = 0; i < calls; i++)
		sum += tiny(i);
	if (file_dir)
		thread_file();
#endif
	return (void *)sum;
}

int main(int argc, char **argv)
{
	long nthreads, wave = 4, sum = 0;
	pthread_t th[256];

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: %s THREADS CALLS [ALIVE]\n", argv[0]);
		return 2;
	}
	nthreads = atol(argv[1]);
	calls = atol(argv[2]);
	if (argc == 4)
		wave = atol(argv[3]);
	if (nthreads < 0 || calls < 0 || wave < 1 || wave > 256) {
		fprintf(stderr, "threads: bad arguments\n");
		return 2;
	}
	file_dir = getenv("BENCH_THREAD_FILES");
	if (file_dir && !(file_buf = calloc((size_t)calls + 1, 32))) {
		perror("calloc");
		return 1;
	}
#ifdef BENCH_OVNI
	ovni_version_check();
	ovni_proc_init(1, "bench.ovni", getpid());
	ovni_thread_init(gettid());
	ovni_add_cpu(0, 0);
	emit_ohx();
#endif
	long long t0 = now_ns();
	for (long done = 0; done < nthreads;) {
		long n = nthreads - done < wave ? nthreads - done : wave;
		for (long i = 0; i < n; i++)
			if (pthread_create(&th[i], NULL, worker, NULL) != 0) {
				perror("pthread_create");
				return 1;
			}
		for (long i = 0; i < n; i++) {
			void *r;
			pthread_join(th[i], &r);
			sum += (long)r;
		}
		done += n;
	}
	long long t1 = now_ns();
#ifdef BENCH_OVNI
	emit("OHe");
	ovni_thread_free();
	ovni_proc_fini();
#endif
	printf("phase_ns=%lld threads=%ld calls=%ld sum=%ld\n", t1 - t0, nthreads, calls, sum);
	return 0;
}
