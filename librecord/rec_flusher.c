/*
 * rec_flusher: one background thread per process image that drains FULL chunks through the
 * sink and closes threads that have exited.
 *
 * It blocks every signal, is never traced (its TLS pointer says OFF, so a hook it might run
 * records nothing) and sleeps on a futex word until a producer hands over a chunk
 * (rec_flusher_wake) or REC_FLUSH_PERIOD_MS passes. Producers wake it only when it said it
 * is sleeping, so a busy flusher costs them no syscall.
 *
 * Registry walking: nodes are pushed at the head under the lock and published with a
 * release store; the flusher is the only one that unlinks and frees nodes (under the lock),
 * so the node it is working on cannot vanish while it writes without the lock.
 */
#include "librecord/rec_session.h"
#include "librecord/rec_util.h"

#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define REC_FLUSH_PERIOD_MS 100

static long rec_futex(uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, addr, op, val, ts, NULL, 0);
}

void rec_flusher_wake(void)
{
	__atomic_add_fetch(&rec_sess.wake, 1, __ATOMIC_RELEASE);
	if (__atomic_load_n(&rec_sess.flusher_sleeping, __ATOMIC_ACQUIRE))
		rec_futex(&rec_sess.wake, FUTEX_WAKE_PRIVATE, 1, NULL);
}

/* Fold a closed thread's counters into the session and free it (lock held). */
static void rec_flusher_reap(struct rec_thread *t, struct rec_thread **link)
{
	rec_sess.closed_events += t->events - t->overwritten;
	rec_sess.closed_bytes += t->bytes;
	for (int k = 0; k < REC_LOST_KINDS; k++)
		rec_sess.closed_lost[k] += t->lost[k];
	*link = t->next;
	munmap(t, t->alloc_size);
}

static void rec_flusher_pass(void)
{
	struct rec_thread *t = __atomic_load_n(&rec_sess.threads, __ATOMIC_ACQUIRE);
	/* relaxed: the policy is fixed at start (unit tests switch it between runs) */
	int policy = (int)__atomic_load_n(&rec_sess.cfg.policy, __ATOMIC_RELAXED);
	int drain_policy = policy == REC_POLICY_DRAIN;
	int overwrite = policy == REC_POLICY_OVERWRITE;

	for (; t; t = __atomic_load_n(&t->next, __ATOMIC_ACQUIRE)) {
		int exited = __atomic_load_n(&t->exited, __ATOMIC_ACQUIRE);
		if (t->closed)
			continue;
		rec_thread_prefault_ahead(t);
		if ((drain_policy || overwrite) && !exited)
			continue; /* the owner drains its own, or the ring is kept until the end */
		rec_thread_drain(t, 0);
		if (exited) {
			rec_thread_drain(t, 1);
			rec_thread_close(t, 1);
		}
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
	pthread_mutex_unlock(&rec_sess.lock);
}

static void *rec_flusher_main(void *arg)
{
	sigset_t all;
	struct timespec period = { 0, REC_FLUSH_PERIOD_MS * 1000000L };

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	rec_self = REC_THREAD_OFF;
	__atomic_store_n(&rec_sess.flusher_tid, rec_gettid(), __ATOMIC_RELEASE);

	while (!__atomic_load_n(&rec_sess.quit, __ATOMIC_ACQUIRE)) {
		uint32_t seen = __atomic_load_n(&rec_sess.wake, __ATOMIC_ACQUIRE);
		rec_flusher_pass();
		__atomic_store_n(&rec_sess.flusher_sleeping, 1, __ATOMIC_SEQ_CST);
		/* a wake between the load of `seen` and here changed the word: no sleep */
		if (__atomic_load_n(&rec_sess.wake, __ATOMIC_SEQ_CST) == seen &&
		    !__atomic_load_n(&rec_sess.quit, __ATOMIC_ACQUIRE))
			rec_futex(&rec_sess.wake, FUTEX_WAIT_PRIVATE, seen, &period);
		__atomic_store_n(&rec_sess.flusher_sleeping, 0, __ATOMIC_RELEASE);
	}
	return NULL;
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
		if (pthread_create(&rec_sess.flusher, &attr, rec_flusher_main, NULL) == 0)
			__atomic_store_n(&rec_sess.flusher_started, 1, __ATOMIC_RELEASE);
		else
			rec_warn("cannot start the flusher thread: chunks are written at exit");
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_attr_destroy(&attr);
	}
	pthread_mutex_unlock(&rec_sess.lock);
}

void rec_flusher_stop(void)
{
	if (!__atomic_load_n(&rec_sess.flusher_started, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&rec_sess.quit, 1, __ATOMIC_RELEASE);
	rec_flusher_wake();
	rec_futex(&rec_sess.wake, FUTEX_WAKE_PRIVATE, 1, NULL);
	/* finish may run in the flusher itself (a fault there): never join oneself */
	if (rec_gettid() != __atomic_load_n(&rec_sess.flusher_tid, __ATOMIC_ACQUIRE))
		pthread_join(rec_sess.flusher, NULL);
	rec_sess.flusher_started = 0;
}
