/*
 * ovni_bench: what one ovni event costs a thread, through the public libovni API only, so the
 * same binary runs on ovni-rt and on the original libovni (LD_LIBRARY_PATH).
 *
 * usage: ovni_bench SIZE THREADS N
 *   SIZE 12: per event  ev = {0}; set_clock(ovni_clock_now()); set_mcv; emit
 *   SIZE 28: the same plus three ovni_payload_add calls (8 + 4 + 4 bytes)
 * Each thread: ovni_thread_init, OHx, N events alternating OU[ / OU] (the emulator ignores
 * them, so the trace stays valid), OHe, ovni_flush, ovni_thread_free. Only the N-event loop
 * is timed (CLOCK_MONOTONIC and the thread's CPU clock); automatic buffer flushes inside it
 * are part of the cost, as they are for the program being traced.
 * Prints: wall_ns_per_event=<mean over threads> cpu_ns_per_event=<mean> events=<total>
 */
#define _GNU_SOURCE
#include <ovni.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int size;
static long n_events;
static pthread_barrier_t start;

struct result {
	double wall_ns, cpu_ns;
};

static uint64_t ns_of(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void emit_ohx(int32_t cpu)
{
	struct ovni_ev ev = { 0 };
	int32_t ctid = -1;
	uint64_t tag = 0;
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_set_mcv(&ev, "OHx");
	ovni_payload_add(&ev, (uint8_t *)&cpu, sizeof(cpu));
	ovni_payload_add(&ev, (uint8_t *)&ctid, sizeof(ctid));
	ovni_payload_add(&ev, (uint8_t *)&tag, sizeof(tag));
	ovni_ev_emit(&ev);
}

static void emit0(const char *mcv)
{
	struct ovni_ev ev = { 0 };
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_emit(&ev);
}

static __attribute__((noinline)) void loop12(long n)
{
	for (long i = 0; i < n; i++) {
		struct ovni_ev ev = { 0 };
		ovni_ev_set_clock(&ev, ovni_clock_now());
		ovni_ev_set_mcv(&ev, (i & 1) ? "OU]" : "OU[");
		ovni_ev_emit(&ev);
	}
}

static __attribute__((noinline)) void loop28(long n)
{
	uint64_t a = 0x1122334455667788ull;
	uint32_t b = 7, c = 9;
	for (long i = 0; i < n; i++) {
		struct ovni_ev ev = { 0 };
		ovni_ev_set_clock(&ev, ovni_clock_now());
		ovni_ev_set_mcv(&ev, (i & 1) ? "OU]" : "OU[");
		ovni_payload_add(&ev, (uint8_t *)&a, sizeof(a));
		ovni_payload_add(&ev, (uint8_t *)&b, sizeof(b));
		ovni_payload_add(&ev, (uint8_t *)&c, sizeof(c));
		ovni_ev_emit(&ev);
	}
}

static void *worker(void *arg)
{
	struct result *r = arg;
	uint64_t w0, w1, c0, c1;

	ovni_thread_init(gettid());
	emit_ohx(-1); /* a virtual CPU: threads need not be pinned */
	pthread_barrier_wait(&start);
	w0 = ns_of(CLOCK_MONOTONIC);
	c0 = ns_of(CLOCK_THREAD_CPUTIME_ID);
	if (size == 12)
		loop12(n_events);
	else
		loop28(n_events);
	c1 = ns_of(CLOCK_THREAD_CPUTIME_ID);
	w1 = ns_of(CLOCK_MONOTONIC);
	emit0("OHe");
	ovni_flush();
	ovni_thread_free();
	r->wall_ns = n_events ? (double)(w1 - w0) / (double)n_events : 0;
	r->cpu_ns = n_events ? (double)(c1 - c0) / (double)n_events : 0;
	return NULL;
}

int main(int argc, char **argv)
{
	int nthreads;
	pthread_t th[64];
	struct result res[64];
	double wall = 0, cpu = 0;

	if (argc != 4 || (atoi(argv[1]) != 12 && atoi(argv[1]) != 28) || atoi(argv[2]) < 1 ||
	    atoi(argv[2]) > 64) {
		fprintf(stderr, "usage: ovni_bench 12|28 THREADS N\n");
		return 2;
	}
	size = atoi(argv[1]);
	nthreads = atoi(argv[2]);
	n_events = atol(argv[3]);

	ovni_version_check();
	ovni_proc_init(1, "bench.ovni", getpid());
	ovni_thread_init(gettid());
	ovni_add_cpu(0, 0);
	emit_ohx(-1);
	pthread_barrier_init(&start, NULL, (unsigned)nthreads);
	for (int i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, worker, &res[i]);
	for (int i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		wall += res[i].wall_ns;
		cpu += res[i].cpu_ns;
	}
	emit0("OHe");
	ovni_thread_free();
	ovni_proc_fini();
	printf("wall_ns_per_event=%.2f cpu_ns_per_event=%.2f events=%ld\n", wall / nthreads,
	       cpu / nthreads, n_events * nthreads);
	return 0;
}
