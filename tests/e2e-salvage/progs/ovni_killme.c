/*
 * ovni_killme: the ovni counterpart of killme.c, built against ovni.h and linked with -lovni
 * (ovni-rt). It runs until it is killed and reports its progress through the same side
 * channel: a header {slots used} then one slot per thread {pid, tid, pairs}.
 *
 *   ovni_killme SIDE NTHREADS [fork] [abort=MS]
 *
 * The main thread initialises the process (loom "salvage.host", CPUs 0..NTHREADS), each
 * worker calls ovni_thread_init, emits OHx on its own CPU, then loops: an OU[ / OU] pair
 * (every 50th pair with a 16-byte payload, every 200th pair as jumbo events of 0..3000 bytes),
 * and once both are emitted, a release store of the pairs done into its slot. After the kill
 * each thread's stream must hold OHx, 2 events per pair counted (one more pair may be in
 * flight), and the OHe salvage adds. With "fork" the process forks once before its workers
 * start and the child initialises its own ovni process; abort=MS ends the program by abort()
 * under a SIGABRT handler of its own after MS milliseconds.
 */
#define _GNU_SOURCE
#include <ovni.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "side.h"

static struct side *side;
static int nthreads;

static void emit(const char *mcv, const void *payload, size_t n, int jumbo)
{
	struct ovni_ev ev = { 0 };
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_set_mcv(&ev, mcv);
	if (jumbo) {
		ovni_ev_jumbo_emit(&ev, payload, (uint32_t)n);
		return;
	}
	if (n)
		ovni_payload_add(&ev, payload, (int)n);
	ovni_ev_emit(&ev);
}

static void ohx(int32_t cpu)
{
	int32_t ctid = -1;
	uint64_t tag = 0;
	struct ovni_ev ev = { 0 };
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_set_mcv(&ev, "OHx");
	ovni_payload_add(&ev, (uint8_t *)&cpu, sizeof(cpu));
	ovni_payload_add(&ev, (uint8_t *)&ctid, sizeof(ctid));
	ovni_payload_add(&ev, (uint8_t *)&tag, sizeof(tag));
	ovni_ev_emit(&ev);
}

static void *worker(void *arg)
{
	static uint8_t data[3000];
	long id = (long)arg;
	uint64_t n = __atomic_fetch_add(&side->used, 1, __ATOMIC_ACQ_REL);
	struct slot *s = n < MAX_SLOTS ? &side->slot[n] : NULL;
	volatile unsigned spin = 0;

	ovni_thread_init(gettid());
	ohx((int32_t)id);
	if (s) {
		s->pid = getpid();
		__atomic_store_n(&s->tid, (int32_t)gettid(), __ATOMIC_RELEASE);
	}
	for (uint64_t i = 0;; i++) {
		uint64_t v = i;
		if (i % 200 == 0) {
			emit("OU[", data, (size_t)(i * 13 % sizeof(data)), 1);
			emit("OU]", data, 16, 1);
		} else if (i % 50 == 0) {
			emit("OU[", &v, sizeof(v), 0);
			emit("OU]", &v, sizeof(v), 0);
		} else {
			emit("OU[", NULL, 0, 0);
			emit("OU]", NULL, 0, 0);
		}
		if (s)
			__atomic_store_n(&s->calls, i + 1, __ATOMIC_RELEASE);
		for (unsigned k = 0; k < 3000; k++)
			spin += k;
	}
	return NULL;
}

static void on_abrt(int sig)
{
	(void)sig;
}

/* cpu0: the first CPU of this process's own range (a fork child's threads run on other
 * CPUs of the loom than its parent's: ovniemu 1.14 rejects two threads running on one) */
static void process(long ms, int cpu0)
{
	pthread_t t;

	ovni_proc_init(1, "salvage.host", getpid());
	ovni_thread_init(gettid());
	for (int i = 0; i < 2 * (nthreads + 1); i++)
		ovni_add_cpu(i, i);
	ohx(cpu0);
	for (long i = 1; i <= nthreads; i++)
		pthread_create(&t, NULL, worker, (void *)(cpu0 + i));
	if (ms > 0) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
		signal(SIGABRT, on_abrt);
		abort();
	}
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	long ms = 0;
	int do_fork = 0, cpu0 = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: ovni_killme SIDE NTHREADS [fork] [abort=MS]\n");
		return 2;
	}
	side = side_map(argv[1]);
	if (!side)
		return 2;
	nthreads = atoi(argv[2]);
	for (int i = 3; i < argc; i++) {
		do_fork |= !strcmp(argv[i], "fork");
		if (!strncmp(argv[i], "abort=", 6))
			ms = atol(argv[i] + 6);
	}
	ovni_version_check();
	if (do_fork && fork() == 0) /* before any ovni call: each process is its own */
		cpu0 = nthreads + 1;
	process(ms, cpu0);
	return 0;
}
