/*
 * sink_uftrace: the uftrace.data writer (the rules uftrace 0.13 enforces are in
 * shared/anchors/uftrace.md).
 *
 * Files and who writes them:
 *   sid-<sid>.map  open_session: /proc/self/maps, one line per file-backed module (start of
 *                  its first mapping, end of its last) plus the [stack] line uftrace needs
 *   <exe>.sym      open_session: the executable's functions (old format, sorted)
 *   task.txt       SESS at open_session, TASK at open_thread, FORK in a fork child; each line
 *                  is one O_APPEND write, so processes sharing the directory never interleave
 *   <tid>.dat      the chunks' records verbatim, a LOST record before a chunk (or at close)
 *                  whenever events were lost; O_APPEND so an exec'ed image continues the file
 *   info           finish: header + sections; rewritten by every finishing process under
 *                  flock(dir), listing every non-empty <tid>.dat, so the last one is complete
 * Timestamps everywhere come from rec_clock_ns(), the same clock as the records, so a SESS or
 * TASK line is never later than the first record it covers.
 */
#include "librecord/sink_uftrace.h"
#include "librecord/rec_session.h"
#include "librecord/rec_util.h"
#include "librecord/uftrace_format.h"
#include "librecord/uftrace_sym.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static pid_t uftrace_forked_tid; /* the fork child's first thread: FORK line, no TASK */

/* Append one line to task.txt with a single write. */
static void uftrace_append_task(const char *line, size_t len)
{
	int fd = rec_open_write(rec_sess.dirfd, "task.txt", O_APPEND);
	if (fd < 0) {
		rec_warn("cannot open %s/task.txt:", rec_sess.dir);
		return;
	}
	rec_write_all(fd, line, len);
	close(fd);
}

static void uftrace_make_sid(char sid[17])
{
	uint8_t r[8];
	if (getrandom(r, sizeof(r), GRND_NONBLOCK) != sizeof(r)) {
		uint64_t x = rec_clock_tsc() ^ ((uint64_t)getpid() << 32);
		memcpy(r, &x, sizeof(r));
	}
	for (int i = 0; i < 8; i++)
		rec_snprintf(sid + 2 * i, 3, "%02x", r[i]);
}

/* One line per module: what uftrace's map reader wants (and libmcount 0.13 writes). */
static int uftrace_write_map(void)
{
	char name[64], line[REC_PATH_MAX + 256], out[REC_PATH_MAX + 256];
	char cur_path[REC_PATH_MAX] = "", cur_prot[5] = "";
	unsigned long long cur_start = 0, cur_end = 0;
	FILE *in, *f;
	int fd;

	rec_snprintf(name, sizeof(name), "sid-%s.map", rec_sess.sid);
	in = fopen("/proc/self/maps", "re");
	if (!in)
		return -1;
	fd = rec_open_write(rec_sess.dirfd, name, O_TRUNC);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		if (fd >= 0)
			close(fd);
		fclose(in);
		return -1;
	}
	while (fgets(line, sizeof(line), in)) {
		unsigned long long start, end;
		char prot[5], path[REC_PATH_MAX];
		int off = 0;

		path[0] = '\0';
		if (sscanf(line, "%llx-%llx %4s %*x %*s %*u %n", &start, &end, prot, &off) < 3)
			continue;
		if (off > 0)
			sscanf(line + off, "%4095[^\n]", path);
		if (path[0] != '/' && strcmp(path, "[stack]") != 0)
			continue;
		if (cur_path[0] && strcmp(path, cur_path) == 0) {
			cur_end = end;
			if (prot[2] == 'x')
				memcpy(cur_prot, prot, sizeof(cur_prot));
			continue;
		}
		if (cur_path[0]) {
			rec_snprintf(out, sizeof(out), "%llx-%llx %s %08x %s %u %-26s %s\n", cur_start,
				     cur_end, cur_prot, 0, "00:00", 0, "", cur_path);
			fputs(out, f);
		}
		rec_snprintf(cur_path, sizeof(cur_path), "%s", path);
		memcpy(cur_prot, prot, sizeof(cur_prot));
		cur_start = start;
		cur_end = end;
	}
	if (cur_path[0]) {
		rec_snprintf(out, sizeof(out), "%llx-%llx %s %08x %s %u %-26s %s\n", cur_start, cur_end,
			     cur_prot, 0, "00:00", 0, "", cur_path);
		fputs(out, f);
	}
	fclose(in);
	return fclose(f) == 0 ? 0 : -1;
}

static size_t uftrace_stamp(char *buf, size_t size, uint64_t ns)
{
	return rec_snprintf(buf, size, "%llu.%09llu", (unsigned long long)(ns / 1000000000ull),
			    (unsigned long long)(ns % 1000000000ull));
}

static int uftrace_open_session(struct rec_session *s)
{
	char line[REC_PATH_MAX + 128], ts[32], symname[REC_PATH_MAX];
	const char *base;
	size_t n;

	uftrace_make_sid(s->sid);
	if (uftrace_write_map() < 0)
		return -1; /* the session says so, once */
	uftrace_stamp(ts, sizeof(ts), s->start_ns);
	n = rec_snprintf(line, sizeof(line), "SESS timestamp=%s pid=%d sid=%s exename=\"%s\"\n", ts,
			 (int)s->pid, s->sid, s->exe);
	uftrace_append_task(line, n);

	base = strrchr(s->exe, '/');
	base = base ? base + 1 : s->exe;
	rec_snprintf(symname, sizeof(symname), "%s.sym", base);
	if (uftrace_sym_write(s->dirfd, s->exe, symname) < 0)
		rec_debug("no symbols written for %s (uftrace reads the ELF file instead)", s->exe);
	return 0;
}

static void uftrace_fork_child(struct rec_session *s, pid_t ppid)
{
	char line[128], ts[32];
	size_t n;

	uftrace_forked_tid = s->pid;
	uftrace_stamp(ts, sizeof(ts), s->start_ns);
	n = rec_snprintf(line, sizeof(line), "FORK timestamp=%s pid=%d ppid=%d\n", ts, (int)s->pid,
			 (int)ppid);
	uftrace_append_task(line, n);
}

static int uftrace_open_thread(struct rec_session *s, struct rec_thread *t)
{
	char name[32], line[128], ts[32];
	size_t n;

	rec_snprintf(name, sizeof(name), "%d.dat", (int)t->tid);
	t->sink_fd = rec_open_write(s->dirfd, name, O_APPEND);
	if (t->sink_fd < 0) {
		rec_warn("cannot open %s/%s:", s->dir, name);
		return -1;
	}
	if (t->tid == uftrace_forked_tid)
		return 0; /* the FORK line stands for it, as uftrace writes it */
	uftrace_stamp(ts, sizeof(ts), rec_clock_ns());
	n = rec_snprintf(line, sizeof(line), "TASK timestamp=%s tid=%d pid=%d\n", ts, (int)t->tid,
			 (int)s->pid);
	uftrace_append_task(line, n);
	return 0;
}

static int uftrace_write_chunk(struct rec_session *s, struct rec_thread *t, const uint8_t *data,
			       size_t len, uint64_t lost_before)
{
	struct uftrace_record lost = { 0, uftrace_record_word(UFTRACE_LOST, 0, lost_before) };
	struct iovec iov[2];
	int n = 0;

	(void)s;
	if (t->sink_fd < 0)
		return -1;
	if (lost_before) {
		iov[n].iov_base = &lost;
		iov[n++].iov_len = sizeof(lost);
	}
	iov[n].iov_base = (void *)data;
	iov[n++].iov_len = len;
	/* O_APPEND + one writev per chunk; short writes are finished with plain writes */
	size_t total = (lost_before ? sizeof(lost) : 0) + len;
	ssize_t w = writev(t->sink_fd, iov, n);
	if (w < 0)
		return -1;
	if ((size_t)w < total) {
		size_t done = (size_t)w;
		if (lost_before && done < sizeof(lost)) {
			if (rec_write_all(t->sink_fd, (uint8_t *)&lost + done, sizeof(lost) - done))
				return -1;
			done = sizeof(lost);
		}
		size_t d = done - (lost_before ? sizeof(lost) : 0);
		if (rec_write_all(t->sink_fd, data + d, len - d))
			return -1;
	}
	return 0;
}

static void uftrace_close_thread(struct rec_session *s, struct rec_thread *t, uint64_t lost_after)
{
	(void)s;
	if (t->sink_fd < 0)
		return;
	if (lost_after) {
		struct uftrace_record lost = { 0,
					       uftrace_record_word(UFTRACE_LOST, 0, lost_after) };
		rec_write_all(t->sink_fd, &lost, sizeof(lost));
	}
	close(t->sink_fd);
	t->sink_fd = -1;
}

/* --- info ------------------------------------------------------------------------------ */

struct ubuf {
	char *p;
	size_t len, cap;
};

static void ubuf_add(struct ubuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ubuf_add(struct ubuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (b->p && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = (b->cap ? b->cap * 2 : 4096) + (size_t)n;
		char *np = realloc(b->p, cap);
		if (!np)
			return;
		b->p = np;
		b->cap = cap;
	}
}

static int uftrace_tid_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* Every non-empty <tid>.dat in the directory: all processes that share it are listed. */
static int uftrace_scan_tids(int **out)
{
	int dfd = dup(rec_sess.dirfd), *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	if (dfd < 0 || !(d = fdopendir(dfd))) {
		if (dfd >= 0)
			close(dfd);
		return -1;
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);
		struct stat st;
		if (end == de->d_name || strcmp(end, ".dat") != 0 || tid <= 0)
			continue;
		if (fstatat(rec_sess.dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || st.st_size == 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			int *nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		v[n++] = (int)tid;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), uftrace_tid_cmp);
	*out = v;
	return (int)n;
}

/* The exename of the first SESS line: the program the user recorded, even after exec. */
static void uftrace_first_exename(char *buf, size_t size)
{
	char line[REC_PATH_MAX + 128];
	int fd = openat(rec_sess.dirfd, "task.txt", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	FILE *f;

	rec_snprintf(buf, size, "%s", rec_sess.exe);
	if (fd < 0 || !(f = fdopen(fd, "r"))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "exename=\"");
		if (strncmp(line, "SESS ", 5) != 0 || !p)
			continue;
		p += 9;
		char *q = strrchr(p, '"');
		if (q) {
			*q = '\0';
			rec_snprintf(buf, size, "%s", p);
		}
		break;
	}
	fclose(f);
}

static void uftrace_cmdline(struct ubuf *b)
{
	char buf[8192];
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	ubuf_add(b, "cmdline:");
	for (ssize_t i = 0; i < n; i++) {
		char c = buf[i];
		if (c == '\0') {
			if (i + 1 < n)
				ubuf_add(b, " ");
		} else if (c == '"' || c == '\\') {
			ubuf_add(b, "\\%c", c);
		} else if (c == '\n') {
			ubuf_add(b, " ");
		} else {
			ubuf_add(b, "%c", c);
		}
	}
	ubuf_add(b, "\n");
}

static void uftrace_finish(struct rec_session *s)
{
	char exe[REC_PATH_MAX], tmp[64], date[64];
	struct ubuf b = { 0 };
	uint8_t hdr[UFTRACE_HEADER_SIZE];
	uint64_t feat = UFTRACE_FEAT_TASK_SESSION | UFTRACE_FEAT_SYM_REL_ADDR |
			UFTRACE_FEAT_MAX_STACK;
	uint64_t info = UFTRACE_INFO_EXE_NAME | UFTRACE_INFO_CMDLINE | UFTRACE_INFO_TASKINFO |
			UFTRACE_INFO_RECORD_DATE | UFTRACE_INFO_VERSION;
	uint16_t max_stack = s->cfg.max_stack > 65535 ? 65535 : (uint16_t)s->cfg.max_stack;
	uint32_t version = UFTRACE_FILE_VERSION;
	uint16_t hsize = UFTRACE_HEADER_SIZE;
	uint64_t now = rec_clock_ns(), elapsed = now - s->start_ns;
	time_t wall = time(NULL);
	int *tids = NULL, ntids, fd;

	/* serialise finishing processes: the last to take the lock sees every .dat */
	flock(s->dirfd, LOCK_EX);
	ntids = uftrace_scan_tids(&tids);
	if (ntids <= 0) {
		flock(s->dirfd, LOCK_UN);
		free(tids);
		return;
	}
	uftrace_first_exename(exe, sizeof(exe));

	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, UFTRACE_MAGIC, 8);
	memcpy(hdr + 8, &version, 4);
	memcpy(hdr + 12, &hsize, 2);
	hdr[14] = 1; /* ELFDATA2LSB */
	hdr[15] = 2; /* ELFCLASS64 */
	memcpy(hdr + 16, &feat, 8);
	memcpy(hdr + 24, &info, 8);
	memcpy(hdr + 32, &max_stack, 2);

	ubuf_add(&b, "exename:%s\n", exe);
	uftrace_cmdline(&b);
	ubuf_add(&b, "taskinfo:lines=2\ntaskinfo:nr_tid=%d\ntaskinfo:tids=", ntids);
	for (int i = 0; i < ntids; i++)
		ubuf_add(&b, "%s%d", i ? "," : "", tids[i]);
	ubuf_add(&b, "\n");
	ctime_r(&wall, date);
	date[strcspn(date, "\n")] = '\0';
	ubuf_add(&b, "record_date:%s\nelapsed_time:%llu.%09llu sec\n", date,
		 (unsigned long long)(elapsed / 1000000000ull),
		 (unsigned long long)(elapsed % 1000000000ull));
	ubuf_add(&b, "uftrace_version:v0.13 ( x86_64 flightrec )\n");

	rec_snprintf(tmp, sizeof(tmp), ".info.%d.tmp", (int)s->pid);
	fd = rec_open_write(s->dirfd, tmp, O_TRUNC);
	if (fd >= 0) {
		int bad = rec_write_all(fd, hdr, sizeof(hdr)) < 0 ||
			  (b.p && rec_write_all(fd, b.p, b.len) < 0);
		close(fd);
		if (bad || renameat(s->dirfd, tmp, s->dirfd, "info") < 0) {
			rec_warn("cannot write %s/info:", s->dir);
			unlinkat(s->dirfd, tmp, 0);
		}
	} else {
		rec_warn("cannot write %s/info:", s->dir);
	}
	flock(s->dirfd, LOCK_UN);
	free(b.p);
	free(tids);
}

const struct rec_sink rec_sink_uftrace = {
	.name = "uftrace",
	.open_session = uftrace_open_session,
	.fork_child = uftrace_fork_child,
	.open_thread = uftrace_open_thread,
	.write_chunk = uftrace_write_chunk,
	.close_thread = uftrace_close_thread,
	.finish = uftrace_finish,
};
