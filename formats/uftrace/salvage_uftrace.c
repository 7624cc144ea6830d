/*
 * salvage_uftrace: salvage for uftrace.data (libmcount's rings, format "uftrace").
 *
 * What a SIGKILLed libmcount process leaves: task.txt with its SESS and TASK lines (written
 * before any record of the session or thread), sid-<sid>.map and the .sym (written at
 * start), each thread's <tid>.dat with the chunks the flusher wrote, and no `info` (written
 * at finish). Salvage, under flock(dir) like a finishing process:
 *   1. cuts a line the kill left half-written at the end of task.txt;
 *   2. per ring: cuts <tid>.dat back to write_pos when a write was cut short, then appends
 *      each unwritten chunk's committed bytes, with a LOST record before it when events were
 *      lost (the runtime's own convention: time 0, the count in the address field);
 *   3. adds a TASK line for a thread that has none (it died while writing it), stamped with
 *      its first record's time;
 *   4. writes `info` listing every non-empty <tid>.dat, as the last finishing process would
 *      (uftrace_info.c, shared with the sink), in the inode the session reserved for it
 *      (.flightrec/info.spare) when it is still there.
 * A process killed before any of its threads recorded anything (no ring, or none with a
 * record) left no <tid>.dat: salvage still writes info, once none of the trace's processes
 * is alive, and gives the first task a .dat holding one LOST record of 0 events, without
 * which uftrace opens no trace (ufs_mark_empty says why). A directory without the session's
 * SESS line and map gets nothing.
 * The cmdline of a dead process is gone: the caller's (`flightrec record` knows it), else the
 * exename.
 */
#include "formats/salvagers.h"
#include "librecord/rec_config.h"
#include "librecord/rec_util.h"
#include "formats/uftrace/uftrace_format.h"
#include "formats/uftrace/uftrace_info.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define UFS_TASK_MAX (64u << 20)
#define UFS_MAX_STACK 1024

/* task.txt: cut a half-written last line; collect the tids that have a TASK or FORK line,
 * and the first SESS line's pid, sid and timestamp */
struct ufs_tasks {
	int *tids;
	size_t nr, cap;
	int sess_pid; /* 0: no SESS line */
	char sess_sid[17];
	char sess_ts[32]; /* as written: <sec>.<9-digit nsec> */
};

/* the first SESS line's fields (a line cut in the middle has none of them) */
static void ufs_read_sess(struct ufs_tasks *tasks, const char *line)
{
	const char *ts = strstr(line, " timestamp="), *pid = strstr(line, " pid="),
		   *sid = strstr(line, " sid=");
	size_t n;

	if (tasks->sess_pid || !ts || !pid || !sid || !strstr(line, " exename=\""))
		return;
	ts += 11;
	sid += 5;
	n = strspn(ts, "0123456789.");
	if (n == 0 || n >= sizeof(tasks->sess_ts) || strspn(sid, "0123456789abcdef") != 16)
		return;
	long p = strtol(pid + 5, NULL, 10);
	if (p <= 0 || p > 0x7fffffff)
		return;
	memcpy(tasks->sess_ts, ts, n);
	tasks->sess_ts[n] = '\0';
	memcpy(tasks->sess_sid, sid, 16);
	tasks->sess_sid[16] = '\0';
	tasks->sess_pid = (int)p;
}

static int ufs_tid_known(const struct ufs_tasks *t, int tid)
{
	for (size_t i = 0; i < t->nr; i++)
		if (t->tids[i] == tid)
			return 1;
	return 0;
}

static int ufs_read_tasks(struct rec_salvage_ctx *ctx, struct ufs_tasks *tasks)
{
	int fd = openat(ctx->dirfd, "task.txt", O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	char *buf;
	size_t len, end;

	if (fd < 0) {
		rec_salvage_log(ctx, "%s/task.txt: %s", ctx->dir, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > UFS_TASK_MAX) {
		rec_salvage_log(ctx, "%s/task.txt: not a regular file of at most %u bytes", ctx->dir,
				UFS_TASK_MAX);
		close(fd);
		return -1;
	}
	len = (size_t)st.st_size;
	buf = malloc(len + 1);
	if (!buf || pread(fd, buf, len, 0) != (ssize_t)len) {
		rec_salvage_log(ctx, "%s/task.txt: cannot read it", ctx->dir);
		free(buf);
		close(fd);
		return -1;
	}
	buf[len] = '\0';
	for (end = len; end > 0 && buf[end - 1] != '\n'; end--)
		;
	if (end < len) {
		rec_salvage_log(ctx, "%s/task.txt: %zu bytes of a half-written last line cut",
				ctx->dir, len - end);
		if (ftruncate(fd, (off_t)end) < 0)
			rec_salvage_log(ctx, "%s/task.txt: cannot cut it: %s", ctx->dir,
					strerror(errno));
	}
	close(fd);
	for (size_t pos = 0; pos < end;) {
		char *line = buf + pos, *nl = memchr(line, '\n', end - pos), *p;
		*nl = '\0';
		pos = (size_t)(nl - buf) + 1;
		if (!strncmp(line, "SESS ", 5))
			ufs_read_sess(tasks, line);
		if (strncmp(line, "TASK ", 5) && strncmp(line, "FORK ", 5))
			continue;
		p = strstr(line, line[0] == 'T' ? " tid=" : " pid=");
		if (!p)
			continue;
		long tid = strtol(p + 5, NULL, 10);
		if (tid <= 0 || tid > 0x7fffffff)
			continue;
		if (tasks->nr == tasks->cap) {
			size_t cap = tasks->cap ? tasks->cap * 2 : 64;
			int *nv = realloc(tasks->tids, cap * sizeof(*nv));
			if (!nv)
				break;
			tasks->tids = nv;
			tasks->cap = cap;
		}
		tasks->tids[tasks->nr++] = (int)tid;
	}
	free(buf);
	return 0;
}

/* Does the record at P look like the next one after time LAST? (after an argument payload,
 * whose size only the argspec and the symbols tell: magic 5, no earlier, not 10 min later) */
static int ufs_next_like(const uint8_t *p, uint64_t last)
{
	struct uftrace_record rec;

	memcpy(&rec, p, sizeof(rec));
	return ((rec.word >> 3) & 7) == UFTRACE_RECORD_MAGIC &&
	       ((rec.word & 3) == UFTRACE_LOST ||
		(rec.time >= last && rec.time - last < 600000000000ull));
}

/* records of one chunk's bytes: count them, note their first and last time. An ENTRY or EXIT
 * with the `more` bit (-A/-R) is followed by its payload, a multiple of 8 bytes: the next
 * record is looked for 8 bytes at a time. An EVENT with it (libmcount's read= triggers) says
 * its payload's size: a u16, then the data, padded to 8. */
static void ufs_scan(struct rec_salvage_ring *r, const uint8_t *p, size_t len)
{
	for (size_t off = 0; off + sizeof(struct uftrace_record) <= len;) {
		struct uftrace_record rec;
		memcpy(&rec, p + off, sizeof(rec));
		off += sizeof(rec);
		if ((rec.word & 3) == UFTRACE_LOST)
			continue;
		r->events++;
		if (!r->first_time)
			r->first_time = rec.time;
		r->last_time = rec.time;
		if ((rec.word & 4) && (rec.word & 3) <= UFTRACE_EXIT)
			while (off + sizeof(rec) <= len && !ufs_next_like(p + off, rec.time))
				off += 8;
		if ((rec.word & 4) && (rec.word & 3) == UFTRACE_EVENT && off + 2 <= len)
			off += ((size_t)(p[off] | p[off + 1] << 8) + 2 + 7) & ~(size_t)7;
	}
}

static int ufs_write_lost(int fd, uint64_t n)
{
	struct uftrace_record lost = { 0, uftrace_record_word(UFTRACE_LOST, 0, n) };
	return rec_write_all(fd, &lost, sizeof(lost));
}

static int ufs_salvage_thread(struct rec_salvage_ctx *ctx, struct rec_salvage_ring *r)
{
	char name[32];
	struct stat st;
	off_t pos;
	int fd;

	snprintf(name, sizeof(name), "%d.dat", (int)r->tid);
	fd = rec_open_write(ctx->dirfd, name, 0);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		rec_salvage_log(ctx, "%s/%s: %s", ctx->dir, name, fd < 0 ? strerror(errno) :
								 "not a regular file");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (r->cut) {
		/* the kill came in the middle of the flusher's write of chunk write_seq */
		if (r->cut_pos >= 0 && r->cut_pos <= st.st_size) {
			if (ftruncate(fd, r->cut_pos) < 0) {
				rec_salvage_log(ctx, "%s/%s: cannot cut it back to %lld: %s", ctx->dir,
						name, (long long)r->cut_pos, strerror(errno));
				close(fd);
				return -1;
			}
		} else {
			rec_salvage_log(ctx, "%s/%s: a write was cut short at an unknown place "
					"(%lld, file size %lld)", ctx->dir, name,
					(long long)r->cut_pos, (long long)st.st_size);
		}
	}
	pos = lseek(fd, 0, SEEK_END);
	for (size_t i = 0; i < r->nr_chunks; i++) {
		const struct rec_salvage_chunk *c = &r->chunks[i];
		struct uftrace_record lost = { 0, uftrace_record_word(UFTRACE_LOST, 0, c->lost_before) };
		struct iovec iov[2];
		size_t len = c->len - c->off, total = len;
		int n = 0;

		/* whole records only (committed always covers whole records; a damaged ring may not):
		 * 8 bytes, what an argument payload is padded to */
		len -= len % 8;
		total = len;
		if (c->lost_before) {
			iov[n].iov_base = &lost;
			iov[n++].iov_len = sizeof(lost);
			total += sizeof(lost);
		}
		iov[n].iov_base = (void *)(c->data + c->off);
		iov[n++].iov_len = len;
		rec_salvage_chunk_begin(r, c, (int64_t)pos);
		ssize_t w = writev(fd, iov, n);
		if (w >= 0 && (size_t)w < total) {
			/* finish by hand what writev left */
			size_t done = (size_t)w, hdr = c->lost_before ? sizeof(lost) : 0;
			if (done < hdr && rec_write_all(fd, (uint8_t *)&lost + done, hdr - done) < 0)
				w = -1;
			else if (rec_write_all(fd, c->data + c->off + (done > hdr ? done - hdr : 0),
					       len - (done > hdr ? done - hdr : 0)) < 0)
				w = -1;
		}
		if (w < 0) {
			rec_salvage_log(ctx, "%s/%s: write: %s", ctx->dir, name, strerror(errno));
			close(fd);
			return -1;
		}
		pos += (off_t)total;
		rec_salvage_chunk_done(r, c);
		r->bytes += len;
		r->lost += c->lost_before;
		ufs_scan(r, c->data + c->off, len);
	}
	if (r->lost_tail) {
		if (ufs_write_lost(fd, r->lost_tail) < 0) {
			rec_salvage_log(ctx, "%s/%s: write: %s", ctx->dir, name, strerror(errno));
			close(fd);
			return -1;
		}
		r->lost += r->lost_tail;
		rec_salvage_tail_done(r);
	}
	/* the blocks the killed writer took ahead past the end (sink_uftrace's steps, up to
	 * 64 MiB a thread): given back, as its close would have */
	rec_room_trim(fd);
	/* a thread killed before its first record: info cannot list an empty file, and a .dat
	 * that info does not list is an error to our reader (uftrace would ignore it) */
	if (fstat(fd, &st) == 0 && st.st_size == 0)
		unlinkat(ctx->dirfd, name, 0);
	close(fd);
	return 0;
}

/* the time of the first record in <tid>.dat (for a TASK line salvage has to add) */
static uint64_t ufs_first_time(struct rec_salvage_ctx *ctx, const struct rec_salvage_ring *r)
{
	struct uftrace_record rec;
	char name[32];
	uint64_t t = r->first_time ? r->first_time : r->session_ns;
	int fd;

	snprintf(name, sizeof(name), "%d.dat", (int)r->tid);
	fd = openat(ctx->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return t;
	for (off_t off = 0; pread(fd, &rec, sizeof(rec), off) == (ssize_t)sizeof(rec);
	     off += (off_t)sizeof(rec)) {
		if ((rec.word & 3) != UFTRACE_LOST) {
			t = rec.time;
			break;
		}
	}
	close(fd);
	return t;
}

/* "<sec>.<nsec>" (task.txt's stamps) in ns, 0 if it is not one */
static uint64_t ufs_stamp_ns(const char *ts)
{
	char *end;
	unsigned long long sec = strtoull(ts, &end, 10), ns;

	if (*end != '.' || strlen(end + 1) != 9)
		return 0;
	ns = strtoull(end + 1, NULL, 10);
	return (uint64_t)sec * 1000000000ull + ns;
}

/*
 * A trace no thread recorded anything into (its process killed first: every ring unborn or
 * empty, or none made) has task.txt, its map and .sym, and no <tid>.dat. uftrace's own
 * recorder writes info for such a program too, and uftrace 0.13 still refuses that trace
 * ("No data available": it opens one only with a non-empty <tid>.dat of a task of
 * task.txt). So the first task (the session's process, given its TASK line, stamped when
 * the session started, if task.txt has no task) gets a <tid>.dat of one LOST record of 0
 * events: a record that says nothing was recorded, and makes the trace one uftrace opens.
 * Only for a directory that is a flightrec uftrace trace (a SESS line, its map, .flightrec)
 * without info, and none of whose processes is alive (a live one writes info at its finish).
 */
static int ufs_mark_empty(struct rec_salvage_ctx *ctx, struct ufs_tasks *tasks)
{
	char name[64], line[160];
	struct stat st;
	int tid, fd;
	size_t n;

	snprintf(name, sizeof(name), "sid-%s.map", tasks->sess_sid);
	if (!tasks->sess_pid || faccessat(ctx->dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		return 0; /* not a trace the runtime began: nothing is invented */
	if (ctx->busy || rec_salvage_any_live(ctx->ringdirfd)) {
		rec_salvage_log(ctx, "%s: no records yet, and a process of it is alive (its "
				"finish writes info)", ctx->dir);
		return 0;
	}
	tid = tasks->sess_pid;
	if (tasks->nr && !ufs_tid_known(tasks, tid))
		tid = tasks->tids[0];
	if (!ufs_tid_known(tasks, tid)) {
		n = rec_snprintf(line, sizeof(line), "TASK timestamp=%s tid=%d pid=%d\n",
				 tasks->sess_ts, tid, tid);
		fd = rec_open_write(ctx->dirfd, "task.txt", O_APPEND);
		if (fd < 0 || rec_write_all(fd, line, n) < 0) {
			rec_salvage_log(ctx, "%s/task.txt: %s", ctx->dir, strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		close(fd);
	}
	snprintf(name, sizeof(name), "%d.dat", tid);
	fd = rec_open_write(ctx->dirfd, name, O_APPEND);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (st.st_size == 0 && ufs_write_lost(fd, 0) < 0)) {
		rec_salvage_log(ctx, "%s/%s: %s", ctx->dir, name,
				fd >= 0 && !S_ISREG(st.st_mode) ? "not a regular file" :
								  strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	rec_salvage_log(ctx, "%s: no thread recorded anything: thread %d's %s holds a LOST "
			"record of 0 events, for uftrace to open the trace", ctx->dir, tid, name);
	return 1;
}

/* info, listing every non-empty <tid>.dat, as the last finishing process would write it;
 * START and LAST: the session's start and its last record (UINT64_MAX, 0: unknown) */
static int ufs_info(struct rec_salvage_ctx *ctx, struct ufs_tasks *tasks, uint64_t start,
		    uint64_t last)
{
	struct uftrace_info_desc desc = { 0 };
	char exe[REC_PATH_MAX], spec[16384];
	struct timespec mono;
	int *tids = NULL, ntids, ret = 0;

	ntids = uftrace_info_scan_tids(ctx->dirfd, &tids);
	if (ntids == 0 && faccessat(ctx->dirfd, "info", F_OK, AT_SYMLINK_NOFOLLOW) < 0 &&
	    errno == ENOENT) {
		ret = ufs_mark_empty(ctx, tasks);
		if (ret > 0) {
			rec_mem_free(tids);
			ntids = uftrace_info_scan_tids(ctx->dirfd, &tids);
			uint64_t sess_ns = ufs_stamp_ns(tasks->sess_ts);

			if (start == UINT64_MAX && sess_ns)
				start = sess_ns;
			ret = 0;
		}
	}
	if (ntids > 0 && ret == 0) {
		if (uftrace_info_first_exename(ctx->dirfd, exe, sizeof(exe)) < 0)
			rec_snprintf(exe, sizeof(exe), "?");
		clock_gettime(CLOCK_MONOTONIC, &mono);
		uint64_t now = (uint64_t)mono.tv_sec * 1000000000ull + (uint64_t)mono.tv_nsec;
		if (start == UINT64_MAX || start > now)
			start = now;
		desc.exename = exe;
		desc.cmdline = ctx->opts->cmdline;
		desc.cmdline_len = desc.cmdline ? strlen(desc.cmdline) : 0;
		desc.tids = tids;
		desc.ntids = ntids;
		/* the session's start on the wall clock (the rings keep CLOCK_MONOTONIC) */
		desc.date = time(NULL) - (time_t)((now - start) / 1000000000ull);
		desc.elapsed_ns = last > start ? last - start : 0;
		desc.max_stack = UFS_MAX_STACK;
		/* -A/-R: the specs the runtime kept at its start */
		uftrace_info_load_spec(ctx->ringdirfd, spec, sizeof(spec), &desc);
		if (uftrace_info_put(ctx->dirfd, ctx->ringdirfd, ".info.salvage.tmp", &desc) < 0) {
			rec_salvage_log(ctx, "%s/info: %s", ctx->dir, strerror(errno));
			ret = -1;
		}
	} else if (ntids < 0) {
		rec_salvage_log(ctx, "%s: cannot list the .dat files", ctx->dir);
		ret = -1;
	}
	rec_mem_free(tids);
	return ret;
}

/*
 * Is DIRFD/info what the last finish leaves: uftrace's header, a taskinfo:tids line listing
 * exactly the non-empty <tid>.dat files, and the uftrace_version line uftrace_info writes
 * last? A finishing process removes its rings before it writes info: killed in between (or
 * in a rewrite in place) it left none, half of one, or one without its own threads (a fork
 * sibling's), which no ring would make salvage rewrite (review of the reserved inode: 'tid N
 * is not in info taskinfo:tids', or 0 bytes). 1: whole, 0: not, -1: unreadable.
 */
static int ufs_info_whole(struct rec_salvage_ctx *ctx)
{
	char buf[65536], *p;
	int *tids = NULL, ntids, fd, whole = 0;
	ssize_t n;

	fd = openat(ctx->dirfd, "info", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	if (n < UFTRACE_HEADER_SIZE || memcmp(buf, UFTRACE_MAGIC, 8) != 0 ||
	    !memmem(buf + UFTRACE_HEADER_SIZE, (size_t)n - UFTRACE_HEADER_SIZE,
		    "\nuftrace_version:", 17))
		return 0;
	p = memmem(buf + UFTRACE_HEADER_SIZE, (size_t)n - UFTRACE_HEADER_SIZE,
		   "\ntaskinfo:tids=", 15);
	ntids = uftrace_info_scan_tids(ctx->dirfd, &tids);
	if (p && ntids >= 0) {
		p += 15;
		whole = 1;
		for (int i = 0; i < ntids && whole; i++) {
			char *end;
			long v = strtol(p, &end, 10);

			whole = end != p && v == tids[i] && (*end == ',' ? i + 1 < ntids :
							    *end == '\n' && i + 1 == ntids);
			p = end + 1;
		}
		whole &= ntids > 0 || *p == '\n';
	}
	rec_mem_free(tids);
	return ntids < 0 ? -1 : whole;
}

/* no uftrace ring in the directory: its info, if its processes died before any record, or
 * while the last of them was writing it (ufs_info_whole) */
static int ufs_ringless(struct rec_salvage_ctx *ctx)
{
	struct ufs_tasks tasks = { 0 };
	int ret = 0, whole;

	if (faccessat(ctx->dirfd, "task.txt", F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		return 0; /* no uftrace trace */
	if (ctx->busy || rec_salvage_any_live(ctx->ringdirfd))
		return 0; /* being written: task.txt and info are left alone too */
	flock(ctx->dirfd, LOCK_EX);
	whole = ufs_info_whole(ctx);
	if (whole == 0) {
		if (faccessat(ctx->dirfd, "info", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
			rec_salvage_log(ctx, "%s/info: not whole, or not listing every thread's "
					".dat (its writer killed): written again", ctx->dir);
		if (ufs_read_tasks(ctx, &tasks) < 0 || ufs_info(ctx, &tasks, UINT64_MAX, 0) < 0)
			ret = -1;
	} else if (whole < 0) {
		rec_salvage_log(ctx, "%s/info: %s", ctx->dir, strerror(errno));
		ret = -1;
	}
	flock(ctx->dirfd, LOCK_UN);
	free(tasks.tids);
	return ret;
}

static int ufs_salvage(struct rec_salvage_ctx *ctx, struct rec_salvage_ring **rings, size_t nr)
{
	struct ufs_tasks tasks = { 0 };
	uint64_t start = UINT64_MAX, last = 0;
	int ret = 0;

	/* the finishing processes of this trace serialise on the same lock */
	flock(ctx->dirfd, LOCK_EX);
	if (ufs_read_tasks(ctx, &tasks) < 0)
		ret = -1;
	for (size_t i = 0; i < nr; i++) {
		struct rec_salvage_ring *r = rings[i];
		if (ufs_salvage_thread(ctx, r) < 0) {
			ret = -1;
			continue;
		}
		r->ok = true;
		if (r->session_ns < start)
			start = r->session_ns;
		if (r->last_time > last)
			last = r->last_time;
	}
	/* a thread killed in the middle of writing its TASK line (cut above) */
	for (size_t i = 0; i < nr && ret == 0; i++) {
		struct rec_salvage_ring *r = rings[i];
		char line[128];
		size_t n;
		int fd;

		snprintf(line, sizeof(line), "%d.dat", (int)r->tid);
		if (!r->ok || ufs_tid_known(&tasks, r->tid) ||
		    faccessat(ctx->dirfd, line, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* no records, no line needed */
		uint64_t t = ufs_first_time(ctx, r);
		n = rec_snprintf(line, sizeof(line), "TASK timestamp=%llu.%09llu tid=%d pid=%d\n",
				 (unsigned long long)(t / 1000000000ull),
				 (unsigned long long)(t % 1000000000ull), (int)r->tid, (int)r->pid);
		fd = rec_open_write(ctx->dirfd, "task.txt", O_APPEND);
		if (fd < 0 || rec_write_all(fd, line, n) < 0) {
			rec_salvage_log(ctx, "%s/task.txt: %s", ctx->dir, strerror(errno));
			ret = -1;
		} else {
			rec_salvage_log(ctx, "%s/task.txt: TASK line of thread %d added", ctx->dir,
					(int)r->tid);
		}
		if (fd >= 0)
			close(fd);
	}

	if (ufs_info(ctx, &tasks, start, last) < 0)
		ret = -1;
	flock(ctx->dirfd, LOCK_UN);
	free(tasks.tids);
	if (ret < 0)
		for (size_t i = 0; i < nr; i++)
			rings[i]->ok = false; /* kept: the next salvage completes the metadata */
	return ret;
}

const struct rec_salvage_format uftrace_salvager = {
	.name = "uftrace",
	.salvage = ufs_salvage,
	.ringless = ufs_ringless,
};
