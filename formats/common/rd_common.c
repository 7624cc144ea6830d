/*
 * rd_common: error reporting, bounded file loading, line iteration and strict token
 * scanning shared by all readers. See rd_common.h for the invariants.
 */
#include "formats/common/rd_common.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

void rd_error_clear(struct rd_error *err)
{
	err->rule = 0;
	err->offset = -1;
	err->file[0] = '\0';
	err->msg[0] = '\0';
}

bool rd_error_isset(const struct rd_error *err)
{
	return err->rule != 0;
}

int rd_error_set(struct rd_error *err, int rule, const char *file, int64_t offset, const char *fmt,
		 ...)
{
	va_list ap;

	if (err == NULL || err->rule != 0)
		return -1;

	err->rule = rule;
	err->offset = offset;
	snprintf(err->file, sizeof(err->file), "%s", file ? file : "");
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -1;
}

struct rd_progress rd_progress;

void rd_error_print(FILE *fp, const struct rd_error *err)
{
	if (rd_progress.clear)
		rd_progress.clear();
	if (err->offset >= 0)
		fprintf(fp, "flightrec: %s: offset 0x%" PRIx64 ": %s\n", err->file,
			(uint64_t)err->offset, err->msg);
	else
		fprintf(fp, "flightrec: %s: %s\n", err->file, err->msg);
}

int rd_load_file(const char *path, size_t max, struct rd_buf *out, int rule_io, int rule_big,
		 struct rd_error *err)
{
	struct stat st;
	size_t cap, len = 0;
	char *data;
	int fd;

	out->data = NULL;
	out->len = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rd_error_set(err, rule_io, path, -1, "cannot open: %s", strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return rd_error_set(err, rule_io, path, -1, "not a regular file");
	}
	if ((uint64_t)st.st_size > max) {
		close(fd);
		return rd_error_set(err, rule_big, path, -1,
				    "file is %" PRIu64
				    " bytes, more than this reader's limit of %zu",
				    (uint64_t)st.st_size, max);
	}

	/* st_size is a hint only: the file may change under us, so read() decides */
	cap = (size_t)st.st_size + 1;
	data = malloc(cap + 1);
	if (data == NULL) {
		close(fd);
		return rd_error_set(err, rule_io, path, -1, "out of memory");
	}
	for (;;) {
		ssize_t n = read(fd, data + len, cap - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			free(data);
			close(fd);
			return rd_error_set(err, rule_io, path, -1, "read error: %s", strerror(e));
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == cap) {
			/* grew since fstat: re-check against the limit */
			char *bigger;

			if (cap > max) {
				free(data);
				close(fd);
				return rd_error_set(err, rule_big, path, -1,
						    "file grows past this reader's limit of %zu",
						    max);
			}
			cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			bigger = realloc(data, cap + 1);
			if (bigger == NULL) {
				free(data);
				close(fd);
				return rd_error_set(err, rule_io, path, -1, "out of memory");
			}
			data = bigger;
		}
	}
	close(fd);
	data[len] = '\0';
	out->data = data;
	out->len = len;
	return 0;
}

void rd_buf_free(struct rd_buf *buf)
{
	free(buf->data);
	buf->data = NULL;
	buf->len = 0;
}

bool rd_file_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

int64_t rd_file_size(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return -1;
	return (int64_t)st.st_size;
}

char *rd_path_join(const char *dir, const char *name)
{
	size_t dl = strlen(dir);
	char *p;

	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	p = malloc(dl + 1 + strlen(name) + 1);
	if (p == NULL)
		return NULL;
	memcpy(p, dir, dl);
	if (dl == 0 || dir[dl - 1] != '/')
		p[dl++] = '/';
	strcpy(p + dl, name);
	return p;
}

char *rd_strndup(const char *p, size_t len)
{
	char *s = malloc(len + 1);

	if (s == NULL)
		return NULL;
	memcpy(s, p, len);
	s[len] = '\0';
	return s;
}

void rd_lines_init(struct rd_lines *it, const char *buf, size_t len, size_t base_off)
{
	it->buf = buf;
	it->len = len;
	it->pos = 0;
	it->base = base_off;
	it->lineno = 0;
}

bool rd_lines_next(struct rd_lines *it, struct rd_line *line)
{
	const char *start, *nl;
	size_t rem;

	if (it->pos >= it->len)
		return false;
	start = it->buf + it->pos;
	rem = it->len - it->pos;
	nl = memchr(start, '\n', rem);
	line->p = start;
	line->off = it->base + it->pos;
	line->lineno = ++it->lineno;
	if (nl != NULL) {
		line->len = (size_t)(nl - start);
		line->has_nl = true;
		it->pos += line->len + 1;
	} else {
		line->len = rem;
		line->has_nl = false;
		it->pos = it->len;
	}
	return true;
}

void rd_scan_init(struct rd_scan *s, const char *p, size_t len)
{
	s->p = p;
	s->end = p + len;
}

bool rd_scan_eol(const struct rd_scan *s)
{
	return s->p >= s->end;
}

bool rd_scan_lit(struct rd_scan *s, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n) != 0)
		return false;
	s->p += n;
	return true;
}

bool rd_scan_char(struct rd_scan *s, char c)
{
	if (s->p >= s->end || *s->p != c)
		return false;
	s->p++;
	return true;
}

bool rd_scan_dec(struct rd_scan *s, uint64_t *v, size_t *ndigits)
{
	const char *p = s->p;
	uint64_t x = 0;

	while (p < s->end && *p >= '0' && *p <= '9') {
		unsigned d = (unsigned)(*p - '0');

		if (x > (UINT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
		p++;
	}
	if (p == s->p)
		return false;
	if (ndigits)
		*ndigits = (size_t)(p - s->p);
	*v = x;
	s->p = p;
	return true;
}

bool rd_scan_int(struct rd_scan *s, int64_t *v)
{
	struct rd_scan save = *s;
	bool neg = rd_scan_char(s, '-');
	uint64_t u;

	if (!rd_scan_dec(s, &u, NULL) || u > (uint64_t)INT64_MAX + (neg ? 1 : 0)) {
		*s = save;
		return false;
	}
	*v = neg ? (int64_t)(0 - u) : (int64_t)u;
	return true;
}

int rd_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool rd_scan_hex(struct rd_scan *s, uint64_t *v, size_t *ndigits)
{
	const char *p = s->p;
	uint64_t x = 0;
	int d;

	while (p < s->end && (d = rd_hexval(*p)) >= 0) {
		if (p - s->p >= 16)
			return false;
		x = x << 4 | (uint64_t)d;
		p++;
	}
	if (p == s->p)
		return false;
	if (ndigits)
		*ndigits = (size_t)(p - s->p);
	*v = x;
	s->p = p;
	return true;
}

size_t rd_scan_until(struct rd_scan *s, char c, const char **start)
{
	const char *p = s->p;
	const char *q = memchr(p, c, (size_t)(s->end - p));

	if (q == NULL)
		q = s->end;
	*start = p;
	s->p = q;
	return (size_t)(q - p);
}

size_t rd_scan_spaces(struct rd_scan *s)
{
	const char *p = s->p;

	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t'))
		s->p++;
	return (size_t)(s->p - p);
}

size_t rd_scan_rest(struct rd_scan *s, const char **start)
{
	size_t n = (size_t)(s->end - s->p);

	*start = s->p;
	s->p = s->end;
	return n;
}

bool rd_is_hex_string(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (rd_hexval(p[i]) < 0)
			return false;
	return len > 0;
}

void rd_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

const char *rd_time_str(uint64_t ns, char buf[RD_TIME_LEN])
{
	snprintf(buf, RD_TIME_LEN, "%" PRIu64 ".%09" PRIu64, ns / RD_NSEC_PER_SEC,
		 ns % RD_NSEC_PER_SEC);
	return buf;
}

void rd_map_release(const void *base, size_t upto, size_t *done)
{
	size_t page, end;

	/* called per record by the walkers: the common case must not reach sysconf */
	if (upto < *done + RD_RELEASE_STEP)
		return;
	page = (size_t)sysconf(_SC_PAGESIZE);
	end = upto & ~(page - 1);
	if (end < *done + RD_RELEASE_STEP)
		return;
	/* base is page-aligned (mmap's); *done is always a page boundary */
	madvise((char *)base + *done, end - *done, MADV_DONTNEED);
	rd_progress_add(end - *done);
	*done = end;
}

void rd_map_release_end(const void *base, size_t len, size_t *done)
{
	if (len <= *done)
		return;
	madvise((char *)base + *done, len - *done, MADV_DONTNEED);
	rd_progress_add(len - *done);
	*done = len;
}

void rd_win_mem(struct rd_win *w, const void *data, size_t len)
{
	memset(w, 0, sizeof(*w));
	w->mem = data;
	w->fd = -1;
	w->size = len;
}

int rd_win_open(struct rd_win *w, const char *path, int rule_io, struct rd_error *err)
{
	struct stat st;
	int ret;

	memset(w, 0, sizeof(*w));
	w->file = path;
	w->rule_io = rule_io;
	w->err = err;
	w->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (w->fd < 0 || fstat(w->fd, &st) < 0) {
		ret = rd_error_set(err, rule_io, path, -1, "cannot open: %s", strerror(errno));
		rd_win_close(w);
		return ret;
	}
	if (!S_ISREG(st.st_mode)) {
		rd_win_close(w);
		return rd_error_set(err, rule_io, path, -1, "not a regular file");
	}
	w->size = (uint64_t)st.st_size;
	/* a small file gets a window of its size, not RD_WIN_SIZE */
	w->cap = w->size < RD_WIN_SIZE ? (size_t)w->size : RD_WIN_SIZE;
	w->buf = malloc(w->cap ? w->cap : 1);
	if (!w->buf) {
		rd_win_close(w);
		return rd_error_set(err, rule_io, path, -1, "out of memory");
	}
	return 0;
}

void rd_win_close(struct rd_win *w)
{
	if (w->fd >= 0)
		close(w->fd);
	free(w->buf);
	w->fd = -1;
	w->buf = NULL;
	w->len = 0;
	w->cap = 0;
}

const uint8_t *rd_win_fill(struct rd_win *w, uint64_t off, size_t need)
{
	size_t keep = 0, want;

	if (w->mem)
		return w->mem + off;
	if (need > w->cap) {
		/* one span longer than the window: the caller checked it is in the file */
		uint8_t *nb = malloc(need);
		if (!nb) {
			rd_error_set(w->err, w->rule_io, w->file, (int64_t)off, "out of memory");
			return NULL;
		}
		if (off >= w->off && off - w->off < w->len) {
			keep = w->len - (size_t)(off - w->off);
			memcpy(nb, w->buf + (off - w->off), keep);
		}
		free(w->buf);
		w->buf = nb;
		w->cap = need;
	} else if (off >= w->off && off - w->off < w->len) {
		/* the bytes of the span already read move to the front */
		keep = w->len - (size_t)(off - w->off);
		memmove(w->buf, w->buf + (off - w->off), keep);
	}
	w->off = off;
	w->len = keep;
	/* read ahead a whole window (up to the end of the file), at least the span */
	want = w->cap;
	if (w->size - off < want)
		want = (size_t)(w->size - off);
	if (want < need)
		want = need;
	while (w->len < want) {
		ssize_t n = pread(w->fd, w->buf + w->len, want - w->len, (off_t)(off + w->len));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rd_error_set(w->err, w->rule_io, w->file, (int64_t)(off + w->len),
				     "read error: %s", strerror(errno));
			return NULL;
		}
		if (n == 0) {
			if (w->len >= need)
				break;
			rd_error_set(w->err, w->rule_io, w->file, (int64_t)(off + w->len),
				     "the file ends here, before the %" PRIu64
				     " bytes it had when opened (it shrank while read)",
				     w->size);
			return NULL;
		}
		w->len += (size_t)n;
		rd_progress_add((uint64_t)n);
	}
	return w->buf;
}

void rd_run_workers(pthread_t *tids, unsigned jobs, void *(*worker)(void *), void *arg)
{
	unsigned started = 0;

	for (; tids && started < jobs; started++)
		if (pthread_create(&tids[started], NULL, worker, arg) != 0)
			break;
	if (started < jobs)
		worker(arg);
	for (unsigned k = 0; k < started; k++)
		pthread_join(tids[k], NULL);
}
