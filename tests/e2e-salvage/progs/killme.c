/*
 * killme: a multi-threaded (optionally multi-process) program that runs until it is killed
 * and reports its progress through a side channel, so a test can tell which events it had
 * committed before the kill.
 *
 *   killme SIDE NTHREADS [fork [stall]] [spin=N] [segv=MS | abort=MS | exit_group=MS]
 *
 * SIDE is a file this program maps shared: a header {slots used} then one slot per thread
 * {pid, tid, calls}. Each thread takes a slot, then loops: work(i) (instrumented, in work.c),
 * and once it has returned, a release store of i + 1 into its slot's `calls`. Every call
 * counted there has its entry and exit committed to the ring: the trace must hold at least
 * that many calls of work for the thread, and at most one more (the one in flight).
 * Threads come and go: every worker but the first ends after CHURN calls and a new one takes
 * a new slot (up to MAX_SLOTS), so threads die while the flusher runs. With "fork" the
 * process forks once early and both processes run workers; with "stall" too, the child's
 * workers take their slots and then wait to be killed without a call of work (a process
 * killed before its first tracepoint hit: its trace has no frame). spin=N sets the length
 * of each call (work.c; small values make the flusher write all the time).
 *
 * The other words make the program end itself MS milliseconds after start in a way the
 * runtime cannot finish the trace in (so salvage has to): segv, a fault whose handler (the
 * program's own, installed over the runtime's) puts the default action back and returns, so
 * the fault kills the process; abort, with a handler of its own for SIGABRT that returns
 * (glibc's abort then kills the process with the default action); exit_group, the raw system
 * call (no atexit, no _exit wrapper).
 *
 * This file is built without instrumentation: only work.c's functions are in the trace.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "side.h"

#define CHURN 100

int work(int i);
int leaf_spin = 30000;

static struct side *side;
static int stalled; /* "fork stall" in the child: no call of work at all */

static struct slot *take_slot(void)
{
	uint64_t n = __atomic_fetch_add(&side->used, 1, __ATOMIC_ACQ_REL);
	if (n >= MAX_SLOTS)
		return NULL;
	struct slot *s = &side->slot[n];
	s->pid = getpid();
	__atomic_store_n(&s->tid, (int32_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	return s;
}

static void run(struct slot *s, long limit)
{
	volatile int sink = 0;
	while (stalled)
		pause();
	for (long i = 0; limit < 0 || i < limit; i++) {
		sink += work((int)i);
		__atomic_store_n(&s->calls, (uint64_t)i + 1, __ATOMIC_RELEASE);
	}
}

static void *churner(void *arg)
{
	(void)arg;
	for (;;) {
		struct slot *s = take_slot();
		if (!s)
			for (;;)
				pause();
		run(s, CHURN);
		/* the next worker is a new thread: this one ends, its ring is closed */
		pthread_t t;
		if (pthread_create(&t, NULL, churner, NULL) == 0) {
			pthread_detach(t);
			return NULL;
		}
	}
}

static void *steady(void *arg)
{
	(void)arg;
	run(take_slot(), -1);
	return NULL;
}

static void on_segv(int sig)
{
	signal(sig, SIG_DFL); /* the fault happens again and kills the process */
}

static void on_abrt(int sig)
{
	(void)sig;
}

static void *ender(void *arg)
{
	const char *how = arg;
	long ms = atol(strchr(how, '=') + 1);
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
	if (!strncmp(how, "segv=", 5)) {
		volatile int *volatile bad = (volatile int *)8;
		signal(SIGSEGV, on_segv);
		*bad = 1;
	} else if (!strncmp(how, "abort=", 6)) {
		signal(SIGABRT, on_abrt);
		abort();
	} else {
		syscall(SYS_exit_group, 3);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n;

	if (argc < 3) {
		fprintf(stderr, "usage: killme SIDE NTHREADS [fork]\n");
		return 2;
	}
	side = side_map(argv[1]);
	if (!side)
		return 2;
	n = atoi(argv[2]);
	for (int i = 3; i < argc; i++)
		if (!strcmp(argv[i], "fork") && fork() == 0) /* both processes go on alike */
			for (int j = 3; j < argc; j++)
				stalled |= !strcmp(argv[j], "stall"); /* ... but with "stall" */
	for (int i = 3; i < argc; i++)
		if (!strncmp(argv[i], "spin=", 5))
			leaf_spin = atoi(argv[i] + 5);
	for (int i = 3; i < argc; i++) {
		pthread_t t;
		if (strchr(argv[i], '=') && strncmp(argv[i], "spin=", 5))
			pthread_create(&t, NULL, ender, argv[i]);
	}
	for (int i = 1; i < n; i++) {
		pthread_t t;
		pthread_create(&t, NULL, i == 1 ? churner : steady, NULL);
	}
	run(take_slot(), -1);
	return 0;
}
