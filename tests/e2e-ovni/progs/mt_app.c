/*
 * mt_app: the acceptance program of ovni-rt, built against ovni.h and linked with -lovni.
 *
 * usage: mt_app THREADS EVENTS [options]
 *   THREADS workers, each: ovni_thread_init, OHx on its own CPU, then EVENTS events cycling
 *   through 12-byte OU[/OU] pairs, 28-byte OU[/OU] pairs (16-byte payload), marks (push/pop
 *   on a stack type, set on a single type) and every 97th pair a jumbo OU[/OU] (0..4 KiB of
 *   data), then OHe and ovni_thread_free (no ovni_flush: nothing may be lost without one).
 *   Options:
 *     big       worker 0 also emits one 1.5 MiB jumbo event (larger than a ring chunk)
 *     noexit    one more thread emits OHx..OHe and returns without ovni_thread_free
 *     fork      the main thread forks while the workers run; the child first emits with the
 *               inherited state (must be dropped, with a warning), then initialises its own
 *               process and thread, emits EVENTS/10 events and finishes
 *     noprocfini  the main thread skips ovni_proc_fini (finished at exit)
 *     flush     workers call ovni_flush every 5000 events
 *     rank      MPI-like ranks: the process is rank 0 of 1, or of 2 with the fork child as 1
 *     _exit     the main thread ends the process with _exit(0) after its OHe: no
 *               ovni_thread_free, no ovni_proc_fini, no destructors
 *     exec      the same, but the image is replaced by /bin/true instead, after an exec of a
 *               file that does not exist (it fails; two more events follow it)
 *
 * Prints one line per thread that emitted: "EMITTED <pid> <tid> <events>" (runtime flush
 * markers not included), which the test runner compares with the trace.
 */
#define _GNU_SOURCE
#include <ovni.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MARK_STACK 1
#define MARK_SINGLE 2

static long n_events;
static int nthreads;
static int opt_big, opt_noexit, opt_fork, opt_noprocfini, opt_flush, opt_rank, opt_quick,
	opt_exec;
static char loom[128];

/* one write() per line and no lock: a fork child must not wait for a lock that one of the
 * parent's other threads held at the fork */
static void report(long events)
{
	char line[96];
	int n = snprintf(line, sizeof(line), "EMITTED %d %d %ld\n", (int)getpid(), (int)gettid(),
			 events);
	if (write(STDOUT_FILENO, line, (size_t)n) != n)
		_exit(3);
}

static void ev0(const char *mcv)
{
	struct ovni_ev ev = { 0 };
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_emit(&ev);
}

static void ohx(int32_t cpu, int32_t ctid, uint64_t tag)
{
	struct ovni_ev ev = { 0 };
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_set_mcv(&ev, "OHx");
	ovni_payload_add(&ev, (uint8_t *)&cpu, sizeof(cpu));
	ovni_payload_add(&ev, (uint8_t *)&ctid, sizeof(ctid));
	ovni_payload_add(&ev, (uint8_t *)&tag, sizeof(tag));
	ovni_ev_emit(&ev);
}

static void ev28(const char *mcv, uint64_t a)
{
	struct ovni_ev ev = { 0 };
	uint32_t b = 0xb0b0b0b0u, c = (uint32_t)a;
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_set_mcv(&ev, mcv);
	ovni_payload_add(&ev, (uint8_t *)&a, sizeof(a));
	ovni_payload_add(&ev, (uint8_t *)&b, sizeof(b));
	ovni_payload_add(&ev, (uint8_t *)&c, sizeof(c));
	ovni_ev_emit(&ev);
}

static void jumbo(const char *mcv, const uint8_t *data, uint32_t n)
{
	struct ovni_ev ev = { 0 };
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_jumbo_emit(&ev, data, n);
}

/* EVENTS events (a multiple of 2 is rounded up); returns how many were emitted */
static long workload(long n, int id)
{
	static uint8_t data[4096];
	long done = 0;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + id);
	for (long i = 0; done < n; i++) {
		switch (i % 4) {
		case 0:
			ev0("OU[");
			ev0("OU]");
			break;
		case 1:
			ev28("OU[", (uint64_t)i);
			ev28("OU]", (uint64_t)i);
			break;
		case 2:
			ovni_mark_push(MARK_STACK, i + 1);
			ovni_mark_pop(MARK_STACK, i + 1);
			break;
		default:
			ovni_mark_set(MARK_SINGLE, (i % 3) + 1);
			ev0("OU[");
			break;
		}
		done += 2;
		if (i % 97 == 0) {
			jumbo("OU[", data, (uint32_t)((i * 13) % sizeof(data)));
			jumbo("OU]", data, 16);
			done += 2;
		}
		if (opt_flush && i % 5000 == 0)
			ovni_flush();
	}
	return done;
}

struct warg {
	int id;
	int32_t parent;
};

static void *worker(void *p)
{
	struct warg *a = p;
	long n;

	ovni_thread_init(gettid());
	ohx(a->id + 1, a->parent, (uint64_t)a->id);
	n = workload(n_events, a->id);
	if (opt_big && a->id == 0) {
		uint32_t sz = 1536 * 1024;
		uint8_t *big = malloc(sz);
		for (uint32_t i = 0; i < sz; i++)
			big[i] = (uint8_t)(i ^ (i >> 8));
		jumbo("OU[", big, sz);
		ev0("OU]");
		n += 2;
		free(big);
	}
	ev0("OHe");
	n += 2; /* OHx, OHe */
	ovni_thread_free();
	report(n);
	return NULL;
}

/* a thread that ends without ovni_thread_free: its stream must still be complete */
static void *noexit_thread(void *p)
{
	struct warg *a = p;
	long n;

	ovni_thread_init(gettid());
	ohx(a->id + 1, a->parent, 0);
	n = workload(n_events / 4, a->id) + 2;
	ev0("OHe");
	report(n);
	return NULL;
}

static void child(int cpu_index)
{
	struct ovni_ev ev = { 0 };
	long n;

	/* the forking thread's state must not reach the parent's stream */
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_set_mcv(&ev, "OU[");
	ovni_ev_emit(&ev);

	ovni_proc_init(1, loom, getpid());
	ovni_thread_init(gettid());
	if (opt_rank)
		ovni_proc_set_rank(1, 2);
	ovni_mark_type(MARK_STACK, OVNI_MARK_STACK, "Phase");
	ovni_mark_type(MARK_SINGLE, 0, "Value");
	ohx(cpu_index, -1, 0);
	n = workload(n_events / 10, 99) + 2;
	ev0("OHe");
	ovni_thread_free();
	ovni_proc_fini();
	report(n);
	exit(0);
}

int main(int argc, char **argv)
{
	pthread_t th[64], nth;
	struct warg args[65];
	int32_t me = (int32_t)gettid();
	pid_t kid = -1;
	int ncpus;

	if (argc < 3 || atoi(argv[1]) < 1 || atoi(argv[1]) > 60) {
		fprintf(stderr, "usage: mt_app THREADS EVENTS [big] [noexit] [fork] "
				"[noprocfini] [flush] [rank] [_exit|exec]\n");
		return 2;
	}
	nthreads = atoi(argv[1]);
	n_events = atol(argv[2]);
	for (int i = 3; i < argc; i++) {
		opt_big |= !strcmp(argv[i], "big");
		opt_noexit |= !strcmp(argv[i], "noexit");
		opt_fork |= !strcmp(argv[i], "fork");
		opt_noprocfini |= !strcmp(argv[i], "noprocfini");
		opt_flush |= !strcmp(argv[i], "flush");
		opt_rank |= !strcmp(argv[i], "rank");
		opt_quick |= !strcmp(argv[i], "_exit");
		opt_exec |= !strcmp(argv[i], "exec");
	}
	snprintf(loom, sizeof(loom), "e2e.host");

	ovni_version_check();
	ovni_proc_init(1, loom, getpid());
	ovni_thread_init(gettid());
	if (opt_rank)
		ovni_proc_set_rank(0, opt_fork ? 2 : 1);
	/* CPU 0: main; 1..THREADS: workers; then the noexit thread and the fork child */
	ncpus = nthreads + 3;
	for (int i = 0; i < ncpus; i++)
		ovni_add_cpu(i, i);
	ovni_mark_type(MARK_STACK, OVNI_MARK_STACK, "Phase");
	ovni_mark_label(MARK_STACK, 1, "first");
	ovni_mark_type(MARK_SINGLE, 0, "Value");
	ovni_mark_label(MARK_SINGLE, 1, "one");
	ovni_attr_set_str("e2e.program", "mt_app");
	ohx(0, -1, 0);

	for (int i = 0; i < nthreads; i++) {
		args[i].id = i;
		args[i].parent = me;
		pthread_create(&th[i], NULL, worker, &args[i]);
	}
	if (opt_noexit) {
		args[nthreads].id = nthreads;
		args[nthreads].parent = me;
		pthread_create(&nth, NULL, noexit_thread, &args[nthreads]);
	}
	if (opt_fork) {
		usleep(2000); /* while the workers emit */
		kid = fork();
		if (kid == 0)
			child(nthreads + 2);
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	if (opt_noexit)
		pthread_join(nth, NULL);
	if (kid > 0) {
		int st;
		waitpid(kid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "mt_app: fork child failed (status %d)\n", st);
			return 1;
		}
	}
	if (opt_exec) {
		/* an exec that fails must not end the trace: these two events are recorded */
		execl("/nonexistent/true", "true", (char *)NULL);
		ev0("OU[");
		ev0("OU]");
	}
	ev0("OHe");
	if (opt_quick || opt_exec) {
		report(opt_exec ? 4 : 2);
		if (opt_exec) {
			execl("/bin/true", "true", (char *)NULL);
			perror("mt_app: exec /bin/true");
		}
		_exit(0);
	}
	ovni_thread_free();
	report(2);
	if (!opt_noprocfini)
		ovni_proc_fini();
	return 0;
}
