/*
 * rtstats: parse the runtime's .flightrec/stats.<pid> files (see rtstats.h).
 */
#include "readers/rtstats.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define RTS_FILE_MAX (64u << 10)

enum key_kind { K_INT, K_U64, K_STR };

struct key {
	const char *name;
	enum key_kind kind;
	size_t off;
	size_t size; /* K_STR: buffer size */
};

#define U64(n)                                                                                     \
	{                                                                                          \
#n, K_U64, offsetof(struct rts_proc, n), 0                                         \
	}

static const struct key keys[] = {
	{ "pid", K_INT, offsetof(struct rts_proc, pid), 0 },
	{ "ppid", K_INT, offsetof(struct rts_proc, ppid), 0 },
	{ "exe", K_STR, offsetof(struct rts_proc, exe), sizeof(((struct rts_proc *)0)->exe) },
	{ "format", K_STR, offsetof(struct rts_proc, format),
	  sizeof(((struct rts_proc *)0)->format) },
	U64(threads),
	U64(events),
	U64(bytes),
	U64(lost_full),
	U64(lost_nested),
	U64(lost_dead),
	U64(lost_depth),
};

#define NR_KEYS (sizeof(keys) / sizeof(keys[0]))

int rts_parse(const char *buf, size_t len, const char *file, struct rts_proc *p,
	      struct rd_error *err)
{
	bool seen[NR_KEYS] = { false };
	struct rd_lines it;
	struct rd_line line;

	memset(p, 0, sizeof(*p));
	rd_lines_init(&it, buf, len, 0);
	while (rd_lines_next(&it, &line)) {
		const char *eq = memchr(line.p, '=', line.len);
		size_t klen, vlen;
		const char *v;
		size_t k;

		if (line.len == 0)
			continue;
		if (eq == NULL || eq == line.p)
			return rd_error_set(err, RTS_E_LINE, file, (int64_t)line.off,
					    "line %u is not key=value", line.lineno);
		klen = (size_t)(eq - line.p);
		v = eq + 1;
		vlen = line.len - klen - 1;
		for (k = 0; k < NR_KEYS; k++)
			if (strlen(keys[k].name) == klen && !memcmp(keys[k].name, line.p, klen))
				break;
		if (k == NR_KEYS)
			continue; /* a counter this reader does not know */
		if (seen[k])
			return rd_error_set(err, RTS_E_DUP, file, (int64_t)line.off,
					    "line %u: %s given twice", line.lineno, keys[k].name);
		seen[k] = true;
		if (keys[k].kind == K_STR) {
			size_t n = vlen < keys[k].size - 1 ? vlen : keys[k].size - 1;
			char *dst = (char *)p + keys[k].off;

			memcpy(dst, v, n);
			dst[n] = '\0';
		} else {
			struct rd_scan sc;
			uint64_t x;

			rd_scan_init(&sc, v, vlen);
			if (!rd_scan_dec(&sc, &x, NULL) || !rd_scan_eol(&sc) ||
			    (keys[k].kind == K_INT && (x == 0 || x > INT32_MAX)))
				return rd_error_set(err, RTS_E_LINE, file, (int64_t)line.off,
						    "line %u: %s is not %s", line.lineno,
						    keys[k].name,
						    keys[k].kind == K_INT ? "a positive pid"
									  : "an unsigned decimal");
			if (keys[k].kind == K_INT)
				*(int *)((char *)p + keys[k].off) = (int)x;
			else
				*(uint64_t *)((char *)p + keys[k].off) = x;
		}
	}
	p->has_pid = seen[0];
	return 0;
}

uint64_t rts_lost(const struct rts_proc *p)
{
	return p->lost_full + p->lost_nested + p->lost_dead + p->lost_depth;
}

static int proc_cmp(const void *a, const void *b)
{
	const struct rts_proc *x = a, *y = b;

	if (x->pid != y->pid)
		return (x->pid > y->pid) - (x->pid < y->pid);
	return (x->start > y->start) - (x->start < y->start);
}

/* "stats.<pid>" or "stats.<pid>.<start ns>" */
static bool stats_name(const char *name, uint64_t *pid, uint64_t *start)
{
	struct rd_scan sc;

	*start = 0;
	rd_scan_init(&sc, name, strlen(name));
	if (!rd_scan_lit(&sc, "stats.") || !rd_scan_dec(&sc, pid, NULL) || *pid == 0 ||
	    *pid > INT32_MAX)
		return false;
	if (rd_scan_char(&sc, '.') && !rd_scan_dec(&sc, start, NULL))
		return false;
	return rd_scan_eol(&sc);
}

int rts_load(const char *trace_dir, struct rts_set *set, struct rd_error *err)
{
	struct dirent *de;
	size_t cap = 0;
	char *dir;
	DIR *dp;
	int ret = 0;

	memset(set, 0, sizeof(*set));
	dir = rd_path_join(trace_dir, ".flightrec");
	if (dir == NULL)
		return rd_error_set(err, RTS_E_IO, trace_dir, -1, "out of memory");
	dp = opendir(dir);
	if (dp == NULL) {
		ret = errno == ENOENT ? 0
				      : rd_error_set(err, RTS_E_IO, dir, -1, "cannot list: %s",
						     strerror(errno));
		free(dir);
		return ret;
	}
	set->present = true;
	while (ret == 0 && (de = readdir(dp)) != NULL) {
		struct rd_buf buf;
		struct rts_proc p;
		uint64_t file_pid, start;
		char *path;

		if (!stats_name(de->d_name, &file_pid, &start))
			continue;
		if (set->nr == RTS_MAX_PROCS) {
			ret = rd_error_set(err, RTS_E_IO, dir, -1, "more than %d stats files",
					   RTS_MAX_PROCS);
			break;
		}
		path = rd_path_join(dir, de->d_name);
		if (path == NULL) {
			ret = rd_error_set(err, RTS_E_IO, dir, -1, "out of memory");
			break;
		}
		ret = rd_load_file(path, RTS_FILE_MAX, &buf, RTS_E_IO, RTS_E_IO, err);
		if (ret == 0) {
			ret = rts_parse(buf.data, buf.len, path, &p, err);
			rd_buf_free(&buf);
		}
		if (ret == 0 && !p.has_pid)
			p.pid = (int)file_pid; /* the file name says whose it is */
		p.start = start;
		free(path);
		if (ret < 0)
			break;
		if (set->nr == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			struct rts_proc *n = realloc(set->procs, ncap * sizeof(*n));

			if (n == NULL) {
				ret = rd_error_set(err, RTS_E_IO, dir, -1, "out of memory");
				break;
			}
			set->procs = n;
			cap = ncap;
		}
		set->procs[set->nr++] = p;
	}
	closedir(dp);
	free(dir);
	if (ret < 0) {
		rts_free(set);
		return -1;
	}
	rd_sort(set->procs, set->nr, sizeof(*set->procs), proc_cmp);
	return 0;
}

void rts_free(struct rts_set *set)
{
	free(set->procs);
	set->procs = NULL;
	set->nr = 0;
}
