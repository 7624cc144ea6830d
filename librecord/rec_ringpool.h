/*
 * rec_ringpool: spare ring files, so that a new thread does not create, allocate and fault in
 * a ring of its own (about 2 ms of file system and page-cache work on ext4 here, per thread).
 *
 * A thread's ring, once the flusher has written its last chunk and closed it, goes back to
 * the pool instead of being unmapped and unlinked; a thread that attaches takes one, writes
 * its header and renames it to its own name; finding it empty while an ended thread is still
 * to be closed, it waits for that ring (2 ms at most). When threads attach faster than rings
 * come back (the pool was empty for a second time), the flusher makes spare rings in the
 * background.
 * At most cfg.ring_pool (FLIGHTREC_RING_POOL, default 16) rings wait in the pool: the ring
 * files on disk are the live threads' plus at most that many, and none once a write failed
 * (a full disk needs their space for the trace) or finish began.
 *
 * Invariants (doc/design.md "Ring pool"):
 *  - a pooled ring is named pool.<pid>.<n> in .flightrec, its header's tid 0: salvage never
 *    reads it (its chunks were all written before it came back) and removes it once the
 *    process is dead;
 *  - it keeps every block allocated (posix_fallocate when made, never punched) and its
 *    mapping: a store into it cannot fault on a full disk (no SIGBUS), and the pages the
 *    previous thread touched are still in;
 *  - it comes back only after the sink closed its thread (every event written or counted
 *    lost), is renamed away first and only then has its chunk headers cleared; a thread
 *    that takes it writes the whole header before renaming it to ring.<pid>.<tid>, so a
 *    SIGKILL at any point leaves salvage either a pool file or a consistent ring;
 *  - a ring claimed without the helper (rec_ringpool_claim) keeps its pool name, with the
 *    taker's whole header in it, until a drainer renames it (rec_ringpool_name_ring):
 *    salvage reads a pool file whose header names a thread (tid != 0) as that thread's
 *    ring; a ring that comes back has its header's tid cleared once renamed to pool.*;
 *  - the pool list is guarded by rec_sess.lock (held across fork); a fork child forgets
 *    the parent's spare rings without touching their files.
 */
#ifndef REC_RINGPOOL_H
#define REC_RINGPOOL_H

#include "librecord/rec_thread.h"

#pragma GCC visibility push(hidden)

/* Give t (attaching: pid and tid set) a ring from the pool, header written and named after
 * it: 0; -1 when the pool has none (the caller makes one). WAIT: for a ring an ended thread
 * is giving back, when the pool is empty (2 ms at most). */
int rec_ringpool_take(struct rec_thread *t, int wait);
/* The same without the helper and without waiting, on the attaching thread: the ring keeps
 * its pool name (t->pool_named, t->pool_id), its header says whose it is (salvage reads it as
 * t's ring); no descriptor is opened. 0, or -1 when the pool is empty (the caller asks the
 * helper, whose rec_ringpool_take waits). */
int rec_ringpool_claim(struct rec_thread *t);
/* A drainer, for a ring rec_ringpool_claim gave: rename it ring.<pid>.<tid>; 0, or -1 (it
 * keeps its pool name: rec_ring_file_name_of says which). */
int rec_ringpool_name_ring(struct rec_thread *t);
/* The name of t's ring file in .flightrec, whichever it has now. */
void rec_ring_file_name_of(char *buf, size_t size, const struct rec_thread *t);
/* t's ring, after the sink closed t: kept for a later thread (0, t->ring is NULL then), or
 * -1 when the pool is full or off (the caller unmaps and unlinks it). */
int rec_ringpool_put(struct rec_thread *t);
/* The flusher (or finish) closed a thread: an attach waiting for a ring to come back looks
 * again now. */
void rec_ringpool_closed(void);
/* Flusher: make spare rings while threads attach faster than rings come back; once a
 * write failed (rec_session.write_errno: the disk may be full), remove them all instead and
 * keep none (their space is the trace's). */
void rec_ringpool_fill(void);
/* Finish: unmap and remove every spare ring; the pool takes no more. */
void rec_ringpool_fini(void);
/* Fork child: the spare rings are the parent's files: unmapped, not removed. */
void rec_ringpool_fork_child(void);
/* Fill a new ring's header page for thread t (rec_ring.h); the chunks are left alone. */
void rec_ring_hdr_init(struct rec_ring_hdr *h, const struct rec_thread *t);

#pragma GCC visibility pop

#endif
