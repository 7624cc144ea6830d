/*
 * rec_sink: the per-format back end, a small table of functions in the manner of Redis's
 * ae backends. librecord moves bytes; a sink turns a thread's stream of committed chunks into
 * the format's files and writes the format's metadata.
 *
 * Who calls what, and from where:
 *   open_session  process image start (constructor), before any thread records
 *   fork_child    in a fork child, before its first thread re-attaches
 *   open_thread   on the helper, for the recording thread that waits, when it first records
 *                 (rec_fd_call: no descriptor of ours in the program's table); for a sink
 *                 with late_open, when the thread took a spare ring, on the first drainer
 *                 that comes to it (flusher, helper, finish) instead, the thread recording
 *                 meanwhile
 *   write_chunk   flusher thread (or the helper for the producer under the drain and help
 *                 policies, or finish, on the helper): chunks of one thread arrive in
 *                 sequence order, never concurrently
 *   append_lock/append_unlock   around write_chunk, when the sink has them (one file for
 *                 every thread: a chunk's offset is known only under the lock)
 *   close_thread  flusher or finish, after the thread's last chunk
 *   finish        once per process image (exit, _exit, fatal signal, exec)
 *   finished      optional, after finish has written the stats file: the last word (a sink
 *                 whose rings live outside the trace moves the stats next to it)
 * A sink never calls instrumented code and never allocates in write_chunk.
 */
#ifndef REC_SINK_H
#define REC_SINK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct rec_session;
struct rec_thread;

struct rec_sink {
	const char *name; /* "uftrace", "xray", ... stored in ring files for salvage */
	/* default output directory when this format is picked by FLIGHTREC_FORMAT and neither
	 * FLIGHTREC_DIR nor the front end's own variable is set; NULL: the front end's default */
	const char *dir;
	/* the ring encoding (enum rec_encoding, rec_encoding.h) write_chunk copies as it is; another
	 * is decoded (any hook into any format). REC_ENC_NONE: it decodes every encoding, or it
	 * is the only sink of its front end */
	int encoding;
	int (*open_session)(struct rec_session *s);
	void (*fork_child)(struct rec_session *s, pid_t ppid);
	int (*open_thread)(struct rec_session *s, struct rec_thread *t);
	int (*write_chunk)(struct rec_session *s, struct rec_thread *t, const uint8_t *data,
			   size_t len, uint64_t lost_before);
	void (*close_thread)(struct rec_session *s, struct rec_thread *t, uint64_t lost_after);
	void (*finish)(struct rec_session *s);
	void (*finished)(struct rec_session *s);
	/* optional, for a sink that appends the chunks of every thread (and process) to ONE file
	 * (rec_session.out_path): around one write_chunk, the right to append, exclusive among
	 * every writer of that file. append_lock returns the file's end, where the chunk's LEN
	 * bytes will go (-1: not known, e.g. not a regular file); the drainer records it in the ring
	 * header, then writes, then records the write done, before append_unlock (rec_ring.h:
	 * salvage then knows exactly where a write a kill cut short lives). Slow path: taken once
	 * per chunk, never by a hook. Re-entered by the thread that holds it (finish from a fatal
	 * signal in the middle of a write), it must not wait for itself. */
	int64_t (*append_lock)(struct rec_session *s, uint64_t len);
	/* optional, for a sink that keeps no descriptor per thread between writes (so that the
	 * runtime's descriptors do not grow with the program's threads, RLIMIT_NOFILE, nor live
	 * long enough for the program to close them): open the thread's output file for one
	 * write_chunk; the drainer closes it after (t->sink_fd is -1 between writes). */
	int (*thread_fd)(struct rec_session *s, struct rec_thread *t);
	void (*append_unlock)(struct rec_session *s);
	/* open_thread may run after the thread began recording (rec_thread_open_late): it
	 * stamps what it writes with t->attach_ns, not the time it runs, and the format's
	 * salvager recovers a thread it never opened (the files it makes, its metadata) */
	int late_open;
};

#endif
