/*
 * rec_stats: the runtime's own account of a process image, .flightrec/stats.<pid>.<start ns>,
 * read by `flightrec stats` and `flightrec record` (formats/common/rtstats.h).
 *
 * "key=value" lines: the image's totals (pid, ppid, exe, format, threads, events, bytes,
 * lost_full, lost_nested, lost_dead, lost_depth) and one line per thread that attached:
 *   thread=<tid> events=<n> bytes=<n> lost_full=<n> lost_nested=<n> lost_dead=<n> lost_depth=<n>
 * The thread lines add up to the totals exactly, but for lost_dead: events of a thread that
 * had already gone through its exit (no state left to count them in) are in the total only.
 *
 * A thread's line is appended when the flusher frees its state (so a program with many
 * short-lived threads keeps no memory for them), to stats.<pid>.<start ns>.part; finish adds
 * the lines of the threads still known and the totals, and renames it: a stats file is there
 * whole or not at all (a killed process leaves only the .part, which readers ignore).
 */
#ifndef REC_STATS_H
#define REC_STATS_H

#include "librecord/rec_thread.h"

#pragma GCC visibility push(hidden)

/* The flusher is about to free T (registry lock held): its line, its counts into the
 * session's closed_* totals. */
void rec_stats_reap(struct rec_thread *t);
/* The lines rec_stats_reap took since the last call, written in one append to the stats
 * file (one open, write and close per pass of the flusher, not per thread ended). On a full
 * disk they are kept for the next call; rec_stats_finish makes the last one. Registry lock
 * held, before it is let go (the batch is the lock's), or finish's thread, the flusher
 * stopped. */
void rec_stats_reap_flush(void);
/* Fork child: the lines kept back are the parent's threads'. */
void rec_stats_fork_child(void);
/* A sink's finish could not move N events of thread TID (of this image) from where they were
 * written (a spool) into the trace: they are counted lost_full, not events, in the thread's
 * line and the totals (a line already written for a freed thread is corrected by
 * rec_stats_finish). Before rec_stats_finish; finish's thread only. */
void rec_stats_unwritten(pid_t tid, uint64_t n);
/* finish: the remaining thread lines and the totals; the file gets its final name. */
void rec_stats_finish(void);
/* That final name (in the ring directory). */
void rec_stats_final_name(char *buf, size_t size);

#pragma GCC visibility pop

#endif
