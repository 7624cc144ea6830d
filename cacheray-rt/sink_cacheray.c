/*
 * sink_cacheray: the Cacheray trace writer: ONE file for the whole recording (no header, as
 * Cacheray's tools expect), the chunks of every thread appended to it whole.
 *
 * Each chunk holds whole records of one thread, and is appended with one write() on an
 * O_APPEND descriptor, so the file stays framed and the records of different threads
 * interleave only at chunk boundaries, in any number of threads and processes: the flusher is
 * the only writer of a process (or finish, after it stopped), and the appends of processes that
 * share the file (fork children, exec'ed images) do not mix within one write on a local file
 * system. Losses are not written into the trace (the format has no record for them): they are
 * in the runtime's stats file (.flightrec/stats.<pid>.<ns>) that `flightrec stats` reads.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static int cr_fd = -1;

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
	cr_close_inherited(fd);
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

const struct rec_sink rec_sink_cacheray = {
	.name = "cacheray",
	.open_session = cacheray_open_session,
	.write_chunk = cacheray_write_chunk,
};
