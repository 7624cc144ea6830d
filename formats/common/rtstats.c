/*
 * rtstats: parse the runtime's .flightrec/stats.<pid> files (see rtstats.h).
 */
#include "formats/common/rtstats.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* the fields of a thread line after its tid */
#define TU64(n)                                                                                    \
	{                                                                                          \
#n, K_U64, offsetof(struct rts_thread, n), 0                                       \
	}

static const struct key thread_keys[] = {
	TU64(events), TU64(bytes), TU64(lost_full), TU64(lost_nested), TU64(lost_dead),
	TU64(lost_depth),
};

#define NR_THREAD_KEYS (sizeof(thread_keys) / sizeof(thread_keys[0]))

/* "<tid>( <key>=<n>)*", the value of a thread= line (at file offset OFF, line LINENO) */
static int parse_thread(const char *v, size_t vlen, const char *file, size_t off,
			unsigned lineno, struct rts_thread *t, struct rd_error *err)
{
	bool seen[NR_THREAD_KEYS] = { false };
	struct rd_scan sc;
	uint64_t x;

	memset(t, 0, sizeof(*t));
	rd_scan_init(&sc, v, vlen);
	if (!rd_scan_dec(&sc, &x, NULL) || x == 0 || x > INT32_MAX ||
	    (!rd_scan_eol(&sc) && *sc.p != ' '))
		return rd_error_set(err, RTS_E_THREAD, file, (int64_t)off,
				    "line %u: a thread line starts with its tid, a positive int",
				    lineno);
	t->tid = (int)x;
	while (!rd_scan_eol(&sc)) {
		const char *key;
		size_t klen, k;

		if (!rd_scan_char(&sc, ' '))
			break;
		klen = rd_scan_until(&sc, '=', &key);
		if (klen == 0 || memchr(key, ' ', klen) || !rd_scan_char(&sc, '='))
			return rd_error_set(err, RTS_E_LINE, file, (int64_t)off,
					    "line %u: thread %d: a field is not key=value", lineno,
					    t->tid);
		for (k = 0; k < NR_THREAD_KEYS; k++)
			if (strlen(thread_keys[k].name) == klen &&
			    !memcmp(thread_keys[k].name, key, klen))
				break;
		if (k < NR_THREAD_KEYS && seen[k])
			return rd_error_set(err, RTS_E_DUP, file, (int64_t)off,
					    "line %u: thread %d: %s given twice", lineno, t->tid,
					    thread_keys[k].name);
		if (!rd_scan_dec(&sc, &x, NULL) || (!rd_scan_eol(&sc) && *sc.p != ' '))
			return rd_error_set(err, RTS_E_LINE, file, (int64_t)off,
					    "line %u: thread %d: %.*s is not an unsigned decimal",
					    lineno, t->tid, (int)(klen > 32 ? 32 : klen), key);
		if (k == NR_THREAD_KEYS)
			continue; /* a counter this reader does not know */
		seen[k] = true;
		*(uint64_t *)((char *)t + thread_keys[k].off) = x;
	}
	if (!rd_scan_eol(&sc))
		return rd_error_set(err, RTS_E_LINE, file, (int64_t)off,
				    "line %u: thread %d: fields are separated by one space", lineno,
				    t->tid);
	return 0;
}

/* the thread lines add up to the totals (lost_dead: at most, see rtstats.h) */
static int check_sums(const struct rts_proc *p, const char *file, struct rd_error *err)
{
	struct rts_thread sum = { 0 };

	for (size_t i = 0; i < p->nr_thr; i++)
		rts_thread_add(&sum, &p->thr[i]);
	const struct {
		const char *name;
		uint64_t lines, total;
	} f[] = {
		{ "threads", p->nr_thr, p->threads },
		{ "events", sum.events, p->events },
		{ "bytes", sum.bytes, p->bytes },
		{ "lost_full", sum.lost_full, p->lost_full },
		{ "lost_nested", sum.lost_nested, p->lost_nested },
		{ "lost_depth", sum.lost_depth, p->lost_depth },
		{ "lost_dead", sum.lost_dead, p->lost_dead },
	};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		bool dead = !strcmp(f[i].name, "lost_dead");
		if (dead ? f[i].lines <= f[i].total : f[i].lines == f[i].total)
			continue;
		return rd_error_set(err, RTS_E_SUM, file, -1,
				    "%s: the thread lines say %llu, the total %llu%s", f[i].name,
				    (unsigned long long)f[i].lines, (unsigned long long)f[i].total,
				    dead ? " (they may say less, never more)" : "");
	}
	return 0;
}

void rts_proc_free(struct rts_proc *p)
{
	free(p->thr);
	p->thr = NULL;
	p->nr_thr = 0;
}

int rts_parse(const char *buf, size_t len, const char *file, struct rts_proc *p,
	      struct rd_error *err)
{
	return rts_parse_max(buf, len, file, RTS_MAX_THREADS, p, err);
}

int rts_parse_max(const char *buf, size_t len, const char *file, size_t max_threads,
		  struct rts_proc *p, struct rd_error *err)
{
	bool seen[NR_KEYS] = { false };
	struct rd_lines it;
	struct rd_line line;
	size_t cap = 0;

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
			goto bad_line;
		klen = (size_t)(eq - line.p);
		v = eq + 1;
		vlen = line.len - klen - 1;
		if (klen == 6 && !memcmp(line.p, "thread", 6)) {
			if (p->nr_thr == max_threads) {
				rd_error_set(err, RTS_E_THREAD, file, (int64_t)line.off,
					     "line %u: a thread line beyond the %u this reader takes "
					     "from all stats files together", line.lineno,
					     RTS_MAX_THREADS);
				goto fail;
			}
			if (p->nr_thr == cap) {
				size_t ncap = cap ? cap * 2 : 16;
				struct rts_thread *n;

				if (ncap > max_threads)
					ncap = max_threads;
				n = realloc(p->thr, ncap * sizeof(*n));
				if (n == NULL) {
					rd_error_set(err, RTS_E_IO, file, (int64_t)line.off,
						     "line %u: out of memory", line.lineno);
					goto fail;
				}
				p->thr = n;
				cap = ncap;
			}
			if (parse_thread(v, vlen, file, line.off, line.lineno, &p->thr[p->nr_thr],
					 err) < 0)
				goto fail;
			p->nr_thr++;
			continue;
		}
		for (k = 0; k < NR_KEYS; k++)
			if (strlen(keys[k].name) == klen && !memcmp(keys[k].name, line.p, klen))
				break;
		if (k == NR_KEYS)
			continue; /* a counter this reader does not know */
		if (seen[k]) {
			rd_error_set(err, RTS_E_DUP, file, (int64_t)line.off,
				     "line %u: %s given twice", line.lineno, keys[k].name);
			goto fail;
		}
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
			    (keys[k].kind == K_INT && (x == 0 || x > INT32_MAX))) {
				rd_error_set(err, RTS_E_LINE, file, (int64_t)line.off,
					     "line %u: %s is not %s", line.lineno, keys[k].name,
					     keys[k].kind == K_INT ? "a positive pid"
								   : "an unsigned decimal");
				goto fail;
			}
			if (keys[k].kind == K_INT)
				*(int *)((char *)p + keys[k].off) = (int)x;
			else
				*(uint64_t *)((char *)p + keys[k].off) = x;
		}
	}
	p->has_pid = seen[0];
	for (size_t k = 0; k < NR_KEYS; k++)
		if (!strcmp(keys[k].name, "events"))
			p->has_totals = seen[k];
	if (p->has_totals && p->nr_thr && check_sums(p, file, err) < 0)
		goto fail;
	return 0;
bad_line:
	rd_error_set(err, RTS_E_LINE, file, (int64_t)line.off, "line %u is not key=value",
		     line.lineno);
fail:
	rts_proc_free(p);
	return -1;
}

uint64_t rts_lost(const struct rts_proc *p)
{
	return p->lost_full + p->lost_nested + p->lost_dead + p->lost_depth;
}

uint64_t rts_thread_lost(const struct rts_thread *t)
{
	return t->lost_full + t->lost_nested + t->lost_dead + t->lost_depth;
}

void rts_thread_add(struct rts_thread *sum, const struct rts_thread *t)
{
	sum->events += t->events;
	sum->bytes += t->bytes;
	sum->lost_full += t->lost_full;
	sum->lost_nested += t->lost_nested;
	sum->lost_dead += t->lost_dead;
	sum->lost_depth += t->lost_depth;
}

uint64_t rts_unowned_dead(const struct rts_proc *p)
{
	uint64_t owned = 0;

	for (size_t i = 0; i < p->nr_thr; i++)
		owned += p->thr[i].lost_dead;
	return p->lost_dead > owned ? p->lost_dead - owned : 0;
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
	size_t cap = 0, nthr = 0;
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
			/* the thread lines of every file together are capped */
			ret = rts_parse_max(buf.data, buf.len, path, RTS_MAX_THREADS - nthr, &p,
					    err);
			rd_buf_free(&buf);
			if (ret == 0)
				nthr += p.nr_thr;
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
				rts_proc_free(&p);
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
	for (size_t i = 0; i < set->nr; i++)
		rts_proc_free(&set->procs[i]);
	free(set->procs);
	set->procs = NULL;
	set->nr = 0;
}
