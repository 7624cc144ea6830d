/*
 * rec_flusher: one background thread per process image that drains FULL chunks through the
 * sink and closes threads that have exited.
 *
 * It works in a descriptor table of its own (rec_session_fds_private_enter): the program can
 * close or reuse none of its descriptors, so none of its checks is raced. A second thread, the
 * keeper, shares the program's table and only waits to call exit(0) when the program's
 * threads are all gone (rec_flusher_alone), so that the program's stdio reaches its own
 * descriptors. A third, the helper, also has a table of its own and runs, for a program
 * thread that waits, whatever that thread would do with a descriptor (rec_fd_call): a
 * thread's ring and sink file, its own chunk writes (drain, help), finish, a sink's metadata.
 *
 * It blocks every signal, is never traced (its TLS pointer says OFF, so a hook it might run
 * records nothing) and sleeps on a futex word until a producer hands over a chunk
 * (rec_flusher_wake) or REC_FLUSH_PERIOD_MS passes. Producers wake it only when it said it
 * is sleeping, so a busy flusher costs them no syscall.
 *
 * Fatal signals: a handler hands finishing over (rec_flusher_take_fatal); the flusher, which
 * the signal did not interrupt and whose locks it cannot hold, finishes, then kills the
 * process with that signal when it was one someone sent (after a fault the handler, waiting,
 * dies by itself).
 *
 * Registry walking: nodes are pushed at the head under the lock and published with a
 * release store; the flusher is the only one that unlinks and frees nodes (under the lock),
 * so the node it is working on cannot vanish while it writes without the lock. The writers
 * walk it without the lock too: a node the flusher unlinks is freed only once each writer
 * that was walking then has ended that walk (`writer_walk`, `reaped`), so a writer standing
 * on it still finds its next.
 *
 * Writers (issue 19): one flusher copies every thread's chunks into the page cache, and one
 * core's copy is the limit as threads grow (16 cores, -pg, block: 1.15x the per-thread cost of
 * one thread at 2 threads, 1.29x at 8, 1.98x at 16, with each thread's own CPU flat: the
 * producers waited for the flusher). So the flusher starts writers as live recorded threads
 * grow (one per 4, at most half the CPUs less one; FLIGHTREC_WRITERS=N: N from the first
 * thread on). A writer walks the registry and writes the full chunks of every live thread
 * whose drain_lock it gets (the help policy's try-lock: one drainer per ring at a time, chunks
 * in seq order); an exited thread is the flusher's alone (it drains and closes it under the
 * lock, rec_thread_drain_close: a writer that looked before the exit skips it). Not under
 * the drain and overwrite policies (no live thread is drained by anyone but its owner or
 * finish) nor for a sink that appends every thread to one file under its own lock
 * (Cacheray's: the writes are one at a time whoever makes them). Each writer has a
 * descriptor table of its own, as the flusher; every signal blocked, never traced. Writers
 * sleep on the flusher's `wake` word; a producer that hands over a chunk wakes them all when
 * one sleeps. They end with the flusher (rec_flusher_stop joins them), before finish drains.
 */
#include "librecord/rec_clock.h"
#include "librecord/rec_ringpool.h"
#include "librecord/rec_session.h"
#include "librecord/rec_stats.h"
#include "librecord/rec_util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define REC_FLUSH_PERIOD_MS 100


/* A rec_fd_call request: on the caller's stack, which waits on `done` until the helper has
 * run it. */
struct rec_fd_req {
	int (*fn)(void *);
	void *arg;
	int ret;
	uint32_t done; /* futex word: 1 once fn returned */
	struct rec_fd_req *next;
};

/* Run the requests queued so far, oldest first (the helper). */
static void rec_fd_serve(void)
{
	struct rec_fd_req *r = __atomic_exchange_n(&rec_sess.fd_reqs, NULL, __ATOMIC_ACQ_REL);
	struct rec_fd_req *prev = NULL, *next;

	for (; r; r = next) { /* newest first: reversed */
		next = r->next;
		r->next = prev;
		prev = r;
	}
	for (r = prev; r; r = next) {
		next = r->next; /* r is gone once done is set */
		r->ret = r->fn(r->arg);
		__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
		rec_futex(&r->done, FUTEX_WAKE_PRIVATE, 1, NULL);
	}
}

static int rec_helper_ensure(void);

/* The helper's share of the threads that took a spare ring on their own: each claimed
 * (open_pending 1 -> 2) under the lock, so that none is closed and freed meanwhile (a close
 * waits for the open), then opened without it, a few at a time. */
static void rec_helper_serve_late(void)
{
	struct rec_thread *batch[16];
	size_t n;

	do {
		uint32_t left = __atomic_load_n(&rec_sess.late_pending, __ATOMIC_RELAXED);

		n = 0;
		if (!left)
			return;
		pthread_mutex_lock(&rec_sess.lock);
		/* newest first: the pending ones are near the head */
		for (struct rec_thread *t = rec_sess.threads; t && n < 16 && n < left;
		     t = t->next) {
			uint32_t want = 1;
			if (__atomic_compare_exchange_n(&t->open_pending, &want, 2, 0,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				batch[n++] = t;
		}
		pthread_mutex_unlock(&rec_sess.lock);
		for (size_t i = 0; i < n; i++)
			rec_thread_open_late_run(batch[i]);
		if (n)
			rec_flusher_wake(); /* their chunks, and the ended ones' close, are its */
	} while (n == 16);
}

int rec_helper_open_late(void)
{
	if (rec_fd_private || rec_helper_ensure() < 0)
		return -1;
	__atomic_add_fetch(&rec_sess.helper_wake, 1, __ATOMIC_RELEASE);
	rec_futex(&rec_sess.helper_wake, FUTEX_WAKE_PRIVATE, 1, NULL);
	return 0;
}

/* The helper (rec_session.helper_started): never traced, every signal blocked, in a
 * descriptor table of its own; it only runs what rec_fd_call asks, oldest first. */
static void *rec_helper_main(void *arg)
{
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	rec_self = REC_THREAD_OFF;
	if (rec_session_fds_private_enter() < 0)
		rec_debug("the helper shares the program's descriptor table (unshare: %s)",
			  strerror(errno));
	__atomic_store_n(&rec_sess.helper_tid, rec_gettid(), __ATOMIC_RELEASE);
	for (;;) {
		uint32_t seen = __atomic_load_n(&rec_sess.helper_wake, __ATOMIC_ACQUIRE);
		rec_helper_serve_late();
		rec_fd_serve();
		if (__atomic_load_n(&rec_sess.helper_quit, __ATOMIC_ACQUIRE))
			break; /* detached (rec_flusher_end_helpers): no ask can come any more */
		/* an ask pushed after the serve bumped the word first: no sleep then */
		rec_futex(&rec_sess.helper_wake, FUTEX_WAIT_PRIVATE, seen, NULL);
	}
	return NULL;
}

/* Start the helper if it is not running; 0 when it runs. */
static int rec_helper_ensure(void)
{
	pthread_attr_t attr;
	sigset_t all, old;

	if (__atomic_load_n(&rec_sess.helper_started, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&rec_sess.lock);
	if (!rec_sess.helper_started && rec_sess.state == REC_SESSION_ACTIVE) {
		pthread_t h;
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, 256 * 1024);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		/* pthread_create may call the program's malloc: a hook then is ours */
		uint8_t in_rt = rec_in_runtime;
		rec_in_runtime = 1;
		if (pthread_create(&h, &attr, rec_helper_main, NULL) == 0)
			__atomic_store_n(&rec_sess.helper_started, 1, __ATOMIC_RELEASE);
		else
			rec_debug("no helper thread: descriptors in the program's table");
		rec_in_runtime = in_rt;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_attr_destroy(&attr);
	}
	pthread_mutex_unlock(&rec_sess.lock);
	return __atomic_load_n(&rec_sess.helper_started, __ATOMIC_ACQUIRE) ? 0 : -1;
}

int rec_fd_call(int (*fn)(void *), void *arg)
{
	struct rec_fd_req r = { fn, arg, -1, 0, NULL };
	sigset_t all, old;

	/* a vfork child shares our memory, not our helper's process */
	if (rec_fd_private || getpid() != rec_sess.pid || rec_helper_ensure() < 0)
		return fn(arg);
	/* no handler may run here: one that longjmps away would leave r queued, one that
	 * records could come back here */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r.next = __atomic_load_n(&rec_sess.fd_reqs, __ATOMIC_ACQUIRE);
	while (!__atomic_compare_exchange_n(&rec_sess.fd_reqs, &r.next, &r, 1, __ATOMIC_RELEASE,
					    __ATOMIC_ACQUIRE))
		;
	__atomic_add_fetch(&rec_sess.helper_wake, 1, __ATOMIC_RELEASE);
	rec_futex(&rec_sess.helper_wake, FUTEX_WAKE_PRIVATE, 1, NULL);
	while (!__atomic_load_n(&r.done, __ATOMIC_ACQUIRE))
		rec_futex(&r.done, FUTEX_WAIT_PRIVATE, 0, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r.ret;
}

void rec_flusher_wake(void)
{
	__atomic_add_fetch(&rec_sess.wake, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&rec_sess.flusher_sleeping, __ATOMIC_SEQ_CST) ||
	    __atomic_load_n(&rec_sess.writers_sleeping, __ATOMIC_SEQ_CST))
		rec_futex(&rec_sess.wake, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
}

/* Fold a closed thread's counters into the session (and its line into the stats file) and
 * unlink it (lock held); its memory is freed by rec_flusher_free_reaped. */
static void rec_flusher_reap(struct rec_thread *t, struct rec_thread **link)
{
	rec_stats_reap(t);
	__atomic_store_n(link, __atomic_load_n(&t->next, __ATOMIC_RELAXED), __ATOMIC_RELEASE);
	t->reaped_next = rec_sess.reaped;
	rec_sess.reaped = t;
}

/* Have the walks that were on at SNAP all ended? (an even count: writer i was not walking) */
static int rec_flusher_walks_ended(const uint32_t *snap)
{
	for (uint32_t i = 0; i < REC_WRITERS_MAX; i++)
		if ((snap[i] & 1) &&
		    __atomic_load_n(&rec_sess.writer_walk[i], __ATOMIC_SEQ_CST) == snap[i])
			return 0;
	return 1;
}

static void rec_flusher_free_list(struct rec_thread *t)
{
	for (struct rec_thread *next; t; t = next) {
		next = t->reaped_next;
		rec_thread_state_free(t);
	}
}

/* Free the unlinked nodes no writer can stand on any more: those unlinked before a look at
 * the writers' walk counts (reaped_snap) once every walk on at that look has ended. Pairs
 * with rec_writer_pass: its count made odd, then a full fence, then the list read; here the
 * unlink, a full fence, then the counts read. A writer that was not walking at the look (or
 * starts a walk after it) finds the list without those nodes; one that was ends its walk
 * (the release of its count: done with them) in one pass's time. */
static void rec_flusher_free_reaped(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (rec_sess.reaped_old && rec_flusher_walks_ended(rec_sess.reaped_snap)) {
		rec_flusher_free_list(rec_sess.reaped_old);
		rec_sess.reaped_old = NULL;
	}
	if (rec_sess.reaped_old || !rec_sess.reaped)
		return;
	rec_sess.reaped_old = rec_sess.reaped;
	rec_sess.reaped = NULL;
	for (uint32_t i = 0; i < REC_WRITERS_MAX; i++)
		rec_sess.reaped_snap[i] =
			__atomic_load_n(&rec_sess.writer_walk[i], __ATOMIC_SEQ_CST);
	if (rec_flusher_walks_ended(rec_sess.reaped_snap)) {
		rec_flusher_free_list(rec_sess.reaped_old);
		rec_sess.reaped_old = NULL;
	}
}

/* Is t's late open left to the helper (rec_helper_serve_late)? Always, when there is one:
 * the flusher then closes the other ended threads meanwhile (an ended thread's open done
 * here made the flusher the longer path of a short thread's ring back to the pool, where
 * new threads wait for it: 5x as many missed it and made a ring of their own), and the
 * helper wakes it once done. */
static int rec_flusher_late_left(struct rec_thread *t)
{
	return __atomic_load_n(&t->open_pending, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&rec_sess.helper_started, __ATOMIC_ACQUIRE);
}

/* One pass of the flusher; returns how many live (not exited) threads it found. */
static uint32_t rec_flusher_pass(void)
{
	uint32_t live = 0;
	struct rec_thread *t = __atomic_load_n(&rec_sess.threads, __ATOMIC_ACQUIRE);
	/* relaxed: the policy is fixed at start (unit tests switch it between runs) */
	int policy = (int)__atomic_load_n(&rec_sess.cfg.policy, __ATOMIC_RELAXED);
	int drain_policy = policy == REC_POLICY_DRAIN;
	int overwrite = policy == REC_POLICY_OVERWRITE;

	/* threads that ended first: their rings go back to the pool, where a thread starting now
	 * may be waiting for one (rec_ringpool_claim); the list is newest first */
	for (struct rec_thread *e = t; e; e = __atomic_load_n(&e->next, __ATOMIC_ACQUIRE)) {
		if (e->closed || !__atomic_load_n(&e->exited, __ATOMIC_ACQUIRE) ||
		    rec_flusher_late_left(e))
			continue;
		rec_thread_drain_close(e);
	}
	for (; t; t = __atomic_load_n(&t->next, __ATOMIC_ACQUIRE)) {
		int exited = __atomic_load_n(&t->exited, __ATOMIC_ACQUIRE);
		if (t->closed)
			continue;
		live += !exited;
		rec_thread_prefault_ahead(t);
		/* a thread that took a spare ring on its own is the helper's to open first (its
		 * chunks wait for that); without a helper, the flusher's (rec_thread_drain) */
		if (rec_flusher_late_left(t))
			continue;
		if ((drain_policy || overwrite) && !exited)
			continue; /* the owner drains its own, or the ring is kept until the end */
		/* help policy: the producer may be writing its own chunks right now (it cannot
		 * once it has exited: the lock is then free) */
		if (exited)
			rec_thread_drain_close(t);
		else
			rec_thread_drain_try(t, 0);
	}
	/* reap closed threads that have exited */
	pthread_mutex_lock(&rec_sess.lock);
	for (struct rec_thread **link = &rec_sess.threads; *link;) {
		struct rec_thread *c = *link;
		if (c->closed && c->exited)
			rec_flusher_reap(c, link);
		else
			link = &c->next;
	}
	rec_stats_reap_flush();
	pthread_mutex_unlock(&rec_sess.lock);
	rec_flusher_free_reaped();
	rec_ringpool_fill(); /* spare rings, when threads start faster than rings come back */
	return live;
}

/* Sleep on `wake` until a hand-off, quit or the period, unless a hand-off came since SEEN (the
 * word changed: no sleep). SLEEPING (the flusher's 0/1, the writers' count) tells
 * rec_flusher_wake first that a FUTEX_WAKE is needed. */
static void rec_wake_wait(uint32_t *sleeping, uint32_t seen)
{
	static const struct timespec period = { 0, REC_FLUSH_PERIOD_MS * 1000000L };

	__atomic_add_fetch(sleeping, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&rec_sess.wake, __ATOMIC_SEQ_CST) == seen &&
	    !__atomic_load_n(&rec_sess.quit, __ATOMIC_ACQUIRE))
		rec_futex(&rec_sess.wake, FUTEX_WAIT_PRIVATE, seen, &period);
	__atomic_sub_fetch(sleeping, 1, __ATOMIC_RELEASE);
}

/* Writer I's pass: every live thread's full chunks, of those whose drain_lock it gets. */
static void rec_writer_pass(uint32_t i)
{
	uint32_t *walk = &rec_sess.writer_walk[i];

	/* odd while it walks (only this writer changes it: no read-modify-write needed) */
	__atomic_store_n(walk, __atomic_load_n(walk, __ATOMIC_RELAXED) + 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (struct rec_thread *t = __atomic_load_n(&rec_sess.threads, __ATOMIC_ACQUIRE); t;
	     t = __atomic_load_n(&t->next, __ATOMIC_ACQUIRE)) {
		if (__atomic_load_n(&t->exited, __ATOMIC_ACQUIRE) || rec_flusher_late_left(t))
			continue;
		if (__atomic_exchange_n(&t->drain_lock, 1, __ATOMIC_ACQUIRE))
			continue;
		/* read again under the lock: an exited thread is the flusher's, which drains and
		 * closes it once it gets the lock after us */
		if (!__atomic_load_n(&t->exited, __ATOMIC_ACQUIRE))
			rec_thread_drain(t, 0);
		__atomic_store_n(&t->drain_lock, 0, __ATOMIC_RELEASE);
	}
	/* release: done with every node it stood on (rec_flusher_free_reaped) */
	__atomic_store_n(walk, __atomic_load_n(walk, __ATOMIC_RELAXED) + 1, __ATOMIC_RELEASE);
}

static void *rec_writer_main(void *arg)
{
	uint32_t i = (uint32_t)(uintptr_t)arg;

	/* every signal blocked already: created by the flusher, whose mask it inherits */
	rec_self = REC_THREAD_OFF;
	if (rec_session_fds_private_enter() < 0)
		rec_debug("writer %u shares the program's descriptor table (unshare: %s)", i,
			  strerror(errno));
	__atomic_store_n(&rec_sess.writer_tid[i], rec_gettid(), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&rec_sess.quit, __ATOMIC_ACQUIRE)) {
		uint32_t seen = __atomic_load_n(&rec_sess.wake, __ATOMIC_ACQUIRE);
		rec_writer_pass(i);
		rec_wake_wait(&rec_sess.writers_sleeping, seen);
	}
	return NULL;
}

/* How many writers LIVE recorded threads call for (the top of this file). */
static uint32_t rec_writers_wanted(uint32_t live)
{
	static long ncpu;
	int policy = (int)__atomic_load_n(&rec_sess.cfg.policy, __ATOMIC_RELAXED);
	long cap;

	if (policy == REC_POLICY_DRAIN || policy == REC_POLICY_OVERWRITE ||
	    rec_sess.sink->append_lock)
		return 0;
	/* relaxed: fixed at start (a unit test sets it between runs) */
	int forced = __atomic_load_n(&rec_sess.cfg.writers, __ATOMIC_RELAXED);
	if (forced >= 0)
		return (uint32_t)forced;
	if (!ncpu) {
		/* the CPUs this process may run on (taskset, a container's cpuset), which its
		 * writers share with its threads: not the machine's */
		cpu_set_t set;
		ncpu = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
								    : sysconf(_SC_NPROCESSORS_ONLN);
	}
	cap = ncpu / 2 - 1;
	if (cap > REC_WRITERS_MAX)
		cap = REC_WRITERS_MAX;
	if (cap <= 0)
		return 0;
	return live / 4 < (uint32_t)cap ? live / 4 : (uint32_t)cap;
}

/* The flusher: start the writers LIVE threads call for (never stopped before finish). */
static int rec_writers_refused; /* pthread_create failed once: the flusher's, no more tries */

static void rec_writers_grow(uint32_t live)
{
	uint32_t n = __atomic_load_n(&rec_sess.writers_started, __ATOMIC_RELAXED);
	uint32_t want = rec_writers_wanted(live);
	pthread_attr_t attr;

	if (n >= want || rec_writers_refused || __atomic_load_n(&rec_sess.quit, __ATOMIC_ACQUIRE))
		return;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (; n < want; n++) {
		/* pthread_create may call the program's malloc: a hook then is ours */
		uint8_t in_rt = rec_in_runtime;
		rec_in_runtime = 1;
		int err = pthread_create(&rec_sess.writer[n], &attr, rec_writer_main,
					 (void *)(uintptr_t)n);
		rec_in_runtime = in_rt;
		if (err) {
			rec_debug("writer %u not started (%s): %u write beside the flusher", n,
				  strerror(err), n);
			rec_writers_refused = 1; /* no more tries */
			break;
		}
		__atomic_store_n(&rec_sess.writers_started, n + 1, __ATOMIC_RELEASE);
		rec_debug("writer %u started (%u live threads)", n, live);
	}
	pthread_attr_destroy(&attr);
}

/* Join the writers (the flusher has ended: none is being started), but not SELF. */
static void rec_writers_join(pid_t self)
{
	uint32_t n = __atomic_load_n(&rec_sess.writers_started, __ATOMIC_ACQUIRE), left = 0;

	for (uint32_t i = 0; i < n; i++) {
		pid_t tid = __atomic_load_n(&rec_sess.writer_tid[i], __ATOMIC_ACQUIRE);
		if (tid && tid == self) {
			left++; /* finish runs in this writer (a fault in it): it cannot end */
			continue;
		}
		pthread_join(rec_sess.writer[i], NULL);
	}
	if (!left) {
		memset(rec_sess.writer_tid, 0, sizeof(rec_sess.writer_tid));
		__atomic_store_n(&rec_sess.writers_started, 0, __ATOMIC_RELEASE);
	}
	rec_flusher_free_reaped(); /* unless that writer was walking */
}

/* Field `field` (1-based, as in proc(5)) of a /proc stat file, as a number; -1 if absent. */
static long rec_proc_stat_field(const char *path, int field, char *state)
{
	char buf[1024], *p;
	struct rec_fd_id id;
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC), f = 3;

	if (fd < 0)
		return -1;
	/* the program may have dup2'ed a file of its own over the number (a daemon does): it is
	 * read and closed only while it is the /proc file */
	if (stat(path, &st) < 0)
		return -1;
	id.dev = st.st_dev;
	id.ino = st.st_ino;
	if (!rec_fd_is(fd, &id))
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	if (rec_fd_is(fd, &id))
		close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the command name may hold spaces */
	if (!p || p[1] != ' ')
		return -1;
	p += 2;
	if (state)
		*state = *p;
	for (; *p && f < field; p++)
		if (*p == ' ')
			f++;
	return f == field ? strtol(p, NULL, 10) : -1;
}

/* Is rec_flusher_alone's /proc read worth making now? A busy flusher made one per chunk (an
 * open, a stat, 2 fstat, a read of /proc/self/stat that the kernel computes in full, a
 * close). While a thread of the program that we record has not exited (its TSD destructor
 * has not run) the process is not down to our threads, unless that thread left by a raw
 * exit syscall, which runs no destructor: then it is read once a period, not after each
 * pass, so such a process still ends. Only the flusher frees the list's nodes
 * (rec_flusher_reap), so it walks it without the lock. */
static int rec_flusher_alone_due(void)
{
	static uint64_t last;
	uint64_t now = rec_clock_ns();

	for (struct rec_thread *t = __atomic_load_n(&rec_sess.threads, __ATOMIC_ACQUIRE); t;
	     t = __atomic_load_n(&t->next, __ATOMIC_ACQUIRE)) {
		if (!__atomic_load_n(&t->exited, __ATOMIC_ACQUIRE)) {
			if (now - last < REC_FLUSH_PERIOD_MS * 1000000ull)
				return 0;
			break;
		}
	}
	last = now;
	return 1;
}

/* Are the flusher and the keeper the last live threads of the process? When a program's main
 * thread calls pthread_exit, glibc ends the process with exit(0) once its last thread exits;
 * our threads would keep it alive (and, blocking every signal, deaf to SIGTERM), so the keeper
 * does that exit(0) (rec_keeper_main). The leader stays a zombie until the group is gone, so
 * it counts as a thread. */
static int rec_flusher_alone(void)
{
	char path[64], state = 0;
	long ours = 1 + __atomic_load_n(&rec_sess.keeper_started, __ATOMIC_ACQUIRE) +
		    __atomic_load_n(&rec_sess.helper_started, __ATOMIC_ACQUIRE) +
		    __atomic_load_n(&rec_sess.writers_started, __ATOMIC_ACQUIRE);
	long n = rec_proc_stat_field("/proc/self/stat", 20, NULL);

	if (n == ours)
		return 1;
	if (n != ours + 1)
		return 0;
	rec_snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)rec_sess.pid);
	return rec_proc_stat_field(path, 3, &state) >= 0 && (state == 'Z' || state == 'X');
}

int rec_flusher_take_fatal(int sig)
{
	int none = 0;

	if (!__atomic_load_n(&rec_sess.flusher_started, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&rec_sess.quit, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&rec_sess.flusher_tid, __ATOMIC_ACQUIRE) == rec_gettid())
		return 0;
	/* a writer (a fault in it) finishes itself: the flusher's finish would join it */
	for (uint32_t i = 0; i < REC_WRITERS_MAX; i++)
		if (__atomic_load_n(&rec_sess.writer_tid[i], __ATOMIC_ACQUIRE) == rec_gettid())
			return 0;
	__atomic_store_n(&rec_sess.fatal_tid, rec_gettid(), __ATOMIC_RELAXED);
	if (!__atomic_compare_exchange_n(&rec_sess.fatal_sig, &none, sig, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return -1;
	rec_flusher_wake();
	return 1;
}

/* Finish for the fatal signal a handler handed over, then die by it if it was sent (a
 * faulting thread waits in its handler and dies by itself). */
static void rec_flusher_fatal(int sig)
{
	pid_t tid = __atomic_load_n(&rec_sess.fatal_tid, __ATOMIC_RELAXED);

	rec_session_finish();
	if (!rec_sig_is_async(sig))
		return;
	signal(sig, SIG_DFL);
	/* to the thread it was for (it did not block it); any thread of ours, if that one left */
	if (syscall(SYS_tgkill, rec_sess.pid, tid, sig) < 0)
		kill(rec_sess.pid, sig);
}

static void *rec_flusher_main(void *arg)
{
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	rec_self = REC_THREAD_OFF;
	/* every write of the flusher's in a descriptor table of its own: the program may close
	 * or dup2 over any number at any time, and a check of a shared number before a write or
	 * close is always raced. Without one (unshare refused), the checks of the shared table */
	if (rec_session_fds_private_enter() < 0)
		rec_debug("the flusher shares the program's descriptor table (unshare: %s)",
			  strerror(errno));
	__atomic_store_n(&rec_sess.flusher_tid, rec_gettid(), __ATOMIC_RELEASE);

	while (!__atomic_load_n(&rec_sess.quit, __ATOMIC_ACQUIRE)) {
		uint32_t seen = __atomic_load_n(&rec_sess.wake, __ATOMIC_ACQUIRE);
		int sig = __atomic_load_n(&rec_sess.fatal_sig, __ATOMIC_ACQUIRE);
		if (sig) {
			rec_flusher_fatal(sig);
			break;
		}
		rec_writers_grow(rec_flusher_pass());
		/* only on a quiet pass (no hand-off meanwhile): a busy flusher reads no /proc file */
		if (__atomic_load_n(&rec_sess.wake, __ATOMIC_ACQUIRE) == seen &&
		    rec_flusher_alone_due() && rec_flusher_alone()) {
			if (!__atomic_load_n(&rec_sess.keeper_started, __ATOMIC_ACQUIRE))
				exit(0); /* finishes the trace through the destructor, as glibc */
			/* the keeper exits (the program's table); finish stops this thread */
			__atomic_store_n(&rec_sess.keeper_go, 1, __ATOMIC_RELEASE);
			rec_futex(&rec_sess.keeper_go, FUTEX_WAKE_PRIVATE, 1, NULL);
		}
		rec_wake_wait(&rec_sess.flusher_sleeping, seen);
	}
	return NULL;
}

/* The keeper (rec_session.keeper_started): never traced, every signal blocked. */
static void *rec_keeper_main(void *arg)
{
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	rec_self = REC_THREAD_OFF;
	__atomic_store_n(&rec_sess.keeper_tid, rec_gettid(), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&rec_sess.keeper_go, __ATOMIC_ACQUIRE))
		rec_futex(&rec_sess.keeper_go, FUTEX_WAIT_PRIVATE, 0, NULL);
	if (__atomic_load_n(&rec_sess.keeper_go, __ATOMIC_ACQUIRE) != 1)
		return NULL; /* no flusher: nobody would wake it, it must not keep the process */
	exit(0); /* finishes the trace through the destructor, as glibc would */
}

void rec_flusher_ensure(void)
{
	pthread_attr_t attr;
	sigset_t all, old;

	if (__atomic_load_n(&rec_sess.flusher_started, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&rec_sess.lock);
	if (!rec_sess.flusher_started && rec_sess.state == REC_SESSION_ACTIVE) {
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, 256 * 1024);
		/* start with every signal blocked so none lands there before it blocks them */
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		/* pthread_create allocates (the new thread's TLS vector) with malloc, which may
		 * be the program's: a hook then is ours (no signal can land here, all blocked) */
		uint8_t in_rt = rec_in_runtime;
		rec_in_runtime = 1;
		pthread_t keeper;
		/* before the flusher, which looks for it when it finds itself alone; glibc's
		 * default stack: exit(0) there runs the program's atexit handlers */
		rec_sess.keeper_go = 0;
		if (pthread_create(&keeper, NULL, rec_keeper_main, NULL) == 0) {
			pthread_detach(keeper);
			__atomic_store_n(&rec_sess.keeper_started, 1, __ATOMIC_RELEASE);
		}
		int err = pthread_create(&rec_sess.flusher, &attr, rec_flusher_main, NULL);
		rec_in_runtime = in_rt;
		if (err == 0) {
			__atomic_store_n(&rec_sess.flusher_started, 1, __ATOMIC_RELEASE);
		} else {
			rec_warn("cannot start the flusher thread: chunks are written at exit");
			if (rec_sess.keeper_started) {
				__atomic_store_n(&rec_sess.keeper_started, 0, __ATOMIC_RELEASE);
				__atomic_store_n(&rec_sess.keeper_go, 2, __ATOMIC_RELEASE);
				rec_futex(&rec_sess.keeper_go, FUTEX_WAKE_PRIVATE, 1, NULL);
			}
		}
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_attr_destroy(&attr);
	}
	pthread_mutex_unlock(&rec_sess.lock);
}

/* the tid a started thread of ours says once it runs (0 if it never started) */
static pid_t rec_own_tid(const int *started, const pid_t *tid)
{
	for (int i = 0; i < 1000 && __atomic_load_n(started, __ATOMIC_ACQUIRE) &&
			!__atomic_load_n(tid, __ATOMIC_ACQUIRE);
	     i++)
		usleep(1000);
	return __atomic_load_n(tid, __ATOMIC_ACQUIRE);
}

int rec_own_thread(pid_t tid)
{
	uint32_t n = __atomic_load_n(&rec_sess.writers_started, __ATOMIC_ACQUIRE);

	for (uint32_t i = 0; i < n && i < REC_WRITERS_MAX; i++) {
		int started = 1;
		if (tid == rec_own_tid(&started, &rec_sess.writer_tid[i]))
			return 1;
	}
	return tid == rec_own_tid(&rec_sess.flusher_started, &rec_sess.flusher_tid) ||
	       tid == rec_own_tid(&rec_sess.keeper_started, &rec_sess.keeper_tid) ||
	       tid == rec_own_tid(&rec_sess.helper_started, &rec_sess.helper_tid);
}

void rec_flusher_stop(void)
{
	if (!__atomic_load_n(&rec_sess.flusher_started, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&rec_sess.quit, 1, __ATOMIC_RELEASE);
	rec_flusher_wake();
	rec_futex(&rec_sess.wake, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
	/* finish may run in the flusher itself (a fault there): never join oneself; its writers
	 * then (it starts none any more) */
	if (rec_gettid() == __atomic_load_n(&rec_sess.flusher_tid, __ATOMIC_ACQUIRE)) {
		rec_writers_join(rec_gettid());
		return;
	}
	pthread_join(rec_sess.flusher, NULL);
	rec_writers_join(rec_gettid()); /* after the flusher: it may have been starting one */
	rec_sess.flusher_started = 0;
}

void rec_flusher_end_helpers(void)
{
	/* the keeper returns without exiting the process when keeper_go is 2 */
	if (__atomic_load_n(&rec_sess.keeper_started, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&rec_sess.keeper_started, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&rec_sess.keeper_go, 2, __ATOMIC_RELEASE);
		rec_futex(&rec_sess.keeper_go, FUTEX_WAKE_PRIVATE, 1, NULL);
	}
	if (__atomic_load_n(&rec_sess.helper_started, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&rec_sess.helper_quit, 1, __ATOMIC_RELEASE);
		__atomic_add_fetch(&rec_sess.helper_wake, 1, __ATOMIC_ACQ_REL);
		rec_futex(&rec_sess.helper_wake, FUTEX_WAKE_PRIVATE, 1, NULL);
	}
}
