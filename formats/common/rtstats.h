/*
 * rtstats: the recording runtime's per-process counters, <trace>/.flightrec/stats.<pid>
 * (prefix rts_).
 *
 * Role: the runtime writes one file per process image at exit, named stats.<pid> or
 * stats.<pid>.<start ns> (an exec keeps the pid), of "key=value" lines: pid, ppid, exe,
 * format, threads, events, bytes, lost_full, lost_nested, lost_dead, lost_depth (the image's
 * totals), and one line per thread (librecord/rec_stats.h):
 *   thread=<tid> events=<n> bytes=<n> lost_full=<n> lost_nested=<n> lost_dead=<n> lost_depth=<n>
 * `record` sums the totals into its summary line and `stats` prints them, and the threads.
 * (A killed process leaves stats.<pid>.<ns>.part, which is not read: salvage reports for it.)
 *
 * Invariants: numbers are unsigned decimals (pid/ppid/tid positive ints); unknown keys, and
 * unknown fields of a thread line, are accepted and left out (a newer runtime may add
 * counters); a malformed line, a known key given twice (a field twice in one thread line) or a
 * thread line without its tid is an error naming the file, offset, line and rule, and so are
 * thread lines that do not add up to the totals (one line per thread counted, the same events,
 * bytes and losses; lost_dead at most: a thread's events after its exit are in the total
 * only, rts_unowned_dead). The number
 * of files read is capped (RTS_MAX_PROCS), each file's size (RTS_FILE_MAX) and the thread
 * lines of all of them together (RTS_MAX_THREADS).
 */
#ifndef FLIGHTREC_RTSTATS_H
#define FLIGHTREC_RTSTATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/common/rd_common.h"

#define RTS_MAX_PROCS 65536
#define RTS_FILE_MAX (64u << 20)
#define RTS_MAX_THREADS (1u << 20)

enum rts_rule {
	RTS_OK = 0,
	RTS_E_IO,
	RTS_E_LINE, /* not key=value, or a bad number */
	RTS_E_DUP, /* a known key twice */
	RTS_E_THREAD, /* a thread line without its tid, or one thread line too many */
	RTS_E_SUM, /* the thread lines do not add up to the totals */
};

/* one thread's line */
struct rts_thread {
	int tid;
	uint64_t events, bytes;
	uint64_t lost_full, lost_nested, lost_dead, lost_depth;
};

struct rts_proc {
	int pid, ppid;
	char exe[256];
	char format[32];
	uint64_t threads, events, bytes;
	uint64_t lost_full, lost_nested, lost_dead, lost_depth;
	bool has_pid;
	bool has_totals; /* the totals are there ("events"); a runtime before per-thread lines
			  * wrote no thread line, so nr_thr 0 says nothing about threads */
	uint64_t start; /* from the file name, 0 without one; orders images of one pid */
	struct rts_thread *thr; /* the thread lines, in file order (malloc'ed) */
	size_t nr_thr;
};

struct rts_set {
	struct rts_proc *procs; /* sorted by pid, then start */
	size_t nr;
	bool present; /* the .flightrec directory exists */
};

/* One file's text; P's thread array is malloc'ed (rts_proc_free), at most MAX_THREADS lines
 * of it. */
int rts_parse(const char *buf, size_t len, const char *file, struct rts_proc *p,
	      struct rd_error *err);
int rts_parse_max(const char *buf, size_t len, const char *file, size_t max_threads,
		  struct rts_proc *p, struct rd_error *err);
void rts_proc_free(struct rts_proc *p);
/* every stats.<pid> under TRACE_DIR/.flightrec; no directory is not an error (nr = 0) */
int rts_load(const char *trace_dir, struct rts_set *set, struct rd_error *err);
void rts_free(struct rts_set *set);
uint64_t rts_lost(const struct rts_proc *p);
uint64_t rts_thread_lost(const struct rts_thread *t);
/* T's counters (not its tid) added to SUM: the reader's check and the CLI's total row */
void rts_thread_add(struct rts_thread *sum, const struct rts_thread *t);
/* events lost that no thread line has: a thread's, after its exit (lost_dead only) */
uint64_t rts_unowned_dead(const struct rts_proc *p);

#endif /* FLIGHTREC_RTSTATS_H */
