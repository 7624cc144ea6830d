/*
 * ovni_state: the state of an ovni process and of its threads, shared by the API that fills it
 * (ovni-rt/) and the writer that turns it into the trace's files (sink_ovni.c): the process
 * (one per image) and the per-thread state that follows librecord's struct rec_thread.
 *
 * Who touches what:
 *  - struct ovni_proc: written by ovni_proc_init/ovni_proc_fini and the fork child handler;
 *    `lock` guards the v2 process metadata (rank, CPUs) that threads add to.
 *  - struct ovni_thread: written by its own thread through the API. The metadata tree is
 *    guarded by `meta_lock`, because librecord may close a thread (and the sink then writes
 *    its metadata) from the flusher or from finish, while the thread is still running.
 *  - rec_thread.fe_hold (read with `busy` as one 16-bit word by the hot path): non-zero
 *    sends ovni_ev_emit to the slow path; bit OVNI_HOLD_META asks it to write the metadata,
 *    OVNI_HOLD_FLUSH the OF[ / OF] pair of the last ovni_flush before the event.
 */
#ifndef FORMATS_OVNI_STATE_H
#define FORMATS_OVNI_STATE_H

#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>

#include "formats/ovni/ovni_json.h"
#include "librecord/rec_session.h"
#include "librecord/rec_thread.h"

#pragma GCC visibility push(hidden)

#define OVNI_LOOM_MAX 512 /* longest loom name, NUL included (ovni.h's OVNI_MAX_HOSTNAME) */

enum ovni_proc_state { OVNI_PROC_UNINIT = 0, OVNI_PROC_INIT, OVNI_PROC_READY, OVNI_PROC_GONE };
enum ovni_layout { OVNI_LAYOUT_V2 = 2, OVNI_LAYOUT_V3 = 3 };

struct ovni_cpu {
	int index;
	int phyid;
};

struct ovni_cpus {
	struct ovni_cpu *v;
	size_t n, cap;
};

struct ovni_proc {
	int state; /* enum ovni_proc_state; atomic */
	int off;   /* recording is off: API calls do nothing */
	int app;
	int pid;
	int layout;	   /* enum ovni_layout */
	int move_to_final; /* OVNI_TMPDIR: streams are written there, moved at end */
	int forked;	   /* this image is a fork child of an ovni process */
	char loom[OVNI_LOOM_MAX];
	char procdir[PATH_MAX];	      /* where streams are written */
	char procdir_final[PATH_MAX]; /* where they end up (== procdir without OVNI_TMPDIR) */
	char loomdir_final[PATH_MAX];
	char loomdir_tmp[PATH_MAX];
	char tmpdir[PATH_MAX];
	char ringdir[PATH_MAX];	    /* librecord's output directory (rings, stats) */
	pthread_mutex_t lock;	    /* the fields below */
	int rank_set, rank, nranks; /* v2: the process's rank, from any thread */
	struct ovni_cpus cpus;	    /* v2: every CPU any thread declared */
	uint64_t lost;		    /* events that could not be recorded (closed threads) */
};

extern struct ovni_proc ovni_proc;

enum ovni_thread_state {
	OVNI_THREAD_NEW = 0, /* attached, stream not created yet */
	OVNI_THREAD_READY,   /* between ovni_thread_init and ovni_thread_free */
	OVNI_THREAD_FINAL,   /* stream and metadata written and closed */
};

#define OVNI_HOLD_META 1u  /* rec_thread.fe_hold: metadata changed, rewrite it */
#define OVNI_HOLD_FLUSH 2u /* ... ovni_flush's markers (flush_t0/t1) go before the next event */

/* ovni_thread_free waits for the sink to finish the stream: one per freeing thread, two
 * references (the waiter's and the sink's), freed by whoever drops the last one. */
struct ovni_done {
	uint32_t done; /* set (release) once the stream is final */
	uint32_t refs;
};
void ovni_done_put(struct ovni_done *d);

struct ovni_thread {
	uint64_t last_clock;	   /* clock of the last event written (hot) */
	uint64_t ob_len;	   /* bytes libovni's buffer would hold now (hot; ovni_emit.c) */
	uint64_t meta_due;	   /* metadata written: not again before this (ovni_clock ns) */
	int state;		   /* enum ovni_thread_state */
	int tid;		   /* the tid given to ovni_thread_init */
	pthread_mutex_t meta_lock; /* meta, cpus, rank, meta_dirty */
	struct oj *meta;	   /* the thread's metadata (libovni 1.14 keys) */
	int required;		   /* v2: the program itself called ovni_thread_require */
	int rank_set, rank, nranks;
	struct ovni_cpus cpus;	/* ovni.loom_cpus, written when the thread finishes */
	int freeing;		/* ovni_thread_free handed the thread over */
	struct ovni_done *done; /* ... and waits on this (meta_lock) */
	uint64_t written;	/* bytes in the stream file (sink) */
	uint64_t prealloc;	/* stream file blocks allocated up to here (sink) */
	int prealloc_off;	/* the file system refused fallocate: stop trying */
	int cut;		/* a chunk could not be written: the stream ends before it */
	uint64_t flush_pairs;	/* OF[/OF] pairs added (ovni_flush, libovni's full buffer) */
	uint64_t flush_t0;	/* the last ovni_flush's OF[ and OF] clocks, while OVNI_HOLD_FLUSH */
	uint64_t flush_t1;
	uint64_t nested;	/* events dropped: emitted inside another emit */
	uint64_t lost_told;
};

static inline struct ovni_thread *ovni_thread_of(struct rec_thread *t)
{
	return (struct ovni_thread *)rec_thread_fe(t);
}

/* Messages in libovni's shape: "<PREFIX>: [<call>: ]<msg>" on stderr, a format ending in ':'
 * appends strerror(errno); "WARN: <msg>". */
void ovni_vmsg(const char *prefix, const char *func, const char *fmt, va_list ap);
void ovni_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2), cold));

/* sink_ovni.c */
extern const struct rec_sink ovni_sink;
/* The thread's stream file, then its initial metadata file, then the side file that sends
 * salvage to both (in that order: each names only what exists); 0 or -1 (warned). */
int ovni_sink_create_stream(struct rec_thread *t);
/* Write the thread's metadata file now (lock held or not: takes meta_lock). */
int ovni_sink_write_thread_meta(struct rec_thread *t);
/* Finish the stream: add the final keys, write the metadata, close, move (OVNI_TMPDIR). */
void ovni_sink_finalize_thread(struct rec_thread *t, const char *how);
/* v2: write loom.L/proc.P/metadata.json (process lock not held). */
void ovni_sink_write_proc_meta(void);
/* OVNI_TMPDIR: remove the temporary directories that are empty. */
void ovni_sink_clean_tmp(void);
/* Append a CPU unless its phyid is there already; 0 or -1 (no memory). */
int ovni_cpus_add(struct ovni_cpus *c, int index, int phyid);

#pragma GCC visibility pop

#endif
