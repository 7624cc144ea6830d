/*
 * conv: the function-event stream `flightrec convert` passes from a trace's reader to a
 * viewer format's writer (prefix conv_). Host only.
 *
 * A reader calls conv_thread() before each thread's events, then conv_enter()/conv_exit()
 * in the thread's order, and conv_finish() once. The stream keeps every writer's input well
 * formed whatever the trace holds: an exit with no open frame (its entry before a loss) is
 * dropped, frames still open when a thread's events end (a loss, a thread that never
 * returned) end at its last time, and time never goes backwards within a thread. Writers see
 * only balanced, ordered events and stream them out: memory grows with the distinct function
 * names and call stacks (speedscope, folded), never with the number of events.
 */
#ifndef FLIGHTREC_CONV_H
#define FLIGHTREC_CONV_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct conv_writer {
	const char *name;  /* --to NAME */
	const char *what;  /* for --help */
	void *(*open)(FILE *out, const char *title); /* NULL: out of memory */
	int (*thread)(void *w, int pid, int tid);
	int (*enter)(void *w, uint64_t ns, const char *name);
	int (*exit)(void *w, uint64_t ns);
	int (*finish)(void *w); /* writes what is left and frees W; 0, or -1 on a write error */
};

extern const struct conv_writer conv_chrome, conv_speedscope, conv_folded;

/* the writer called NAME, or NULL */
const struct conv_writer *conv_writer_find(const char *name);

#define CONV_MAX_DEPTH 65536 /* frames; deeper ones lose both ends (counted) */

struct conv_stream {
	const struct conv_writer *wr;
	void *w;
	int err;           /* a writer failed: every later call is a no-op returning -1 */
	int in_thread;
	uint64_t last_ns;  /* of the current thread */
	size_t depth;      /* frames open */
	size_t skipped;    /* frames entered beyond CONV_MAX_DEPTH: their exits are dropped too */
	uint64_t events, dropped_exits, closed_at_end;
};

int conv_open(struct conv_stream *cs, const struct conv_writer *wr, FILE *out,
	      const char *title);
int conv_thread(struct conv_stream *cs, int pid, int tid);
int conv_enter(struct conv_stream *cs, uint64_t ns, const char *name);
int conv_exit(struct conv_stream *cs, uint64_t ns);
/* close the frames still open in the current thread, at its last time */
int conv_close_all(struct conv_stream *cs);
int conv_finish(struct conv_stream *cs);

/* The distinct (pid, tid) of a trace in order of appearance, for readers whose threads'
 * records interleave (one pass to list them, one more per thread). */
struct conv_tids {
	struct { int64_t pid, tid; } *v;
	size_t nr, cap;
};
/* add (PID, TID) if new; 0, or -1 out of memory */
int conv_tids_add(struct conv_tids *t, int64_t pid, int64_t tid);
void conv_tids_free(struct conv_tids *t);

/* JSON string contents of S (no quotes) to OUT */
void conv_json_str(FILE *out, const char *s);

#endif
