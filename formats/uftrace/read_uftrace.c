/*
 * read_uftrace: a whole uftrace.data directory, and the rules between its files.
 *
 * Role: ufr_open() loads info, task.txt and every session's map and checks the cross-file
 * rules uftrace 0.13 depends on; ufr_verify() then checks the .sym files and every thread's
 * record stream; ufr_session_at() / ufr_symbolize() resolve addresses the way 0.13 does
 * (session by time, module by map, .sym by basename, else the ELF file, then DLOP libraries).
 *
 * Check order (the first error is the one reported): info, task.txt, maps in SESS order,
 * <tid>.dat files against taskinfo tids and TASK/FORK lines, then (ufr_verify) .sym files in
 * name order, then each thread's records in taskinfo order. A taskinfo tid without a .dat file
 * is accepted, as 0.13 does; a .dat file whose tid taskinfo does not list is not (0.13 would
 * silently ignore its records).
 *
 * Invariants:
 *  - text files are loaded with fixed caps (INFO_MAX, TASK_MAX, MAP_MAX, SYM_MAX);
 *  - every walk up parent / leader chains stops after MAX_CHAIN steps;
 *  - lookups are binary searches over arrays sorted once at open, so dump/stats stay linear in
 *    the number of records whatever the number of sessions or modules.
 */
#include "formats/uftrace/read_internal.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define INFO_MAX (1u << 20)
#define TASK_MAX (64u << 20)
#define MAP_MAX (16u << 20)
#define SYM_MAX (256u << 20)
#define MAX_CHAIN 4096 /* parents / leaders followed to find a session: deeper is not real */

struct symcache_entry {
	char *key; /* .sym path, or "elf:" + module path */
	struct ufr_symtab tab;
	bool ok;
};

/*
 * Symbol tables by key, in an open-addressing hash table kept at most half full. Entries are
 * allocated one by one: modules keep pointers to their tables.
 */
struct ufr_symcache {
	struct symcache_entry **slot;
	size_t nr, cap;
};

static const char *const rule_names[UFR_RULE_MAX] = {
	[UFR_OK] = "ok",
	[UFR_E_IO] = "io",
	[UFR_E_FILE_MISSING] = "file-missing",
	[UFR_E_TOO_BIG] = "file-too-big",
	[UFR_E_HDR_SHORT] = "header-short",
	[UFR_E_HDR_MAGIC] = "header-magic",
	[UFR_E_HDR_VERSION] = "header-version",
	[UFR_E_HDR_SIZE] = "header-size",
	[UFR_E_HDR_ENDIAN] = "header-endian",
	[UFR_E_HDR_CLASS] = "header-class",
	[UFR_E_FEAT_MASK] = "feat-mask",
	[UFR_E_INFO_MASK] = "info-mask",
	[UFR_E_INFO_SECTION] = "info-section",
	[UFR_E_INFO_LINES] = "info-lines",
	[UFR_E_INFO_LONG] = "info-line-too-long",
	[UFR_E_INFO_VALUE] = "info-value",
	[UFR_E_TASKINFO_COUNT] = "taskinfo-count",
	[UFR_E_TASK_LINE] = "task-line",
	[UFR_E_TASK_SID] = "task-sid",
	[UFR_E_TASK_REF] = "task-ref",
	[UFR_E_TASK_NO_SESSION] = "task-no-session",
	[UFR_E_MAP_LINE] = "map-line",
	[UFR_E_MAP_NO_STACK] = "map-no-stack",
	[UFR_E_SYM_LINE] = "sym-line",
	[UFR_E_SYM_NEW_FORMAT] = "sym-new-format",
	[UFR_E_SYM_UNSORTED] = "sym-unsorted",
	[UFR_E_SYM_NO_END] = "sym-no-end",
	[UFR_E_SYM_TYPE] = "sym-type",
	[UFR_E_DAT_NONE] = "dat-none",
	[UFR_E_DAT_UNLISTED] = "dat-unlisted",
	[UFR_E_DAT_NO_TASK] = "dat-no-task",
	[UFR_E_DAT_TRUNCATED] = "dat-truncated",
	[UFR_E_REC_MAGIC] = "record-magic",
	[UFR_E_REC_TYPE] = "record-type",
	[UFR_E_REC_PAYLOAD] = "record-payload",
	[UFR_E_REC_TIME] = "record-time",
	[UFR_E_REC_EARLY] = "record-early",
	[UFR_E_REC_DEPTH] = "record-depth",
};

const char *ufr_rule_name(int rule)
{
	if (rule < 0 || rule >= UFR_RULE_MAX || rule_names[rule] == NULL)
		return "unknown";
	return rule_names[rule];
}

bool ufr_sniff(const char *path)
{
	static const char *const names[] = { "info", "task.txt" };
	struct stat st;

	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return false;
	/* by its files, not their contents: a damaged info is still this format, for verify */
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *p = rd_path_join(path, names[i]);
		bool found = p != NULL && rd_file_exists(p);

		free(p);
		if (found)
			return true;
	}
	return false;
}

/* ---- error routing: strict mode stops, lenient mode remembers the first ---- */

static int note(struct ufr_data *d, struct rd_error *err, const struct rd_error *e)
{
	if (!rd_error_isset(&d->err))
		d->err = *e;
	if (err != NULL && !rd_error_isset(err))
		*err = *e;
	return d->lenient ? 0 : -1;
}

/* ---- tasks and sessions ---- */

struct ufr_task *ufr_find_task(struct ufr_data *d, int tid)
{
	size_t lo = 0, hi = d->nr_task;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->task[mid].tid == tid)
			return &d->task[mid];
		if (d->task[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int task_first_cmp(const void *a, const void *b)
{
	const struct ufr_task *x = a, *y = b;

	if (x->tid != y->tid)
		return (x->tid > y->tid) - (x->tid < y->tid);
	return (x->first > y->first) - (x->first < y->first); /* file order */
}

/* one task per tid, described by its first TASK/FORK line; sorted by tid */
static int build_tasks(struct ufr_data *d)
{
	size_t n = 0, keep = 0;

	d->task = calloc(d->tasks.nr ? d->tasks.nr : 1, sizeof(*d->task));
	if (d->task == NULL)
		return -1;
	for (size_t i = 0; i < d->tasks.nr; i++) {
		const struct ufr_task_line *l = &d->tasks.lines[i];
		struct ufr_task *t;

		if (l->kind != UFR_TASK && l->kind != UFR_FORK)
			continue;
		t = &d->task[n++];
		t->tid = l->tid;
		t->forked = l->kind == UFR_FORK;
		t->pid = l->pid;
		t->ppid = t->forked ? l->ppid : 0;
		t->first = l;
	}
	qsort(d->task, n, sizeof(*d->task), task_first_cmp);
	/* a later line of a known tid is a new session of it (exec), not a new task */
	for (size_t i = 0; i < n; i++)
		if (keep == 0 || d->task[keep - 1].tid != d->task[i].tid)
			d->task[keep++] = d->task[i];
	d->nr_task = keep;
	return 0;
}

static int sess_cmp(const void *a, const void *b)
{
	const struct ufr_session *x = a, *y = b;

	if (x->line->pid != y->line->pid)
		return (x->line->pid > y->line->pid) - (x->line->pid < y->line->pid);
	if (x->line->time != y->line->time)
		return (x->line->time > y->line->time) - (x->line->time < y->line->time);
	return (x->line > y->line) - (x->line < y->line);
}

/* index of the first session of PID in the (pid, time)-sorted array, or nr_sess */
static size_t sess_first_of(const struct ufr_data *d, int pid)
{
	size_t lo = 0, hi = d->nr_sess;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->sess[mid].line->pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* the pid up the chain from T: its parent (forked) or its leader, 0 if none */
static int task_parent_pid(const struct ufr_task *t)
{
	int parent = t->forked ? t->ppid : (t->pid != t->tid ? t->pid : 0);

	return parent > 0 && parent != t->tid ? parent : 0;
}

static struct ufr_task *task_parent(struct ufr_data *d, const struct ufr_task *t)
{
	int parent = task_parent_pid(t);

	return parent ? ufr_find_task(d, parent) : NULL;
}

/* the last session of PID that started at or before TIME, or NULL */
static struct ufr_session *sess_of_pid_at(struct ufr_data *d, int pid, uint64_t time)
{
	size_t lo = sess_first_of(d, pid), hi = d->nr_sess, first = lo;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->sess[mid].line->pid == pid && d->sess[mid].line->time <= time)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > first ? &d->sess[lo - 1] : NULL;
}

struct ufr_session *ufr_session_at(struct ufr_data *d, const struct ufr_task *task, uint64_t time)
{
	for (size_t hops = 0; task != NULL && hops <= MAX_CHAIN; hops++) {
		struct ufr_session *s = sess_of_pid_at(d, task->pid, time);
		const struct ufr_task *up;

		if (s != NULL)
			return s;
		/* no session of its own yet: inherit from the parent or the leader */
		up = task_parent(d, task);
		if (up == NULL && task_parent_pid(task))
			/* a parent that recorded nothing has no TASK line, but its SESS line is
			 * there: uftrace 0.13 resolves through it */
			return sess_of_pid_at(d, task_parent_pid(task), time);
		task = up;
	}
	return NULL;
}

static int sess_sid_cmp(const void *a, const void *b)
{
	const struct ufr_session *x = *(struct ufr_session *const *)a;
	const struct ufr_session *y = *(struct ufr_session *const *)b;

	return strcmp(x->line->sid, y->line->sid);
}

/* hand each DLOP line to the session it names (task.txt already checked the sid exists) */
static int attach_dlopens(struct ufr_data *d, struct rd_error *err)
{
	struct ufr_session **by_sid;

	by_sid = malloc((d->nr_sess ? d->nr_sess : 1) * sizeof(*by_sid));
	if (by_sid == NULL)
		return rd_error_set(err, UFR_E_IO, d->dir, -1, "out of memory");
	for (size_t i = 0; i < d->nr_sess; i++)
		by_sid[i] = &d->sess[i];
	qsort(by_sid, d->nr_sess, sizeof(*by_sid), sess_sid_cmp);

	for (size_t i = 0; i < d->tasks.nr; i++) {
		const struct ufr_task_line *l = &d->tasks.lines[i];
		struct ufr_session key_sess = { .line = l }, *key = &key_sess, **found;
		struct ufr_session *s;
		struct ufr_dlopen *n;

		if (l->kind != UFR_DLOP)
			continue;
		found = bsearch(&key, by_sid, d->nr_sess, sizeof(*by_sid), sess_sid_cmp);
		if (found == NULL)
			continue;
		s = *found;
		/* the array is full whenever its size is a power of two (or 0): double it */
		if ((s->nr_dlopens & (s->nr_dlopens - 1)) == 0) {
			size_t ncap = s->nr_dlopens ? s->nr_dlopens * 2 : 1;

			n = realloc(s->dlopens, ncap * sizeof(*n));
			if (n == NULL) {
				free(by_sid);
				return rd_error_set(err, UFR_E_IO, d->dir, -1, "out of memory");
			}
			s->dlopens = n;
		}
		s->dlopens[s->nr_dlopens++] = (struct ufr_dlopen){ .line = l };
	}
	free(by_sid);
	return 0;
}

static int load_sessions(struct ufr_data *d, struct rd_error *err)
{
	size_t n = 0;

	for (size_t i = 0; i < d->tasks.nr; i++)
		n += d->tasks.lines[i].kind == UFR_SESS;
	d->sess = calloc(n ? n : 1, sizeof(*d->sess));
	if (d->sess == NULL)
		return rd_error_set(err, UFR_E_IO, d->dir, -1, "out of memory");

	for (size_t i = 0; i < d->tasks.nr; i++) {
		const struct ufr_task_line *l = &d->tasks.lines[i];
		struct ufr_session *s;
		struct rd_error e;
		struct rd_buf buf;
		char name[UFR_SID_LEN + 16];

		if (l->kind != UFR_SESS)
			continue;
		s = &d->sess[d->nr_sess++];
		s->line = l;
		snprintf(name, sizeof(name), "sid-%s.map", l->sid);
		s->map_file = rd_path_join(d->dir, name);
		if (s->map_file == NULL)
			return rd_error_set(err, UFR_E_IO, d->dir, -1, "out of memory");
		rd_error_clear(&e);
		if (!rd_file_exists(s->map_file)) {
			rd_error_set(&e, UFR_E_FILE_MISSING, s->map_file, -1,
				     "missing: task.txt line %u starts session %s", l->lineno,
				     l->sid);
			if (note(d, err, &e) < 0)
				return -1;
			continue;
		}
		if (rd_load_file(s->map_file, MAP_MAX, &buf, UFR_E_IO, UFR_E_TOO_BIG, &e) < 0) {
			if (note(d, err, &e) < 0)
				return -1;
			continue;
		}
		if (ufr_map_parse(buf.data, buf.len, s->map_file, d->lenient, &s->map, &e) < 0) {
			if (note(d, err, &e) < 0) {
				rd_buf_free(&buf);
				return -1;
			}
		}
		rd_buf_free(&buf);
		s->map_ok = true;
	}
	qsort(d->sess, d->nr_sess, sizeof(*d->sess), sess_cmp);
	return attach_dlopens(d, err);
}

/* ---- the directory listing ---- */

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int ufr_dat_file_tid(const char *name)
{
	struct rd_scan sc;
	uint64_t v;
	size_t nd;

	rd_scan_init(&sc, name, strlen(name));
	if (name[0] == '0' || !rd_scan_dec(&sc, &v, &nd) || !rd_scan_lit(&sc, ".dat") ||
	    !rd_scan_eol(&sc) || v > INT32_MAX)
		return 0;
	return (int)v;
}

static int dat_name_cmp(const void *a, const void *b)
{
	int x = ufr_dat_file_tid(*(char *const *)a), y = ufr_dat_file_tid(*(char *const *)b);

	return (x > y) - (x < y);
}

static int push_name(char ***arr, size_t *nr, size_t *cap, const char *name)
{
	if (*nr == *cap) {
		size_t ncap = *cap ? *cap * 2 : 32;
		char **n = realloc(*arr, ncap * sizeof(*n));

		if (n == NULL)
			return -1;
		*arr = n;
		*cap = ncap;
	}
	(*arr)[*nr] = strdup(name);
	if ((*arr)[*nr] == NULL)
		return -1;
	(*nr)++;
	return 0;
}

static int list_dir(struct ufr_data *d, struct rd_error *err)
{
	size_t dcap = 0, scap = 0;
	struct dirent *de;
	DIR *dir;

	dir = opendir(d->dir);
	if (dir == NULL)
		return rd_error_set(err, UFR_E_IO, d->dir, -1, "cannot list: %s", strerror(errno));
	while ((de = readdir(dir)) != NULL) {
		size_t n = strlen(de->d_name);
		int ret = 0;

		if (ufr_dat_file_tid(de->d_name) > 0)
			ret = push_name(&d->dat_names, &d->nr_dat_names, &dcap, de->d_name);
		else if (n > 4 && !strcmp(de->d_name + n - 4, ".sym"))
			ret = push_name(&d->sym_names, &d->nr_sym_names, &scap, de->d_name);
		if (ret < 0) {
			closedir(dir);
			return rd_error_set(err, UFR_E_IO, d->dir, -1, "out of memory");
		}
	}
	closedir(dir);
	rd_sort(d->dat_names, d->nr_dat_names, sizeof(char *), dat_name_cmp);
	rd_sort(d->sym_names, d->nr_sym_names, sizeof(char *), str_cmp);
	return 0;
}

static int thread_ptr_cmp(const void *a, const void *b)
{
	const struct ufr_thread *x = *(struct ufr_thread *const *)a;
	const struct ufr_thread *y = *(struct ufr_thread *const *)b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

struct ufr_thread *ufr_find_thread(struct ufr_data *d, int tid)
{
	size_t lo = 0, hi = d->threads_by_tid ? d->nr_threads : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->threads_by_tid[mid]->tid == tid)
			return d->threads_by_tid[mid];
		if (d->threads_by_tid[mid]->tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* taskinfo tids against the .dat files and the TASK/FORK lines */
static int build_threads(struct ufr_data *d, struct rd_error *err)
{
	bool any_data = false;
	struct rd_error e;

	d->threads = calloc(d->info.nr_tid > 0 ? (size_t)d->info.nr_tid : 1, sizeof(*d->threads));
	if (d->threads == NULL)
		return rd_error_set(err, UFR_E_IO, d->dir, -1, "out of memory");
	for (int i = 0; d->info.tids != NULL && i < d->info.nr_tid; i++) {
		struct ufr_thread *t = &d->threads[d->nr_threads++];
		char name[32];

		t->owner = d;
		t->tid = d->info.tids[i];
		snprintf(name, sizeof(name), "%d.dat", t->tid);
		t->dat_file = rd_path_join(d->dir, name);
		if (t->dat_file == NULL)
			return rd_error_set(err, UFR_E_IO, d->dir, -1, "out of memory");
		t->dat_size = rd_file_size(t->dat_file);
		t->task = ufr_find_task(d, t->tid);
		/* a listed tid without a file is fine: 0.13 skips it (a thread that recorded
		 * nothing, a process that crashed) */
		if (t->dat_size > 0)
			any_data = true;
	}
	d->threads_by_tid =
		malloc((d->nr_threads ? d->nr_threads : 1) * sizeof(*d->threads_by_tid));
	if (d->threads_by_tid == NULL)
		return rd_error_set(err, UFR_E_IO, d->dir, -1, "out of memory");
	for (size_t i = 0; i < d->nr_threads; i++)
		d->threads_by_tid[i] = &d->threads[i];
	rd_sort(d->threads_by_tid, d->nr_threads, sizeof(*d->threads_by_tid), thread_ptr_cmp);

	for (size_t i = 0; i < d->nr_dat_names; i++) {
		int tid = ufr_dat_file_tid(d->dat_names[i]);

		char *path;

		if (ufr_find_thread(d, tid) != NULL)
			continue;
		path = rd_path_join(d->dir, d->dat_names[i]);
		if (path == NULL)
			return rd_error_set(err, UFR_E_IO, d->dir, -1, "out of memory");
		/* an empty one is ignored by 0.13 too, and has nothing to lose (a fork child that
		 * exec'ed before any call, in traces of flightrec before it removed those) */
		if (rd_file_size(path) == 0) {
			free(path);
			continue;
		}
		rd_error_clear(&e);
		rd_error_set(&e, UFR_E_DAT_UNLISTED, path, -1,
			     "tid %d is not in info taskinfo:tids: uftrace 0.13 ignores this file",
			     tid);
		free(path);
		if (note(d, err, &e) < 0)
			return -1;
	}
	for (size_t i = 0; i < d->nr_threads; i++) {
		struct ufr_thread *t = &d->threads[i];

		/* an empty file has no record that would need a session */
		if (t->dat_size <= 0 || t->task != NULL)
			continue;
		rd_error_clear(&e);
		rd_error_set(&e, UFR_E_DAT_NO_TASK, t->dat_file, -1,
			     "tid %d has no TASK or FORK line in task.txt, so no session", t->tid);
		if (note(d, err, &e) < 0)
			return -1;
	}
	if (!any_data && d->info.tids != NULL) {
		rd_error_clear(&e);
		rd_error_set(&e, UFR_E_DAT_NONE, d->dir, -1,
			     "no taskinfo tid has a non-empty <tid>.dat: uftrace reports \"No "
			     "data available\"");
		if (note(d, err, &e) < 0)
			return -1;
	}
	return 0;
}

/* ---- open / close ---- */

int ufr_open(const char *dir, int flags, struct ufr_data **out, struct rd_error *err)
{
	struct ufr_data *d;
	struct rd_error e;
	struct rd_buf buf;
	struct stat st;
	char *task_file = NULL;
	int ret;

	*out = NULL;
	if (stat(dir, &st) < 0)
		return rd_error_set(err, UFR_E_IO, dir, -1, "%s", strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return rd_error_set(err, UFR_E_IO, dir, -1, "not a directory");

	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return rd_error_set(err, UFR_E_IO, dir, -1, "out of memory");
	d->lenient = flags & UFR_OPEN_LENIENT;
	rd_error_clear(&d->err);
	d->dir = strdup(dir);
	d->info_file = rd_path_join(dir, "info");
	d->symcache = calloc(1, sizeof(*d->symcache));
	task_file = rd_path_join(dir, "task.txt");
	if (d->dir == NULL || d->info_file == NULL || d->symcache == NULL || task_file == NULL) {
		rd_error_set(err, UFR_E_IO, dir, -1, "out of memory");
		goto fail;
	}

	/* info */
	rd_error_clear(&e);
	if (!rd_file_exists(d->info_file)) {
		rd_error_set(err, UFR_E_FILE_MISSING, d->info_file, -1, "missing");
		goto fail;
	}
	if (rd_load_file(d->info_file, INFO_MAX, &buf, UFR_E_IO, UFR_E_TOO_BIG, err) < 0)
		goto fail;
	ret = ufr_info_parse(buf.data, buf.len, d->info_file, &d->info, &e);
	rd_buf_free(&buf);
	if (ret < 0) {
		/* without a trustworthy header nothing else can be decoded */
		bool fatal = e.rule == UFR_E_HDR_SHORT || e.rule == UFR_E_HDR_MAGIC ||
			     e.rule == UFR_E_HDR_ENDIAN;

		if (note(d, err, &e) < 0 || fatal) {
			if (err != NULL && !rd_error_isset(err))
				*err = e;
			goto fail;
		}
	} else {
		d->info_ok = true;
	}
	if (d->info.hdr.info_mask & (1u << UFR_INFO_ARG_SPEC)) {
		d->argspecs = ufr_argspecs_build(&d->info, dir);
		if (d->argspecs == NULL) {
			rd_error_set(err, UFR_E_IO, d->info_file, -1, "out of memory");
			goto fail;
		}
	}

	/* task.txt */
	rd_error_clear(&e);
	if (!rd_file_exists(task_file)) {
		rd_error_set(&e, UFR_E_FILE_MISSING, task_file, -1,
			     "missing (feat_mask has TASK_SESSION)");
		if (note(d, err, &e) < 0)
			goto fail;
	} else if (rd_load_file(task_file, TASK_MAX, &buf, UFR_E_IO, UFR_E_TOO_BIG, &e) < 0) {
		if (note(d, err, &e) < 0)
			goto fail;
	} else {
		ret = ufr_tasks_parse(buf.data, buf.len, task_file, d->lenient, &d->tasks, &e);
		rd_buf_free(&buf);
		if (ret < 0 && note(d, err, &e) < 0)
			goto fail;
		rd_error_clear(&e);
		{
			size_t i;

			for (i = 0; i < d->tasks.nr && d->tasks.lines[i].kind != UFR_SESS; i++)
				;
			if (i == d->tasks.nr) {
				rd_error_set(&e, UFR_E_TASK_NO_SESSION, task_file, -1,
					     "no SESS line: uftrace finds no session");
				if (note(d, err, &e) < 0)
					goto fail;
			}
		}
	}
	if (build_tasks(d) < 0) {
		rd_error_set(err, UFR_E_IO, dir, -1, "out of memory");
		goto fail;
	}
	if (load_sessions(d, err) < 0)
		goto fail;
	if (list_dir(d, err) < 0)
		goto fail;
	if (build_threads(d, err) < 0)
		goto fail;

	free(task_file);
	*out = d;
	return 0;

fail:
	free(task_file);
	ufr_close(d);
	return -1;
}

static void symcache_free(struct ufr_symcache *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->cap; i++) {
		if (c->slot[i] == NULL)
			continue;
		free(c->slot[i]->key);
		ufr_sym_free(&c->slot[i]->tab);
		free(c->slot[i]);
	}
	free(c->slot);
	free(c);
}

void ufr_close(struct ufr_data *d)
{
	if (d == NULL)
		return;
	ufr_info_free(&d->info);
	for (size_t i = 0; i < d->nr_sess; i++) {
		free(d->sess[i].map_file);
		free(d->sess[i].dlopens);
		ufr_map_free(&d->sess[i].map);
	}
	free(d->sess);
	ufr_tasks_free(&d->tasks);
	free(d->task);
	for (size_t i = 0; i < d->nr_threads; i++)
		free(d->threads[i].dat_file);
	free(d->threads);
	free(d->threads_by_tid);
	for (size_t i = 0; i < d->nr_dat_names; i++)
		free(d->dat_names[i]);
	free(d->dat_names);
	for (size_t i = 0; i < d->nr_sym_names; i++)
		free(d->sym_names[i]);
	free(d->sym_names);
	symcache_free(d->symcache);
	ufr_argspecs_free(d->argspecs);
	free(d->dir);
	free(d->info_file);
	free(d);
}

/* ---- per-thread configuration and verification ---- */

void ufr_thread_check_init(struct ufr_data *d, const struct ufr_thread *t, struct ufr_check *ck)
{
	const struct ufr_task *task = t->task;
	struct ufr_check_cfg cfg;
	uint64_t *resets = NULL;
	size_t n = 0;

	memset(&cfg, 0, sizeof(cfg));
	if (task == NULL) {
		ufr_check_init(ck, &cfg);
		return;
	}
	cfg.forked = task->forked;
	/*
	 * A thread's records start after its TASK line. A forked child's may not start after
	 * its FORK line: it can write frames its parent entered before the fork (with -e, say),
	 * and 0.13 resolves those through the parent's session, which is checked below.
	 */
	cfg.has_task_time = !task->forked;
	cfg.task_time = task->first->time;
	cfg.task_what = "TASK";

	/* the earliest session reachable through the parent / leader chain (a parent that
	 * recorded nothing has no TASK line, only its SESS line) */
	for (size_t hops = 0; task != NULL && hops <= MAX_CHAIN; hops++) {
		const struct ufr_task *up = task_parent(d, task);
		int pids[2] = { task->pid, up == NULL ? task_parent_pid(task) : 0 };

		for (int k = 0; k < 2 && pids[k]; k++) {
			size_t i = sess_first_of(d, pids[k]);

			if (i < d->nr_sess && d->sess[i].line->pid == pids[k] &&
			    (!cfg.has_sess_time || d->sess[i].line->time < cfg.sess_time)) {
				cfg.has_sess_time = true;
				cfg.sess_time = d->sess[i].line->time;
			}
		}
		task = up;
	}
	if (!cfg.has_sess_time) {
		/* no session at all: any record is too early */
		cfg.has_sess_time = true;
		cfg.sess_time = UINT64_MAX;
	}

	/* sessions of its own process, by time: each one after the first record is an exec */
	task = t->task;
	for (size_t i = sess_first_of(d, task->pid);
	     i < d->nr_sess && d->sess[i].line->pid == task->pid; i++)
		n++;
	if (n > 0 && (resets = malloc(n * sizeof(*resets))) != NULL) {
		size_t k = 0;

		/* the session array is sorted by (pid, time) */
		for (size_t i = sess_first_of(d, task->pid);
		     i < d->nr_sess && d->sess[i].line->pid == task->pid; i++)
			resets[k++] = d->sess[i].line->time;
		cfg.resets = resets;
		cfg.nr_resets = k;
	}
	ufr_check_init(ck, &cfg);
	ck->owned_resets = resets;
}

int ufr_thread_open(struct ufr_data *d, struct ufr_thread *t, struct ufr_dat_iter *it,
		    struct rd_error *err)
{
	if (ufr_dat_iter_open(it, t->dat_file, d->info.hdr.endian == 2, d->info.hdr.feat_mask,
			      err) < 0)
		return -1;
	if (d->argspecs != NULL) {
		it->args_size = ufr_args_size;
		it->args_ctx = t;
	}
	return 0;
}

static int verify_sym_files(struct ufr_data *d, struct rd_error *err)
{
	for (size_t i = 0; i < d->nr_sym_names; i++) {
		struct ufr_symtab tab;
		struct rd_buf buf;
		char *path = rd_path_join(d->dir, d->sym_names[i]);
		int ret;

		if (path == NULL)
			return rd_error_set(err, UFR_E_IO, d->dir, -1, "out of memory");
		ret = rd_load_file(path, SYM_MAX, &buf, UFR_E_IO, UFR_E_TOO_BIG, err);
		if (ret == 0) {
			ret = ufr_sym_parse(buf.data, buf.len, path, false, &tab, err);
			if (ret == 0)
				ufr_sym_free(&tab);
			rd_buf_free(&buf);
		}
		free(path);
		if (ret < 0)
			return -1;
	}
	return 0;
}

/* one thread's records through CK: 0, or -1 with ERR set; COUNTS gets what was checked */
static int verify_thread(struct ufr_data *d, struct ufr_thread *t, struct ufr_check *ck,
			 struct ufr_counts *counts, struct rd_error *err)
{
	struct ufr_dat_iter it;
	struct ufr_rec rec;
	int r;

	ufr_thread_check_init(d, t, ck);
	if (ufr_thread_open(d, t, &it, err) < 0) {
		ufr_check_fini(ck);
		*counts = ck->counts;
		return -1;
	}
	while ((r = ufr_dat_next(&it, &rec, err)) > 0) {
		if (ufr_check_rec(ck, &rec, t->dat_file, err) < 0) {
			r = -1;
			break;
		}
	}
	ufr_dat_iter_close(&it);
	ufr_check_fini(ck);
	*counts = ck->counts;
	return r < 0 ? -1 : 0;
}

/*
 * Threads checked by several workers: each takes the next thread not yet taken, and the
 * result of every thread is kept by its index, so that the answer is the sequential one: the
 * error of the first thread (in d->threads' order) that has one, the counts summed in that
 * order. Threads after a failed one are not started (the sequential walk stops there).
 */
struct verify_job {
	struct ufr_data *d;
	pthread_mutex_t lock;
	size_t next;		   /* the next thread to take */
	size_t first_bad;	   /* the lowest index that failed, nr_threads when none */
	struct ufr_counts *counts; /* per thread */
	struct rd_error **errs;	   /* per thread, allocated when it failed */
	bool oom;
};

static void *verify_worker(void *arg)
{
	struct verify_job *j = arg;
	struct ufr_check *ck = malloc(sizeof(*ck));

	for (;;) {
		struct rd_error *e;
		size_t i;

		pthread_mutex_lock(&j->lock);
		i = j->next++;
		if (!ck)
			j->oom = true;
		if (!ck || i >= j->d->nr_threads || i > j->first_bad) {
			pthread_mutex_unlock(&j->lock);
			break;
		}
		pthread_mutex_unlock(&j->lock);
		if (j->d->threads[i].dat_size < 0)
			continue;
		e = malloc(sizeof(*e));
		if (!e) {
			pthread_mutex_lock(&j->lock);
			j->oom = true;
			pthread_mutex_unlock(&j->lock);
			break;
		}
		rd_error_clear(e);
		if (verify_thread(j->d, &j->d->threads[i], ck, &j->counts[i], e) < 0) {
			j->errs[i] = e;
			pthread_mutex_lock(&j->lock);
			if (i < j->first_bad)
				j->first_bad = i;
			pthread_mutex_unlock(&j->lock);
		} else {
			free(e);
		}
	}
	free(ck);
	return NULL;
}

/* the threads' records with JOBS workers (> 1); -2 when it cannot start them (no memory or
 * no thread): the caller goes on alone */
static int verify_parallel(struct ufr_data *d, unsigned jobs, struct ufr_counts *total,
			   struct rd_error *err)
{
	struct verify_job j;
	pthread_t *tids = calloc(jobs, sizeof(*tids));
	int ret = 0;

	memset(&j, 0, sizeof(j));
	j.d = d;
	j.first_bad = d->nr_threads;
	j.counts = calloc(d->nr_threads, sizeof(*j.counts));
	j.errs = calloc(d->nr_threads, sizeof(*j.errs));
	if (!tids || !j.counts || !j.errs) {
		free(tids);
		free(j.counts);
		free(j.errs);
		return -2;
	}
	pthread_mutex_init(&j.lock, NULL);
	rd_run_workers(tids, jobs, verify_worker, &j);
	for (size_t i = 0; i < d->nr_threads; i++) {
		if (i > j.first_bad)
			break;
		if (total != NULL)
			ufr_counts_add(total, &j.counts[i]);
		if (j.errs[i]) {
			if (!rd_error_isset(err))
				*err = *j.errs[i];
			ret = -1;
		}
	}
	if (ret == 0 && j.oom)
		ret = rd_error_set(err, UFR_E_IO, d->dir, -1, "out of memory");
	for (size_t i = 0; i < d->nr_threads; i++)
		free(j.errs[i]);
	pthread_mutex_destroy(&j.lock);
	free(tids);
	free(j.counts);
	free(j.errs);
	return ret;
}

int ufr_verify(struct ufr_data *d, struct ufr_counts *total, struct rd_error *err)
{
	return ufr_verify_jobs(d, 1, total, err);
}

int ufr_verify_jobs(struct ufr_data *d, unsigned jobs, struct ufr_counts *total,
		    struct rd_error *err)
{
	struct ufr_check *ck;
	int ret = 0;

	if (total != NULL)
		memset(total, 0, sizeof(*total));
	if (rd_error_isset(&d->err)) {
		if (err != NULL && !rd_error_isset(err))
			*err = d->err;
		return -1;
	}
	if (verify_sym_files(d, err) < 0)
		return -1;
	/* sizing argument payloads symbolizes through d's caches, which are not shared: one
	 * worker then; more workers than threads would wait */
	if (d->argspecs != NULL)
		jobs = 1;
	if (jobs > d->nr_threads)
		jobs = (unsigned)d->nr_threads;
	if (jobs > 1) {
		ret = verify_parallel(d, jobs, total, err);
		if (ret != -2)
			return ret;
		ret = 0;
	}

	ck = malloc(sizeof(*ck)); /* ~9 KiB of depth stack: keep it off the stack */
	if (ck == NULL)
		return rd_error_set(err, UFR_E_IO, d->dir, -1, "out of memory");
	for (size_t i = 0; i < d->nr_threads && ret == 0; i++) {
		struct ufr_thread *t = &d->threads[i];
		struct ufr_counts counts;

		if (t->dat_size < 0)
			continue;
		if (verify_thread(d, t, ck, &counts, err) < 0)
			ret = -1;
		if (total != NULL)
			ufr_counts_add(total, &counts);
	}
	free(ck);
	return ret;
}

/* ---- symbols ---- */

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static size_t key_hash(const char *s)
{
	size_t h = 14695981039346656037ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static struct symcache_entry *symcache_find(struct ufr_symcache *c, const char *key)
{
	if (c->cap == 0)
		return NULL;
	for (size_t i = key_hash(key) & (c->cap - 1); c->slot[i]; i = (i + 1) & (c->cap - 1))
		if (!strcmp(c->slot[i]->key, key))
			return c->slot[i];
	return NULL;
}

static int symcache_insert(struct symcache_entry **slot, size_t cap, struct symcache_entry *e)
{
	size_t i;

	for (i = key_hash(e->key) & (cap - 1); slot[i]; i = (i + 1) & (cap - 1))
		;
	slot[i] = e;
	return 0;
}

/* a new, empty entry for KEY (not present yet) */
static struct symcache_entry *symcache_add(struct ufr_symcache *c, const char *key)
{
	struct symcache_entry *e;

	if ((c->nr + 1) * 2 > c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 64;
		struct symcache_entry **n = calloc(ncap, sizeof(*n));

		if (n == NULL)
			return NULL;
		for (size_t i = 0; i < c->cap; i++)
			if (c->slot[i])
				symcache_insert(n, ncap, c->slot[i]);
		free(c->slot);
		c->slot = n;
		c->cap = ncap;
	}
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return NULL;
	e->key = strdup(key);
	if (e->key == NULL) {
		free(e);
		return NULL;
	}
	symcache_insert(c->slot, c->cap, e);
	c->nr++;
	return e;
}

/* a .sym file, parsed leniently; NULL when absent or empty */
static const struct ufr_symtab *symfile_get(struct ufr_data *d, const char *name)
{
	struct symcache_entry *e;
	struct rd_error e2;
	struct rd_buf buf;
	char *path;

	path = rd_path_join(d->dir, name);
	if (path == NULL)
		return NULL;
	e = symcache_find(d->symcache, path);
	if (e == NULL && (e = symcache_add(d->symcache, path)) != NULL) {
		rd_error_clear(&e2);
		if (rd_file_exists(path) &&
		    rd_load_file(path, SYM_MAX, &buf, UFR_E_IO, UFR_E_TOO_BIG, &e2) == 0) {
			ufr_sym_parse(buf.data, buf.len, path, true, &e->tab, &e2);
			e->ok = e->tab.nr > 0;
			rd_buf_free(&buf);
		}
	}
	free(path);
	return e && e->ok ? &e->tab : NULL;
}

static const struct ufr_symtab *elf_get(struct ufr_data *d, const char *path)
{
	struct symcache_entry *e;
	char *key = malloc(strlen(path) + 5);

	if (key == NULL)
		return NULL;
	strcpy(key, "elf:");
	strcat(key, path);
	e = symcache_find(d->symcache, key);
	if (e == NULL && (e = symcache_add(d->symcache, key)) != NULL)
		e->ok = ufr_sym_load_elf(path, d->info.hdr.feat_mask & UFR_FEAT_SYM_REL_ADDR,
					 &e->tab) == 0 &&
			e->tab.nr > 0;
	free(key);
	return e && e->ok ? &e->tab : NULL;
}

/* the symbol table of a module at PATH, the way 0.13 picks it */
static const struct ufr_symtab *module_symtab(struct ufr_data *d, const char *path,
					      const char *build_id)
{
	const struct ufr_symtab *tab;
	char *name;
	size_t n = strlen(base_name(path));

	name = malloc(n + 32);
	if (name == NULL)
		return NULL;
	snprintf(name, n + 32, "%s.sym", base_name(path));
	tab = symfile_get(d, name);
	if (tab != NULL && ((tab->path_name && strcmp(tab->path_name, path)) ||
			    (tab->build_id && build_id && strcmp(tab->build_id, build_id)))) {
		/* another module of the same basename: 0.13 saved this one under a suffix */
		if (build_id != NULL && strlen(build_id) >= 4) {
			snprintf(name, n + 32, "%s-%.4s.sym", base_name(path), build_id);
		} else {
			uint16_t csum = 0;

			for (const char *p = path; *p; p++)
				csum += (uint16_t)(int)*p;
			snprintf(name, n + 32, "%s-%04x.sym", base_name(path), csum);
		}
		tab = symfile_get(d, name);
	}
	free(name);
	if (tab == NULL)
		tab = elf_get(d, path);
	return tab;
}

const char *ufr_symbolize(struct ufr_data *d, const struct ufr_thread *t, uint64_t time,
			  uint64_t addr)
{
	struct ufr_session *s;
	struct ufr_module *m;
	const struct ufr_sym *sym;

	if (t == NULL || t->task == NULL)
		return NULL;
	s = ufr_session_at(d, t->task, time);
	if (s == NULL || !s->map_ok)
		return NULL;
	m = ufr_map_find(&s->map, addr);
	if (m != NULL) {
		if (!m->symtab_tried) {
			/* (0.13 never resolves inside its own runtime, libmcount*); decided once
			 * per module, not per record */
			if (strncmp(base_name(m->path), "libmcount", 9) != 0)
				m->symtab = module_symtab(d, m->path, m->build_id);
			m->symtab_tried = true;
		}
		sym = m->symtab ? ufr_sym_find(m->symtab, addr - m->start) : NULL;
		if (sym != NULL)
			return sym->name;
	}
	/* libraries dlopen'ed in this session before TIME, the latest first */
	for (size_t i = s->nr_dlopens; i > 0; i--) {
		struct ufr_dlopen *dl = &s->dlopens[i - 1];

		if (dl->line->time > time || addr < dl->line->base)
			continue;
		if (!dl->symtab_tried) {
			dl->symtab = module_symtab(d, dl->line->name, NULL);
			dl->symtab_tried = true;
		}
		sym = dl->symtab ? ufr_sym_find(dl->symtab, addr - dl->line->base) : NULL;
		if (sym != NULL)
			return sym->name;
	}
	return NULL;
}
