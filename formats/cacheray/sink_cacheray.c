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
 * SIGKILL cut short left (formats/cacheray/salvage_cacheray.c), wherever other threads appended meanwhile.
 * Cost: a mutex, two fcntl and an lseek per chunk written, nothing per event. A thread that
 * holds it and re-enters (finish from a fatal signal handler that interrupted its write) goes
 * on without waiting for itself.
 *
 * The append journal: the kernel lets the lock go when its holder dies, also in the middle of
 * a write, and another process of the recording would then append after the torn chunk. So
 * the holder notes its append (offset, length, "writing") in a page every process of the
 * recording maps (.flightrec/append.<dev>.<ino>, one per trace), and clears the mark once the
 * write is recorded done; the next holder that finds the mark (its writer is dead: the lock
 * is free) cuts the torn bytes off before it appends. Salvage then finds other records, or
 * the end, at the dead ring's write_pos, and writes its chunk whole. The first process of a
 * recording (alone with the trace) starts a new journal; salvage removes it.
 *
 * Who starts a new trace: the first process of a recording. Every process holding the trace open
 * keeps a shared flock() on it; a process that opens a non-empty trace and can take the lock
 * exclusively is alone, and replaces it with a new, empty file (Cacheray's fopen "w");
 * otherwise it appends. A fork child shares its
 * parent's descriptor; the exec wrappers let the descriptor (and its lock) live through exec,
 * and the new image closes that inherited copy once it holds its own, so an image that
 * replaces itself appends to what the previous one wrote.
 */
#include "formats/cacheray/sink_cacheray.h"
#include "librecord/rec_session.h"
#include "librecord/rec_thread.h"
#include "librecord/rec_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

char cr_trace_path[REC_PATH_MAX];

static int cr_fd = -1;
static int cr_regular;  /* cr_fd is a regular file: appends have an offset */

/* the append lock: the mutex, its holder (tid) and how deep it re-entered */
static pthread_mutex_t cr_append_mu = PTHREAD_MUTEX_INITIALIZER;
static pid_t cr_append_owner;
static unsigned cr_append_depth;
static int cr_append_plock; /* the POSIX lock is held */

#define CR_JOURNAL_MAGIC "FRAPND1"

/* the append in progress, shared by the processes of the recording (see above) */
struct cr_journal {
	char magic[8];    /* CR_JOURNAL_MAGIC once set up (under the append lock) */
	uint64_t pos;     /* the append's offset */
	uint64_t len;     /* ... and length */
	uint32_t writing; /* 1 from before the write until it is recorded done */
	int32_t pid;      /* its process (for FLIGHTREC_DEBUG) */
};
static struct cr_journal *cr_jnl;

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

/* Map the trace's append journal; ALONE (the first process of the recording) starts it
 * afresh, whatever a past recording with the same inode left. No journal: a process alone with
 * the trace needs none, and others fall back on salvage's check. */
static void cr_journal_open(struct rec_session *s, int alone)
{
	char name[64];
	struct stat st;
	void *m;
	int fd;

	if (s->ringdirfd < 0 || fstat(cr_fd, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	rec_snprintf(name, sizeof(name), "append.%llx.%llx", (unsigned long long)st.st_dev,
		     (unsigned long long)st.st_ino);
	if (alone)
		unlinkat(s->ringdirfd, name, 0);
	fd = openat(s->ringdirfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (st.st_size < 4096 && ftruncate(fd, 4096) < 0)) {
		close(fd);
		return;
	}
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m != MAP_FAILED)
		cr_jnl = m;
}

static int cacheray_open_session(struct rec_session *s)
{
	char dir[REC_PATH_MAX];
	const char *slash = strrchr(cr_trace_path, '/'), *base;
	struct stat st;
	int dfd, fd, alone = 0;

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
	if (fstat(fd, &st) < 0)
		memset(&st, 0, sizeof(st)); /* not a regular file: left as it is */
	if (S_ISREG(st.st_mode) && st.st_size > 0 &&
	    (flock(fd, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK)) {
		/* alone with an old trace: start a new file (a device such as /dev/null is left as
		 * it is) */
		fd = cr_replace(dir, base, fd);
		if (fd < 0)
			return -1;
		alone = 1;
	} else if (S_ISREG(st.st_mode) && st.st_size == 0) {
		alone = flock(fd, LOCK_EX | LOCK_NB) == 0;
	}
	/* a shared lock for as long as this process (or what it execs) may append */
	flock(fd, LOCK_SH);
	/* before any append lock is taken: closing a copy drops the process's POSIX locks */
	cr_close_inherited(fd);
	cr_regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	cr_fd = fd;
	s->keep_fd = fd; /* the flusher's own table keeps it too */
	if (cr_regular)
		cr_journal_open(s, alone);
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

/* Under the append lock (both locks held, not re-entered): the journal's word on the append
 * before ours, then ours. END is the trace's end; returns it, cut back if needed. */
static off_t cr_journal_begin(off_t end, uint64_t len)
{
	struct cr_journal *j = cr_jnl;

	if (memcmp(j->magic, CR_JOURNAL_MAGIC, sizeof(j->magic)) != 0) {
		memset(j, 0, sizeof(*j));
		memcpy(j->magic, CR_JOURNAL_MAGIC, sizeof(j->magic));
	} else if (__atomic_load_n(&j->writing, __ATOMIC_ACQUIRE)) {
		/* its writer died in it (the lock was free): what it left is the trace's end;
		 * the whole of it (end = pos + len) stays, it was written */
		if ((uint64_t)end > j->pos && (uint64_t)end < j->pos + j->len &&
		    ftruncate(cr_fd, (off_t)j->pos) == 0) {
			rec_debug("cacheray-rt: %llu bytes of a chunk process %d was killed writing "
				  "cut off the trace at offset %llu",
				  (unsigned long long)((uint64_t)end - j->pos), (int)j->pid,
				  (unsigned long long)j->pos);
			end = (off_t)j->pos;
		}
	}
	j->pos = (uint64_t)end;
	j->len = len;
	j->pid = (int32_t)getpid();
	/* after pos/len (release): a next holder that sees the mark sees them */
	__atomic_store_n(&j->writing, 1, __ATOMIC_RELEASE);
	return end;
}

static int64_t cacheray_append_lock(struct rec_session *s, uint64_t len)
{
	pid_t me = rec_gettid();
	int saved = errno, first = 0;
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
		first = 1;
	}
	end = cr_fd >= 0 && cr_regular ? lseek(cr_fd, 0, SEEK_END) : -1;
	if (end >= 0 && first && cr_append_plock && cr_jnl)
		end = cr_journal_begin(end, len);
	errno = saved;
	return end < 0 ? -1 : (int64_t)end;
}

static void cacheray_append_unlock(struct rec_session *s)
{
	int saved = errno;

	(void)s;
	if (--cr_append_depth > 0)
		return;
	if (cr_append_plock && cr_jnl) /* the write is recorded done (rec_chunk_write) */
		__atomic_store_n(&cr_jnl->writing, 0, __ATOMIC_RELEASE);
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

const struct rec_sink cacheray_sink = {
	.name = "cacheray",
	.open_session = cacheray_open_session,
	.fork_child = cacheray_fork_child,
	.write_chunk = cacheray_write_chunk,
	.append_lock = cacheray_append_lock,
	.append_unlock = cacheray_append_unlock,
};
