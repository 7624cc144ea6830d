/*
 * sink_ovni: the ovni trace writer (librecord sink) and its metadata files.
 *
 * Files, per layout (P = the pid given to ovni_proc_init, T = the tid given to
 * ovni_thread_init; everything below $OVNI_TRACEDIR/loom.<loom>/proc.P, or first below
 * $OVNI_TMPDIR/... and moved to the trace directory when the thread finishes):
 *   v2 (default)  thread.T.obs, thread.T.json (metadata version 2), metadata.json (process:
 *                 version 2, app_id, rank/nranks, cpus)
 *   v3            thread.T/stream.obs, thread.T/stream.json (metadata version 3, libovni 1.14
 *                 keys: ovni.part/tid/pid/loom/app_id/require/..., loom_cpus, finished)
 *   always        <ring dir>/.flightrec/ring.<pid>.<tid>.ovni beside each librecord ring while
 *                 the thread lives: where its stream and metadata are, for salvage
 *
 * Who writes what, and when:
 *   stream file     created (truncated) by ovni_thread_init; write_chunk appends chunks in
 *                   order, one writer at a time (the flusher; the thread itself under the
 *                   drain policy, or under help when the flusher is behind; finish), each
 *                   opening the file for its write and closing it after (ovni_thread_fd):
 *                   no descriptor is kept per thread
 *   thread metadata written at ovni_thread_init (no ovni.finished: a reader can tell a cut
 *                   stream), again after any metadata change (next emit/flush), and finally
 *                   with ovni.finished = 1 by ovni_thread_free, or by close_thread when the
 *                   thread or the process ended without it ("flightrec.finished_by" says so).
 *                   Written to a temporary name and renamed: never half a file.
 *   metadata.json   (v2) at ovni_proc_init, when a finishing thread brings CPUs or a rank, at
 *                   ovni_proc_fini and at exit. ovniemu 1.10 wants the loom's CPUs in ONE
 *                   process's file: under flock(loom dir), a process whose loom already has a
 *                   process with "cpus" merges its CPUs into that file instead of its own.
 */
#include "formats/ovni/ovni_state.h"
#include "formats/ovni/ovni_stream_end.h"
#include "librecord/rec_stats.h"
#include "librecord/rec_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* --- paths ------------------------------------------------------------------------------ */

struct ovni_paths {
	char dir[PATH_MAX]; /* v3: the thread's directory; v2: the process directory */
	char obs[PATH_MAX];
	char json[PATH_MAX];
	char tmp[PATH_MAX]; /* metadata written here first */
};

static int ovni_paths(struct ovni_paths *ps, const char *procdir, int tid)
{
	int bad;

	if (ovni_proc.layout == OVNI_LAYOUT_V3) {
		bad = snprintf(ps->dir, PATH_MAX, "%s/thread.%d", procdir, tid) >= PATH_MAX ||
		      snprintf(ps->obs, PATH_MAX, "%s/stream.obs", ps->dir) >= PATH_MAX ||
		      snprintf(ps->json, PATH_MAX, "%s/stream.json", ps->dir) >= PATH_MAX ||
		      snprintf(ps->tmp, PATH_MAX, "%s/.stream.json.tmp", ps->dir) >= PATH_MAX;
	} else {
		bad = snprintf(ps->dir, PATH_MAX, "%s", procdir) >= PATH_MAX ||
		      snprintf(ps->obs, PATH_MAX, "%s/thread.%d.obs", procdir, tid) >= PATH_MAX ||
		      snprintf(ps->json, PATH_MAX, "%s/thread.%d.json", procdir, tid) >= PATH_MAX ||
		      snprintf(ps->tmp, PATH_MAX, "%s/.thread.%d.json.tmp", procdir, tid) >=
			      PATH_MAX;
	}
	if (bad)
		errno = ENAMETOOLONG;
	return bad ? -1 : 0;
}

/* --- small file helpers ----------------------------------------------------------------- */

/* Write data to tmp and rename it to path. */
/* The disk is full: the metadata file in place takes the new text over its old one when the
 * blocks it holds are enough (a few hundred bytes in a block of its own), so the thread's
 * last metadata (ovni.finished) is still written. Not atomic, hence only then. */
static int ovni_write_in_place(const char *path, const char *data, size_t len, int err)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	int ret = -1;

	if (fd < 0)
		goto out;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_blocks * 512 >= len &&
	    rec_pwrite_all(fd, data, len, 0) == 0 && ftruncate(fd, (off_t)len) == 0)
		ret = 0;
	close(fd);
out:
	errno = err;
	return ret;
}

static int ovni_write_atomic(const char *tmp, const char *path, const char *data, size_t len)
{
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);

	if (fd < 0)
		return -1;
	/* on a full disk, the room from live.<pid>'s reserve: the first metadata of a thread
	 * that starts then has no file of its own to be rewritten in */
	if (rec_write_all(fd, data, len) < 0 &&
	    (errno != ENOSPC || ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0 ||
	     rec_room_claim(fd, len) < 0 || rec_write_all(fd, data, len) < 0)) {
		int err = errno;
		close(fd);
		unlink(tmp);
		if (err == ENOSPC || err == EDQUOT)
			return ovni_write_in_place(path, data, len, err);
		errno = err;
		return -1;
	}
	if (close(fd) < 0 || rename(tmp, path) < 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

static char *ovni_read_small(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf;
	ssize_t n;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || st.st_size > (64 << 20) ||
	    !(buf = malloc((size_t)st.st_size + 1))) {
		close(fd);
		return NULL;
	}
	n = read(fd, buf, (size_t)st.st_size);
	close(fd);
	if (n != st.st_size) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

static struct oj *ovni_read_json(const char *path)
{
	size_t len;
	char *text = ovni_read_small(path, &len);
	struct oj *v;

	if (!text)
		return NULL;
	v = oj_parse(text, len);
	free(text);
	return v;
}

/*
 * rename, or copy and unlink across file systems. The copy goes to a name of our own beside
 * dst, created (O_EXCL | O_NOFOLLOW) by us, then renamed over dst: whatever was at dst (a
 * symlink someone planted in a shared trace directory) is replaced, never written through,
 * and a reader never sees half a file.
 */
static int ovni_move(const char *src, const char *dst)
{
	char tmp[PATH_MAX], *buf = NULL;
	const char *base = strrchr(dst, '/');
	int in, out = -1, ret = -1;
	ssize_t n = -1;

	if (rename(src, dst) == 0)
		return 0;
	if (errno != EXDEV)
		return -1;
	base = base ? base + 1 : dst;
	if (snprintf(tmp, sizeof(tmp), "%.*s.%s.%d.tmp", (int)(base - dst), dst, base,
		     (int)getpid()) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0)
		return -1;
	/* a stale one of ours (a crash of an earlier process with this pid) goes first; a
	 * symlink there is unlinked, not followed */
	if (unlink(tmp) < 0 && errno != ENOENT)
		goto out;
	out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	buf = malloc(1 << 16);
	if (out >= 0 && buf) {
		while ((n = read(in, buf, 1 << 16)) > 0)
			if (rec_write_all(out, buf, (size_t)n) < 0)
				break;
	}
	if (out >= 0 && close(out) == 0 && n == 0 && rename(tmp, dst) == 0)
		ret = 0;
	else if (out >= 0)
		unlink(tmp);
out:
	free(buf);
	close(in);
	if (ret == 0)
		unlink(src);
	return ret;
}

static void ovni_try_rmdir(const char *dir)
{
	if (dir[0] && rmdir(dir) != 0 && errno != ENOTEMPTY && errno != EEXIST && errno != ENOENT)
		ovni_warn("ovni-rt: cannot remove dir %s:", dir);
}

/* --- thread metadata -------------------------------------------------------------------- */

static struct oj *ovni_cpus_json(const struct ovni_cpus *c)
{
	struct oj *arr = oj_new(OJ_ARRAY);

	for (size_t i = 0; arr && i < c->n; i++) {
		struct oj *cpu = oj_new(OJ_OBJECT);
		if (!cpu || oj_dotset(cpu, "index", oj_number(c->v[i].index)) ||
		    oj_dotset(cpu, "phyid", oj_number(c->v[i].phyid)) || oj_append(arr, cpu)) {
			oj_free(arr);
			return NULL;
		}
	}
	return arr;
}

/* The document written to disk: the thread's tree plus what libovni adds when the thread
 * ends (rank, loom_cpus, finished), in the layout's shape. meta_lock held. */
static struct oj *ovni_meta_doc(struct ovni_thread *ot, int finished, const char *how)
{
	struct oj *d = oj_copy(ot->meta), *o;
	int bad = !d;

	if (!bad && ot->rank_set)
		bad = oj_dotset(d, "ovni.rank", oj_number(ot->rank)) ||
		      oj_dotset(d, "ovni.nranks", oj_number(ot->nranks));
	if (!bad && ot->cpus.n)
		bad = oj_dotset(d, "ovni.loom_cpus", ovni_cpus_json(&ot->cpus));
	if (!bad && finished)
		bad = oj_dotset(d, "ovni.finished", oj_number(1));
	if (!bad && how)
		bad = oj_dotset(d, "flightrec.finished_by", oj_string(how));
	if (bad) {
		oj_free(d);
		return NULL;
	}
	if (ovni_proc.layout == OVNI_LAYOUT_V2 && (o = oj_get(d, "ovni"))) {
		/* format v2: identity comes from the path, the process's keys from metadata.json;
		 * a program that never asked for a model gets ovniemu 1.10's compatibility mode,
		 * as with libovni 1.10 (which required nothing by itself) */
		static const char *const gone[] = { "part",   "tid",  "pid",	"loom",
						    "app_id", "rank", "nranks", "loom_cpus" };
		for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
			oj_remove(o, gone[i]);
		if (!ot->required)
			oj_remove(o, "require");
		oj_dotset(d, "version", oj_number(2));
	}
	return d;
}

static int ovni_write_meta_locked(struct rec_thread *t, const char *procdir, int finished,
				  const char *how)
{
	struct ovni_thread *ot = ovni_thread_of(t);
	struct ovni_paths ps;
	struct oj *d;
	char *text;
	size_t len;
	int ret;

	if (ovni_paths(&ps, procdir, ot->tid) < 0)
		return -1;
	d = ovni_meta_doc(ot, finished, how);
	text = d ? oj_serialize(d, 1, &len) : NULL;
	oj_free(d);
	if (!text)
		return -1;
	ret = ovni_write_atomic(ps.tmp, ps.json, text, len);
	free(text);
	return ret;
}

static void ovni_update_sidecar(struct rec_thread *t);

static int ovni_write_thread_meta_fds(void *arg)
{
	struct rec_thread *t = arg;
	struct ovni_thread *ot = ovni_thread_of(t);
	int ret = 0;

	pthread_mutex_lock(&ot->meta_lock);
	if (ot->state != OVNI_THREAD_FINAL) {
		ret = ovni_write_meta_locked(t, ovni_proc.procdir, 0, NULL);
		ovni_update_sidecar(t);
	}
	pthread_mutex_unlock(&ot->meta_lock);
	return ret;
}

/* --- streams ---------------------------------------------------------------------------- */

static void ovni_sidecar_name(char *buf, size_t size, struct rec_thread *t)
{
	snprintf(buf, size, "ring.%d.%d.ovni", (int)t->pid, (int)t->tid);
}

static void ovni_write_sidecar(struct rec_thread *t, const struct ovni_paths *ps,
			       const struct ovni_paths *final);

/* The side file again once the thread has loom CPUs: v2 keeps them out of the thread
 * metadata and writes them to metadata.json only when the thread finishes, so after a SIGKILL
 * salvage finds them in the side file. meta_lock held. */
static void ovni_update_sidecar(struct rec_thread *t)
{
	struct ovni_paths ps, final;
	struct ovni_thread *ot = ovni_thread_of(t);

	if (ovni_proc.layout == OVNI_LAYOUT_V2 && ot->cpus.n &&
	    ovni_paths(&ps, ovni_proc.procdir, ot->tid) == 0 &&
	    ovni_paths(&final, ovni_proc.procdir_final, ot->tid) == 0)
		ovni_write_sidecar(t, &ps, &final);
}

/* Where this ring's stream goes (and the loom CPUs the thread added), for `flightrec
 * salvage` after a SIGKILL. */
static void ovni_write_sidecar(struct rec_thread *t, const struct ovni_paths *ps,
			       const struct ovni_paths *final)
{
	struct ovni_thread *ot = ovni_thread_of(t);
	struct oj *d = oj_new(OJ_OBJECT);
	char name[64], tmp[72], *text = NULL;
	size_t len;
	int fd;

	if (!d || oj_dotset(d, "format", oj_string("ovni")) ||
	    oj_dotset(d, "layout", oj_number(ovni_proc.layout)) ||
	    oj_dotset(d, "loom", oj_string(ovni_proc.loom)) ||
	    oj_dotset(d, "pid", oj_number(ovni_proc.pid)) ||
	    oj_dotset(d, "tid", oj_number(ot->tid)) ||
	    oj_dotset(d, "app_id", oj_number(ovni_proc.app)) ||
	    oj_dotset(d, "stream", oj_string(ps->obs)) ||
	    oj_dotset(d, "metadata", oj_string(ps->json)) ||
	    oj_dotset(d, "final_stream", oj_string(final->obs)) ||
	    oj_dotset(d, "final_metadata", oj_string(final->json)) ||
	    (ovni_proc.layout == OVNI_LAYOUT_V2 &&
	     oj_dotset(d, "process_metadata", oj_string(ovni_proc.procdir_final))) ||
	    (ot->cpus.n && oj_dotset(d, "loom_cpus", ovni_cpus_json(&ot->cpus))) ||
	    !(text = oj_serialize(d, 1, &len))) {
		oj_free(d);
		return;
	}
	oj_free(d);
	/* under a temporary name, then renamed: a SIGKILL mid-write must not leave a torn side
	 * file in place of a whole one (salvage would find nowhere to send the ring's events) */
	ovni_sidecar_name(name, sizeof(name), t);
	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	fd = rec_open_write(rec_sess.ringdirfd, tmp, O_TRUNC);
	if (fd >= 0) {
		int bad = rec_write_all(fd, text, len) < 0;
		bad |= close(fd) < 0;
		if (bad || renameat(rec_sess.ringdirfd, tmp, rec_sess.ringdirfd, name) < 0)
			unlinkat(rec_sess.ringdirfd, tmp, 0);
	}
	free(text);
}

/* The thread's stream, opened for writing (above the low numbers, checked), -1 if it cannot
 * be. No descriptor is kept between writes (see ovni_thread_fd). */
static int ovni_stream_fd(const struct ovni_thread *ot)
{
	struct ovni_paths ps;

	if (ovni_paths(&ps, ovni_proc.procdir, ot->tid) < 0)
		return -1;
	return rec_openat_kept(AT_FDCWD, ps.obs, O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0);
}

/* The descriptors of ovni-rt's metadata and streams never live in the program's table: the
 * program may close or reuse any number meanwhile (rec_fd_call runs these on the flusher) */
int ovni_sink_write_thread_meta(struct rec_thread *t)
{
	return rec_fd_call(ovni_write_thread_meta_fds, t);
}

static int ovni_create_stream_fds(void *arg)
{
	struct rec_thread *t = arg;
	struct ovni_thread *ot = ovni_thread_of(t);
	struct ovni_paths ps, final;
	int fd;

	if (ovni_paths(&ps, ovni_proc.procdir, ot->tid) < 0 ||
	    ovni_paths(&final, ovni_proc.procdir_final, ot->tid) < 0) {
		ovni_warn("ovni-rt: ovni_thread_init: stream path too long for thread %d", ot->tid);
		return -1;
	}
	/* The side file first, before any file or directory it names: after a SIGKILL anywhere
	 * below, salvage is sent to this thread's files and removes them (until
	 * ovni_thread_init returns the thread has emitted nothing: salvage removes a stream
	 * with no event, its metadata, which may not exist yet, and its directories). The
	 * other way round, a kill between the metadata and the side file left an empty stream
	 * and a metadata file that nothing finished ('missing ovni.finished' to ovniemu 1.14,
	 * e2e-salvage ovni/v3/help/fork now and then). */
	ovni_write_sidecar(t, &ps, &final);
	if (ovni_proc.layout == OVNI_LAYOUT_V3) {
		if ((mkdir(ps.dir, 0755) < 0 && errno != EEXIST) ||
		    (ovni_proc.move_to_final && mkdir(final.dir, 0755) < 0 && errno != EEXIST)) {
			char name[64];
			ovni_warn(
				"ovni-rt: ovni_thread_init: cannot create the directory of thread "
				"%d, it records nothing:",
				ot->tid);
			ovni_sidecar_name(name, sizeof(name), t);
			unlinkat(rec_sess.ringdirfd, name, 0);
			return -1;
		}
	}
	/* no descriptor is kept: each write opens the stream (ovni_thread_fd), so that the
	 * runtime's descriptors do not grow with the program's threads (RLIMIT_NOFILE) */
	fd = rec_openat_kept(AT_FDCWD, ps.obs, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
			     0644);
	if (fd < 0) {
		char name[64];
		ovni_warn("ovni-rt: ovni_thread_init: cannot create %s, thread %d records nothing:",
			  ps.obs, ot->tid);
		ovni_sidecar_name(name, sizeof(name), t);
		unlinkat(rec_sess.ringdirfd, name, 0);
		return -1;
	}
	/* the initial metadata on disk now, as libovni, to detect broken streams */
	if (ovni_sink_write_thread_meta(t) < 0)
		ovni_warn("ovni-rt: cannot write the metadata of thread %d:", ot->tid);
	/* the stream header (magic "ovni", version 1 little-endian) written now, as libovni
	 * writes it at ovni_thread_init, with room for the stream's ending: the stream starts
	 * with it whatever the disk holds later (in the first chunk, it was lost with that
	 * chunk on a full disk, and the stream began mid-events, which no reader takes). Last:
	 * a stream file that is still empty is no stream to a reader; salvage, sent by the
	 * side file, writes the header itself into one. */
	static const uint8_t hdr[8] = { 'o', 'v', 'n', 'i', 1, 0, 0, 0 };
	(void)rec_room_claim(fd, sizeof(hdr) + 2 * OVNI_SE_HDR);
	if (rec_write_all(fd, hdr, sizeof(hdr)) < 0) {
		ovni_warn("ovni-rt: ovni_thread_init: cannot write %s, thread %d records nothing:",
			  ps.obs, ot->tid);
		char name[64];
		close(fd);
		unlink(ps.obs);
		unlink(ps.json);
		ovni_sidecar_name(name, sizeof(name), t);
		unlinkat(rec_sess.ringdirfd, name, 0);
		return -1;
	}
	close(fd);
	ot->written = sizeof(hdr);
	__atomic_fetch_add(&t->bytes, sizeof(hdr), __ATOMIC_RELAXED); /* the stream's bytes */
	return 0;
}

/*
 * A thread finished without ovni_thread_free (it exited, or the process exited or died by a
 * signal while it ran): its stream, all written, ends with the thread dead, as ovniemu wants
 * every stream to end (ovni_stream_end.h; salvage ends a killed process's streams alike). The
 * added events are counted as the thread's, like the flush markers. Reads the stream once,
 * on this path only.
 */
static void ovni_end_stream(struct rec_thread *t, struct ovni_thread *ot, int wfd)
{
	struct ovni_paths ps;
	enum ovni_se_state st = OVNI_SE_UNKNOWN;
	uint64_t clock = 0, events;
	uint8_t ending[2 * OVNI_SE_HDR];
	struct stat sb;
	size_t end = 0, n;
	int fd;

	if (ovni_paths(&ps, ovni_proc.procdir, ot->tid) < 0)
		return;
	fd = open(ps.obs, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &sb) == 0 && sb.st_size > 0) {
		void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
		if (m != MAP_FAILED) {
			end = ovni_se_walk(m, (size_t)sb.st_size, (size_t)sb.st_size, &st, &clock,
					   &events);
			munmap(m, (size_t)sb.st_size);
		}
	}
	close(fd);
	/* a stream cut short (a failed write) is left as it is: the end would not be read */
	if (!end || end != (size_t)sb.st_size)
		return;
	n = ovni_se_ending(st, clock, ending);
	if (n && pwrite(wfd, ending, n, (off_t)end) == (ssize_t)n) {
		__atomic_fetch_add(&t->events, n / OVNI_SE_HDR, __ATOMIC_RELAXED);
		__atomic_fetch_add(&t->bytes, n, __ATOMIC_RELAXED);
	}
}

/* A stream whose every event was lost (the thread started once the disk was full): its
 * header alone is a thread that never ends, which ovniemu refuses, so it is removed with its
 * metadata and the thread's events stay counted lost. Not a thread that carries the
 * process's rank or CPUs (the loom needs them). meta_lock held; 1 when removed (FD, the
 * stream's, closed then). */
static int ovni_drop_if_all_lost(struct rec_thread *t, struct ovni_thread *ot, int fd)
{
	struct ovni_paths ps;
	struct stat st;

	if (fd < 0 || !t->unwritten || ot->rank_set || ot->cpus.n || fstat(fd, &st) < 0 ||
	    st.st_size > 8 ||
	    ovni_paths(&ps, ovni_proc.procdir, ot->tid) < 0)
		return 0;
	close(fd);
	unlink(ps.obs);
	unlink(ps.json);
	if (ovni_proc.layout == OVNI_LAYOUT_V3)
		ovni_try_rmdir(ps.dir);
	__atomic_store_n(&ot->state, OVNI_THREAD_FINAL, __ATOMIC_RELEASE);
	return 1;
}

int ovni_sink_create_stream(struct rec_thread *t)
{
	return rec_fd_call(ovni_create_stream_fds, t);
}

void ovni_sink_finalize_thread(struct rec_thread *t, const char *how)
{
	struct ovni_thread *ot = ovni_thread_of(t);
	struct ovni_paths ps, final;
	int brings_proc_meta, fd;

	pthread_mutex_lock(&ot->meta_lock);
	if (ot->state != OVNI_THREAD_READY) {
		pthread_mutex_unlock(&ot->meta_lock);
		return;
	}
	fd = ovni_stream_fd(ot); /* the stream's last write and trim, then closed */
	if (how && fd >= 0)
		ovni_end_stream(t, ot, fd);
	if (ovni_drop_if_all_lost(t, ot, fd)) {
		pthread_mutex_unlock(&ot->meta_lock);
		return;
	}
	if (ovni_write_meta_locked(t, ovni_proc.procdir, 1, how) < 0)
		ovni_warn("ovni-rt: cannot write the metadata of thread %d:", ot->tid);
	if (fd >= 0) {
		/* the blocks taken past the end (ovni_prealloc's steps, the ending's room) */
		rec_room_trim(fd);
		close(fd);
	}
	if (ovni_proc.move_to_final && ovni_paths(&ps, ovni_proc.procdir, ot->tid) == 0 &&
	    ovni_paths(&final, ovni_proc.procdir_final, ot->tid) == 0) {
		if (ovni_move(ps.obs, final.obs) < 0 || ovni_move(ps.json, final.json) < 0)
			ovni_warn("ovni-rt: cannot move the stream of thread %d to %s:", ot->tid,
				  final.dir);
		else if (ovni_proc.layout == OVNI_LAYOUT_V3)
			ovni_try_rmdir(ps.dir);
	}
	__atomic_store_n(&ot->state, OVNI_THREAD_FINAL, __ATOMIC_RELEASE);
	brings_proc_meta = ot->rank_set || ot->cpus.n;
	if (ot->nested && ot->nested != ot->lost_told) {
		ovni_warn("ovni-rt: thread %d: %llu events emitted by signal handlers that "
			  "interrupted another emit were dropped",
			  ot->tid, (unsigned long long)ot->nested);
		ot->lost_told = ot->nested;
	}
	pthread_mutex_unlock(&ot->meta_lock);
	if (ovni_proc.layout == OVNI_LAYOUT_V2 && brings_proc_meta)
		ovni_sink_write_proc_meta();
}

/* --- process metadata (v2) -------------------------------------------------------------- */

static int ovni_has_phyid(const struct oj *arr, int phyid)
{
	for (size_t i = 0; arr && arr->type == OJ_ARRAY && i < arr->u.c.len; i++) {
		struct oj *p = oj_get(arr->u.c.items[i], "phyid");
		if (p && p->type == OJ_NUMBER && (int)p->u.number == phyid)
			return 1;
	}
	return 0;
}

/* Append to arr the CPUs of c whose phyid it lacks; 1 if it changed. */
static int ovni_merge_cpus(struct oj *arr, const struct ovni_cpus *c)
{
	int changed = 0;

	for (size_t i = 0; i < c->n; i++) {
		struct oj *cpu;
		if (ovni_has_phyid(arr, c->v[i].phyid))
			continue;
		cpu = oj_new(OJ_OBJECT);
		if (!cpu || oj_dotset(cpu, "index", oj_number(c->v[i].index)) ||
		    oj_dotset(cpu, "phyid", oj_number(c->v[i].phyid)) || oj_append(arr, cpu))
			return changed;
		changed = 1;
	}
	return changed;
}

static int ovni_write_json_atomic(const char *dir, const char *name, const struct oj *d)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	size_t len;
	char *text;
	int ret;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s.%d.tmp", dir, name, (int)getpid()) >=
		    (int)sizeof(tmp))
		return -1;
	text = oj_serialize(d, 1, &len);
	if (!text)
		return -1;
	ret = ovni_write_atomic(tmp, path, text, len);
	free(text);
	return ret;
}

/* The other process of this loom whose metadata.json holds the loom's CPUs, if any:
 * its directory in owner (loom lock held). */
static int ovni_cpu_owner(char *owner, size_t size)
{
	char mine[64], path[PATH_MAX];
	struct dirent *de;
	int found = 0;
	DIR *d;

	snprintf(mine, sizeof(mine), "proc.%d", ovni_proc.pid);
	d = opendir(ovni_proc.loomdir_final);
	if (!d)
		return 0;
	while (!found && (de = readdir(d))) {
		struct oj *m;
		if (strncmp(de->d_name, "proc.", 5) != 0 || strcmp(de->d_name, mine) == 0)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s/metadata.json", ovni_proc.loomdir_final,
			     de->d_name) >= (int)sizeof(path))
			continue;
		m = ovni_read_json(path);
		if (m && oj_get(m, "cpus")) {
			rec_snprintf(owner, size, "%s/%s", ovni_proc.loomdir_final, de->d_name);
			found = 1;
		}
		oj_free(m);
	}
	closedir(d);
	return found;
}

static int ovni_write_proc_meta_fds(void *arg);

void ovni_sink_write_proc_meta(void)
{
	rec_fd_call(ovni_write_proc_meta_fds, NULL);
}

static int ovni_write_proc_meta_fds(void *arg)
{
	struct ovni_cpus cpus = { 0 };
	char owner[PATH_MAX], path[PATH_MAX];
	struct oj *m = oj_new(OJ_OBJECT), *old, *arr;
	int rank_set, rank, nranks, dfd;

	(void)arg;

	pthread_mutex_lock(&ovni_proc.lock);
	rank_set = ovni_proc.rank_set;
	rank = ovni_proc.rank;
	nranks = ovni_proc.nranks;
	for (size_t i = 0; i < ovni_proc.cpus.n; i++)
		ovni_cpus_add(&cpus, ovni_proc.cpus.v[i].index, ovni_proc.cpus.v[i].phyid);
	pthread_mutex_unlock(&ovni_proc.lock);

	if (!m || oj_dotset(m, "version", oj_number(2)) ||
	    oj_dotset(m, "app_id", oj_number(ovni_proc.app)) ||
	    (rank_set &&
	     (oj_dotset(m, "rank", oj_number(rank)) || oj_dotset(m, "nranks", oj_number(nranks)))))
		goto out;

	/* one writer per loom at a time: the CPUs must end up in one file */
	dfd = open(ovni_proc.loomdir_final, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		flock(dfd, LOCK_EX);
	if (ovni_cpu_owner(owner, sizeof(owner))) {
		struct oj *om;
		rec_snprintf(path, sizeof(path), "%s/metadata.json", owner);
		om = ovni_read_json(path);
		arr = om ? oj_get(om, "cpus") : NULL;
		if (arr && arr->type == OJ_ARRAY && ovni_merge_cpus(arr, &cpus) &&
		    ovni_write_json_atomic(owner, "metadata.json", om) < 0)
			ovni_warn("ovni-rt: cannot add this process's CPUs to %s/metadata.json:",
				  owner);
		oj_free(om);
	} else {
		/* ours holds the loom's CPUs: keep the ones other processes merged into it */
		rec_snprintf(path, sizeof(path), "%s/metadata.json", ovni_proc.procdir_final);
		old = ovni_read_json(path);
		arr = oj_new(OJ_ARRAY);
		if (arr)
			ovni_merge_cpus(arr, &cpus);
		if (arr && old && oj_get(old, "cpus")) {
			struct oj *oc = oj_get(old, "cpus");
			for (size_t i = 0; oc->type == OJ_ARRAY && i < oc->u.c.len; i++) {
				struct oj *ix = oj_get(oc->u.c.items[i], "index");
				struct oj *ph = oj_get(oc->u.c.items[i], "phyid");
				if (ix && ph && ix->type == OJ_NUMBER && ph->type == OJ_NUMBER &&
				    !ovni_has_phyid(arr, (int)ph->u.number))
					oj_append(arr, oj_copy(oc->u.c.items[i]));
			}
		}
		oj_free(old);
		if (arr && arr->u.c.len)
			oj_dotset(m, "cpus", arr);
		else
			oj_free(arr);
	}
	if (ovni_write_json_atomic(ovni_proc.procdir_final, "metadata.json", m) < 0)
		ovni_warn("ovni-rt: cannot write %s/metadata.json:", ovni_proc.procdir_final);
	if (dfd >= 0) {
		flock(dfd, LOCK_UN);
		close(dfd);
	}
out:
	oj_free(m);
	free(cpus.v);
	return 0;
}

void ovni_sink_clean_tmp(void)
{
	if (!ovni_proc.move_to_final)
		return;
	ovni_try_rmdir(ovni_proc.procdir);
	ovni_try_rmdir(ovni_proc.loomdir_tmp);
	ovni_try_rmdir(ovni_proc.tmpdir);
}

/* --- the librecord sink ----------------------------------------------------------------- */

static int ovni_open_thread(struct rec_session *s, struct rec_thread *t)
{
	(void)s;
	(void)t;
	return 0; /* the stream is created by ovni_thread_init, which knows the ovni tid */
}

/* The stream for one write_chunk (rec_sink.thread_fd), at its end; -1 while the thread has
 * no stream (before ovni_thread_init, after it finished). No descriptor is kept per thread:
 * they grew with the program's threads and took its RLIMIT_NOFILE room. */
static int ovni_thread_fd(struct rec_session *s, struct rec_thread *t)
{
	struct ovni_thread *ot = ovni_thread_of(t);
	int fd;

	(void)s;
	if (__atomic_load_n(&ot->state, __ATOMIC_ACQUIRE) != OVNI_THREAD_READY)
		return -1;
	fd = ovni_stream_fd(ot);
	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

static uint32_t ovni_lost_warned;

/*
 * Allocate the stream file's blocks ahead of the writes (past its end, the size unchanged):
 * appending into allocated blocks skips the file system's per-block reservation, about a
 * third of the cost of write() here (ext4: 175 instead of 250 us per MiB). Steps grow with
 * the stream (at least 2 MiB, half of what is there, at most 64 MiB); what is left past the
 * end is given back when the stream is finished.
 */
static void ovni_prealloc(struct rec_thread *t, struct ovni_thread *ot, size_t len)
{
	uint64_t step;

	if (ot->prealloc_off || ot->written + len <= ot->prealloc)
		return;
	step = ot->written / 2;
	step = step < (2u << 20) ? (2u << 20) : step > (64u << 20) ? (64u << 20) : step;
	step = (step + len + 4095) & ~(uint64_t)4095;
	if (fallocate(t->sink_fd, FALLOC_FL_KEEP_SIZE, (off_t)ot->written, (off_t)step) == 0)
		ot->prealloc = ot->written + step;
	else if (errno != ENOSPC && errno != EDQUOT)
		ot->prealloc_off = 1; /* not supported here: plain appends */
}

static int ovni_write_chunk(struct rec_session *s, struct rec_thread *t, const uint8_t *data,
			    size_t len, uint64_t lost_before)
{
	struct ovni_thread *ot = ovni_thread_of(t);
	off_t start;

	(void)s;
	/* what earlier writes failed to write was said by librecord (once, "cannot write the
	 * trace"): this says only what the ring itself lost */
	if (lost_before > t->unwritten - t->unwritten_told &&
	    !__atomic_exchange_n(&ovni_lost_warned, 1, __ATOMIC_RELAXED))
		ovni_warn("ovni-rt: thread %d: %llu events could not be recorded (the stream "
			  "misses them)",
			  ot->tid, (unsigned long long)(lost_before - (t->unwritten -
								       t->unwritten_told)));
	if (__atomic_load_n(&ot->state, __ATOMIC_ACQUIRE) == OVNI_THREAD_FINAL || t->sink_fd < 0)
		return -1;
	/* ovni has no loss record, and events after a gap refer to state the lost ones made
	 * (a mark pushed, a thread resumed): ovniemu refuses such a stream. After the first
	 * chunk that could not be written the stream ends (ovni_end_stream ends the thread
	 * there), every later chunk counted lost. */
	if (ot->cut)
		return -1;
	if (!len)
		return 0;
	ovni_prealloc(t, ot, len);
	/* room for the chunk and the stream's ending past it (ovni_end_stream): a chunk the
	 * disk has no room for is never written, so the ending always finds its room */
	if (ot->written + len + 2 * OVNI_SE_HDR > ot->prealloc &&
	    rec_room_ahead(t->sink_fd, len + 2 * OVNI_SE_HDR) < 0) {
		ot->cut = 1;
		return -1;
	}
	start = lseek(t->sink_fd, 0, SEEK_CUR);
	if (rec_write_all(t->sink_fd, data, len) < 0) {
		/* disk full: the part written is cut off, so the stream ends on a whole event
		 * (a torn one made ovniemu reject all of it); the drainer counts the chunk lost
		 * and says so, once for the process (not once per chunk) */
		int err = errno;
		if (start >= 0 && ftruncate(t->sink_fd, start) == 0)
			lseek(t->sink_fd, start, SEEK_SET);
		ot->prealloc = ot->written;
		ot->cut = 1;
		errno = err;
		return -1;
	}
	ot->written += len;
	return 0;
}

static void ovni_close_thread(struct rec_session *s, struct rec_thread *t, uint64_t lost_after)
{
	struct ovni_thread *ot = ovni_thread_of(t);
	char name[64];
	int exited = __atomic_load_n(&t->exited, __ATOMIC_ACQUIRE);

	struct ovni_done *d;

	(void)lost_after;
	/* a thread that called ovni_thread_free ended its stream itself, unless the chunk with
	 * its end could not be written (disk full): then it is ended here like the others */
	if (ot->state == OVNI_THREAD_READY)
		ovni_sink_finalize_thread(t, ot->freeing && t->unwritten == t->unwritten_told
					     ? NULL
					     : ot->freeing ? "write-failed"
					     : exited	   ? "thread-exit"
							   : "process-exit");
	ovni_sidecar_name(name, sizeof(name), t);
	unlinkat(s->ringdirfd, name, 0);
	pthread_mutex_lock(&ot->meta_lock);
	d = ot->done;
	ot->done = NULL;
	pthread_mutex_unlock(&ot->meta_lock);
	if (d) {
		/* release: the stream and metadata are written before the waiter returns; the
		 * wake before our reference goes (the waiter's may be gone already) */
		__atomic_store_n(&d->done, 1, __ATOMIC_RELEASE);
		rec_futex(&d->done, FUTEX_WAKE_PRIVATE, 1, NULL);
		ovni_done_put(d);
	}
	if (exited) {
		/* nobody touches the tree any more: the thread is gone */
		oj_free(ot->meta);
		ot->meta = NULL;
		free(ot->cpus.v);
		ot->cpus.v = NULL;
	}
}

static void ovni_finish(struct rec_session *s)
{
	int st = __atomic_load_n(&ovni_proc.state, __ATOMIC_ACQUIRE);

	(void)s;
	if (ovni_proc.off || (st != OVNI_PROC_READY && st != OVNI_PROC_GONE))
		return;
	if (ovni_proc.layout == OVNI_LAYOUT_V2)
		ovni_sink_write_proc_meta();
	/* the temporary directory goes in ovni_finished, once the stats are out of it */
}

/*
 * With OVNI_TMPDIR, librecord's directory (rings, stats) is the temporary one: the stats file
 * goes next to the trace, where `flightrec stats` looks, and the temporary directory goes once
 * empty, as libovni removes it at ovni_proc_fini.
 */
static void ovni_finished(struct rec_session *s)
{
	char name[96], src[PATH_MAX], dir[PATH_MAX], dst[PATH_MAX + 96], *slash;

	(void)s;
	if (ovni_proc.off || !ovni_proc.move_to_final)
		return;
	rec_stats_final_name(name, sizeof(name));
	rec_snprintf(dir, sizeof(dir), "%s", ovni_proc.loomdir_final);
	slash = strrchr(dir, '/');
	if (slash && (size_t)(slash - dir) + sizeof("/.flightrec") <= sizeof(dir)) {
		memcpy(slash, "/.flightrec", sizeof("/.flightrec"));
		rec_snprintf(src, sizeof(src), "%s/.flightrec/%s", ovni_proc.tmpdir, name);
		rec_snprintf(dst, sizeof(dst), "%s/%s", dir, name);
		if ((mkdir(dir, 0755) < 0 && errno != EEXIST) ||
		    (ovni_move(src, dst) < 0 && errno != ENOENT))
			ovni_warn("ovni-rt: cannot move %s to %s:", src, dir);
	}
	rec_snprintf(src, sizeof(src), "%s/.flightrec", ovni_proc.tmpdir);
	ovni_try_rmdir(src);
	ovni_sink_clean_tmp(); /* the temporary directory last */
}

const struct rec_sink ovni_sink = {
	.name = "ovni",
	.open_thread = ovni_open_thread,
	.write_chunk = ovni_write_chunk,
	.close_thread = ovni_close_thread,
	.thread_fd = ovni_thread_fd,
	.finish = ovni_finish,
	.finished = ovni_finished,
};
