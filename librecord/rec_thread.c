/*
 * rec_thread: the slow paths of per-thread recording: attach (create the ring), chunk
 * switch under the full-buffer policy, drain, retire (thread exit) and close.
 *
 * Invariants:
 *  - Only the owning thread takes chunks (FREE -> FILLING) and publishes them (-> FULL).
 *  - Only one drainer writes a given thread's FULL chunks at a time: the flusher (under the
 *    thread's drain_lock), or finish after the flusher stopped, or the helper for the owning
 *    thread, which waits (rec_fd_call), under the drain policy (then the flusher leaves the
 *    live thread alone) or under the help policy (under drain_lock, when the flusher has not
 *    written its next chunk yet).
 *  - No descriptor of ours is opened, written or closed on a program thread: the ring and the
 *    sink's files are the helper's (rec_fd_call), whose descriptor table is its own. For a
 *    sink with late_open, a thread that finds a spare ring takes it on its own, with no
 *    descriptor and no round trip to the helper (the helper's wake-up and the sink's file
 *    creation were most of a short thread's cost); the helper, not waited for, or the
 *    first drainer to come to it names the ring and opens the thread in the sink
 *    (rec_thread_open_late) before anything of it is written.
 *  - Chunks reach the sink in seq order: the drainer writes chunk flush_idx only if it is
 *    FULL with seq == flush_seq + 1.
 *  - A producer that waits for its next chunk (block, help) sleeps on free_seq and the
 *    drainer that frees a chunk wakes it (rec_chunk_freed): no wake is missed, none polled.
 *  - Thread state is freed only after the thread's TLS says DEAD and it is closed.
 */
#include "librecord/rec_fast_asm.h"
#include "librecord/rec_clock.h"
#include "librecord/rec_ringpool.h"
#include "librecord/rec_session.h"
#include "librecord/rec_thread.h"
#include "librecord/rec_util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* the front ends' assembly fast paths see these structures through rec_fast_asm.h */
_Static_assert(offsetof(struct rec_thread, pos) == REC_T_POS, "rec_fast_asm.h: pos");
_Static_assert(offsetof(struct rec_thread, end) == REC_T_END, "rec_fast_asm.h: end");
_Static_assert(offsetof(struct rec_thread, chunk) == REC_T_CHUNK, "rec_fast_asm.h: chunk");
_Static_assert(offsetof(struct rec_thread, events) == REC_T_EVENTS, "rec_fast_asm.h: events");
_Static_assert(offsetof(struct rec_thread, busy) == REC_T_BUSY, "rec_fast_asm.h: busy");
_Static_assert(offsetof(struct rec_thread, fe_hold) == REC_T_HOLD, "rec_fast_asm.h: fe_hold");
_Static_assert(offsetof(struct rec_thread, fe_state) == REC_T_FE, "rec_fast_asm.h: fe_state");
_Static_assert(offsetof(struct rec_chunk, committed) == REC_C_COMMITTED, "rec_fast_asm.h: commit");
_Static_assert(sizeof(struct rec_chunk) == REC_C_DATA, "rec_fast_asm.h: chunk data");

__thread struct rec_thread *rec_self __attribute__((tls_model("initial-exec")));
__thread uint8_t rec_in_runtime __attribute__((tls_model("initial-exec")));
/* while this thread attaches (rec_self is OFF then): events of hooks that came meanwhile (a
 * signal handler's), counted as lost_nested once the thread has its state */
static __thread uint8_t rec_attaching __attribute__((tls_model("initial-exec")));
static __thread uint64_t rec_attach_lost __attribute__((tls_model("initial-exec")));
/* this thread got no ring, or the sink could not make its file (file system full, no inode
 * left): its events are counted lost_dead, since no state of its own can hold them */
static __thread uint8_t rec_noring __attribute__((tls_model("initial-exec")));
/* a vfork child that could not have a state of its own (rec_vfork_return): it records
 * nothing (rec_self OFF, its events counted lost_dead) and never writes the parent's; its
 * returns through frames hijacked before the vfork read their real addresses off the
 * parent's shadow stack, which stays as the parent left it (rec_vfork_stateless_parent) */
static __thread uint8_t rec_vfork_nostate __attribute__((tls_model("initial-exec")));
/* the hook attaching now stands for no event (rec_thread_get_quiet) */
static __thread uint8_t rec_quiet __attribute__((tls_model("initial-exec")));

static uint64_t rec_lost_per_hook(void)
{
	return rec_sess.fe && rec_sess.fe->lost_per_hook ? rec_sess.fe->lost_per_hook : 1;
}

static pthread_key_t rec_thread_key;
static pthread_once_t rec_thread_key_once = PTHREAD_ONCE_INIT;

static void rec_thread_destructor(void *arg);
static void rec_thread_sink_fd_ok(struct rec_thread *t);

static void rec_thread_key_create(void)
{
	if (pthread_key_create(&rec_thread_key, rec_thread_destructor) != 0)
		rec_warn("pthread_key_create failed: thread exits will not be seen");
}

void rec_count_lost_dead(uint64_t n)
{
	__atomic_fetch_add(&rec_sess.lost_dead, n, __ATOMIC_RELAXED);
}

static void rec_ring_name(char *buf, size_t size, pid_t pid, pid_t tid)
{
	rec_snprintf(buf, size, "ring.%d.%d", (int)pid, (int)tid);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* Fault pages in for writing (shared file mappings are otherwise populated read-only, and
 * every first write would take a page_mkwrite fault in the hot path). */
static void rec_ring_prefault(uint8_t *p, size_t len)
{
	if (madvise(p, len, MADV_POPULATE_WRITE) == 0)
		return;
	for (size_t off = 0; off < len; off += 4096) /* kernels before 5.14 */
		__atomic_fetch_add((uint8_t *)p + off, 0, __ATOMIC_RELAXED);
}

void rec_thread_prefault_ahead(struct rec_thread *t)
{
	const struct rec_config *cfg = &rec_sess.cfg;
	uint64_t want = __atomic_load_n(&t->seq, __ATOMIC_RELAXED) + 2;

	if (!t->ring)
		return;
	if (want > cfg->chunk_count)
		want = cfg->chunk_count;
	while (t->prefaulted < want) {
		rec_ring_prefault(t->ring + REC_RING_HDR_SIZE + t->prefaulted * cfg->chunk_size,
				  cfg->chunk_size);
		t->prefaulted++;
	}
}

/* A thread that cannot get a ring records nothing; say it once per process, not per thread. */
static uint32_t rec_ring_warned;
#define rec_ring_warn(...)                                                                  \
	do {                                                                                \
		if (!__atomic_exchange_n(&rec_ring_warned, 1, __ATOMIC_RELAXED))            \
			rec_warn(__VA_ARGS__);                                              \
	} while (0)

/* Create, allocate and pre-fault the ring file; chunks start FREE. */
static int rec_ring_create(struct rec_thread *t)
{
	const struct rec_config *cfg = &rec_sess.cfg;
	size_t size = REC_RING_HDR_SIZE + cfg->chunk_size * cfg->chunk_count;
	struct rec_ring_hdr *h;
	char name[64];
	void *m;
	int fd, err;

	/* an ended thread's ring, or a spare the flusher made: no file to make, nothing to
	 * allocate or fault in (rec_ringpool.h); waiting for one an ended thread is giving back */
	if (rec_ringpool_take(t, 1) == 0)
		return 0;
	rec_ring_name(name, sizeof(name), t->pid, t->tid);
	/* kept off the low numbers, checked: a program may dup2 over any number meanwhile, and
	 * a descriptor of its own must never be sized, mapped or closed here */
	fd = rec_openat_kept(rec_sess.ringdirfd, name,
			     O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		rec_ring_warn("cannot create ring file %s/.flightrec/%s (threads without a ring record nothing):", rec_sess.dir, name);
		return -1;
	}
	/* every block of the ring now: a store into a page of a sparse MAP_SHARED file that
	 * the file system cannot allocate (disk full, now or later) kills the program with
	 * SIGBUS. posix_fallocate returns the error instead of setting errno. */
	err = posix_fallocate(fd, 0, (off_t)size);
	if (err) {
		errno = err;
		rec_ring_warn("cannot allocate ring file %s/.flightrec/%s (%zu bytes; threads "
			      "without a ring record nothing, their events are counted lost_dead):",
			      rec_sess.dir, name, size);
		goto fail;
	}
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		rec_ring_warn("cannot map ring file %s (threads without a ring record nothing):", name);
		goto fail;
	}
	h = m;
	rec_ring_hdr_init(h, t);
	/* chunks start FREE (0) as the file's zeroes: a chunk's header is written when it is
	 * first taken (rec_chunk_take). Writing all of them here took a page fault per chunk on
	 * a shared file mapping, a few ms per thread on ext4 for chunks a short thread never
	 * uses; salvage takes an all-zero header for a chunk never taken */
	((struct rec_chunk *)((uint8_t *)m + REC_RING_HDR_SIZE))->magic = REC_CHUNK_MAGIC;
	t->ring = m;
	t->ring_size = size;
	/* the mapping needs no descriptor: one per thread would eat the program's
	 * RLIMIT_NOFILE, and the program may close it any time. Salvage tells a live
	 * process's rings by its live.<pid> lock (rec_session.livefd). */
	close(fd);
	t->ring_fd = -1;
	/* the first chunk now, each next one by the flusher a chunk ahead of the producer: a
	 * thread starts fast, short-lived threads touch little, and the producer's first write
	 * into a page takes no page-cache fault */
	rec_ring_prefault(m, REC_RING_HDR_SIZE + cfg->chunk_size);
	t->prefaulted = 1;
	return 0;
fail:
	close(fd);
	unlinkat(rec_sess.ringdirfd, name, 0);
	return -1;
}

static void rec_ring_destroy(struct rec_thread *t, int unlink_file)
{
	char name[64];

	if (t->ring) {
		munmap(t->ring, t->ring_size);
		__atomic_store_n(&t->ring, NULL, __ATOMIC_RELAXED); /* rec_ringpool_returning */
	}
	if (t->ring_fd >= 0) {
		close(t->ring_fd);
		t->ring_fd = -1;
	}
	if (unlink_file) {
		rec_ring_file_name_of(name, sizeof(name), t);
		unlinkat(rec_sess.ringdirfd, name, 0);
	}
	rec_ringpool_closed();
}

static struct rec_chunk *rec_chunk_at(struct rec_thread *t, uint32_t idx)
{
	return (struct rec_chunk *)(t->ring + REC_RING_HDR_SIZE + (size_t)idx * rec_sess.cfg.chunk_size);
}

/* Make chunk idx the current one. The caller saw it FREE (acquire). */
static void rec_chunk_take(struct rec_thread *t, uint32_t idx)
{
	struct rec_chunk *c = rec_chunk_at(t, idx);

	c->magic = REC_CHUNK_MAGIC; /* first take: the ring was made with zeroes here */
	c->seq = t->seq + 1;
	__atomic_store_n(&t->seq, c->seq, __ATOMIC_RELAXED); /* read by the prefaulter */
	c->committed = 0;
	c->events = 0;
	/* one exchange: a nested hook's count (signal handler) is in this chunk or the next */
	c->lost_before = __atomic_exchange_n(&t->lost_pending, 0, __ATOMIC_RELAXED);
	t->events_at_chunk = t->events;
	/* FILLING is informational (salvage); nobody waits on it */
	__atomic_store_n(&c->state, REC_CHUNK_FILLING, __ATOMIC_RELEASE);
	t->chunk = c;
	t->pos = rec_chunk_data(c);
	t->end = (uint8_t *)c + rec_sess.cfg.chunk_size;
	t->next_idx = (idx + 1) % rec_sess.cfg.chunk_count;
}

/* Hand the current chunk over: final length, event count, then FULL (release; pairs with
 * the drainer's acquire load of the state). */
static void rec_chunk_publish(struct rec_thread *t)
{
	struct rec_chunk *c = t->chunk;

	if (!c)
		return;
	c->committed = (uint64_t)(t->pos - rec_chunk_data(c));
	c->events = t->events - t->events_at_chunk;
	__atomic_store_n(&c->state, REC_CHUNK_FULL, __ATOMIC_RELEASE);
	t->chunk = NULL;
	t->pos = t->end = NULL;
}

/* What a thread's attach does with descriptors, run by rec_fd_call (on the helper, whose
 * table the program does not share): its ring, then the sink's file. -2: no ring. */
static int rec_thread_attach_fds(void *arg)
{
	struct rec_thread *t = arg;

	rec_session_fds_check(); /* the helper's own table: put back by path if need be */
	if (rec_ring_create(t) < 0)
		return -2;
	if (rec_sess.sink->open_thread && rec_sess.sink->open_thread(&rec_sess, t) < 0) {
		rec_ring_destroy(t, 1);
		return -1;
	}
	rec_thread_sink_fd_ok(t);
	return 0;
}

static int rec_ring_destroy_fds(void *arg)
{
	rec_ring_destroy(arg, 1);
	return 0;
}

/* What rec_thread_attach_fds leaves for later to a thread that took a spare ring on its own
 * (rec_ringpool_claim), in a drainer's table: its ring's name, the sink's open_thread. A
 * ring that cannot be renamed keeps its pool name (salvage reads it all the same); a thread
 * the sink cannot open has its chunks counted unwritten, lost, as on any failed write. */
static void rec_thread_open_late_fds(struct rec_thread *t)
{
	rec_session_fds_check();
	if (rec_ringpool_name_ring(t) < 0)
		rec_debug("ring of thread %d keeps its spare's name: %s", (int)t->tid,
			  strerror(errno));
	if (rec_sess.sink->open_thread && rec_sess.sink->open_thread(&rec_sess, t) < 0) {
		t->open_failed = 1;
		return;
	}
	rec_thread_sink_fd_ok(t);
}

void rec_thread_open_late_run(struct rec_thread *t)
{
	rec_thread_open_late_fds(t);
	__atomic_sub_fetch(&rec_sess.late_pending, 1, __ATOMIC_RELAXED);
	/* after this store the thread may be closed and freed (by the drainer waiting, whose
	 * wait reads nothing of t once woken) */
	if (__atomic_exchange_n(&t->open_pending, 0, __ATOMIC_ACQ_REL) == 3)
		rec_futex(&t->open_pending, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL);
}

void rec_thread_open_late(struct rec_thread *t)
{
	uint32_t want = 1;

	if (!__atomic_load_n(&t->open_pending, __ATOMIC_ACQUIRE))
		return;
	/* the helper and a drainer may meet here (the flusher, finish, or the helper itself
	 * under the drain policy): one opens, the other waits for it (slow paths, our threads
	 * only) */
	if (__atomic_compare_exchange_n(&t->open_pending, &want, 2, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		rec_thread_open_late_run(t);
		return;
	}
	/* 2: being opened; 3: being opened, someone waits (woken by the store of 0) */
	for (uint32_t v; (v = __atomic_load_n(&t->open_pending, __ATOMIC_ACQUIRE)) != 0;) {
		if (v == 2 && !__atomic_compare_exchange_n(&t->open_pending, &v, 3, 0,
							    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			continue;
		rec_futex(&t->open_pending, FUTEX_WAIT_PRIVATE, 3, NULL);
	}
}

/* Put T, fully built, on the session's thread list: 0; -1 (nothing done) when the session
 * is no longer active. The flusher walks the list without the lock: the node is published
 * with a release store. */
static int rec_thread_publish(struct rec_thread *t)
{
	pthread_mutex_lock(&rec_sess.lock);
	if (__atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) != REC_SESSION_ACTIVE) {
		pthread_mutex_unlock(&rec_sess.lock);
		return -1;
	}
	t->next = rec_sess.threads;
	__atomic_store_n(&rec_sess.threads, t, __ATOMIC_RELEASE);
	rec_sess.nthreads++;
	pthread_mutex_unlock(&rec_sess.lock);
	return 0;
}

/*
 * Thread states the flusher freed, kept for the next attaches (under rec_sess.lock). A
 * munmap per ended thread flushed the TLB of every CPU the process ran on (an IPI each,
 * dear in a VM: 16% of the samples of 1000 short threads were munmap's), and the next
 * thread's fresh mapping took page faults at its first stores. Only in the process that
 * owns them (not a vfork child, which shares our memory); a fork child forgets its copy.
 */
#define REC_STATE_CACHE 16
static struct rec_thread *rec_state_cache[REC_STATE_CACHE];
static uint32_t rec_state_cached;

/* OWN: the caller is of the process that owns the cache (not a vfork child) */
static struct rec_thread *rec_thread_state_alloc(size_t size, int own)
{
	struct rec_thread *t = NULL;

	if (own) {
		pthread_mutex_lock(&rec_sess.lock);
		if (rec_state_cached && rec_state_cache[rec_state_cached - 1]->alloc_size == size)
			t = rec_state_cache[--rec_state_cached];
		pthread_mutex_unlock(&rec_sess.lock);
		if (t) {
			memset(t, 0, size); /* as a new mapping's */
			return t;
		}
	}
	t = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return t == MAP_FAILED ? NULL : t;
}

void rec_thread_state_free(struct rec_thread *t)
{
	/* none kept once finish has begun: no attach is to come */
	if (__atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) != REC_SESSION_ACTIVE) {
		munmap(t, t->alloc_size);
		return;
	}
	pthread_mutex_lock(&rec_sess.lock);
	if (rec_state_cached < REC_STATE_CACHE) {
		rec_state_cache[rec_state_cached++] = t;
		t = NULL;
	}
	pthread_mutex_unlock(&rec_sess.lock);
	if (t)
		munmap(t, t->alloc_size);
}

static struct rec_thread *rec_thread_attach(void)
{
	size_t size = (sizeof(struct rec_thread) + rec_sess.fe->thread_size + 4095) & ~(size_t)4095;
	/* a vfork child is another process in our memory: no cached state, no spare ring */
	int own = getpid() == rec_sess.pid;
	struct rec_thread *t;

	t = rec_thread_state_alloc(size, own);
	if (t == NULL) {
		rec_ring_warn("cannot allocate thread state (the thread records nothing):");
		return NULL;
	}
	t->alloc_size = size;
	t->tid = rec_gettid();
	t->pid = rec_sess.pid;
	t->ring_fd = -1;
	t->sink_fd = t->sink_id_fd = -1;
	t->attach_ns = rec_clock_ns();
	/* a spare ring, taken here: the ring and the sink's files are a drainer's to name and
	 * open (rec_thread_open_late), the thread records at once. Not in a vfork child (our
	 * memory, another process: the flusher would open a thread of the parent's) */
	if (rec_sess.sink->late_open && own && rec_ringpool_claim(t) == 0) {
		t->open_pending = 1;
		__atomic_add_fetch(&rec_sess.late_pending, 1, __ATOMIC_RELAXED);
		goto attached;
	}
	/* the program may close or reuse any number meanwhile: not one of ours is ever in its
	 * table (rec_fd_call); the lock is not held there (the helper may wait for it) */
	switch (rec_fd_call(rec_thread_attach_fds, t)) {
	case 0:
		break;
	case -2:
		rec_noring = 1;
		goto fail;
	default:
		/* the sink could not make its file (no inode left: ENOSPC) and said so: this
		 * thread's events are counted lost_dead too, never dropped unseen */
		rec_noring = 1;
		goto fail;
	}
attached:
	rec_chunk_take(t, 0);

	if (rec_thread_publish(t) < 0) {
		if (t->open_pending) /* never on the list: nobody is to open it */
			__atomic_sub_fetch(&rec_sess.late_pending, 1, __ATOMIC_RELAXED);
		rec_fd_call(rec_ring_destroy_fds, t);
		goto fail;
	}

	pthread_once(&rec_thread_key_once, rec_thread_key_create);
	pthread_setspecific(rec_thread_key, t);
	rec_flusher_ensure();
	rec_flusher_wake();
	/* its files on the helper, not on the flusher: the two work side by side, and the
	 * flusher's time goes to writing and closing threads, whose rings a thread starting
	 * now may be waiting for */
	if (t->open_pending)
		rec_helper_open_late();
	return t;
fail:
	munmap(t, size);
	return NULL;
}

static struct rec_thread *rec_thread_get_slow_inner(void)
{
	struct rec_thread *t = rec_self;

	if (rec_in_runtime)
		return NULL; /* the runtime's own call into the program (rec_thread.h) */
	if (t == REC_THREAD_DEAD) {
		rec_count_lost_dead(rec_lost_per_hook());
		return NULL;
	}
	if (t == REC_THREAD_OFF) {
		if (rec_attaching)
			rec_sigsafe_add(&rec_attach_lost, rec_lost_per_hook());
		else if (rec_noring || rec_vfork_nostate)
			rec_count_lost_dead(rec_lost_per_hook());
		return NULL;
	}
	if (t)
		return t;
	if (rec_session_ensure() < 0)
		return NULL;
	if (__atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) != REC_SESSION_ACTIVE)
		return NULL;
	/* a hook nested in the attach (signal handler) sees OFF and records nothing; what it
	 * stood for is counted once the thread is attached */
	rec_self = REC_THREAD_OFF;
	rec_attaching = 1;
	t = rec_thread_attach();
	rec_self = t ? t : REC_THREAD_OFF;
	rec_attaching = 0;
	if (!t && rec_noring && !rec_quiet)
		rec_count_lost_dead(rec_lost_per_hook()); /* this very hook's */
	if (t && rec_attach_lost)
		rec_count_lost(t, REC_LOST_NESTED, __atomic_exchange_n(&rec_attach_lost, 0,
								       __ATOMIC_RELAXED));
	return t;
}

int rec_thread_attaching_at(uintptr_t tp)
{
	/* initial-exec: at the same offset from every thread's pointer */
	intptr_t off =
		(intptr_t)((uintptr_t)&rec_attaching - (uintptr_t)__builtin_thread_pointer());

	return *(volatile uint8_t *)(tp + (uintptr_t)off);
}

/* Drop policy and friends: the event that did not fit is lost. */
static void *rec_reserve_drop(struct rec_thread *t)
{
	rec_count_lost(t, REC_LOST_FULL, 1);
	return NULL;
}

static int rec_chunk_is_free(struct rec_thread *t, uint32_t idx)
{
	return __atomic_load_n(&rec_chunk_at(t, idx)->state, __ATOMIC_ACQUIRE) == REC_CHUNK_FREE;
}

/* Wait until chunk idx of t's ring is free, or at most us microseconds (block, help).
 * Woken by the drainer that frees a chunk (rec_chunk_freed): pairs with it as a Dekker
 * handshake, each side a store, a full fence, then a load of the other's word, so either we
 * see the chunk free or it sees us waiting and bumps free_seq, which makes the futex wait
 * return (at once if the bump came before it). It used to poll: a nanosleep every 50 us
 * (20 under help) for as long as the flusher was behind, 20,000 wake-ups a second per
 * waiting thread taken from the cores the flusher needed, and up to a step late. */
static void rec_wait_chunk_free(struct rec_thread *t, uint32_t idx, long us)
{
	uint32_t seen = __atomic_load_n(&t->free_seq, __ATOMIC_ACQUIRE);

	__atomic_store_n(&t->free_waiting, 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* pairs with the fence in rec_chunk_freed */
	if (!rec_chunk_is_free(t, idx)) {
		struct timespec ts = { us / 1000000, us % 1000000 * 1000 };
		rec_futex(&t->free_seq, FUTEX_WAIT_PRIVATE, seen, &ts);
	}
	__atomic_store_n(&t->free_waiting, 0, __ATOMIC_RELAXED);
}

static void rec_chunk_freed(struct rec_thread *t)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* pairs with rec_wait_chunk_free's */
	if (__atomic_load_n(&t->free_waiting, __ATOMIC_RELAXED)) {
		__atomic_add_fetch(&t->free_seq, 1, __ATOMIC_RELEASE);
		rec_futex(&t->free_seq, FUTEX_WAKE_PRIVATE, 1, NULL);
	}
}

static void rec_sleep_us(long us)
{
	struct timespec ts = { 0, us * 1000 };
	nanosleep(&ts, NULL);
}

static uint64_t rec_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void *rec_reserve_slow_inner(struct rec_thread *t, size_t n)
{
	const struct rec_config *cfg = &rec_sess.cfg;
	uint32_t idx;
	int woke = 0;

	if (n > cfg->chunk_size - sizeof(struct rec_chunk))
		return rec_reserve_drop(t);
	if (__atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) != REC_SESSION_ACTIVE)
		return rec_reserve_drop(t);

	if (t->chunk) {
		rec_chunk_publish(t);
		if (cfg->policy == REC_POLICY_DRAIN)
			rec_thread_drain_own(t);
		else if (cfg->policy != REC_POLICY_OVERWRITE) {
			rec_flusher_ensure();
			rec_flusher_wake();
			woke = 1;
		}
	}
	idx = t->next_idx;
	if (!rec_chunk_is_free(t, idx)) {
		switch (cfg->policy) {
		case REC_POLICY_OVERWRITE: {
			/* the oldest chunk is reused: its events are lost, counted */
			struct rec_chunk *c = rec_chunk_at(t, idx);
			t->overwritten += c->events;
			t->lost[REC_LOST_FULL] += c->events;
			/* salvage tells the reused events before the oldest chunk left */
			struct rec_ring_hdr *h = (struct rec_ring_hdr *)t->ring;
			__atomic_store_n(&h->overwritten_seq, c->seq, __ATOMIC_RELEASE);
			__atomic_store_n(&h->overwritten, t->overwritten, __ATOMIC_RELEASE);
			__atomic_store_n(&c->state, REC_CHUNK_FREE, __ATOMIC_RELEASE);
			break;
		}
		case REC_POLICY_BLOCK:
		case REC_POLICY_HELP: {
			/* block: wait for the flusher; help: the flusher is behind, so write our
			 * own full chunks rather than wait, waiting only while it is writing this
			 * very ring */
			int help = cfg->policy == REC_POLICY_HELP;
			uint64_t limit_us = (uint64_t)cfg->block_ms * 1000;
			uint64_t start = rec_mono_us(), waited_us = 0;
			if (!woke) {
				rec_flusher_ensure();
				rec_flusher_wake();
			}
			while (!rec_chunk_is_free(t, idx) && waited_us < limit_us) {
				if (help && rec_thread_drain_own_try(t) == 0 &&
				    rec_chunk_is_free(t, idx))
					break;
				/* help: the flusher holds this ring; its next freed chunk wakes us
				 * (or 1 ms, to try our own write again); block: only that wakes us */
				uint64_t left = limit_us - waited_us;
				rec_wait_chunk_free(t, idx, (long)(help && left > 1000 ? 1000 : left));
				waited_us = rec_mono_us() - start;
			}
			if (!rec_chunk_is_free(t, idx))
				return rec_reserve_drop(t);
			break;
		}
		case REC_POLICY_DRAIN:
			rec_thread_drain_own(t);
			if (!rec_chunk_is_free(t, idx))
				return rec_reserve_drop(t);
			break;
		default:
			return rec_reserve_drop(t);
		}
	}
	rec_chunk_take(t, idx);
	if ((size_t)(t->end - t->pos) < n)
		return rec_reserve_drop(t);
	{
		uint8_t *p = t->pos;
		t->pos = p + n;
		return p;
	}
}

/* The slow paths run in the middle of the traced program: errno is the program's. */
struct rec_thread *rec_thread_get_slow(void)
{
	int saved = errno;
	struct rec_thread *t = rec_thread_get_slow_inner();
	errno = saved;
	return t;
}

struct rec_thread *rec_thread_get_quiet(void)
{
	struct rec_thread *t;

	rec_quiet = 1;
	t = rec_thread_get_slow();
	rec_quiet = 0;
	return t;
}

void *rec_reserve_slow(struct rec_thread *t, size_t n)
{
	int saved = errno;
	void *p = rec_reserve_slow_inner(t, n);
	errno = saved;
	return p;
}

/* The sink could not write chunk C (LEN bytes): its events are lost, counted (the drainer is
 * the only writer of `unwritten`) and told with the next chunk the sink does write, or at
 * close; the sink left its file as it was before the write. Said once per process. */
static uint32_t rec_write_warned;

static void rec_chunk_unwritten(struct rec_thread *t, struct rec_chunk *c, uint64_t len)
{
	int err = errno;
	uint64_t n;

	if (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) == REC_CHUNK_FULL)
		n = c->events;
	else /* finish writes the FILLING chunk's committed part: its events so far */
		n = __atomic_load_n(&t->events, __ATOMIC_RELAXED) - t->events_at_chunk;
	if (!len)
		n = 0;
	__atomic_store_n(&t->unwritten, t->unwritten + n, __ATOMIC_RELAXED);
	if (!__atomic_exchange_n(&rec_write_warned, 1, __ATOMIC_RELAXED)) {
		rec_sess.write_errno = err ? err : EIO; /* finish says what it cost */
		errno = err;
		rec_warn("cannot write the trace in %s (thread %d): what is not written is counted "
			 "lost:", rec_sess.dir, (int)t->tid);
	}
}

/* The thread's sink descriptor, kept between writes, may have been closed by the program, or
 * replaced by a file of its own (dup2): then it is forgotten (never written to, never closed)
 * and the thread's further chunks fail to be written (counted lost). Said once. */
static uint32_t rec_sink_fd_warned;

static void rec_thread_sink_fd_ok(struct rec_thread *t)
{
	if (t->sink_fd < 0)
		return;
	if (t->sink_fd != t->sink_id_fd) {
		/* a descriptor the sink opened since (at attach, or later: ovni-rt's stream) */
		t->sink_id_fd = t->sink_fd;
		if (rec_fd_id_get(t->sink_fd, &t->sink_id) < 0)
			t->sink_fd = t->sink_id_fd = -1;
		return;
	}
	if (rec_fd_is(t->sink_fd, &t->sink_id))
		return;
	if (!__atomic_exchange_n(&rec_sink_fd_warned, 1, __ATOMIC_RELAXED))
		rec_warn("the program closed or replaced descriptor %d, thread %d's trace file: "
			 "left to the program, what it was to write is counted lost", t->sink_fd,
			 (int)t->tid);
	t->sink_fd = -1;
}

/* Write one chunk to the sink and give it back (FREE, release: pairs with the producer's
 * acquire in rec_chunk_is_free, so the producer never overwrites bytes being written). */
static void rec_chunk_write(struct rec_thread *t, struct rec_chunk *c, uint64_t len)
{
	struct rec_ring_hdr *h = (struct rec_ring_hdr *)t->ring;
	int64_t (*append)(struct rec_session *, uint64_t) = rec_sess.sink->append_lock;
	uint64_t lost = c->lost_before, unwritten = t->unwritten - t->unwritten_told;
	/* the descriptor of the last write, kept open (rec_thread_drain_close) */
	int held = t->sink_keep == 2 && t->sink_fd >= 0;
	int transient = rec_sess.sink->thread_fd && (t->sink_fd < 0 || held) && !t->open_failed;

	if (t->overwritten > t->overwritten_told) { /* overwrite policy: what was reused */
		lost += t->overwritten - t->overwritten_told;
		t->overwritten_told = t->overwritten;
	}
	if (len > rec_sess.cfg.chunk_size - sizeof(*c))
		len = rec_sess.cfg.chunk_size - sizeof(*c);
	rec_finish_progress(); /* a finish that writes is alive (its waiters watch this) */
	/* the program may have closed or replaced our directories' descriptors */
	rec_session_fds_check();
	/* a sink that keeps no descriptor per thread opens the thread's file for this write. In
	 * a table of our own (the flusher's, the helper's) nobody else can close or replace it
	 * before it is closed below: its identity is neither taken nor checked (2 fstat per
	 * chunk written) */
	if (transient && !held) {
		t->sink_fd = rec_sess.sink->thread_fd(&rec_sess, t);
		t->sink_id_fd = -1;
		if (!rec_fd_private)
			rec_thread_sink_fd_ok(t); /* takes its identity */
	} else if (!transient)
		rec_thread_sink_fd_ok(t);
	/* for salvage (rec_ring.h): where a write the process dies in must be cut back to */
	__atomic_store_n(&h->write_pos,
			 t->sink_fd >= 0 ? (int64_t)lseek(t->sink_fd, 0, SEEK_END) : -1,
			 __ATOMIC_RELEASE);
	__atomic_store_n(&h->write_seq, c->seq, __ATOMIC_RELEASE);
	if (append) {
		/* one file for every thread (and process): where this chunk goes is known only
		 * under the sink's append lock; from the claim to done_seq nobody else appends,
		 * so salvage finds exactly these bytes at write_pos (rec_ring.h) */
		int64_t pos = append(&rec_sess, len);
		if (pos >= 0) {
			__atomic_store_n(&h->write_len, len, __ATOMIC_RELEASE);
			__atomic_store_n(&h->write_pos, pos, __ATOMIC_RELEASE);
		}
	}
	/* what earlier writes failed to write is lost before this chunk (a LOST record) */
	if (rec_sess.sink->write_chunk(&rec_sess, t, rec_chunk_data(c), len, lost + unwritten) ==
	    0) {
		t->bytes += len;
		t->unwritten_told += unwritten;
	} else {
		rec_chunk_unwritten(t, c, len);
	}
	if (transient && t->sink_fd >= 0 && t->sink_keep && rec_fd_private) {
		t->sink_keep = 2; /* for the next write and the close: nobody else's table */
	} else if (transient && t->sink_fd >= 0) {
		/* never close a number the program took meanwhile */
		if (!rec_fd_private)
			rec_thread_sink_fd_ok(t);
		if (t->sink_fd >= 0)
			close(t->sink_fd);
		t->sink_fd = -1;
	}
	__atomic_store_n(&h->overwritten_told, t->overwritten_told, __ATOMIC_RELEASE);
	__atomic_store_n(&h->done_len, len, __ATOMIC_RELEASE);
	__atomic_store_n(&h->done_seq, c->seq, __ATOMIC_RELEASE);
	/* only the drainer of this ring writes it */
	__atomic_store_n(&h->lost_written, h->lost_written + lost, __ATOMIC_RELEASE);
	if (append)
		rec_sess.sink->append_unlock(&rec_sess);
	t->flush_seq = c->seq;
}

/* The help policy lets the flusher and a producer both write a ring's chunks: one at a time,
 * by this try-lock (slow paths only: one exchange per chunk, none per event). The flusher
 * takes it for every policy; under the others no producer ever holds it. */
int rec_thread_drain_try(struct rec_thread *t, int all)
{
	if (__atomic_exchange_n(&t->drain_lock, 1, __ATOMIC_ACQUIRE))
		return -1;
	rec_thread_drain(t, all);
	__atomic_store_n(&t->drain_lock, 0, __ATOMIC_RELEASE);
	return 0;
}

static int rec_thread_drain_fds(void *arg)
{
	rec_thread_drain(arg, 0);
	return 0;
}

static int rec_thread_drain_try_fds(void *arg)
{
	return rec_thread_drain_try(arg, 0);
}

/* The drain and help policies: the producer's own FULL chunks written now, while it waits,
 * by the helper (rec_fd_call), in a table of its own: the program may close or reuse any
 * number meanwhile, and the sink's files are never in its table. Not the flusher: under
 * help, the flusher may be the one that is stuck. */
void rec_thread_drain_own(struct rec_thread *t)
{
	rec_fd_call(rec_thread_drain_fds, t);
}

int rec_thread_drain_own_try(struct rec_thread *t)
{
	return rec_fd_call(rec_thread_drain_try_fds, t);
}

void rec_thread_drain_settle(struct rec_thread *t)
{
	for (int i = 0; i < 2000 && t != rec_self &&
			__atomic_load_n(&t->drain_lock, __ATOMIC_ACQUIRE);
	     i++)
		rec_sleep_us(100);
}

void rec_thread_drain(struct rec_thread *t, int all)
{
	uint32_t count = rec_sess.cfg.chunk_count;

	if (t->closed || !t->ring)
		return;
	rec_thread_open_late(t);
	/* relaxed: fixed at start (unit tests switch it between runs, drainers running) */
	if (__atomic_load_n(&rec_sess.cfg.policy, __ATOMIC_RELAXED) == REC_POLICY_OVERWRITE &&
	    t->flush_seq == 0) {
		/* the oldest FULL chunk may not be at flush_idx: start from the lowest seq */
		uint64_t best = UINT64_MAX;
		for (uint32_t i = 0; i < count; i++) {
			struct rec_chunk *c = rec_chunk_at(t, i);
			uint32_t st = __atomic_load_n(&c->state, __ATOMIC_ACQUIRE);
			if (st == REC_CHUNK_FULL && c->seq < best) {
				best = c->seq;
				t->flush_idx = i;
			}
		}
		if (best != UINT64_MAX)
			t->flush_seq = best - 1;
		else if (!all)
			return;
	}
	for (uint32_t n = 0; n < count; n++) {
		struct rec_chunk *c = rec_chunk_at(t, t->flush_idx);
		uint32_t st = __atomic_load_n(&c->state, __ATOMIC_ACQUIRE);
		if (st != REC_CHUNK_FULL || c->seq != t->flush_seq + 1)
			break;
		rec_chunk_write(t, c, c->committed);
		__atomic_store_n(&c->state, REC_CHUNK_FREE, __ATOMIC_RELEASE);
		rec_chunk_freed(t); /* a producer may wait for it (block, help) */
		t->flush_idx = (t->flush_idx + 1) % count;
	}
	if (all) {
		/* the chunk being filled: only what is committed (acquire pairs with rec_commit) */
		struct rec_chunk *c = rec_chunk_at(t, t->flush_idx);
		uint32_t st = __atomic_load_n(&c->state, __ATOMIC_ACQUIRE);
		if (st == REC_CHUNK_FILLING && c->seq == t->flush_seq + 1) {
			uint64_t len = __atomic_load_n(&c->committed, __ATOMIC_ACQUIRE);
			rec_chunk_write(t, c, len);
		}
	}
}

void rec_thread_close(struct rec_thread *t, int unmap)
{
	char name[64];

	if (t->closed)
		return;
	rec_thread_open_late(t);
	rec_session_fds_check();
	if (t->sink_keep != 2) /* a kept one is in the drainer's own table (rec_chunk_write) */
		rec_thread_sink_fd_ok(t);
	if (rec_sess.sink->close_thread)
		rec_sess.sink->close_thread(&rec_sess, t, t->lost_pending + t->unwritten -
							  t->unwritten_told);
	if (t->sink_keep == 2 && t->sink_fd >= 0) { /* a sink that did not close it */
		close(t->sink_fd);
		t->sink_fd = -1;
	}
	t->sink_keep = 0;
	t->unwritten_told = t->unwritten;
	/* atomic: rec_ringpool_returning counts unclosed rings under the lock, this without */
	__atomic_store_n(&t->closed, 1, __ATOMIC_RELEASE);
	if (unmap) {
		/* its chunks are written and the sink closed it: the next thread may take it */
		if (rec_ringpool_put(t) < 0)
			rec_ring_destroy(t, 1);
	} else {
		/* a live thread may still write into its mapping: only drop the file */
		rec_ring_file_name_of(name, sizeof(name), t);
		unlinkat(rec_sess.ringdirfd, name, 0);
	}
	rec_ringpool_closed();
}

int rec_thread_drain_close(struct rec_thread *t)
{
	if (__atomic_exchange_n(&t->drain_lock, 1, __ATOMIC_ACQUIRE))
		return -1;
	/* under the lock to the end: a writer that found the thread live a moment ago may try
	 * it now, and must neither write with nor leave a descriptor of our table (sink_keep) */
	t->sink_keep = rec_fd_private;
	rec_thread_drain(t, 1);
	rec_thread_close(t, 1);
	__atomic_store_n(&t->drain_lock, 0, __ATOMIC_RELEASE);
	return 0;
}

void rec_thread_retire(struct rec_thread *t)
{
	rec_self = REC_THREAD_DEAD;
	rec_chunk_publish(t);
	if (rec_sess.cfg.policy == REC_POLICY_DRAIN)
		rec_thread_drain_own(t);
	/* after this store the flusher may close and free t: touch nothing of it below */
	__atomic_store_n(&t->exited, 1, __ATOMIC_RELEASE);
	rec_flusher_ensure();
	rec_flusher_wake();
}

/* Runs once more in a later destructor round, so that other keys' destructors that call
 * instrumented code are still recorded before this thread's stream is closed. */
static void rec_thread_destructor(void *arg)
{
	struct rec_thread *t = arg;

	if (!t || rec_self != t)
		return;
	if (t->dtor_rounds++ == 0) {
		pthread_setspecific(rec_thread_key, t);
		return;
	}
	if (rec_sess.fe && rec_sess.fe->thread_exit &&
	    __atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) == REC_SESSION_ACTIVE)
		rec_sess.fe->thread_exit(t);
	rec_thread_retire(t);
}

/* Fork child: the forking thread's state is rebuilt with a new ring. The parent's rings are
 * shared mappings of the parent's files: unmap them without writing or unlinking. */
struct rec_thread *rec_thread_fork_child(struct rec_thread *old);
struct rec_thread *rec_thread_fork_child(struct rec_thread *old)
{
	struct rec_thread *t, *next;

	for (t = rec_sess.threads; t; t = next) {
		next = t->next;
		if (t->ring)
			munmap(t->ring, t->ring_size);
		if (t->ring_fd >= 0)
			close(t->ring_fd);
		/* only a descriptor known to be this table's: one a drainer opened in a table of
		 * its own (a write's, kept for a close: rec_thread_drain_close) has a number that
		 * is here the child's own, most likely 0 (a fork during a drain closed the child's
		 * stdin). One not checked yet stays open in the child, never someone else's closed */
		if (t->sink_fd >= 0 && t->sink_fd == t->sink_id_fd &&
		    rec_fd_is(t->sink_fd, &t->sink_id))
			close(t->sink_fd);
		if (t != old)
			munmap(t, t->alloc_size);
	}
	rec_sess.threads = NULL;
	rec_sess.nthreads = 0;
	rec_sess.late_pending = 0; /* the parent's threads, gone */
	rec_state_cached = 0;      /* the fork may have cut a push in two: a few pages left */
	rec_ringpool_fork_child();
	rec_write_warned = 0; /* the child's own trace: its first failure is said again */
	if ((uintptr_t)old <= REC_THREAD_SENTINEL_MAX) {
		rec_self = old == REC_THREAD_OFF ? REC_THREAD_OFF : NULL;
		return NULL;
	}
	rec_self = NULL;
	t = rec_thread_get_slow();
	if (t && rec_sess.fe->fork_thread)
		rec_sess.fe->fork_thread(t, old);
	munmap(old, old->alloc_size);
	return t;
}

/*
 * vfork (rec_thread.h). State in the forking thread's TLS, which the child shares while the
 * parent waits: the parent's pid and state, set at the call; the child's state once it has
 * one; whether the child set it aside for an exec. Only the forking thread and its vfork
 * child ever see them, one at a time (the parent is stopped until the child execs or dies).
 */
__thread pid_t rec_vfork_pid __attribute__((tls_model("initial-exec")));
static __thread struct rec_thread *rec_vfork_parent __attribute__((tls_model("initial-exec")));
static __thread struct rec_thread *rec_vfork_child __attribute__((tls_model("initial-exec")));

int rec_vfork_in_child(void)
{
	return rec_vfork_pid && getpid() != rec_vfork_pid;
}

void rec_vfork_enter(void)
{
	struct rec_thread *t = rec_self;

	/* a vfork made by a vfork child, or by a thread with no state: nothing to keep apart */
	if (rec_vfork_pid || (uintptr_t)t <= REC_THREAD_SENTINEL_MAX)
		return;
	rec_vfork_parent = t;
	rec_vfork_child = NULL;
	rec_vfork_pid = getpid();
}

/* The child's own state, a thread of this session as far as the flusher and the sink go
 * (the sink writes what a fork child's thread gets: uftrace's FORK line), with the parent's
 * front-end state (its frames: their returns are hijacked on the stack the child shares).
 * No TSD and no thread is made here: the parent's TSD is the parent's, and a vfork child
 * must not create threads. NULL if it cannot have one. */
static struct rec_thread *rec_vfork_attach(struct rec_thread *parent)
{
	struct rec_thread *t;

	/* the session's descriptors as the parent left them (the child has changed none yet);
	 * if they are not ours, it records nothing of its own (rec_session_fds_check) */
	if (__atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) != REC_SESSION_ACTIVE ||
	    rec_session_fds_check() < 0)
		return NULL;
	t = mmap(NULL, parent->alloc_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (t == MAP_FAILED)
		return NULL;
	t->alloc_size = parent->alloc_size;
	t->tid = rec_gettid();
	t->pid = rec_sess.pid; /* its ring is named, and pooled, as this process's */
	t->vfork_pid = t->tid;
	t->ring_fd = -1;
	t->sink_fd = t->sink_id_fd = -1;
	/* in the child's own descriptor table (rec_fd_call runs it here: the helper is the
	 * parent's), a copy of the parent's */
	if (rec_fd_call(rec_thread_attach_fds, t) != 0)
		goto fail;
	rec_chunk_take(t, 0);
	if (rec_sess.fe->fork_thread)
		rec_sess.fe->fork_thread(t, parent);
	if (rec_thread_publish(t) < 0) {
		rec_fd_call(rec_ring_destroy_fds, t);
		goto fail;
	}
	return t;
fail:
	munmap(t, t->alloc_size);
	return NULL;
}

void rec_vfork_return(void)
{
	pid_t pid = getpid();
	struct rec_thread *c = rec_vfork_child;

	if (pid == rec_vfork_pid) {
		/* the parent, back: the child has exec'ed or died; what it left in its ring the
		 * flusher writes and closes, as for any thread that ended */
		rec_self = rec_vfork_parent;
		rec_vfork_pid = 0;
		rec_vfork_child = rec_vfork_parent = NULL;
		rec_vfork_nostate = 0;
		if (c) {
			__atomic_store_n(&c->exited, 1, __ATOMIC_RELEASE);
			rec_flusher_wake();
		}
		return;
	}
	if (c || rec_vfork_nostate)
		return; /* the child, which has its own state already, or will have none */
	/* the child's first return (vfork's own). A hook nested in the attach sees OFF and
	 * records nothing. */
	rec_self = REC_THREAD_OFF;
	c = rec_vfork_attach(rec_vfork_parent);
	if (c) {
		rec_self = c;
		rec_vfork_child = c;
		return;
	}
	/* no state of its own (no memory, no descriptor left, the session's closed by the
	 * parent, no space for the ring): it records nothing. Going on with the parent's state
	 * would pop the parent's vfork frame and push the child's calls in its place, and the
	 * parent would return through the child's exec frame into the child's branch. Its
	 * events (this return's exit among them) are counted lost_dead, in the session it
	 * shares with the parent. */
	rec_vfork_nostate = 1;
	rec_count_lost_dead(1);
}

struct rec_thread *rec_vfork_stateless_parent(void)
{
	if (!rec_vfork_nostate || !rec_vfork_pid || getpid() == rec_vfork_pid)
		return NULL;
	return rec_vfork_parent;
}

/* Before an exec or _exit of the vfork child: its records written now, in order before the
 * next image's (which appends to the same <tid>.dat), and the parent's state back in the
 * TLS, since a successful exec never returns. The state stays open: the parent ends it when
 * it runs again, and a failed exec takes it up again. */
void rec_vfork_child_end(void)
{
	struct rec_thread *c = rec_vfork_child;

	if (!rec_vfork_pid || !c || rec_self != c || getpid() == rec_vfork_pid)
		return;
	rec_chunk_publish(c);
	rec_self = rec_vfork_parent;
	/* a child that closed or replaced the session's descriptors (before an exec, to hand
	 * the next image its own) leaves its chunks to the parent's flusher, which writes them
	 * once the parent runs again: later in the file than the next image's, perhaps, never
	 * into a file of the child's */
	if (rec_session_fds_check() < 0)
		return;
	/* one drainer at a time: the flusher may be writing this ring's chunks right now */
	while (__atomic_exchange_n(&c->drain_lock, 1, __ATOMIC_ACQUIRE))
		rec_sleep_us(50);
	rec_thread_drain(c, 0);
	__atomic_store_n(&c->drain_lock, 0, __ATOMIC_RELEASE);
}

void rec_vfork_child_resume(void)
{
	struct rec_thread *c = rec_vfork_child;

	if (rec_vfork_pid && c && rec_self == rec_vfork_parent && getpid() != rec_vfork_pid)
		rec_self = c;
}
