/*
 * rec_session: start, fork, finish and fatal-signal handling of a recording process image
 * (see rec_session.h).
 *
 * Invariants:
 *  - state moves NONE -> ACTIVE -> FINISHED, or NONE -> OFF; hooks record only in ACTIVE.
 *  - finish runs at most once per image (the `finishing` flag), from whichever of exit,
 *    _exit, a fatal signal or exec comes first; it stops the flusher before draining, and
 *    waits (bounded) for a producer writing its own chunks under the help policy, so only
 *    one drainer touches a thread's chunks.
 *  - the registry lock is held across fork (atfork prepare/parent/child), so a child never
 *    inherits it locked by a thread that does not exist there.
 */
#include "librecord/rec_session.h"
#include "librecord/rec_encoding.h"
#include "librecord/rec_ringpool.h"
#include "librecord/rec_stats.h"
#include "librecord/rec_util.h"
#include "librecord/rec_version.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

struct rec_session rec_sess = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.dirfd = -1,
	.ringdirfd = -1,
	.livefd = -1,
	.keep_fd = -1,
};

static pthread_mutex_t rec_start_lock = PTHREAD_MUTEX_INITIALIZER;

/* Why start-up failed: said once, in the single warning a failed start prints. */
static char rec_why[512];

static void rec_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void rec_fail(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(rec_why, sizeof(rec_why), fmt, ap);
	va_end(ap);
	n = strlen(rec_why);
	if (n > 0 && rec_why[n - 1] == ':')
		rec_snprintf(rec_why + n, sizeof(rec_why) - n, " %s", strerror(saved));
}

struct rec_thread *rec_thread_fork_child(struct rec_thread *old);

static const int rec_fatal_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT,
					 SIGTERM, SIGINT, SIGHUP, SIGQUIT };

static void rec_session_finish_wait(int handed_off);
static void rec_live_open(void);

/*
 * A fatal signal. Finishing takes locks and allocates memory, and the code the signal
 * interrupted may hold one of them (a metadata or registry lock of ours, malloc's arena):
 * finishing right here could wait for itself forever, and the program would never die. So
 * the flusher, which the signal did not interrupt, finishes: after a signal someone sent the
 * handler returns at once, the interrupted code goes on and lets go of its locks, and the
 * flusher, once done, kills the process with the same signal (rec_flusher.c); after a fault
 * or abort() the code cannot go on: the handler waits for the flusher as long as it makes
 * progress, then dies (a finish stuck behind this thread's locks leaves the rings for
 * `flightrec salvage`). A second fatal signal meanwhile (`timeout` and job managers send
 * SIGTERM to the process and to its group: two) waits likewise, then dies. Without a flusher
 * (not started, or the fault is in it) finish runs here, as it must.
 */
static void rec_fatal_handler(int sig)
{
	int saved = errno;
	int handoff = rec_flusher_take_fatal(sig);

	if (handoff > 0 && rec_sig_is_async(sig)) {
		errno = saved;
		return;
	}
	if (handoff == 0)
		rec_session_finish();
	else /* the flusher has it (a fault, or a second signal): wait while it progresses */
		rec_session_finish_wait(1);
	signal(sig, SIG_DFL);
	/* a fault re-executes and dies by its own signal; an async one is raised again */
	raise(sig);
	errno = saved;
}

static void rec_install_signal_handlers(void)
{
	for (size_t i = 0; i < sizeof(rec_fatal_signals) / sizeof(rec_fatal_signals[0]); i++) {
		struct sigaction old, sa;
		if (sigaction(rec_fatal_signals[i], NULL, &old) < 0)
			continue;
		/* never take a signal away from the program */
		if (old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO))
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = rec_fatal_handler;
		sigemptyset(&sa.sa_mask);
		sa.sa_flags = SA_RESTART;
		sigaction(rec_fatal_signals[i], &sa, NULL);
	}
}

static void rec_atfork_prepare(void)
{
	if (rec_sess.state == REC_SESSION_ACTIVE)
		pthread_mutex_lock(&rec_sess.lock);
}

static void rec_atfork_parent(void)
{
	if (rec_sess.state == REC_SESSION_ACTIVE)
		pthread_mutex_unlock(&rec_sess.lock);
}

static void rec_atfork_child(void)
{
	pid_t ppid = rec_sess.pid;
	struct rec_thread *old = rec_self;

	if (rec_sess.state != REC_SESSION_ACTIVE)
		return;
	pthread_mutex_init(&rec_sess.lock, NULL);
	rec_sess.pid = getpid();
	rec_sess.ppid = ppid;
	rec_sess.flusher_started = 0;
	rec_sess.keeper_started = 0; /* neither thread was copied into the child */
	rec_sess.keeper_tid = 0;
	rec_sess.flusher_tid = 0;
	rec_sess.quit = 0;
	rec_sess.wake = 0;
	/* the parent's asks are the parent's, and its helper was not copied */
	rec_sess.fd_reqs = NULL;
	rec_sess.helper_started = 0;
	rec_sess.helper_tid = 0;
	rec_sess.helper_wake = 0;
	rec_sess.flusher_sleeping = 0;
	/* nor were the writers; the parent's unlinked nodes are left (no walker to wait for,
	 * but freeing them is the parent's business, and they are few) */
	rec_sess.writers_started = rec_sess.writers_sleeping = 0;
	memset(rec_sess.writer_tid, 0, sizeof(rec_sess.writer_tid));
	memset(rec_sess.writer_walk, 0, sizeof(rec_sess.writer_walk));
	rec_sess.reaped = rec_sess.reaped_old = NULL;
	rec_sess.fatal_sig = 0; /* a hand-off pending in the parent is the parent's */
	rec_sess.finishing = rec_sess.finished = 0;
	rec_sess.finisher_tid = 0;
	rec_sess.closed_events = rec_sess.closed_bytes = 0;
	rec_sess.closed_unwritten = 0;
	rec_stats_fork_child(); /* stats lines a full disk kept back are the parent's */
	rec_sess.write_errno = 0;
	memset(rec_sess.closed_lost, 0, sizeof(rec_sess.closed_lost));
	rec_sess.lost_dead = 0;
	rec_sess.start_ns = rec_clock_ns();
	/* the parent's live.<ppid> stays locked by the parent; the child locks its own */
	if (rec_sess.livefd >= 0 && rec_fd_is(rec_sess.livefd, &rec_sess.live_id))
		close(rec_sess.livefd);
	rec_sess.livefd = -1;
	rec_sess.fds_busy = 0;
	rec_session_fds_check();
	if (rec_sess.ringdirfd >= 0)
		rec_live_open();
	if (rec_sess.sink->fork_child)
		rec_sess.sink->fork_child(&rec_sess, ppid);
	rec_thread_fork_child(old);
}

#define REC_LIVE_RESERVE (64u << 10)

/* live.<pid> for this process image, locked (see rec_session.livefd). Without it salvage
 * could take a live process's rings for a dead one's: said once, recording goes on. */
static void rec_live_open(void)
{
	char name[32];
	int fd;

	rec_snprintf(name, sizeof(name), "live.%d", (int)rec_sess.pid);
	fd = rec_open_write_kept(rec_sess.ringdirfd, name, 0);
	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		fd = -1;
	}
	/* its blocks are the room finish needs on a full disk (the last LOST records, the
	 * format's metadata, the stats): given back just before finish writes them */
	if (fd >= 0)
		(void)posix_fallocate(fd, 0, REC_LIVE_RESERVE);
	rec_sess.reserve_taken = 0;
	if (fd < 0 || rec_fd_id_get(fd, &rec_sess.live_id) < 0) {
		rec_warn("cannot lock %s/.flightrec/%s (a salvage meanwhile would not know this "
			 "process is alive):", rec_sess.dir, name);
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	rec_sess.livefd = fd;
}

int rec_room_claim(int fd, size_t len)
{
	const uint32_t pages = REC_LIVE_RESERVE / 4096;

	while (rec_room_ahead(fd, len) < 0) {
		int err = errno;
		uint32_t page = __atomic_fetch_add(&rec_sess.reserve_taken, 1, __ATOMIC_RELAXED);

		/* a page of live.<pid>'s reserve given back, then taken again by fd: another
		 * writer may take it first, then the next page is tried */
		if (err != ENOSPC || page >= pages || rec_sess.livefd < 0 ||
		    !rec_fd_is(rec_sess.livefd, &rec_sess.live_id) ||
		    fallocate(rec_sess.livefd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      (off_t)(pages - 1 - page) * 4096, 4096) < 0) {
			errno = err;
			return -1;
		}
	}
	return 0;
}

/* Forget live.<pid> (finish): remove it, close it if it is still ours. */
static void rec_live_close(void)
{
	char name[32];

	if (rec_sess.livefd < 0)
		return;
	rec_snprintf(name, sizeof(name), "live.%d", (int)rec_sess.pid);
	if (rec_sess.ringdirfd >= 0)
		unlinkat(rec_sess.ringdirfd, name, 0);
	if (rec_fd_is(rec_sess.livefd, &rec_sess.live_id))
		close(rec_sess.livefd);
	rec_sess.livefd = -1;
}

/* open DIR (absolute) and its .flightrec again, and only if they are the same directories as
 * at start (a directory removed and made anew is not ours to write into) */
static int rec_reopen_dirs(int *dirfd, int *ringdirfd)
{
	int d = open(rec_sess.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r = -1;

	d = rec_fd_move_checked(d, &rec_sess.dir_id);
	if (d >= 0) {
		r = rec_fd_move_checked(openat(d, ".flightrec", O_RDONLY | O_DIRECTORY |
					       O_NOFOLLOW | O_CLOEXEC), &rec_sess.ringdir_id);
		if (r >= 0) {
			*dirfd = d;
			*ringdirfd = r;
			return 0;
		}
		close(d);
	}
	return -1;
}

/* live.<pid> on the flusher's own table, at the session's number. The copy of the locked
 * descriptor is kept: the lock then lasts as long as this table (the process), whatever the
 * program does with its own copy. Where the program had taken the number before the copy
 * was made, the file is opened anew and locked again (the program's close let go of it). */
static void rec_live_private(void)
{
	int l = __atomic_load_n(&rec_sess.livefd, __ATOMIC_ACQUIRE), fd;
	char name[32];
	struct stat st;

	if (l < 0 || rec_sess.ringdirfd < 0 || rec_fd_is(l, &rec_sess.live_id))
		return;
	rec_snprintf(name, sizeof(name), "live.%d", (int)rec_sess.pid);
	fd = openat(rec_sess.ringdirfd, name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == rec_sess.live_id.dev &&
	    st.st_ino == rec_sess.live_id.ino) {
		(void)flock(fd, LOCK_EX | LOCK_NB);
		if (fd != l) {
			dup3(fd, l, O_CLOEXEC);
			close(fd);
		}
	} else {
		if (fd >= 0)
			close(fd);
		close(l); /* this table's copy, whatever it is */
	}
}

/* rec_session_fds_check on the flusher's own table (rec_fd_private): the numbers are the
 * session's (shared with the program's threads, which may move them, rec_session_fds_check);
 * here each names what it must, put there by path when it does not. Nothing here can be the
 * program's, so nothing is raced. */
static __thread int rec_fds_private_ok[3] __attribute__((tls_model("initial-exec")));

static int rec_session_fds_private(void)
{
	int d = __atomic_load_n(&rec_sess.dirfd, __ATOMIC_ACQUIRE);
	int r = __atomic_load_n(&rec_sess.ringdirfd, __ATOMIC_ACQUIRE);
	int l = __atomic_load_n(&rec_sess.livefd, __ATOMIC_ACQUIRE);
	int *ok = rec_fds_private_ok;
	int nd, nr;

	if (d < 0 || r < 0 || d == r)
		return -1;
	/* The same numbers as this table's last check found right: nothing but this thread
	 * changes this table, so they still are (three fstat per chunk written and per thread
	 * start saved). The numbers move when a program thread reopened the directories
	 * (rec_session_fds_check): then they are checked here again. Stored +1: TLS starts 0. */
	if (ok[0] == d + 1 && ok[1] == r + 1 && ok[2] == l + 1)
		return 0;
	ok[0] = ok[1] = ok[2] = 0;
	if (rec_fd_is(d, &rec_sess.dir_id) && rec_fd_is(r, &rec_sess.ringdir_id)) {
		if (l >= 0 && l != d && l != r && !rec_fd_is(l, &rec_sess.live_id))
			rec_live_private();
		if (l < 0 || l == d || l == r || rec_fd_is(l, &rec_sess.live_id))
			ok[2] = l + 1;
		else
			return 0; /* no live.<pid> in this table: asked again next time */
		ok[0] = d + 1;
		ok[1] = r + 1;
		return 0;
	}
	if (rec_reopen_dirs(&nd, &nr) < 0)
		return -1;
	/* onto the session's numbers; the one whose source is the other's target first */
	if (nr == d) {
		if (nr != r)
			dup3(nr, r, O_CLOEXEC), close(nr);
		if (nd != d)
			dup3(nd, d, O_CLOEXEC), close(nd);
	} else {
		if (nd != d)
			dup3(nd, d, O_CLOEXEC), close(nd);
		if (nr != r)
			dup3(nr, r, O_CLOEXEC), close(nr);
	}
	return rec_fd_is(d, &rec_sess.dir_id) && rec_fd_is(r, &rec_sess.ringdir_id) ? 0 : -1;
}

int rec_session_fds_private_enter(void)
{
	int keep[4] = { rec_sess.dirfd, rec_sess.ringdirfd, rec_sess.livefd, rec_sess.keep_fd };

	if (rec_fd_private_enter(keep, 4) < 0)
		return -1;
	rec_session_fds_private();
	rec_live_private();
	return 0;
}

int rec_session_fds_check(void)
{
	int dir_ok, ring_ok, live_ok, ret = 0;

	if (rec_fd_private)
		return rec_session_fds_private();
	if (rec_sess.dirfd < 0 || rec_sess.ringdirfd < 0)
		return -1;
	dir_ok = rec_fd_is(rec_sess.dirfd, &rec_sess.dir_id);
	ring_ok = rec_fd_is(rec_sess.ringdirfd, &rec_sess.ringdir_id);
	live_ok = rec_sess.livefd < 0 || rec_fd_is(rec_sess.livefd, &rec_sess.live_id);
	if (dir_ok && ring_ok && live_ok)
		return 0;
	/* a vfork child (rec_thread.h) shares rec_sess with its parent but has a table of its
	 * own: numbers reopened here would be wrong in the parent's, and a dup onto ours would
	 * take the child's own descriptors away. Checked only: the caller writes nothing then */
	if (rec_vfork_in_child())
		return dir_ok && ring_ok ? 0 : -1;
	/* one thread reopens; another that finds it busy does without (its write fails and is
	 * counted), it never waits: finish may run in a fatal signal's handler */
	if (__atomic_exchange_n(&rec_sess.fds_busy, 1, __ATOMIC_ACQUIRE))
		return -1;
	if (!dir_ok || !ring_ok) {
		int d, r;
		/* the old numbers are the program's now: never closed, only forgotten */
		if (rec_reopen_dirs(&d, &r) == 0) {
			rec_debug("the program closed or replaced the output directory's "
				  "descriptors (%d, %d): reopened as %d, %d", rec_sess.dirfd,
				  rec_sess.ringdirfd, d, r);
			__atomic_store_n(&rec_sess.dirfd, d, __ATOMIC_RELEASE);
			__atomic_store_n(&rec_sess.ringdirfd, r, __ATOMIC_RELEASE);
		} else {
			ret = -1;
		}
	}
	if (!live_ok && ret == 0) {
		rec_sess.livefd = -1; /* closed by the program: the lock went with it */
		rec_live_open();
	}
	__atomic_store_n(&rec_sess.fds_busy, 0, __ATOMIC_RELEASE);
	return ret;
}

static int rec_open_dirs(void)
{
	char cwd[REC_PATH_MAX];

	struct stat st;

	if (rec_mkdir_p(rec_sess.cfg.dir) < 0) {
		if (lstat(rec_sess.cfg.dir, &st) == 0 && S_ISLNK(st.st_mode) &&
		    !rec_link_trusted(&st))
			rec_fail("output directory %s is a symbolic link owned by uid %u, neither "
				 "yours nor root's: not followed",
				 rec_sess.cfg.dir, (unsigned)st.st_uid);
		else
			rec_fail("cannot create output directory %s:", rec_sess.cfg.dir);
		return -1;
	}
	/* a symbolic link given as the directory is followed (rec_mkdir_p checked who made it);
	 * everything below it is opened relative to dirfd with O_NOFOLLOW */
	rec_sess.dirfd = rec_fd_above_stdio(open(rec_sess.cfg.dir, O_RDONLY | O_DIRECTORY |
								O_CLOEXEC));
	if (rec_sess.dirfd < 0 || rec_fd_id_get(rec_sess.dirfd, &rec_sess.dir_id) < 0) {
		rec_fail("cannot open output directory %s:", rec_sess.cfg.dir);
		return -1;
	}
	if (rec_sess.cfg.dir[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		rec_snprintf(rec_sess.dir, sizeof(rec_sess.dir), "%s", rec_sess.cfg.dir);
	else
		rec_snprintf(rec_sess.dir, sizeof(rec_sess.dir), "%s/%s", cwd, rec_sess.cfg.dir);
	if (mkdirat(rec_sess.dirfd, ".flightrec", 0777) < 0 && errno != EEXIST) {
		rec_fail("cannot create %s/.flightrec:", rec_sess.dir);
		return -1;
	}
	rec_sess.ringdirfd = rec_fd_above_stdio(openat(rec_sess.dirfd, ".flightrec", O_RDONLY |
						       O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
	if (rec_sess.ringdirfd < 0 || rec_fd_id_get(rec_sess.ringdirfd, &rec_sess.ringdir_id) < 0) {
		rec_fail("cannot open %s/.flightrec:", rec_sess.dir);
		return -1;
	}
	rec_live_open();
	return 0;
}

const char *rec_ring_format(void)
{
	static char name[16];
	static const char *const enc[] = { "none", "uftrace", "fdr", "tp" };
	int e = rec_sess.fe ? rec_sess.fe->encoding : 0;

	if (rec_sess.sink->encoding == e || rec_sess.sink->encoding == REC_ENC_TP ||
	    e < 0 || e > REC_ENC_TP)
		return rec_sess.sink->name;
	rec_snprintf(name, sizeof(name), "%s/%s", rec_sess.sink->name, enc[e]);
	return name;
}

/* FLIGHTREC_FORMAT (or FLIGHTREC_TRACEPOINTS alone: tfile) among the front end's formats */
static void rec_pick_sink(const struct rec_frontend *fe)
{
	const char *want = rec_sess.cfg.format;

	if (!want[0] && rec_sess.cfg.tracepoints[0])
		want = "tfile";
	if (!want[0] || !strcmp(want, fe->sink->name))
		return;
	for (const struct rec_sink *const *f = fe->formats; f && *f; f++) {
		if (!strcmp((*f)->name, want)) {
			const char *d = rec_getenv("FLIGHTREC_DIR"), *fd = NULL;
			rec_sess.sink = *f;
			if (fe->defaults.dir_env)
				fd = rec_getenv(fe->defaults.dir_env);
			if ((*f)->dir && (!d || !*d) && (!fd || !*fd))
				rec_snprintf(rec_sess.cfg.dir, sizeof(rec_sess.cfg.dir), "%s", (*f)->dir);
			return;
		}
	}
	rec_warn("%s: FLIGHTREC_FORMAT=%s is not a format it writes, writing %s", fe->name, want,
		 fe->sink->name);
}

static int rec_session_start_locked(const struct rec_frontend *fe)
{
	ssize_t n;

	rec_sess.fe = fe;
	rec_sess.sink = fe->sink;
	if (getauxval(AT_SECURE)) {
		/* setuid/setgid: never write files on behalf of a privileged image */
		rec_sess.state = REC_SESSION_OFF;
		return -1;
	}
	rec_config_parse(&rec_sess.cfg, &fe->defaults);
	rec_pick_sink(fe);
	if (fe->configured)
		fe->configured(&rec_sess.cfg);
	rec_sess.pid = getpid();
	rec_sess.ppid = getppid();
	/* thread-self: /proc/self is the main thread's, which has no exe once it went through
	 * pthread_exit (a process attached to then) */
	n = readlink("/proc/thread-self/exe", rec_sess.exe, sizeof(rec_sess.exe) - 1);
	if (n <= 0)
		n = readlink("/proc/self/exe", rec_sess.exe, sizeof(rec_sess.exe) - 1);
	rec_sess.exe[n > 0 ? n : 0] = '\0';
	if (fe->check && fe->check(rec_why, sizeof(rec_why)) < 0)
		goto off;
	rec_clock_calibrate();
	rec_sess.start_ns = rec_clock_ns();
	if (rec_open_dirs() < 0)
		goto off;
	if (rec_sess.sink->open_session && rec_sess.sink->open_session(&rec_sess) < 0) {
		rec_fail("cannot write the %s trace's metadata in %s", rec_sess.sink->name,
			 rec_sess.dir);
		goto off;
	}
	pthread_atfork(rec_atfork_prepare, rec_atfork_parent, rec_atfork_child);
	rec_install_signal_handlers();
	if (fe->started)
		fe->started();
	__atomic_store_n(&rec_sess.state, REC_SESSION_ACTIVE, __ATOMIC_RELEASE);
	rec_debug("flightrec %s, %s: recording %s into %s (%zu x %u bytes per thread)",
		  FLIGHTREC_VERSION, fe->name, rec_sess.exe, rec_sess.dir,
		  (size_t)rec_sess.cfg.chunk_count, (unsigned)rec_sess.cfg.chunk_size);
	return 0;
off:
	rec_warn("%s: recording is off for %s: %s", fe->name, rec_sess.exe,
		 rec_why[0] ? rec_why : "set-up failed");
	if (rec_sess.dirfd >= 0)
		close(rec_sess.dirfd);
	if (rec_sess.ringdirfd >= 0)
		close(rec_sess.ringdirfd);
	rec_sess.dirfd = rec_sess.ringdirfd = -1;
	rec_live_close();
	rec_sess.state = REC_SESSION_OFF;
	return -1;
}

int rec_session_start(const struct rec_frontend *fe)
{
	int ret;

	if (__atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) != REC_SESSION_NONE)
		return rec_sess.state == REC_SESSION_ACTIVE ? 0 : -1;
	/* this thread is starting it already, and a call of ours reached a hook (the program's
	 * malloc, say): waiting for the lock would wait for ourselves; that hook records nothing */
	if (rec_in_runtime)
		return -1;
	pthread_mutex_lock(&rec_start_lock);
	rec_in_runtime = 1;
	if (rec_sess.state == REC_SESSION_NONE)
		ret = rec_session_start_locked(fe);
	else
		ret = rec_sess.state == REC_SESSION_ACTIVE ? 0 : -1;
	rec_in_runtime = 0;
	pthread_mutex_unlock(&rec_start_lock);
	return ret;
}

int rec_session_ensure(void)
{
	int st = __atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE);
	if (st == REC_SESSION_ACTIVE)
		return 0;
	if (st != REC_SESSION_NONE)
		return -1;
	return rec_session_start(rec_frontend_self);
}

void rec_session_totals(struct rec_totals *tot)
{
	memset(tot, 0, sizeof(*tot));
	tot->threads = rec_sess.nthreads;
	tot->events = rec_sess.closed_events;
	tot->bytes = rec_sess.closed_bytes;
	for (int k = 0; k < REC_LOST_KINDS; k++)
		tot->lost[k] = rec_sess.closed_lost[k];
	tot->lost[REC_LOST_DEAD] += __atomic_load_n(&rec_sess.lost_dead, __ATOMIC_RELAXED);
	for (struct rec_thread *t = rec_sess.threads; t; t = t->next) {
		tot->events += t->events - t->overwritten - t->unwritten;
		tot->bytes += t->bytes;
		for (int k = 0; k < REC_LOST_KINDS; k++)
			tot->lost[k] += t->lost[k];
		tot->lost[REC_LOST_FULL] += t->unwritten;
	}
}

#define REC_FINISH_STALL_MS 3000

/* Another thread is finishing (or, handed_off, the flusher is about to): wait until it is
 * done, or until it has made no progress for REC_FINISH_STALL_MS (it may wait for a lock the
 * caller holds, if the caller is a fatal signal's handler). Returns at once when this thread
 * is the finisher. */
static void rec_session_finish_wait(int handed_off)
{
	struct timespec step = { 0, 100 * 1000000L };
	uint32_t seen = __atomic_load_n(&rec_sess.finish_progress, __ATOMIC_RELAXED);
	int idle = 0;

	if ((!handed_off && !__atomic_load_n(&rec_sess.finishing, __ATOMIC_ACQUIRE)) ||
	    __atomic_load_n(&rec_sess.finisher_tid, __ATOMIC_ACQUIRE) == rec_gettid())
		return;
	while (!__atomic_load_n(&rec_sess.finished, __ATOMIC_ACQUIRE) &&
	       idle < REC_FINISH_STALL_MS / 100) {
		rec_futex(&rec_sess.finished, FUTEX_WAIT_PRIVATE, 0, &step);
		uint32_t now = __atomic_load_n(&rec_sess.finish_progress, __ATOMIC_RELAXED);
		idle = now == seen ? idle + 1 : 0;
		seen = now;
	}
}

static int rec_any_entry(void *arg, const char *name)
{
	(void)arg;
	(void)name;
	return 1;
}

/* finish: when the trace could not be written and the rings could not be removed either (a
 * read-only file system), the count (the stats file cannot say it) and that salvage completes
 * the trace from the rings once the directory is writable again. */
static void rec_session_tell_unwritten(void)
{
	uint64_t n = rec_sess.closed_unwritten;
	int err = rec_sess.write_errno, kept;
	char prefix[32];
	size_t plen;

	if (!err)
		return;
	for (struct rec_thread *t = rec_sess.threads; t; t = t->next)
		n += t->unwritten;
	plen = rec_snprintf(prefix, sizeof(prefix), "ring.%d.", (int)rec_sess.pid);
	kept = rec_dir_each(rec_sess.ringdirfd, prefix, plen, rec_any_entry, NULL) > 0;
	/* rings gone: the first failure was said, and the stats file has the count */
	if (!kept)
		return;
	rec_warn("%s: %s while recording (%s): %llu events could not be written, counted lost; "
		 "the ring files are kept in .flightrec: once the directory is writable, "
		 "`flightrec salvage` on it completes the trace", rec_sess.dir,
		 err == EROFS ? "the file system went read-only" : "the trace could not be written",
		 strerror(err), (unsigned long long)n);
}

/* finish's writing, on the helper when there is one (rec_fd_call: the program's other
 * threads may close or reuse any number meanwhile, it never sees them), else on the caller */
static int rec_session_finish_fds(void *arg)
{
	struct rec_thread *t, *self;
	uint8_t in_rt;

	(void)arg;
	rec_flusher_stop(); /* stopped and joined: nothing else drains now */
	rec_session_fds_check();
	/* the spare rings (the flusher stopped): their disk space is given back before the
	 * last chunks, the metadata and a log assembled at the end need it */
	rec_ringpool_fini();

	for (t = rec_sess.threads; t; t = t->next) {
		if (t->closed)
			continue;
		/* help policy: another thread may be writing its own chunks */
		rec_thread_drain_settle(t);
		rec_thread_drain(t, 1);
		rec_finish_progress();
	}
	/* the room live.<pid> kept, for what is left to write: the LOST records of what could
	 * not be written (disk full), the format's metadata and the stats */
	if (rec_sess.livefd >= 0 && rec_fd_is(rec_sess.livefd, &rec_sess.live_id))
		(void)!ftruncate(rec_sess.livefd, 0);
	for (t = rec_sess.threads; t; t = t->next) {
		if (t->closed)
			continue;
		/* threads still running (this one included) keep their mapping */
		rec_thread_close(t, 0);
		rec_finish_progress();
	}
	/* the metadata writers call libc, which may call the program's malloc: its hooks on
	 * this thread are ours, not the program's, and are not recorded (rec_thread.h); the
	 * rings are drained already, so a record there would be counted and never written */
	self = rec_self;
	in_rt = rec_in_runtime;
	rec_in_runtime = 1;
	if ((uintptr_t)self > REC_THREAD_SENTINEL_MAX)
		rec_self = REC_THREAD_OFF;
	if (rec_sess.sink->finish)
		rec_sess.sink->finish(&rec_sess);
	rec_stats_finish();
	rec_session_tell_unwritten();
	/* no ring of this image is left; before `finished`, which may remove the ring
	 * directory (ovni-rt's OVNI_TMPDIR) */
	rec_live_close();
	if (rec_sess.sink->finished)
		rec_sess.sink->finished(&rec_sess);
	rec_self = self;
	rec_in_runtime = in_rt;
	return 0;
}

void rec_session_finish(void)
{
	if (__atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) != REC_SESSION_ACTIVE ||
	    __atomic_exchange_n(&rec_sess.finishing, 1, __ATOMIC_ACQ_REL)) {
		rec_session_finish_wait(0);
		return;
	}
	__atomic_store_n(&rec_sess.finisher_tid, rec_gettid(), __ATOMIC_RELEASE);
	/* from here on, slow paths drop (and count) instead of taking chunks */
	__atomic_store_n(&rec_sess.state, REC_SESSION_FINISHED, __ATOMIC_RELEASE);
	rec_fd_call(rec_session_finish_fds, NULL);
	/* release: what finish wrote is done before a waiter goes on (to _exit, or to die) */
	__atomic_store_n(&rec_sess.finished, 1, __ATOMIC_RELEASE);
	rec_futex(&rec_sess.finished, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL);
}

void rec_session_detach(void)
{
	/* the session's descriptors as the program's table has them (the helper, which closes
	 * its copies at finish, unshared a copy of that table) */
	int fds[3] = { rec_sess.dirfd, rec_sess.ringdirfd, rec_sess.livefd };
	struct rec_fd_id ids[3] = { rec_sess.dir_id, rec_sess.ringdir_id, rec_sess.live_id };

	rec_session_finish();
	rec_flusher_end_helpers();
	/* only where the number still names our file: the program may have reused it */
	for (int i = 0; i < 3; i++)
		if (fds[i] >= 0 && rec_fd_is(fds[i], &ids[i]))
			close(fds[i]);
	rec_sess.dirfd = rec_sess.ringdirfd = rec_sess.livefd = -1;
	/* only the handlers that are still ours: one the program set since is its own */
	for (size_t i = 0; i < sizeof(rec_fatal_signals) / sizeof(rec_fatal_signals[0]); i++) {
		struct sigaction old;
		if (sigaction(rec_fatal_signals[i], NULL, &old) == 0 &&
		    !(old.sa_flags & SA_SIGINFO) && old.sa_handler == rec_fatal_handler)
			signal(rec_fatal_signals[i], SIG_DFL);
	}
}

int rec_session_restart(void)
{
	if (__atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) != REC_SESSION_FINISHED ||
	    !__atomic_load_n(&rec_sess.finished, __ATOMIC_ACQUIRE) || rec_sess.flusher_started ||
	    rec_sess.keeper_started)
		return -1;
	/* the threads of the ended session keep their states (mapped, never freed: a thread may
	 * still hold one), off the registry; everything else as the static initialiser has it */
	memset(&rec_sess, 0, sizeof(rec_sess));
	pthread_mutex_init(&rec_sess.lock, NULL);
	rec_sess.dirfd = rec_sess.ringdirfd = rec_sess.livefd = rec_sess.keep_fd = -1;
	rec_ringpool_fork_child(); /* the pool finish turned off takes rings again */
	return rec_session_start(rec_frontend_self);
}

int rec_spool_create(struct rec_session *s, const char *name, const char *who)
{
	int fd = rec_openat_kept(s->ringdirfd, name,
				 O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0) {
		rec_warn("%scannot create %s/.flightrec/%s:", who, s->dir, name);
		return -1;
	}
	close(fd);
	return 0;
}

int rec_spool_open(struct rec_session *s, const char *name)
{
	return rec_openat_kept(s->ringdirfd, name, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
			       0600);
}
