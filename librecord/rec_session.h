/*
 * rec_session: process-wide recording state, one per process image.
 *
 * A front end calls rec_session_start() from its constructor (or lazily from its first hook).
 * The session owns the output directory, the thread registry (a list guarded by `lock`, taken
 * only on slow paths: attach, close, fork, finish), the flusher thread and the lifecycle:
 *   fork   the child gets a new session state and fresh rings; it never writes the parent's
 *   exec   rec_session_finish() before the image is replaced (front ends wrap exec*)
 *   exit   a destructor calls rec_session_finish(); _exit is wrapped by the front end
 *   fatal signals   the flusher finishes (the handler returns, or waits for it after a fault),
 *                   then the process dies by the same signal (see rec_session.c)
 * AT_SECURE (setuid) processes record nothing and write nothing.
 */
#ifndef REC_SESSION_H
#define REC_SESSION_H


#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "librecord/rec_config.h"
#include "librecord/rec_sink.h"
#include "librecord/rec_thread.h"

/* internal to the runtime: direct (not GOT) access from the hot path */
#pragma GCC visibility push(hidden)

enum rec_session_state {
	REC_SESSION_NONE = 0,   /* not started */
	REC_SESSION_ACTIVE,     /* recording */
	REC_SESSION_FINISHED,   /* finish ran: threads record nothing more */
	REC_SESSION_OFF,        /* setup failed or AT_SECURE: never records */
};

/* What a front end hands librecord. */
struct rec_frontend {
	const char *name;                  /* for messages: "libmcount" */
	struct rec_config_defaults defaults;
	const struct rec_sink *sink;
	size_t thread_size;                /* bytes of front-end state after struct rec_thread */
	/* optional: called once the environment is parsed, before any thread attaches */
	void (*configured)(const struct rec_config *cfg);
	/* optional: called after `configured`, before any file is made: < 0 turns recording off,
	 * with the reason it wrote in why said in the single warning of a failed start */
	int (*check)(char *why, size_t len);
	/* optional: called when the session is set up (clock calibrated), before it records */
	void (*started)(void);
	/* optional: called in a fork child with the forking thread's new and old state; and in
	 * a vfork child with the state it gets of its own and the parent's (rec_vfork_*), which
	 * it must copy, never change: the parent goes on with it */
	void (*fork_thread)(struct rec_thread *child, const struct rec_thread *parent);
	/* optional: the other formats this front end can write, NULL-terminated; FLIGHTREC_FORMAT
	 * picks one by its sink's name before `configured` runs (which finds it in
	 * rec_sess.sink), and FLIGHTREC_TRACEPOINTS alone picks "tfile" */
	const struct rec_sink *const *formats;
	/* the encoding the hooks write into the rings (enum rec_encoding, rec_encoding.h): a sink
	 * of another format decodes it */
	int encoding;
	/* REC_ENC_FDR: the address of the function with XRay id `fid`, 0 if none */
	uintptr_t (*fn_addr)(uint32_t fid);
	/* optional: uftrace's -A and -R specs of the values the front end's records carry, which
	 * the uftrace sink writes in info (libmcount: FLIGHTREC_ARGUMENT/_RETVAL with the
	 * triggers' argument actions; xray-rt: a log-args function's first argument); NULL:
	 * none. Without them, the sink reads FLIGHTREC_ARGUMENT and _RETVAL */
	const char *(*uftrace_argspec)(void);
	const char *(*uftrace_retspec)(void);
	/* optional, REC_ENC_FDR: the XRay log at `log` is written; write what names its ids
	 * beside it if its own executable's map cannot (<log>.yaml). 0, or -1 on failure */
	int (*instr_map)(const char *log);
	/* events a hook stands for when rec_thread_get turns it away (the thread is dead, or a
	 * signal handler's hook came while the thread was attaching): function hooks 2 (the
	 * entry and the exit it will not have), 0 means 1 */
	unsigned lost_per_hook;
	/* optional: the thread is exiting (its last TSD destructor round, in the thread, while
	 * it may still record): e.g. exits for frames a cancellation unwound */
	void (*thread_exit)(struct rec_thread *t);
	/* optional: events the front end still owed an exited thread's stream when the sink
	 * closes it (XRay exits its full ring kept it from writing): the sink counts them lost */
	uint64_t (*owed_at_close)(const struct rec_thread *t);
	/* optional (rec_wrap_exec.c): the image ends in exec or _exit, write everything now;
	 * NULL: rec_session_finish() if this process's session is active */
	void (*image_end)(void);
	/* optional: after image_end, before exec: keep what the next image continues (returns a
	 * cookie); exec_failed undoes it when the exec fails */
	int (*exec_keep)(void);
	void (*exec_failed)(int cookie);
	/* optional: variables (up to 16, NULL-terminated) a custom exec environment gets back with
	 * their start-up values, besides LD_PRELOAD and FLIGHTREC_DIR; exec_env_off: none */
	const char *const *exec_env;
	int exec_env_off;
};

/* Each runtime defines its front end under this name, so a hook that runs before the
 * runtime's constructor can start the session itself (rec_session_ensure). */
extern struct rec_frontend rec_frontend_self_storage;
#define rec_frontend_self (&rec_frontend_self_storage)

struct rec_fd_req; /* rec_flusher.c */

struct rec_session {
	int state;                         /* enum rec_session_state; acquire/release */
	struct rec_config cfg;
	const struct rec_frontend *fe;
	const struct rec_sink *sink;
	pid_t pid;
	pid_t ppid;
	int dirfd;                         /* output directory */
	int ringdirfd;                     /* <dir>/.flightrec */
	/* what dirfd and ringdirfd named when opened: the program may close or replace them,
	 * rec_session_fds_check reopens them then (rec_util.h, rec_fd_is) */
	struct rec_fd_id dir_id, ringdir_id;
	/* <dir>/.flightrec/live.<pid>, flock(LOCK_EX) for the image's life: salvage leaves the
	 * rings of a live process alone (the ring files themselves hold no descriptor) */
	int livefd;
	struct rec_fd_id live_id;
	/* a sink's one descriptor for every thread (cacheray's trace), -1 if none: kept in the
	 * flusher's own descriptor table too (rec_fd_private_enter) */
	int keep_fd;
	uint32_t reserve_taken;            /* pages of live.<pid> given back (rec_room_claim) */
	uint32_t fds_busy;                 /* try-lock of rec_session_fds_check's reopening */
	char dir[REC_PATH_MAX];            /* absolute output directory */
	char exe[REC_PATH_MAX];            /* /proc/self/exe */
	uint64_t start_ns;                 /* session start (this image, or fork time) */
	pthread_mutex_t lock;              /* registry; slow paths only */
	struct rec_thread *threads;        /* registry, newest first */
	/* flusher */
	pthread_t flusher;
	int flusher_started;
	pid_t flusher_tid;
	/* the keeper: a thread of ours that shares the program's descriptor table (the
	 * flusher has its own) and sleeps on `keeper_go` until the flusher finds the program's
	 * threads all gone: it then calls exit(0) as glibc would, flushing the program's stdio
	 * into the program's descriptors, which the table it keeps alive still holds */
	int keeper_started;
	pid_t keeper_tid;
	uint32_t keeper_go;
	uint32_t wake;                     /* futex word: bumped to wake the flusher */
	/* the helper: a thread of ours with a descriptor table of its own (as the flusher's)
	 * that runs rec_fd_call's requests, queued here newest first, woken by helper_wake */
	struct rec_fd_req *fd_reqs;
	int helper_started;
	pid_t helper_tid;
	uint32_t helper_wake;
	uint32_t helper_quit;              /* rec_session_detach: the helper ends */
	/* threads that took a spare ring on their own and still wait for the helper to name it
	 * and open them in the sink (rec_thread_open_late): the helper walks the list for them
	 * only while this is not 0 */
	uint32_t late_pending;
	uint32_t flusher_sleeping;
	uint32_t quit;
	/* writers (rec_flusher.c): threads the flusher starts as threads grow, each writing
	 * live threads' full chunks beside it (the copy into the page cache was one core's) */
	pthread_t writer[REC_WRITERS_MAX];
	pid_t writer_tid[REC_WRITERS_MAX];   /* atomic: once it runs */
	uint32_t writers_started;            /* atomic: writer[0 .. n) were created */
	uint32_t writers_sleeping;           /* atomic: how many wait on `wake` */
	/* writers walk the registry without the lock: the flusher unlinks a closed node from
	 * it but frees it (rec_thread's memory) only once each writer that may stand on it has
	 * ended that walk. writer_walk[i] is odd while writer i walks (its passes, counted
	 * twice); reaped_old is freed once every writer_walk that was odd at reaped_snap has
	 * moved on (a count of walkers reached 0 only when they all rested at once, which
	 * busy writers never did: ended threads' nodes piled up) */
	uint32_t writer_walk[REC_WRITERS_MAX];
	struct rec_thread *reaped;           /* the flusher's: unlinked since reaped_snap */
	struct rec_thread *reaped_old;       /* the flusher's: unlinked before reaped_snap */
	uint32_t reaped_snap[REC_WRITERS_MAX];
	/* counters of closed threads, and of events from dead threads */
	uint64_t nthreads;
	uint64_t closed_events;
	uint64_t closed_bytes;
	uint64_t closed_lost[REC_LOST_KINDS];
	uint64_t lost_dead;                /* atomic add: no thread state to count in */
	uint64_t closed_unwritten;         /* rec_thread.unwritten of closed threads */
	int write_errno;                   /* the first failed write of the trace (0: none) */
	uint32_t finishing;                /* atomic: finish runs once */
	uint32_t finished;                 /* atomic, futex word: finish is done */
	uint32_t finish_progress;          /* bumped as finish goes: the watchdog of its waiters */
	pid_t finisher_tid;                /* the thread running finish */
	int fatal_sig;                     /* atomic: the flusher is to finish for this signal */
	pid_t fatal_tid;                   /* the thread the signal was delivered to */
	/* sink's session-wide state */
	void *sink_priv;
	char out_path[2048];               /* a sink writing one file for all threads names it
					    * here (open_session): ring headers keep it, for salvage */
	char sid[17];                      /* uftrace session id (16 hex digits) */
};

extern struct rec_session rec_sess;

/* The format name ring files carry (salvage replays a ring through the sink of that name):
 * the sink's name when the rings hold what it writes as it is, "<sink>/<encoding>" when it
 * transcodes them (salvage then leaves them alone rather than copy foreign records). */
const char *rec_ring_format(void);

/* Start recording for this process image; idempotent. Returns 0 when recording. */
int rec_session_start(const struct rec_frontend *fe);
/* Make sure the session is started (from a hook that may run before constructors). */
int rec_session_ensure(void);
/* Write everything out and close the trace (exit, _exit, fatal signal, before exec). A second
 * caller, while another thread finishes, waits until it is done (or makes no progress for
 * REC_FINISH_STALL_MS). */
void rec_session_finish(void);
/* A session started in a running process by `flightrec record -p` (libmcount/mcount_attach.c)
 * ends while the process goes on: finish, then end our threads (keeper, helper) and put back
 * the default action of the signals we took, as if we had never been there. */
void rec_session_detach(void);
/* After rec_session_detach: a new session in the same image (the next attach), every thread
 * starting afresh at its next hook (the tracer made each forget its state). 0 when it
 * records, -1 (and nothing changed) when the session had not been detached. */
int rec_session_restart(void);
/* finish is moving on (a chunk written, a thread closed): its waiters keep waiting. */
static inline void rec_finish_progress(void)
{
	__atomic_store_n(&rec_sess.finish_progress,
			 __atomic_load_n(&rec_sess.finish_progress, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
}

/* The program may close any descriptor or dup2 its own over one (daemons do): before the
 * runtime uses the session's descriptors (a chunk write, a thread's attach or close, finish),
 * this checks they still name what they named and reopens, by path, those that do not; it
 * never closes a number that is no longer ours. 0 when dirfd and ringdirfd are usable. */
int rec_session_fds_check(void);
/* The flusher, at its start: a descriptor table of its own (rec_fd_private_enter) holding
 * only the session's descriptors; -1 (the shared table kept) if it cannot have one. */
int rec_session_fds_private_enter(void);

/*
 * Run FN(ARG) where the runtime's descriptors are its own: on the helper, a thread of ours
 * whose descriptor table the program does not share (rec_session_fds_private_enter). A
 * program thread waits for it (every signal blocked meanwhile, so no handler runs on it and
 * none leaves the wait by longjmp): a descriptor the runtime opens, writes or closes then
 * never lives in the program's table, where the program may close it and reuse its number
 * between our check and our use. Called on a thread with a table of its own (the helper, the
 * flusher), or where there is no helper (it could not start), FN runs on the caller, in its
 * table. Returns what FN returned. The caller holds no lock FN or the flusher takes
 * (rec_session.lock, a sink's). Slow paths only. A hook file (REC_HOOK_FPSAFE) reaches it
 * through its fxsave thunk (rec_fpsafe.S).
 */
#ifdef REC_HOOK_FPSAFE
#define rec_fd_call rec_fd_call_fpsafe
#endif
int rec_fd_call(int (*fn)(void *), void *arg);

/* Ask the flusher to look at the rings now. */
void rec_flusher_wake(void);
/* Start the flusher thread if it is not running (slow path). */
void rec_flusher_ensure(void);
/* Stop and join the flusher (finish). */
void rec_flusher_stop(void);
/* A thread took a spare ring on its own (open_pending set, on the list): the helper names it
 * and opens it in the sink, beside the flusher, the thread not waiting. 0, or -1 when there
 * is no helper (the first drainer does it then). */
int rec_helper_open_late(void);
/* rec_session_detach: the keeper and the helper end (after finish, which used the helper) */
void rec_flusher_end_helpers(void);
/* Is TID one of the runtime's own threads (flusher, keeper, helper), which run only our code?
 * One started but not yet running is waited for (1 s at most) until it has said its tid. */
int rec_own_thread(pid_t tid);
/* A signal some process sent (the interrupted code can go on), not a fault or abort(). */
static inline int rec_sig_is_async(int sig)
{
	return sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT;
}
/* From a fatal signal's handler: hand finishing over to the flusher. 1: it took it; 0: no
 * flusher to take it (not running, stopping, or this is it); -1: it already has one. */
int rec_flusher_take_fatal(int sig);

/* Write out the FULL chunks of t in order; with `all`, also the current chunk's committed
 * bytes (finish, retire). Called by the flusher, finish and the drain policy. */
void rec_thread_drain(struct rec_thread *t, int all);
/* The producer's own drain (drain policy) and try (help policy), done by rec_fd_call. */
void rec_thread_drain_own(struct rec_thread *t);
int rec_thread_drain_own_try(struct rec_thread *t);
/* rec_thread_drain under t's drain lock; -1 (nothing done) when another thread holds it
 * (the flusher, and under the help policy the ring's producer). */
int rec_thread_drain_try(struct rec_thread *t, int all);
/* Finish, with the flusher stopped: wait (200 ms at most) while another thread still holds
 * t's drain lock under the help policy (it may be stopped for good, or be us, interrupted in
 * it: then finish drains anyway). */
void rec_thread_drain_settle(struct rec_thread *t);
/* Close a thread whose last chunk has been written: sink close, remove the ring file, and
 * with `unmap` (the thread is gone) unmap it. */
void rec_thread_close(struct rec_thread *t, int unmap);
/* An exited thread, under its drain lock: its chunks written (rec_thread_drain(t, 1)), then
 * closed and unmapped (rec_thread_close(t, 1)); -1 (nothing done) when another thread holds
 * the lock. In a drainer's own table the per-write descriptor of a sink that opens one per
 * write stays open from the first of these writes to the close: one open and one close per
 * thread ended, not one per chunk and one more for the close. */
int rec_thread_drain_close(struct rec_thread *t);
/* Fault in the chunk after the one being filled, if not done yet (flusher). */
void rec_thread_prefault_ahead(struct rec_thread *t);
/* Thread exit (TSD destructor): publish the current chunk and hand the thread over. */
void rec_thread_retire(struct rec_thread *t);

/* Totals of this session (live and closed threads). */
struct rec_totals {
	uint64_t threads, events, bytes, lost[REC_LOST_KINDS];
};
void rec_session_totals(struct rec_totals *tot);

/* A sink's per-thread spool NAME in <dir>/.flightrec (the formats that assemble their file at
 * finish: xray, tfile, chrome). rec_spool_create makes it, empty, and keeps no descriptor
 * (0; -1 after one warning "<WHO>cannot create ..."); rec_spool_open opens it for one
 * append (rec_sink.thread_fd: threads do not eat the program's RLIMIT_NOFILE). */
/* rec_room_ahead (rec_util.h) for records that must find room whatever the disk holds (the
 * LOST record that closes a thread's file): on a full disk, pages of live.<pid>'s 64 KiB
 * reserve are given back until the room is taken. 0, or -1 with errno. */
int rec_room_claim(int fd, size_t len);
int rec_spool_create(struct rec_session *s, const char *name, const char *who);
int rec_spool_open(struct rec_session *s, const char *name);

#pragma GCC visibility pop

#endif
