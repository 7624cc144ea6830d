/*
 * uftrace_info: write uftrace.data's info file and scan the directory for what it lists
 * (see uftrace_info.h). Slow-path code, called once per finishing process or salvage. A
 * finish runs in the program (its exit, or the flusher after a fatal signal), so nothing here
 * calls malloc or stdio: mmap'ed memory, getdents64 and read (rec_util.h says why).
 */
#include "formats/uftrace/uftrace_info.h"
#include "formats/uftrace/uftrace_autoargs.h"
#include "librecord/rec_config.h"
#include "librecord/rec_util.h"
#include "formats/uftrace/uftrace_format.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct ubuf {
	char *p;
	size_t len, cap;
	int failed;
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
		if (n < 0) {
			b->failed = 1;
			return;
		}
		if (b->p && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = (b->cap ? b->cap * 2 : 4096) + (size_t)n;
		char *np = rec_mem_grow(b->p, cap);
		if (!np) {
			b->failed = 1;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
}

static int uftrace_tid_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

struct uftrace_tids {
	int dirfd;
	int *v;
	size_t n, cap;
	int failed;
};

static int uftrace_info_tid(void *arg, const char *name)
{
	struct uftrace_tids *t = arg;
	char *end;
	long tid = strtol(name, &end, 10);
	struct stat st;

	if (end == name || strcmp(end, ".dat") != 0 || tid <= 0 || tid > 0x7fffffff)
		return 0;
	if (fstatat(t->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size == 0)
		return 0;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		int *nv = rec_mem_grow(t->v, cap * sizeof(*nv));
		if (!nv) {
			t->failed = 1;
			return 1; /* stop: what was found so far is listed */
		}
		t->v = nv;
		t->cap = cap;
	}
	t->v[t->n++] = (int)tid;
	return 0;
}

int uftrace_info_scan_tids(int dirfd, int **out)
{
	struct uftrace_tids t = { .dirfd = dirfd };

	*out = NULL;
	if (rec_dir_each(dirfd, "", 0, uftrace_info_tid, &t) < 0)
		return -1;
	rec_sort(t.v, t.n, sizeof(*t.v), uftrace_tid_cmp);
	*out = t.v;
	return (int)t.n;
}

int uftrace_info_first_exename(int dirfd, char *buf, size_t size)
{
	char line[REC_PATH_MAX + 128];
	int fd = openat(dirfd, "task.txt", O_RDONLY | O_NOFOLLOW | O_CLOEXEC), ret = -1;
	struct rec_lines in;

	if (fd < 0)
		return -1;
	rec_lines_init(&in, fd);
	while (rec_lines_next(&in, line, sizeof(line)) >= 0) {
		char *p = strstr(line, "exename=\"");
		if (strncmp(line, "SESS ", 5) != 0 || !p)
			continue;
		p += 9;
		char *q = strrchr(p, '"');
		if (q) {
			*q = '\0';
			rec_snprintf(buf, size, "%s", p);
			ret = 0;
		}
		break;
	}
	close(fd);
	return ret;
}

static void uftrace_info_cmdline(struct ubuf *b, const char *s, size_t n)
{
	/* arguments end at NULs; a trailing NUL is not an empty argument */
	while (n > 0 && s[n - 1] == '\0')
		n--;
	ubuf_add(b, "cmdline:");
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '\0' || c == '\n')
			ubuf_add(b, " ");
		else if (c == '"' || c == '\\')
			ubuf_add(b, "\\%c", c);
		else
			ubuf_add(b, "%c", c);
	}
	ubuf_add(b, "\n");
}

/* cpuinfo, as uftrace writes it: its readers take the architecture from the description,
 * which register names in argspecs (%rdi, %xmm0) need */
static void uftrace_info_cpuinfo(struct ubuf *b)
{
	char buf[8192], *p, *e;
	ssize_t n = 0;
	int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	buf[n > 0 ? n : 0] = '\0';
	p = strstr(buf, "model name\t: ");
	p = p ? p + 13 : NULL;
	e = p ? strchr(p, '\n') : NULL;
	ubuf_add(b, "cpuinfo:lines=2\ncpuinfo:nr_cpus=%ld / %ld (online/possible)\n",
		 sysconf(_SC_NPROCESSORS_ONLN), sysconf(_SC_NPROCESSORS_CONF));
	ubuf_add(b, "cpuinfo:desc=%.*s\n", p && e ? (int)(e - p) : 6, p && e ? p : "x86_64");
}

/* argauto, retauto and enumauto: the table, as uftrace's readers parse it ("NAME@ITEMS;...") */
static void uftrace_info_autoargs(struct ubuf *b)
{
	const struct uftrace_autoarg *e;

	ubuf_add(b, "argauto:");
	for (size_t i = 0; (e = uftrace_autoarg_at(i)) != NULL; i++)
		if (e->args)
			ubuf_add(b, "%s@%s;", e->name, e->args);
	ubuf_add(b, "\nretauto:");
	for (size_t i = 0; (e = uftrace_autoarg_at(i)) != NULL; i++)
		if (e->ret)
			ubuf_add(b, "%s@%s;", e->name, e->ret);
	ubuf_add(b, "\nenumauto:%s\n", uftrace_autoarg_enums);
}

static int uftrace_info_dbg(void *arg, const char *name)
{
	size_t n = strlen(name);

	(void)arg;
	return n > 4 && !strcmp(name + n - 4, ".dbg");
}

/* how uftrace_info_emit puts the bytes: through a temporary name renamed into place, or over
 * `info` itself (no inode to spare: uftrace_info_put) */
enum uftrace_info_how { UFTRACE_INFO_RENAME, UFTRACE_INFO_IN_PLACE };

static int uftrace_info_emit(int dirfd, const char *tmpname, const struct uftrace_info_desc *d,
			     enum uftrace_info_how how)
{
	struct ubuf b = { 0 };
	uint8_t hdr[UFTRACE_HEADER_SIZE];
	uint64_t feat = UFTRACE_FEAT_TASK_SESSION | UFTRACE_FEAT_SYM_REL_ADDR |
			UFTRACE_FEAT_MAX_STACK;
	uint64_t info = UFTRACE_INFO_EXE_NAME | UFTRACE_INFO_CMDLINE | UFTRACE_INFO_TASKINFO |
			UFTRACE_INFO_RECORD_DATE | UFTRACE_INFO_VERSION;
	uint16_t max_stack = d->max_stack > 65535 ? 65535 : (uint16_t)d->max_stack;
	uint32_t version = UFTRACE_FILE_VERSION;
	uint16_t hsize = UFTRACE_HEADER_SIZE;
	char date[64];
	int fd, bad, saved;
	int nspec = (d->argspec != NULL) + (d->retspec != NULL);
	int autoa = !!d->auto_args;

	/* -A/-R/-a: the spec strings uftrace's readers lay the payloads out by, our table of
	 * prototypes (what "-A FUNC" and -a recorded: uftrace_autoargs.h) and how the patterns
	 * match (uftrace 0.13's fill_arg_spec and fill_pattern_type) */
	if (d->argspec || autoa)
		feat |= UFTRACE_FEAT_ARGUMENT;
	if (d->retspec || autoa)
		feat |= UFTRACE_FEAT_RETVAL;
	/* uftrace record's check: any <module>.dbg (libmcount's DWARF-described functions,
	 * mcount_dwarf.h) tells its readers to take the argument formats from there, -a's
	 * included (data-file.c: "." instead of the table's names) */
	if (rec_dir_each(dirfd, "", 0, uftrace_info_dbg, NULL) > 0)
		feat |= UFTRACE_FEAT_DEBUG_INFO;
	if (nspec || autoa) {
		feat |= UFTRACE_FEAT_AUTO_ARGS;
		info |= UFTRACE_INFO_CPUINFO | UFTRACE_INFO_ARG_SPEC | UFTRACE_INFO_PATTERN_TYPE;
	}

	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, UFTRACE_MAGIC, 8);
	memcpy(hdr + 8, &version, 4);
	memcpy(hdr + 12, &hsize, 2);
	hdr[14] = 1; /* ELFDATA2LSB */
	hdr[15] = 2; /* ELFCLASS64 */
	memcpy(hdr + 16, &feat, 8);
	memcpy(hdr + 24, &info, 8);
	memcpy(hdr + 32, &max_stack, 2);

	ubuf_add(&b, "exename:%s\n", d->exename);
	uftrace_info_cmdline(&b, d->cmdline ? d->cmdline : d->exename,
			     d->cmdline ? d->cmdline_len : strlen(d->exename));
	if (nspec || autoa)
		uftrace_info_cpuinfo(&b);
	ubuf_add(&b, "taskinfo:lines=2\ntaskinfo:nr_tid=%d\ntaskinfo:tids=", d->ntids);
	for (int i = 0; i < d->ntids; i++)
		ubuf_add(&b, "%s%d", i ? "," : "", d->tids[i]);
	ubuf_add(&b, "\n");
	if (nspec || autoa) {
		ubuf_add(&b, "argspec:lines=%d\n", nspec + 3 + autoa);
		if (d->argspec)
			ubuf_add(&b, "argspec:%s\n", d->argspec);
		if (d->retspec)
			ubuf_add(&b, "retspec:%s\n", d->retspec);
		uftrace_info_autoargs(&b);
		if (autoa)
			ubuf_add(&b, "auto-args:1\n");
	}
	/* in UTC: the local zone is read from its file with stdio the first time (rec_util.h) */
	rec_ctime_utc((long long)d->date, date);
	ubuf_add(&b, "record_date:%s\nelapsed_time:%llu.%09llu sec\n", date,
		 (unsigned long long)(d->elapsed_ns / 1000000000ull),
		 (unsigned long long)(d->elapsed_ns % 1000000000ull));
	if (nspec || autoa)
		ubuf_add(&b, "pattern_type:%s\n", d->pattern_type ? d->pattern_type : "regex");
	ubuf_add(&b, "uftrace_version:v0.13 ( x86_64 flightrec )\n");
	if (b.failed) {
		rec_mem_free(b.p);
		errno = ENOMEM;
		return -1;
	}

	if (how == UFTRACE_INFO_IN_PLACE) {
		/* over the existing file, never truncated first nor removed on failure: info is a
		 * few KiB, so the new bytes mostly land in blocks it already has, and a write the
		 * full file system refuses leaves the older info (whole, or its head rewritten),
		 * not none (e2e-stress inodes/mcount-finish-fork; salvage checks it again) */
		fd = openat(dirfd, "info", O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			rec_mem_free(b.p);
			return -1;
		}
		bad = rec_pwrite_all(fd, hdr, sizeof(hdr), 0) < 0 ||
		      (b.p && rec_pwrite_all(fd, b.p, b.len, sizeof(hdr)) < 0) ||
		      ftruncate(fd, (off_t)(sizeof(hdr) + b.len)) < 0;
		saved = errno;
		close(fd);
		rec_mem_free(b.p);
		errno = saved;
		return bad ? -1 : 0;
	}
	fd = rec_open_write(dirfd, tmpname, O_TRUNC);
	if (fd < 0) {
		rec_mem_free(b.p);
		return -1;
	}
	bad = rec_write_all(fd, hdr, sizeof(hdr)) < 0 || (b.p && rec_write_all(fd, b.p, b.len) < 0);
	saved = errno;
	close(fd);
	rec_mem_free(b.p);
	if (bad || renameat(dirfd, tmpname, dirfd, "info") < 0) {
		saved = bad ? saved : errno;
		unlinkat(dirfd, tmpname, 0);
		errno = saved;
		return -1;
	}
	return 0;
}

int uftrace_info_write(int dirfd, const char *tmpname, const struct uftrace_info_desc *d)
{
	return uftrace_info_emit(dirfd, tmpname, d, UFTRACE_INFO_RENAME);
}

int uftrace_info_reserve(int dirfd, int ringdirfd)
{
	int fd = rec_open_write(ringdirfd, UFTRACE_INFO_SPARE, 0), saved;

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	saved = errno;
	if (faccessat(dirfd, "info", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	errno = saved;
	return -1;
}

int uftrace_info_put(int dirfd, int ringdirfd, const char *tmpname,
		     const struct uftrace_info_desc *d)
{
	int saved;

	/* the reserved inode under TMPNAME: opened O_TRUNC below, nothing new made. A rename
	 * within one file system (.flightrec is the trace's subdirectory) takes no inode */
	if (ringdirfd >= 0)
		(void)renameat(ringdirfd, UFTRACE_INFO_SPARE, dirfd, tmpname);
	if (uftrace_info_write(dirfd, tmpname, d) == 0)
		return 0;
	saved = errno;
	if ((saved != ENOSPC && saved != EDQUOT) ||
	    faccessat(dirfd, "info", F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
		errno = saved;
		return -1;
	}
	/* no inode and no spare (an earlier finisher took it): this trace's info exists, so
	 * its own inode is rewritten in place; not atomic, but the finishers are serialised
	 * by flock(dirfd), and a failed rewrite keeps the file (uftrace_info_emit) */
	return uftrace_info_emit(dirfd, "info", d, UFTRACE_INFO_IN_PLACE);
}

int uftrace_info_save_spec(int ringdirfd, const char *argspec, const char *retspec,
			   const char *pattern_type, int auto_args)
{
	struct ubuf b = { 0 };
	int fd, bad, saved;

	if (!argspec && !retspec && !auto_args)
		return 0;
	/* one line each, as in info; a line not there is a spec not given */
	if (argspec)
		ubuf_add(&b, "argspec:%s\n", argspec);
	if (retspec)
		ubuf_add(&b, "retspec:%s\n", retspec);
	if (pattern_type)
		ubuf_add(&b, "pattern_type:%s\n", pattern_type);
	if (auto_args)
		ubuf_add(&b, "auto-args:1\n");
	if (b.failed) {
		rec_mem_free(b.p);
		errno = ENOMEM;
		return -1;
	}
	fd = rec_open_write(ringdirfd, UFTRACE_SPEC_FILE, O_TRUNC);
	if (fd < 0) {
		rec_mem_free(b.p);
		return -1;
	}
	bad = rec_write_all(fd, b.p, b.len) < 0;
	saved = errno;
	close(fd);
	rec_mem_free(b.p);
	errno = saved;
	return bad ? -1 : 0;
}

void uftrace_info_load_spec(int ringdirfd, char *buf, size_t len, struct uftrace_info_desc *d)
{
	int fd = openat(ringdirfd, UFTRACE_SPEC_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n;
	char *p, *e;

	if (fd < 0 || len == 0) {
		if (fd >= 0)
			close(fd);
		return;
	}
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	for (p = buf; *p; p = e) {
		e = strchr(p, '\n');
		if (!e)
			break; /* a cut line: not trusted */
		*e++ = '\0';
		if (!strncmp(p, "argspec:", 8))
			d->argspec = p + 8;
		else if (!strncmp(p, "retspec:", 8))
			d->retspec = p + 8;
		else if (!strncmp(p, "pattern_type:", 13))
			d->pattern_type = p + 13;
		else if (!strcmp(p, "auto-args:1"))
			d->auto_args = 1;
	}
}
