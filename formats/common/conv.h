/*
 * conv: the function-event stream `flightrec convert` passes from a trace's reader to a
 * viewer format's writer (prefix conv_). Host only.
 *
 * A reader calls conv_thread() (or conv_track(), which names the track and its process)
 * before each track's events, then conv_enter()/conv_exit(), conv_instant() and
 * conv_counter() in the track's order, and conv_finish() once. A track is a thread, or
 * whatever else a trace has a timeline for (an ovni CPU). The stream keeps every writer's
 * input well formed whatever the trace holds: an exit with no open frame (its entry before a
 * loss) is dropped, frames still open when a thread's events end (a loss, a thread that never
 * returned) end at its last time, and time never goes backwards within a thread. Writers see
 * only balanced, ordered events and stream them out: memory grows with the distinct function
 * names and call stacks (speedscope, folded), never with the number of events. A writer with
 * no instant or counter op (speedscope, folded: they hold frames only) has those events
 * counted in left_out instead, for the command to say so.
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
	/* a new track; PNAME and TNAME name its process and itself, or are NULL */
	int (*thread)(void *w, int pid, int tid, const char *pname, const char *tname);
	int (*enter)(void *w, uint64_t ns, const char *name);
	int (*exit)(void *w, uint64_t ns);
	int (*finish)(void *w); /* writes what is left and frees W; 0, or -1 on a write error */
	/* a point in time; ARGS: the members of a JSON object ("\"cpu\":2"), or NULL. NULL op:
	 * the format holds no instants */
	int (*instant)(void *w, uint64_t ns, const char *name, const char *args);
	/* counter NAME's series SERIES is VALUE from NS on; NULL op: the format holds none */
	int (*counter)(void *w, uint64_t ns, const char *name, const char *series,
		       double value);
	/* the writer keeps every distinct frame name (speedscope's frame table, folded's
	 * stacks): a reader names frames by what is bounded (an ovni mark's type, not its
	 * value) so that memory stays bounded too */
	int keeps_names;
	/* a writer of a directory (open is NULL): DIR exists, empty; TITLE names the program */
	void *(*open_dir)(const char *dir, const char *title);
	/* enter and exit with the call's values (uftrace's -A/-R): ARGS, the members of a JSON
	 * object ("\"arguments\":\"(7)\""). NULL op: the format has no place for them, and
	 * enter/exit are called without */
	int (*enter_args)(void *w, uint64_t ns, const char *name, const char *args);
	int (*exit_args)(void *w, uint64_t ns, const char *args);
};

extern const struct conv_writer conv_chrome, conv_speedscope, conv_folded, conv_uftrace;

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
	uint64_t left_out; /* instants and counter samples the writer cannot hold */
};

int conv_open(struct conv_stream *cs, const struct conv_writer *wr, FILE *out,
	      const char *title);
/* a directory writer's stream, written into DIR */
int conv_open_dir(struct conv_stream *cs, const struct conv_writer *wr, const char *dir,
		  const char *title);
int conv_thread(struct conv_stream *cs, int pid, int tid);
int conv_track(struct conv_stream *cs, int pid, int tid, const char *pname, const char *tname);
int conv_enter(struct conv_stream *cs, uint64_t ns, const char *name);
int conv_exit(struct conv_stream *cs, uint64_t ns);
/* the same with the call's values (ARGS as the writer's enter_args/exit_args take them, or
 * NULL); a writer without a place for them gets the plain call */
int conv_enter_args(struct conv_stream *cs, uint64_t ns, const char *name, const char *args);
int conv_exit_args(struct conv_stream *cs, uint64_t ns, const char *args);
int conv_instant(struct conv_stream *cs, uint64_t ns, const char *name, const char *args);
int conv_counter(struct conv_stream *cs, uint64_t ns, const char *name, const char *series,
		 double value);
/* does the writer hold instants and counters (not frames only)? */
int conv_holds_points(const struct conv_writer *wr);
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
