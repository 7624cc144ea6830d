/*
 * rec_ringpool: spare ring files reused by new threads (see rec_ringpool.h for the role and
 * the invariants). Slow paths only: thread attach, the flusher, finish and fork.
 */
#include "librecord/rec_ringpool.h"
#include "librecord/rec_clock.h"
#include "librecord/rec_session.h"
#include "librecord/rec_util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define REC_RINGPOOL_CAP 64 /* rec_config's ceiling of FLIGHTREC_RING_POOL */
/* an attach that finds the pool empty while a ring is coming back waits for it at most
 * REC_RINGPOOL_WAIT_NS (2 ms) before it makes a ring of its own, woken (futex on
 * rec_pool_gen) each time the flusher closes a thread */
#define REC_RINGPOOL_WAIT_NS 2000000
/* bytes of chunk 0 a reused ring has faulted in before its thread records */
#define REC_RINGPOOL_EAGER (64u << 10)

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

struct rec_ringpool_ent {
	uint8_t *map;         /* the ring's mapping, header page and chunks */
	uint32_t id;          /* its file: pool.<pid>.<id> */
	uint32_t prefaulted;  /* chunks 0..prefaulted-1 were faulted in for writing */
};

/* under rec_sess.lock */
static struct rec_ringpool_ent rec_pool[REC_RINGPOOL_CAP];
static uint32_t rec_pool_count;
static uint32_t rec_pool_next_id;
static uint32_t rec_pool_misses; /* attaches (not the image's first) that found it empty */
static int rec_pool_off;         /* finish ran: nothing goes in any more */
/* futex word, bumped (and its waiters woken) each time a thread is closed: the rings
 * rec_ringpool_returning counts change only then */
static uint32_t rec_pool_gen;

static uint32_t rec_ringpool_max(void)
{
	uint32_t max = rec_sess.cfg.ring_pool;

	return max < REC_RINGPOOL_CAP ? max : REC_RINGPOOL_CAP;
}

static size_t rec_ringpool_size(void)
{
	return REC_RING_HDR_SIZE + rec_sess.cfg.chunk_size * rec_sess.cfg.chunk_count;
}

static void rec_ringpool_name(char *buf, size_t size, uint32_t id)
{
	rec_snprintf(buf, size, "pool.%d.%u", (int)rec_sess.pid, id);
}

static void rec_ring_file_name(char *buf, size_t size, const struct rec_thread *t)
{
	rec_snprintf(buf, size, "ring.%d.%d", (int)t->pid, (int)t->tid);
}

void rec_ring_file_name_of(char *buf, size_t size, const struct rec_thread *t)
{
	if (t->pool_named)
		rec_ringpool_name(buf, size, t->pool_id);
	else
		rec_ring_file_name(buf, size, t);
}

/* Fault in for writing (a shared file mapping is otherwise populated read-only, and each
 * first store would take a page_mkwrite fault in the hot path). */
static void rec_ringpool_populate(uint8_t *p, size_t len)
{
	if (madvise(p, len, MADV_POPULATE_WRITE) == 0)
		return;
	for (size_t off = 0; off < len; off += 4096) /* kernels before 5.14 */
		__atomic_fetch_add(p + off, 0, __ATOMIC_RELAXED);
}

void rec_ring_hdr_init(struct rec_ring_hdr *h, const struct rec_thread *t)
{
	const struct rec_config *cfg = &rec_sess.cfg;

	/* The magic cleared first and written last: a process dies at any instant of any of
	 * its threads (SIGKILL, abort), and what it left in the header is what salvage reads.
	 * Without the magic, a header is one not written yet (nothing recorded: the ring is
	 * removed); with it, a whole one. The magic first, as before, left a header with the
	 * magic and zeroes or half its fields, which salvage refused as malformed ('pid/tid 0/0
	 * differ from the file name's', 'format name is empty'; e2e-salvage ring-steps). The
	 * fences keep the compiler from moving the stores across (program order is what a
	 * kill leaves: every store made by then is in the page cache). */
	memset(h->magic, 0, sizeof(h->magic));
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	/* a reused ring carries the previous thread's progress fields (done_seq, lost_*...):
	 * every field starts from zero, as in a new file */
	memset((uint8_t *)h + sizeof(h->magic), 0, sizeof(*h) - sizeof(h->magic));
	h->version = REC_RING_VERSION;
	h->hdr_size = REC_RING_HDR_SIZE;
	h->chunk_size = cfg->chunk_size;
	h->chunk_count = cfg->chunk_count;
	h->pid = t->pid;
	h->tid = t->tid;
	h->policy = cfg->policy;
	rec_snprintf(h->format, sizeof(h->format), "%s", rec_ring_format());
	h->clock = rec_clock_g;
	h->session_ns = rec_sess.start_ns;
	rec_snprintf(h->out_path, sizeof(h->out_path), "%s", rec_sess.out_path);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	memcpy(h->magic, REC_RING_MAGIC, sizeof(h->magic));
}

/* Rings that exited threads will give back once the flusher has closed them (lock held). */
static uint32_t rec_ringpool_returning(void)
{
	uint32_t n = 0;

	if (__atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) != REC_SESSION_ACTIVE ||
	    !__atomic_load_n(&rec_sess.flusher_started, __ATOMIC_ACQUIRE))
		return 0;
	/* closed and ring are the flusher's to change, without the lock: atomic (a count) */
	for (struct rec_thread *t = rec_sess.threads; t; t = t->next)
		if (!__atomic_load_n(&t->closed, __ATOMIC_ACQUIRE) &&
		    __atomic_load_n(&t->ring, __ATOMIC_RELAXED) &&
		    __atomic_load_n(&t->exited, __ATOMIC_ACQUIRE))
			n++;
	return n;
}

/* Remove a spare ring (its file and its mapping). */
static void rec_ringpool_drop(const struct rec_ringpool_ent *e)
{
	char name[64];

	rec_ringpool_name(name, sizeof(name), e->id);
	munmap(e->map, rec_ringpool_size());
	unlinkat(rec_sess.ringdirfd, name, 0);
}

/* A spare ring for an attaching thread, out of the pool (0), or -1 when it has none. WAIT:
 * when it is empty but a thread that ended is about to give its ring back (the flusher writes
 * its last chunk and closes it), wait for that: a fraction of a millisecond costs less than
 * making a ring (a few ms) that the pool, full again, then throws away. Woken the moment a
 * thread is closed (rec_ringpool_closed), not polled: a sleep of a fixed step overslept on a
 * loaded machine. */
static int rec_ringpool_pop(struct rec_ringpool_ent *e, int wait)
{
	pthread_mutex_lock(&rec_sess.lock);
	for (uint64_t deadline = 0, now; wait;) {
		/* read before the test: a close after it bumps the word, and the wait returns */
		uint32_t seen = __atomic_load_n(&rec_pool_gen, __ATOMIC_ACQUIRE);
		struct timespec ts;

		if (rec_pool_count || rec_pool_off || !rec_ringpool_returning())
			break;
		now = rec_clock_mono_ns();
		if (!deadline)
			deadline = now + REC_RINGPOOL_WAIT_NS;
		else if (now >= deadline)
			break;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)(deadline - now);
		pthread_mutex_unlock(&rec_sess.lock);
		rec_flusher_wake();
		rec_futex(&rec_pool_gen, FUTEX_WAIT_PRIVATE, seen, &ts);
		pthread_mutex_lock(&rec_sess.lock);
	}
	if (!rec_pool_count || rec_pool_off) {
		if (wait && rec_sess.nthreads) /* the image's first thread always makes its ring */
			rec_pool_misses++;
		pthread_mutex_unlock(&rec_sess.lock);
		return -1;
	}
	/* the ring that came back last: its pages are the likeliest to be in and writable */
	*e = rec_pool[--rec_pool_count];
	pthread_mutex_unlock(&rec_sess.lock);
	return 0;
}

/* Ring E, out of the pool, to attaching thread T under its pool name (rec_ringpool.h). */
static void rec_ringpool_give(struct rec_thread *t, const struct rec_ringpool_ent *e)
{
	size_t eager;

	/* The chunks a thread faulted in (or the flusher for it) stay in the page cache and
	 * mapped, but may have been written back since (mapped read-only again: the first
	 * store takes a write fault) or even evicted. The header and the start of chunk 0
	 * are faulted in for writing again now (a page-table walk when they are in and
	 * writable): a short thread's first stores take no fault. The rest counts as faulted
	 * in (the flusher does not walk it again for every thread, which made it fall behind
	 * closing threads); a store into a page written back since takes a write fault, as
	 * in a ring that wrapped around, never SIGBUS: every block stays allocated. */
	eager = rec_sess.cfg.chunk_size < REC_RINGPOOL_EAGER ? rec_sess.cfg.chunk_size
							     : REC_RINGPOOL_EAGER;
	rec_ringpool_populate(e->map, REC_RING_HDR_SIZE + eager);
	/* the whole header, then the thread's first chunk: a SIGKILL leaves salvage a
	 * pool file whose header names no thread (nothing recorded: removed) or names this
	 * one, whole (read as its ring; the pool file's chunk headers were cleared when it came
	 * back) */
	rec_ring_hdr_init((struct rec_ring_hdr *)e->map, t);
	/* program order is what a kill leaves (every store made by then reaches the page
	 * cache): the compiler must not sink the header's stores below the chunk's */
	__atomic_signal_fence(__ATOMIC_RELEASE);
	t->ring = e->map;
	t->ring_size = rec_ringpool_size();
	t->ring_fd = -1;
	t->prefaulted = e->prefaulted;
	t->pool_id = e->id;
	t->pool_named = 1;
}

int rec_ringpool_claim(struct rec_thread *t)
{
	struct rec_ringpool_ent e;

	/* no wait here for a ring an ended thread is giving back: threads that start together
	 * would all wait at once, each with its own deadline, and all miss together; the caller
	 * asks the helper instead, which waits for one at a time (rec_ringpool_take) */
	if (!rec_ringpool_max() || rec_ringpool_pop(&e, 0) < 0)
		return -1;
	rec_ringpool_give(t, &e);
	return 0;
}

int rec_ringpool_take(struct rec_thread *t, int wait)
{
	struct rec_ringpool_ent e;

	if (!rec_ringpool_max() || rec_ringpool_pop(&e, wait) < 0)
		return -1;
	rec_ringpool_give(t, &e);
	/* then named after the thread (salvage reads it by either name) */
	if (rec_ringpool_name_ring(t) < 0) {
		rec_ringpool_drop(&e); /* the caller makes a ring, and says why if it cannot */
		t->ring = NULL;
		t->pool_named = 0;
		return -1;
	}
	return 0;
}

int rec_ringpool_name_ring(struct rec_thread *t)
{
	char from[64], to[64];

	if (!t->pool_named)
		return 0;
	rec_ringpool_name(from, sizeof(from), t->pool_id);
	rec_ring_file_name(to, sizeof(to), t);
	if (renameat(rec_sess.ringdirfd, from, rec_sess.ringdirfd, to) < 0)
		return -1;
	t->pool_named = 0;
	return 0;
}

void rec_ringpool_closed(void)
{
	__atomic_add_fetch(&rec_pool_gen, 1, __ATOMIC_RELEASE);
	rec_futex(&rec_pool_gen, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL);
}

int rec_ringpool_put(struct rec_thread *t)
{
	const struct rec_config *cfg = &rec_sess.cfg;
	struct rec_ringpool_ent e;
	uint64_t taken;
	char from[64], to[64];
	int full;

	if (!t->ring || t->ring_size != rec_ringpool_size() || t->pid != rec_sess.pid ||
	    t->pool_named ||
	    __atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) != REC_SESSION_ACTIVE)
		return -1;
	pthread_mutex_lock(&rec_sess.lock);
	full = rec_pool_off || rec_pool_count >= rec_ringpool_max();
	e.id = rec_pool_next_id++;
	pthread_mutex_unlock(&rec_sess.lock);
	if (full)
		return -1;
	/* renamed away first: from here salvage does not read it, so clearing the previous
	 * thread's chunk headers cannot lose anything it still had to write */
	rec_ring_file_name(from, sizeof(from), t);
	rec_ringpool_name(to, sizeof(to), e.id);
	if (renameat(rec_sess.ringdirfd, from, rec_sess.ringdirfd, to) < 0)
		return -1;
	/* a pool file whose header names a thread is that thread's ring to salvage
	 * (rec_ringpool_claim): this one names none any more */
	__atomic_store_n(&((struct rec_ring_hdr *)t->ring)->tid, 0, __ATOMIC_RELEASE);
	/* the chunks it took (their pages are in: it wrote them); the others are still zeroes */
	taken = t->seq < cfg->chunk_count ? t->seq : cfg->chunk_count;
	for (uint64_t i = 0; i < taken; i++)
		memset(t->ring + REC_RING_HDR_SIZE + i * cfg->chunk_size, 0, sizeof(struct rec_chunk));
	e.map = t->ring;
	e.prefaulted = t->prefaulted;
	pthread_mutex_lock(&rec_sess.lock);
	full = rec_pool_off || rec_pool_count >= rec_ringpool_max();
	if (!full)
		rec_pool[rec_pool_count++] = e;
	pthread_mutex_unlock(&rec_sess.lock);
	if (full) { /* filled (or finished) meanwhile */
		rec_ringpool_drop(&e);
		__atomic_store_n(&t->ring, NULL, __ATOMIC_RELAXED); /* rec_ringpool_returning */
		return 0;
	}
	__atomic_store_n(&t->ring, NULL, __ATOMIC_RELAXED);
	return 0;
}

/* Make one spare ring: created, every block allocated, mapped, chunk 0 faulted in (the
 * page-cache work a thread that takes it then does not do). */
static int rec_ringpool_make(struct rec_ringpool_ent *e, uint32_t id)
{
	size_t size = rec_ringpool_size();
	char name[64];
	void *m;
	int fd;

	rec_ringpool_name(name, sizeof(name), id);
	fd = rec_openat_kept(rec_sess.ringdirfd, name,
			     O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	/* a store into a sparse MAP_SHARED page the disk has no room for is SIGBUS */
	if (posix_fallocate(fd, 0, (off_t)size) != 0) {
		close(fd);
		unlinkat(rec_sess.ringdirfd, name, 0);
		return -1;
	}
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd); /* the mapping needs no descriptor (rec_thread.c, rec_ring_create) */
	if (m == MAP_FAILED) {
		unlinkat(rec_sess.ringdirfd, name, 0);
		return -1;
	}
	rec_ringpool_populate(m, REC_RING_HDR_SIZE + rec_sess.cfg.chunk_size);
	e->map = m;
	e->id = id;
	e->prefaulted = 1;
	return 0;
}

void rec_ringpool_fill(void)
{
	/* a write failed (disk full, most likely): the space spare rings hold is given back
	 * to the trace, and no ring is kept any more */
	if (__atomic_load_n(&rec_sess.write_errno, __ATOMIC_RELAXED)) {
		rec_ringpool_fini();
		return;
	}
	for (;;) {
		struct rec_ringpool_ent e;
		uint32_t want, id;
		int full;

		pthread_mutex_lock(&rec_sess.lock);
		/* only for an image whose threads came faster than rings came back twice: a
		 * program that starts one more thread once does not get a spare 8 MiB file */
		want = rec_pool_misses >= 2 ? rec_pool_misses : 0;
		if (want > rec_ringpool_max())
			want = rec_ringpool_max();
		/* rings of exited threads come back soon: a spare made now would push one of
		 * them out of a full pool (made, then unlinked, for nothing) */
		for (uint32_t n = rec_ringpool_returning(); n && want; n--)
			want--;
		full = rec_pool_off || rec_pool_count >= want ||
		       __atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) != REC_SESSION_ACTIVE;
		id = rec_pool_next_id++;
		pthread_mutex_unlock(&rec_sess.lock);
		if (full)
			return;
		rec_session_fds_check(); /* the program may have closed or replaced ringdirfd */
		if (rec_ringpool_make(&e, id) < 0) {
			/* no room: stop asking until a thread misses again */
			pthread_mutex_lock(&rec_sess.lock);
			rec_pool_misses = 0;
			pthread_mutex_unlock(&rec_sess.lock);
			return;
		}
		pthread_mutex_lock(&rec_sess.lock);
		full = rec_pool_off || rec_pool_count >= rec_ringpool_max();
		if (!full)
			rec_pool[rec_pool_count++] = e;
		pthread_mutex_unlock(&rec_sess.lock);
		if (full) {
			rec_ringpool_drop(&e);
			return;
		}
	}
}

void rec_ringpool_fini(void)
{
	pthread_mutex_lock(&rec_sess.lock);
	rec_pool_off = 1;
	while (rec_pool_count)
		rec_ringpool_drop(&rec_pool[--rec_pool_count]);
	pthread_mutex_unlock(&rec_sess.lock);
}

void rec_ringpool_fork_child(void)
{
	/* single-threaded here, the lock just re-made by the session's atfork handler */
	while (rec_pool_count)
		munmap(rec_pool[--rec_pool_count].map, rec_ringpool_size());
	rec_pool_misses = 0;
	rec_pool_off = 0;
}
