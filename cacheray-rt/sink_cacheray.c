/*
 * sink_cacheray: the Cacheray trace writer: ONE file for the whole recording (no header, as
 * Cacheray's tools expect), the chunks of every thread appended to it whole.
 *
 * Each chunk holds whole records of one thread, and is appended with one write() on an
 * O_APPEND descriptor, so the file stays framed and the records of different threads
 * interleave only at chunk boundaries, in any number of threads and processes. Losses are not
 * written into the trace (the format has no record for them): they are in the runtime's stats
 * file (.flightrec/stats.<pid>.<ns>) that `flightrec stats` reads.
 *
 * The append lock (append_lock/append_unlock, rec_sink.h): the writers of a process (the
 * flusher, finish, or every thread under the drain policy) take a mutex, and the processes
 * that share the file (fork children, exec'ed images) a POSIX write lock on all of it (a
 * process's, released by the kernel when it dies). Under it the file's end is where the next
 * chunk goes: librecord records that offset and the length in the thread's ring header before
 * the write and the write's end after it, so salvage knows exactly which bytes a write a
 * SIGKILL cut short left (rec_salvage_cacheray.c), wherever other threads appended meanwhile.
 * Cost: a mutex, two fcntl and an lseek per chunk written, nothing per event. A thread that
 * holds it and re-enters (finish from a fatal signal handler that interrupted its write) goes
 * on without waiting for itself.
 *
 * Who starts a new trace: the first process of a recording. Every process holding the trace open
 * keeps a shared flock() on it; a process that opens a non-empty trace and can take the lock
 * exclusively is alone, and replaces it with a new, empty file (Cacheray's fopen "w");
 * otherwise it appends. A fork child shares its
 * parent's descriptor; the exec wrappers let the descriptor (and its lock) live through exec,
 * and the new image closes that inherited copy once it holds its own, so an image that
 * replaces itself appends to what the previous one wrote.
 */
#include "cacheray-rt/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static int cr_fd = -1;
static int cr_regular;  /* cr_fd is a regular file: appends have an offset */

/* the append lock: the mutex, its holder (tid) and how deep it re-entered */
static pthread_mutex_t cr_append_mu = PTHREAD_MUTEX_INITIALIZER;
static pid_t cr_append_owner;
static unsigned cr_append_depth;
static int cr_append_plock; /* the POSIX lock is held */

int cr_trace_fd(void)
{
	return cr_fd;
}

/* Close copies of the trace descriptor that a previous image left us (exec). */
static void cr_close_inherited(int fd)
{
	struct stat me, st;
	struct dirent *de;
	DIR *d;

	if (fstat(fd, &me) < 0 || !(d = opendir("/proc/self/fd")))
		return;
	while ((de = readdir(d))) {
		char *end;
		long n = strtol(de->d_name, &end, 10);
		if (*end || end == de->d_name || n == fd || n == dirfd(d))
			continue;
		if (fstat((int)n, &st) == 0 && st.st_dev == me.st_dev && st.st_ino == me.st_ino)
			close((int)n);
	}
	closedir(d);
}

/*
 * An old trace is replaced by a new file rather than truncated: ext4 (auto_da_alloc) makes the
 * close of a file that was truncated to 0 and rewritten allocate and start writing back all of
 * it, which at the end of a recording is the process's exit waiting ~0.3 s per GB.
 */
static int cr_replace(const char *dir, const char *base, int old)
{
	char tmp[64];
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd = -1;

	if (dfd < 0)
		goto fail;
	rec_snprintf(tmp, sizeof(tmp), ".cacheray.%d.tmp", (int)getpid());
	unlinkat(dfd, tmp, 0);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
		    0666);
	if (fd < 0 || renameat(dfd, tmp, dfd, base) < 0) {
		if (fd >= 0) {
			unlinkat(dfd, tmp, 0);
			close(fd);
		}
		goto fail;
	}
	close(dfd);
	close(old);
	return fd;
fail:
	/* a directory we may not create files in: empty the old trace instead */
	if (dfd >= 0)
		close(dfd);
	if (ftruncate(old, 0) == 0)
		return old;
	rec_warn("cacheray-rt: cannot replace or empty %s:", cr_trace_path);
	close(old);
	return -1;
}

static int cacheray_open_session(struct rec_session *s)
{
	char dir[REC_PATH_MAX];
	const char *slash = strrchr(cr_trace_path, '/'), *base;
	struct stat st;
	int dfd, fd;

	if (!slash) {
		rec_warn("cacheray-rt: %s is not an absolute path", cr_trace_path);
		return -1;
	}
	base = slash + 1;
	rec_snprintf(dir, sizeof(dir), "%.*s",
		     (int)(slash == cr_trace_path ? 1 : slash - cr_trace_path), cr_trace_path);
	if (rec_mkdir_p(dir) < 0 || (dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		rec_warn("cacheray-rt: cannot create the directory of %s:", cr_trace_path);
		return -1;
	}
	fd = rec_open_write(dfd, base, O_APPEND);
	close(dfd);
	if (fd < 0) {
		rec_warn("cacheray-rt: cannot open %s:", cr_trace_path);
		return -1;
	}
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    (flock(fd, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK)) {
		/* alone with an old trace: start a new file (a device such as /dev/null is left as
		 * it is) */
		fd = cr_replace(dir, base, fd);
		if (fd < 0)
			return -1;
	}
	/* a shared lock for as long as this process (or what it execs) may append */
	flock(fd, LOCK_SH);
	/* before any append lock is taken: closing a copy drops the process's POSIX locks */
	cr_close_inherited(fd);
	cr_regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	cr_fd = fd;
	/* in every ring's header: salvage appends the chunks of a killed process there */
	rec_snprintf(s->out_path, sizeof(s->out_path), "%s", cr_trace_path);
	rec_debug("cacheray-rt: writing %s", cr_trace_path);
	return 0;
}

static int cacheray_write_chunk(struct rec_session *s, struct rec_thread *t, const uint8_t *data,
				size_t len, uint64_t lost_before)
{
	(void)s;
	(void)t;
	(void)lost_before; /* no loss record in the format: the stats file has the counts */
	if (cr_fd < 0 || len == 0)
		return cr_fd < 0 ? -1 : 0;
	if (rec_write_all(cr_fd, data, len) < 0) {
		static uint32_t warned;
		if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
			rec_warn("cacheray-rt: cannot write %s (the trace is incomplete):",
				 cr_trace_path);
		return -1;
	}
	return 0;
}

static int cr_plock(short type)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
	int r;

	do
		r = fcntl(cr_fd, F_SETLKW, &fl);
	while (r < 0 && errno == EINTR);
	return r;
}

static int64_t cacheray_append_lock(struct rec_session *s)
{
	pid_t me = rec_gettid();
	int saved = errno;
	off_t end;

	(void)s;
	if (__atomic_load_n(&cr_append_owner, __ATOMIC_RELAXED) == me) {
		cr_append_depth++; /* a fatal signal's finish in the middle of our own write */
	} else {
		pthread_mutex_lock(&cr_append_mu);
		__atomic_store_n(&cr_append_owner, me, __ATOMIC_RELAXED);
		cr_append_depth = 1;
		/* no lock (ENOLCK, a file system without them): the threads of this process are
		 * still in order, which is all a process alone needs */
		cr_append_plock = cr_fd >= 0 && cr_regular && cr_plock(F_WRLCK) == 0;
	}
	end = cr_fd >= 0 && cr_regular ? lseek(cr_fd, 0, SEEK_END) : -1;
	errno = saved;
	return end < 0 ? -1 : (int64_t)end;
}

static void cacheray_append_unlock(struct rec_session *s)
{
	int saved = errno;

	(void)s;
	if (--cr_append_depth > 0)
		return;
	if (cr_append_plock)
		cr_plock(F_UNLCK);
	cr_append_plock = 0;
	__atomic_store_n(&cr_append_owner, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&cr_append_mu);
	errno = saved;
}

/* the child has only the forking thread, and none of the parent's POSIX locks */
static void cacheray_fork_child(struct rec_session *s, pid_t ppid)
{
	(void)s;
	(void)ppid;
	pthread_mutex_init(&cr_append_mu, NULL);
	cr_append_owner = 0;
	cr_append_depth = 0;
	cr_append_plock = 0;
}

const struct rec_sink rec_sink_cacheray = {
	.name = "cacheray",
	.open_session = cacheray_open_session,
	.fork_child = cacheray_fork_child,
	.write_chunk = cacheray_write_chunk,
	.append_lock = cacheray_append_lock,
	.append_unlock = cacheray_append_unlock,
};
