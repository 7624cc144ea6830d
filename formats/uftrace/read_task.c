/*
 * read_task: task.txt, the task and session log of a uftrace.data directory.
 *
 * Role: parse the four line kinds uftrace 0.13 reads (read_task_txt_file):
 *   SESS timestamp=<sec>.<nsec> pid=<pid> sid=<16 hex> exename="<path>"
 *   TASK timestamp=<sec>.<nsec> tid=<tid> pid=<pid>
 *   FORK timestamp=<sec>.<nsec> pid=<child> ppid=<parent>
 *   DLOP timestamp=<sec>.<nsec> tid=<tid> sid=<16 hex> base=<hex> libname="<path>"
 *
 * Invariants (stricter than uftrace's sscanf where sscanf would silently misread):
 *  - nsec has exactly 9 digits: uftrace reads "%lu.%lu", so "1.5" would mean 1 s + 5 ns.
 *  - a sid is exactly 16 hex digits (uftrace memcmp's 16 bytes and names the map after it).
 *  - a DLOP names a session declared by an earlier SESS line (uftrace ASSERTs on it).
 *  - any other line is an error; uftrace skips it, but no writer of ours should produce one.
 */
#include "formats/uftrace/read_uftrace.h"

#include <stdlib.h>
#include <string.h>

static bool scan_timestamp(struct rd_scan *sc, uint64_t *ns)
{
	uint64_t sec, nsec;
	size_t nd;

	if (!rd_scan_lit(sc, "timestamp=") || !rd_scan_dec(sc, &sec, NULL) ||
	    !rd_scan_char(sc, '.') || !rd_scan_dec(sc, &nsec, &nd) || nd != 9)
		return false;
	if (sec > (UINT64_MAX - nsec) / RD_NSEC_PER_SEC)
		return false;
	*ns = sec * RD_NSEC_PER_SEC + nsec;
	return true;
}

static bool scan_id(struct rd_scan *sc, const char *key, int *v)
{
	uint64_t x;

	if (!rd_scan_lit(sc, key) || !rd_scan_dec(sc, &x, NULL) || x == 0 || x > INT32_MAX)
		return false;
	*v = (int)x;
	return true;
}

/* sid=<16 hex>; returns 0, or 1 for a bad sid (distinct rule), -1 for a syntax error */
static int scan_sid(struct rd_scan *sc, char sid[UFR_SID_LEN + 1])
{
	const char *w;
	size_t n;

	if (!rd_scan_lit(sc, "sid="))
		return -1;
	n = rd_scan_until(sc, ' ', &w);
	if (n != UFR_SID_LEN || !rd_is_hex_string(w, n))
		return 1;
	memcpy(sid, w, UFR_SID_LEN);
	sid[UFR_SID_LEN] = '\0';
	return 0;
}

/* KEY="<text>" up to the last '"', which must end the line */
static bool scan_quoted(struct rd_scan *sc, const char *key, char **out)
{
	const char *start;
	size_t n;

	if (!rd_scan_lit(sc, key) || !rd_scan_char(sc, '"'))
		return false;
	n = rd_scan_rest(sc, &start);
	if (n == 0 || start[n - 1] != '"')
		return false;
	*out = rd_strndup(start, n - 1);
	return *out != NULL;
}

static const char *const line_usage[] = {
	[UFR_SESS] =
		"SESS timestamp=<sec>.<9-digit nsec> pid=<pid> sid=<16 hex> exename=\"<path>\"",
	[UFR_TASK] = "TASK timestamp=<sec>.<9-digit nsec> tid=<tid> pid=<pid>",
	[UFR_FORK] = "FORK timestamp=<sec>.<9-digit nsec> pid=<pid> ppid=<pid>",
	[UFR_DLOP] = "DLOP timestamp=<sec>.<9-digit nsec> tid=<tid> sid=<16 hex> base=<hex> "
		     "libname=\"<path>\"",
};

static int parse_line(const struct rd_line *line, const char *file, struct ufr_task_line *t,
		      struct rd_error *err)
{
	struct rd_scan sc;
	int sid_ret;

	memset(t, 0, sizeof(*t));
	t->off = line->off;
	t->lineno = line->lineno;
	rd_scan_init(&sc, line->p, line->len);

	if (rd_scan_lit(&sc, "SESS "))
		t->kind = UFR_SESS;
	else if (rd_scan_lit(&sc, "TASK "))
		t->kind = UFR_TASK;
	else if (rd_scan_lit(&sc, "FORK "))
		t->kind = UFR_FORK;
	else if (rd_scan_lit(&sc, "DLOP "))
		t->kind = UFR_DLOP;
	else
		return rd_error_set(err, UFR_E_TASK_LINE, file, (int64_t)line->off,
				    "line %u is not a SESS, TASK, FORK or DLOP line", line->lineno);

	if (!scan_timestamp(&sc, &t->time) || !rd_scan_char(&sc, ' '))
		goto bad;

	switch (t->kind) {
	case UFR_SESS:
		if (!scan_id(&sc, "pid=", &t->pid) || !rd_scan_char(&sc, ' '))
			goto bad;
		t->tid = t->pid;
		sid_ret = scan_sid(&sc, t->sid);
		if (sid_ret > 0)
			goto bad_sid;
		if (sid_ret < 0 || !rd_scan_char(&sc, ' ') ||
		    !scan_quoted(&sc, "exename=", &t->name))
			goto bad;
		break;
	case UFR_TASK:
		if (!scan_id(&sc, "tid=", &t->tid) || !rd_scan_char(&sc, ' ') ||
		    !scan_id(&sc, "pid=", &t->pid) || !rd_scan_eol(&sc))
			goto bad;
		break;
	case UFR_FORK:
		if (!scan_id(&sc, "pid=", &t->pid) || !rd_scan_char(&sc, ' ') ||
		    !scan_id(&sc, "ppid=", &t->ppid) || !rd_scan_eol(&sc))
			goto bad;
		t->tid = t->pid;
		break;
	case UFR_DLOP:
		if (!scan_id(&sc, "tid=", &t->tid) || !rd_scan_char(&sc, ' '))
			goto bad;
		sid_ret = scan_sid(&sc, t->sid);
		if (sid_ret > 0)
			goto bad_sid;
		if (sid_ret < 0 || !rd_scan_lit(&sc, " base=") ||
		    !rd_scan_hex(&sc, &t->base, NULL) || !rd_scan_char(&sc, ' ') ||
		    !scan_quoted(&sc, "libname=", &t->name))
			goto bad;
		break;
	}
	return 0;

bad_sid:
	return rd_error_set(err, UFR_E_TASK_SID, file, (int64_t)line->off,
			    "line %u: sid is not 16 hex digits", line->lineno);
bad:
	free(t->name);
	t->name = NULL;
	return rd_error_set(err, UFR_E_TASK_LINE, file, (int64_t)line->off,
			    "line %u: malformed %.4s line, expected \"%s\"", line->lineno, line->p,
			    line_usage[t->kind]);
}

struct sid_ref {
	char sid[UFR_SID_LEN + 1]; /* a copy: the lines array is compacted in place below */
	size_t idx;
};

static int sid_ref_cmp(const void *a, const void *b)
{
	const struct sid_ref *x = a, *y = b;
	int c = strcmp(x->sid, y->sid);

	if (c != 0)
		return c;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * Every DLOP must name a session declared on an earlier line. Sorting keeps this
 * O(n log n) whatever the file holds; lenient mode drops the offending DLOP lines.
 */
static int check_dlopen_sids(struct ufr_tasks *tasks, const char *file, bool lenient,
			     struct rd_error *err)
{
	struct sid_ref *refs;
	size_t nr = 0, keep = 0;
	int ret = 0;

	refs = malloc((tasks->nr ? tasks->nr : 1) * sizeof(*refs));
	if (refs == NULL)
		return rd_error_set(err, UFR_E_IO, file, -1, "out of memory");
	for (size_t i = 0; i < tasks->nr; i++)
		if (tasks->lines[i].kind == UFR_SESS) {
			memcpy(refs[nr].sid, tasks->lines[i].sid, sizeof(refs[nr].sid));
			refs[nr++].idx = i;
		}
	qsort(refs, nr, sizeof(*refs), sid_ref_cmp);

	for (size_t i = 0; i < tasks->nr; i++) {
		struct ufr_task_line *t = &tasks->lines[i];
		struct sid_ref key;
		struct sid_ref *first;
		size_t lo = 0, hi = nr;

		if (t->kind != UFR_DLOP) {
			tasks->lines[keep++] = *t;
			continue;
		}
		memcpy(key.sid, t->sid, sizeof(key.sid));
		key.idx = 0;
		/* the first SESS with this sid */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (sid_ref_cmp(&refs[mid], &key) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		first = lo < nr && !strcmp(refs[lo].sid, t->sid) ? &refs[lo] : NULL;
		if (first != NULL && first->idx < i) {
			tasks->lines[keep++] = *t;
			continue;
		}
		rd_error_set(err, UFR_E_TASK_REF, file, (int64_t)t->off,
			     "line %u: DLOP names sid %s, which no earlier SESS line declares",
			     t->lineno, t->sid);
		ret = -1;
		free(t->name);
		if (!lenient) {
			/* keep the array consistent for ufr_tasks_free */
			for (size_t j = i + 1; j < tasks->nr; j++)
				tasks->lines[keep++] = tasks->lines[j];
			break;
		}
	}
	tasks->nr = keep;
	free(refs);
	return ret;
}

int ufr_tasks_parse(const char *buf, size_t len, const char *file, bool lenient,
		    struct ufr_tasks *tasks, struct rd_error *err)
{
	struct rd_lines it;
	struct rd_line line;
	size_t cap = 0;
	int ret = 0;

	tasks->lines = NULL;
	tasks->nr = 0;
	rd_lines_init(&it, buf, len, 0);
	while (rd_lines_next(&it, &line)) {
		struct ufr_task_line t;

		if (parse_line(&line, file, &t, err) < 0) {
			ret = -1;
			if (!lenient)
				return -1;
			continue;
		}
		if (tasks->nr == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct ufr_task_line *n = realloc(tasks->lines, ncap * sizeof(*n));

			if (n == NULL) {
				free(t.name);
				return rd_error_set(err, UFR_E_IO, file, -1, "out of memory");
			}
			tasks->lines = n;
			cap = ncap;
		}
		tasks->lines[tasks->nr++] = t;
	}
	if (check_dlopen_sids(tasks, file, lenient, err) < 0)
		ret = -1;
	return ret;
}

void ufr_tasks_free(struct ufr_tasks *tasks)
{
	for (size_t i = 0; i < tasks->nr; i++)
		free(tasks->lines[i].name);
	free(tasks->lines);
	tasks->lines = NULL;
	tasks->nr = 0;
}
