/*
 * read_ovni: find, load and check ovni traces (see read_ovni.h for the rules).
 *
 * Messages follow ovniemu's wording where it has one, so a user can match them with what the
 * emulator would say. Files are mapped read-only; nothing is trusted: every size read from a
 * stream is checked against the bytes that are really there.
 */
#include "formats/ovni/read_ovni.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define OVR_MAX_DEPTH 32
#define OVR_JSON_MAX (64u << 20)

/* The models ovniemu knows: letter, name, version in 1.14 (v3) and 1.10 (v2). */
static const struct ovr_model ovr_models[] = {
	{ 'O', "ovni", "1.1.0", "1.1.0" },   { '6', "nanos6", "1.1.0", "1.1.0" },
	{ 'V', "nosv", "2.7.0", "2.3.0" },   { 'D', "nodes", "1.0.0", "1.0.0" },
	{ 'T', "tampi", "1.0.0", "1.0.0" },  { 'M', "mpi", "1.0.0", "1.0.0" },
	{ 'K', "kernel", "1.0.0", "1.0.0" }, { 'P', "openmp", "1.2.1", "1.1.0" },
};

const struct ovr_model *ovr_model_of(char letter)
{
	for (size_t i = 0; i < sizeof(ovr_models) / sizeof(ovr_models[0]); i++)
		if (ovr_models[i].letter == letter)
			return &ovr_models[i];
	return NULL;
}

void ovr_warn(struct ovr_trace *t, const char *fmt, ...)
{
	char buf[512], **nw;
	va_list ap;

	if (t->nwarnings >= 1000)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	nw = realloc(t->warnings, (t->nwarnings + 1) * sizeof(*nw));
	if (!nw)
		return;
	t->warnings = nw;
	if ((t->warnings[t->nwarnings] = strdup(buf)))
		t->nwarnings++;
}

/* "X.Y.Z" as ovniemu reads it (a '-' may end the patch number) */
static bool ovr_version(const char *s, int v[3])
{
	for (int i = 0; i < 3; i++) {
		char *e;
		long x;
		if (*s < '0' || *s > '9')
			return false;
		errno = 0;
		x = strtol(s, &e, 10);
		if (errno || x > 1000000)
			return false;
		v[i] = (int)x;
		s = e;
		if (i < 2 && *s++ != '.')
			return false;
	}
	return *s == '\0' || *s == '-';
}

/* --- finding the streams ---------------------------------------------------------------- */

struct ovr_found {
	char **v3; /* directories with a stream.json */
	size_t n3;
	char **v2; /* *.obs files outside them */
	size_t n2;
	/* empty stream.obs files with no stream.json: a thread killed as its stream was being
	 * made, before its metadata; ovniemu 1.14 loads only stream.json directories */
	char *empty_obs; /* the first one */
	size_t n_empty;
};

static bool ovr_add_path(char ***v, size_t *n, const char *rel)
{
	char **nv = realloc(*v, (*n + 1) * sizeof(*nv));
	if (!nv)
		return false;
	*v = nv;
	if (!(nv[*n] = strdup(rel)))
		return false;
	(*n)++;
	return true;
}

static bool ovr_has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && strcmp(s + a - b, suf) == 0;
}

/* rel: path relative to the trace directory ("" for the top) */
static int ovr_scan(const char *top, const char *rel, int depth, struct ovr_found *f,
		    struct rd_error *err)
{
	char *dirpath = *rel ? rd_path_join(top, rel) : strdup(top);
	struct dirent **names = NULL;
	bool has_json = false;
	int n, ret = 0;

	if (!dirpath)
		return rd_error_set(err, OVR_RULE_IO, top, -1, "out of memory");
	n = scandir(dirpath, &names, NULL, alphasort);
	if (n < 0) {
		ret = rd_error_set(err, OVR_RULE_IO, dirpath, -1, "cannot open directory: %s",
				   strerror(errno));
		free(dirpath);
		return ret;
	}
	for (int i = 0; i < n; i++)
		has_json |= strcmp(names[i]->d_name, "stream.json") == 0;
	if (has_json && !ovr_add_path(&f->v3, &f->n3, rel))
		ret = rd_error_set(err, OVR_RULE_IO, dirpath, -1, "out of memory");
	for (int i = 0; i < n && ret == 0; i++) {
		const char *name = names[i]->d_name;
		char *sub, *full;
		struct stat st;

		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		sub = *rel ? rd_path_join(rel, name) : strdup(name);
		full = sub ? rd_path_join(top, sub) : NULL;
		if (!full) {
			ret = rd_error_set(err, OVR_RULE_IO, dirpath, -1, "out of memory");
		} else if (lstat(full, &st) == 0 && S_ISDIR(st.st_mode)) {
			if (depth < OVR_MAX_DEPTH)
				ret = ovr_scan(top, sub, depth + 1, f, err);
		} else if (S_ISREG(st.st_mode) && !strcmp(name, "stream.obs") && !has_json &&
			   st.st_size == 0) {
			if (!f->n_empty++ && !(f->empty_obs = strdup(sub)))
				ret = rd_error_set(err, OVR_RULE_IO, dirpath, -1, "out of memory");
		} else if (S_ISREG(st.st_mode) && ovr_has_suffix(name, ".obs") &&
			   !(has_json && !strcmp(name, "stream.obs"))) {
			if (!ovr_add_path(&f->v2, &f->n2, sub))
				ret = rd_error_set(err, OVR_RULE_IO, dirpath, -1, "out of memory");
		}
		free(sub);
		free(full);
	}
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(dirpath);
	return ret;
}

bool ovr_sniff(const char *path)
{
	struct stat st;
	struct dirent *de;
	bool found = false;
	DIR *d;

	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode) || !(d = opendir(path)))
		return false;
	while (!found && (de = readdir(d))) {
		char *p;
		if (strncmp(de->d_name, "loom.", 5) != 0 || !(p = rd_path_join(path, de->d_name)))
			continue;
		found = stat(p, &st) == 0 && S_ISDIR(st.st_mode);
		free(p);
	}
	closedir(d);
	return found;
}

/* --- loading ---------------------------------------------------------------------------- */

static int ovr_load_json(const char *path, struct ovj **out, struct rd_error *err)
{
	struct rd_buf b;
	size_t off = 0;

	if (rd_load_file(path, OVR_JSON_MAX, &b, OVR_RULE_IO, OVR_RULE_JSON, err) < 0)
		return -1;
	*out = ovj_parse(b.data, b.len, &off);
	rd_buf_free(&b);
	if (!*out)
		return rd_error_set(err, OVR_RULE_JSON, path, (int64_t)off, "not valid JSON");
	if ((*out)->type != OVJ_OBJECT) {
		ovj_free(*out);
		*out = NULL;
		return rd_error_set(err, OVR_RULE_JSON, path, -1, "not a JSON object");
	}
	return 0;
}

static int ovr_map(struct ovr_stream *s, struct rd_error *err)
{
	int fd = open(s->obs, O_RDONLY | O_CLOEXEC);
	struct stat st;
	void *m;

	if (fd < 0)
		return rd_error_set(err, OVR_RULE_IO, s->obs, -1, "open failed: %s",
				    strerror(errno));
	if (fstat(fd, &st) < 0) {
		close(fd);
		return rd_error_set(err, OVR_RULE_IO, s->obs, -1, "fstat failed: %s",
				    strerror(errno));
	}
	if (st.st_size == 0) {
		close(fd);
		return rd_error_set(err, OVR_RULE_HEADER, s->obs, -1, "stream %s is empty",
				    s->relpath);
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return rd_error_set(err, OVR_RULE_IO, s->obs, -1, "mmap failed: %s",
				    strerror(errno));
	s->buf = m;
	s->size = (size_t)st.st_size;
	if (s->size < 8)
		return rd_error_set(err, OVR_RULE_HEADER, s->obs, 0,
				    "stream '%s': incomplete stream header", s->relpath);
	if (memcmp(s->buf, "ovni", 4) != 0) {
		char magic[5];
		for (int i = 0; i < 4; i++)
			magic[i] = s->buf[i] >= 0x20 && s->buf[i] < 0x7f ? (char)s->buf[i] : '?';
		magic[4] = '\0';
		return rd_error_set(err, OVR_RULE_HEADER, s->obs, 0,
				    "stream '%s': wrong stream magic '%s' (expected 'ovni')",
				    s->relpath, magic);
	}
	if (rd_get32(s->buf + 4, false) != 1)
		return rd_error_set(err, OVR_RULE_HEADER, s->obs, 4,
				    "stream '%s': stream version mismatch %" PRIu32 " (expected 1)",
				    s->relpath, rd_get32(s->buf + 4, false));
	return 0;
}

static size_t ovr_loom_of(struct ovr_trace *t, const char *name)
{
	struct ovr_loom *nl;

	for (size_t i = 0; i < t->nlooms; i++)
		if (!strcmp(t->looms[i].name, name))
			return i;
	nl = realloc(t->looms, (t->nlooms + 1) * sizeof(*nl));
	if (!nl)
		return SIZE_MAX;
	t->looms = nl;
	memset(&nl[t->nlooms], 0, sizeof(*nl));
	if (!(nl[t->nlooms].name = strdup(name)))
		return SIZE_MAX;
	return t->nlooms++;
}

static size_t ovr_proc_of(struct ovr_trace *t, size_t loom, int pid)
{
	struct ovr_proc *np;

	for (size_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].loom == loom && t->procs[i].pid == pid)
			return i;
	np = realloc(t->procs, (t->nprocs + 1) * sizeof(*np));
	if (!np)
		return SIZE_MAX;
	t->procs = np;
	memset(&np[t->nprocs], 0, sizeof(*np));
	np[t->nprocs].loom = loom;
	np[t->nprocs].pid = pid;
	np[t->nprocs].rank = -1;
	t->looms[loom].nprocs++;
	return t->nprocs++;
}

/* Merge a cpus / loom_cpus array into the loom (ovniemu's load_cpus rules). */

/* A JSON number as an int: `bad` when it is not finite or does not fit (a converted
 * out-of-range double is undefined behaviour, and metadata is untrusted input). */
static int ovr_int(double d, int bad)
{
	if (!(d >= (double)INT_MIN && d <= (double)INT_MAX))
		return bad;
	return (int)d;
}

static int ovr_add_cpus(struct ovr_trace *t, struct ovr_loom *l, const struct ovj *arr,
			const char *file, struct rd_error *err)
{
	if (arr->type != OVJ_ARRAY)
		return rd_error_set(err, OVR_RULE_CPU, file, -1, "the CPU list is not an array");
	if (arr->n == 0)
		return rd_error_set(err, OVR_RULE_CPU, file, -1, "empty 'cpus' array in metadata");
	for (size_t i = 0; i < arr->n; i++) {
		const struct ovj *c = arr->items[i];
		double di = 0, dp = 0;
		struct ovr_cpu *nc;
		bool dup = false;
		int index, phyid;

		if (c->type != OVJ_OBJECT)
			return rd_error_set(err, OVR_RULE_CPU, file, -1,
					    "CPU %zu of the list is not an object", i);
		ovj_dotget_number(c, "index", &di); /* parson: missing number reads as 0 */
		ovj_dotget_number(c, "phyid", &dp);
		index = ovr_int(di, -1);
		phyid = ovr_int(dp, -1);
		if (index < 0)
			return rd_error_set(err, OVR_RULE_CPU, file, -1,
					    "cpu index %d out of bounds", index);
		if (phyid < 0)
			return rd_error_set(err, OVR_RULE_CPU, file, -1,
					    "cannot use negative cpu phyid %d", phyid);
		for (size_t k = 0; k < l->ncpus; k++) {
			if (l->cpus[k].phyid != phyid)
				continue;
			if (t->layout == OVR_V2)
				return rd_error_set(err, OVR_RULE_CPU, file, -1,
						    "cpu with phyid %d already in loom", phyid);
			if (l->cpus[k].index != index)
				return rd_error_set(err, OVR_RULE_CPU, file, -1,
						    "mismatch index in existing cpu: %d", index);
			dup = true;
		}
		if (dup)
			continue;
		nc = realloc(l->cpus, (l->ncpus + 1) * sizeof(*nc));
		if (!nc)
			return rd_error_set(err, OVR_RULE_IO, file, -1, "out of memory");
		l->cpus = nc;
		nc[l->ncpus].index = index;
		nc[l->ncpus].phyid = phyid;
		l->ncpus++;
	}
	return 0;
}

static int ovr_version_key(const struct ovj *meta, int want, const char *file, struct rd_error *err)
{
	const struct ovj *v = ovj_get(meta, "version");

	if (!v)
		return rd_error_set(err, OVR_RULE_META, file, -1, "missing attribute \"version\"");
	if (v->type != OVJ_NUMBER || ovr_int(v->number, INT_MIN) != want)
		return rd_error_set(err, OVR_RULE_META, file, -1,
				    "metadata version mismatch %d (expected %d)",
				    v->type == OVJ_NUMBER ? ovr_int(v->number, 0) : 0, want);
	return 0;
}

/* ovni.app_id and ovni.rank / ovni.nranks of a v3 stream into its process */
static int ovr_proc_keys_v3(struct ovr_proc *p, const struct ovr_stream *s, struct rd_error *err)
{
	const struct ovj *a = ovj_dotget(s->meta, "ovni.app_id");
	const struct ovj *r = ovj_dotget(s->meta, "ovni.rank");
	int appid, rank, nranks;
	double d;

	if (a) {
		appid = a->type == OVJ_NUMBER ? ovr_int(a->number, 0) : 0;
		if (p->app_id && p->app_id != appid)
			return rd_error_set(err, OVR_RULE_PROC, s->json, -1,
					    "mismatch previous appid %d with stream: %s", p->app_id,
					    s->relpath);
		if (appid <= 0)
			return rd_error_set(err, OVR_RULE_PROC, s->json, -1,
					    "appid must be >0, stream: %s", s->relpath);
		p->app_id = appid;
	}
	if (!r)
		return 0;
	rank = r->type == OVJ_NUMBER ? ovr_int(r->number, -1) : 0;
	if (rank < 0)
		return rd_error_set(err, OVR_RULE_PROC, s->json, -1,
				    "rank %d must be >=0, stream: %s", rank, s->relpath);
	if (p->rank >= 0 && p->rank != rank)
		return rd_error_set(err, OVR_RULE_PROC, s->json, -1,
				    "mismatch previous rank %d with stream: %s", p->rank,
				    s->relpath);
	if (!ovj_dotget(s->meta, "ovni.nranks"))
		return rd_error_set(err, OVR_RULE_PROC, s->json, -1,
				    "missing ovni.nranks attribute: %s", s->relpath);
	nranks = ovj_dotget_number(s->meta, "ovni.nranks", &d) ? ovr_int(d, 0) : 0;
	if (nranks <= 0)
		return rd_error_set(err, OVR_RULE_PROC, s->json, -1,
				    "nranks %d must be >0, stream: %s", nranks, s->relpath);
	if (p->nranks > 0 && p->nranks != nranks)
		return rd_error_set(err, OVR_RULE_PROC, s->json, -1,
				    "mismatch previous nranks %d with stream: %s", p->nranks,
				    s->relpath);
	if (rank >= nranks)
		return rd_error_set(err, OVR_RULE_PROC, s->json, -1,
				    "rank %d must be lower than nranks %d: %s", rank, nranks,
				    s->relpath);
	p->rank = rank;
	p->nranks = nranks;
	return 0;
}

/* One v3 stream directory: metadata keys, then its process and loom. 1 if it is a thread
 * stream, 0 if ovniemu would skip it, -1 on error. */
static int ovr_load_v3(struct ovr_trace *t, struct ovr_stream *s, struct rd_error *err)
{
	const char *part, *loom;
	double d;
	size_t li;
	int pid;

	if (ovr_load_json(s->json, &s->meta, err) < 0 ||
	    ovr_version_key(s->meta, 3, s->json, err) < 0)
		return -1;
	part = ovj_dotget_string(s->meta, "ovni.part");
	if (!part)
		return rd_error_set(err, OVR_RULE_META, s->json, -1,
				    "cannot get attribute ovni.part for stream: %s", s->relpath);
	if (strcmp(part, "thread") != 0) {
		ovr_warn(t, "ignoring unknown stream part '%s' of %s", part, s->relpath);
		return 0;
	}
	loom = ovj_dotget_string(s->meta, "ovni.loom");
	if (!loom)
		return rd_error_set(err, OVR_RULE_META, s->json, -1,
				    "missing ovni.loom attribute: %s", s->relpath);
	if (strchr(loom, '/'))
		return rd_error_set(err, OVR_RULE_META, s->json, -1,
				    "loom name '%s' cannot contain '/': %s", loom, s->relpath);
	pid = ovj_dotget_number(s->meta, "ovni.pid", &d) ? ovr_int(d, 0) : 0;
	if (pid == 0)
		return rd_error_set(err, OVR_RULE_META, s->json, -1,
				    "cannot get attribute ovni.pid for stream: %s", s->relpath);
	s->tid = ovj_dotget_number(s->meta, "ovni.tid", &d) ? ovr_int(d, 0) : 0;
	if (s->tid == 0)
		return rd_error_set(err, OVR_RULE_META, s->json, -1,
				    "cannot get attribute ovni.tid for stream: %s", s->relpath);
	if (!ovj_dotget_number(s->meta, "ovni.finished", &d) || d != 1)
		return rd_error_set(err, OVR_RULE_META, s->json, -1, "missing ovni.finished: %s",
				    s->relpath);
	if (!ovj_dotget_string(s->meta, "ovni.lib.version"))
		return rd_error_set(err, OVR_RULE_META, s->json, -1,
				    "missing ovni.lib.version key in thread metadata: %s",
				    s->relpath);
	if (!ovj_dotget_string(s->meta, "ovni.lib.commit"))
		return rd_error_set(err, OVR_RULE_META, s->json, -1,
				    "missing ovni.lib.commit key in thread metadata: %s",
				    s->relpath);
	{
		const struct ovj *req = ovj_dotget(s->meta, "ovni.require");
		if (!req || req->type != OVJ_OBJECT)
			return rd_error_set(err, OVR_RULE_META, s->json, -1,
					    "missing 'ovni.require' key in thread %s", s->relpath);
	}
	li = ovr_loom_of(t, loom);
	if (li == SIZE_MAX || (s->proc = ovr_proc_of(t, li, pid)) == SIZE_MAX)
		return rd_error_set(err, OVR_RULE_IO, s->json, -1, "out of memory");
	if (ovr_proc_keys_v3(&t->procs[s->proc], s, err) < 0)
		return -1;
	{
		const struct ovj *cpus = ovj_dotget(s->meta, "ovni.loom_cpus");
		if (cpus && ovr_add_cpus(t, &t->looms[li], cpus, s->json, err) < 0)
			return -1;
	}
	return 1;
}

/* One v2 stream file, loom.L/proc.P/thread.T.obs, with thread.T.json and metadata.json. */
static int ovr_load_v2(struct ovr_trace *t, struct ovr_stream *s, struct rd_error *err)
{
	char loomdir[256], procdir[256], file[256], *mpath;
	struct ovr_proc *p;
	const struct ovj *v;
	int pid, n = 0;
	double d;
	size_t li;

	if (sscanf(s->relpath, "%255[^/]/%255[^/]/%255s%n", loomdir, procdir, file, &n) != 3 ||
	    (size_t)n != strlen(s->relpath) || strncmp(loomdir, "loom.", 5) != 0 ||
	    sscanf(procdir, "proc.%d%n", &pid, &n) != 1 || (size_t)n != strlen(procdir) ||
	    sscanf(file, "thread.%d.obs%n", &s->tid, &n) != 1 || (size_t)n != strlen(file))
		return rd_error_set(err, OVR_RULE_LAYOUT, s->obs, -1,
				    "a v2 stream must be loom.<L>/proc.<P>/thread.<T>.obs, not %s",
				    s->relpath);
	if (ovr_load_json(s->json, &s->meta, err) < 0 ||
	    ovr_version_key(s->meta, 2, s->json, err) < 0)
		return -1;
	if (!ovj_dotget_number(s->meta, "ovni.finished", &d) || d != 1)
		ovr_warn(t, "thread didn't finish properly: %s", s->relpath);
	if (!ovj_dotget_string(s->meta, "ovni.lib.version"))
		return rd_error_set(err, OVR_RULE_META, s->json, -1,
				    "missing ovni.lib.version key in thread metadata: %s",
				    s->relpath);
	if (!ovj_dotget_string(s->meta, "ovni.lib.commit"))
		return rd_error_set(err, OVR_RULE_META, s->json, -1,
				    "missing ovni.lib.commit key in thread metadata: %s",
				    s->relpath);
	li = ovr_loom_of(t, loomdir + 5);
	if (li == SIZE_MAX || (s->proc = ovr_proc_of(t, li, pid)) == SIZE_MAX)
		return rd_error_set(err, OVR_RULE_IO, s->json, -1, "out of memory");
	p = &t->procs[s->proc];
	if (p->meta)
		return 1;
	/* the process's metadata.json, once */
	{
		char rel[600];
		snprintf(rel, sizeof(rel), "%s/%s/metadata.json", loomdir, procdir);
		mpath = rd_path_join(t->dir, rel);
	}
	if (!mpath)
		return rd_error_set(err, OVR_RULE_IO, s->json, -1, "out of memory");
	if (!rd_file_exists(mpath)) {
		rd_error_set(err, OVR_RULE_META, mpath, -1,
			     "cannot load proc metadata from file %s (missing)", mpath);
		free(mpath);
		return -1;
	}
	if (ovr_load_json(mpath, &p->meta, err) < 0 ||
	    ovr_version_key(p->meta, 2, mpath, err) < 0) {
		free(mpath);
		return -1;
	}
	v = ovj_get(p->meta, "app_id");
	if (!v) {
		rd_error_set(err, OVR_RULE_PROC, mpath, -1,
			     "missing attribute 'app_id' in metadata");
		free(mpath);
		return -1;
	}
	p->app_id = v->type == OVJ_NUMBER ? ovr_int(v->number, 0) : 0;
	if (p->app_id <= 0) {
		rd_error_set(err, OVR_RULE_PROC, mpath, -1, "appid must be >0 (%d)", p->app_id);
		free(mpath);
		return -1;
	}
	v = ovj_get(p->meta, "rank");
	p->rank = v && v->type == OVJ_NUMBER ? ovr_int(v->number, -1) : -1;
	v = ovj_get(p->meta, "nranks");
	p->nranks = v && v->type == OVJ_NUMBER ? ovr_int(v->number, 0) : 0;
	v = ovj_get(p->meta, "cpus");
	if (v) {
		if (t->looms[li].ncpus > 0) {
			rd_error_set(err, OVR_RULE_CPU, mpath, -1, "loom %s already has cpus",
				     t->looms[li].name);
			free(mpath);
			return -1;
		}
		if (ovr_add_cpus(t, &t->looms[li], v, mpath, err) < 0) {
			free(mpath);
			return -1;
		}
	}
	free(mpath);
	return 1;
}

static int ovr_cmp_cpu(const void *a, const void *b)
{
	const struct ovr_cpu *x = a, *y = b;
	return (x->index > y->index) - (x->index < y->index);
}

/* After every stream is loaded: processes, looms, models, marks. */
static int ovr_check_structure(struct ovr_trace *t, struct rd_error *err)
{
	for (size_t i = 0; i < t->nstreams; i++) {
		struct ovr_stream *s = &t->streams[i];
		t->procs[s->proc].nthreads++;
		for (size_t j = 0; j < i; j++)
			if (t->streams[j].proc == s->proc && t->streams[j].tid == s->tid)
				return rd_error_set(err, OVR_RULE_META, s->json, -1,
						    "thread with tid %d already in proc.%d", s->tid,
						    t->procs[s->proc].pid);
	}
	for (size_t i = 0; i < t->nprocs; i++) {
		struct ovr_proc *p = &t->procs[i];
		if (p->app_id <= 0)
			return rd_error_set(err, OVR_RULE_PROC, t->dir, -1,
					    "proc_init_end: appid not set (loom %s, proc.%d)",
					    t->looms[p->loom].name, p->pid);
		if (p->rank >= 0)
			t->looms[p->loom].has_rank = true;
	}
	for (size_t i = 0; i < t->nprocs; i++) {
		struct ovr_proc *p = &t->procs[i];
		if (t->looms[p->loom].has_rank && p->rank < 0)
			return rd_error_set(err, OVR_RULE_PROC, t->dir, -1,
					    "process proc.%d has no rank information (loom %s)",
					    p->pid, t->looms[p->loom].name);
	}
	for (size_t i = 0; i < t->nlooms; i++) {
		struct ovr_loom *l = &t->looms[i];
		if (l->ncpus == 0)
			return rd_error_set(err, OVR_RULE_CPU, t->dir, -1,
					    "loom %s has no physical CPUs", l->name);
		qsort(l->cpus, l->ncpus, sizeof(*l->cpus), ovr_cmp_cpu);
		for (size_t k = 0; k < l->ncpus; k++) {
			if (l->cpus[k].index < 0 || (size_t)l->cpus[k].index >= l->ncpus)
				return rd_error_set(
					err, OVR_RULE_CPU, t->dir, -1,
					"cpu index out of bounds: %d in loom %s of %zu CPUs",
					l->cpus[k].index, l->name, l->ncpus);
			if (k > 0 && l->cpus[k].index == l->cpus[k - 1].index)
				return rd_error_set(err, OVR_RULE_CPU, t->dir, -1,
						    "cpu with index %d already taken (loom %s)",
						    l->cpus[k].index, l->name);
		}
	}
	/* models: every thread's ovni.require (v2 without one somewhere: all enabled) */
	for (size_t i = 0; i < t->nstreams && !t->compat; i++) {
		const struct ovj *req = ovj_dotget(t->streams[i].meta, "ovni.require");
		if (!req || req->type != OVJ_OBJECT) {
			ovr_warn(t,
				 "missing 'ovni.require' key in thread %s: loading trace in "
				 "compatibility mode (all models enabled)",
				 t->streams[i].relpath);
			t->compat = true;
		}
	}
	for (size_t m = 0; m < sizeof(ovr_models) / sizeof(ovr_models[0]); m++) {
		const struct ovr_model *mo = &ovr_models[m];
		const char *have_s = t->layout == OVR_V3 ? mo->v3 : mo->v2;
		int have[3], want[3];

		ovr_version(have_s, have);
		if (t->compat) {
			t->enabled[(unsigned char)mo->letter] = true;
			continue;
		}
		for (size_t i = 0; i < t->nstreams; i++) {
			const struct ovj *req = ovj_dotget(t->streams[i].meta, "ovni.require");
			const char *ws = ovj_dotget_string(req, mo->name);
			if (!ws)
				continue;
			if (!ovr_version(ws, want))
				return rd_error_set(err, OVR_RULE_MODEL, t->streams[i].json, -1,
						    "cannot parse version %s from thread %s", ws,
						    t->streams[i].relpath);
			if (want[0] != have[0] || want[1] > have[1])
				return rd_error_set(
					err, OVR_RULE_MODEL, t->streams[i].json, -1,
					"unsupported %s model version (want %s, have %s) "
					"in %s",
					mo->name, ws, have_s, t->streams[i].relpath);
			t->enabled[(unsigned char)mo->letter] = true;
		}
	}
	/* mark types: every thread may define them; definitions must agree */
	for (size_t i = 0; i < t->nstreams; i++) {
		const struct ovj *marks = ovj_dotget(t->streams[i].meta, "ovni.mark");
		for (size_t k = 0; marks && marks->type == OVJ_OBJECT && k < marks->n; k++) {
			const struct ovj *def = marks->items[k];
			const char *title = ovj_dotget_string(def, "title");
			const char *ct = ovj_dotget_string(def, "chan_type");
			char *e;
			long type = strtol(marks->keys[k], &e, 10);
			struct ovr_mark_type *mt = NULL, *nm;

			if (*e || e == marks->keys[k] || type < 0 || type >= 100)
				return rd_error_set(err, OVR_RULE_MARK, t->streams[i].json, -1,
						    "mark type should be in [0, 100) range: %s",
						    marks->keys[k]);
			if (!title || !ct || (strcmp(ct, "single") && strcmp(ct, "stack")))
				return rd_error_set(
					err, OVR_RULE_MARK, t->streams[i].json, -1,
					"mark type %ld needs a title and a chan_type of "
					"single or stack",
					type);
			for (size_t j = 0; j < t->nmarks; j++)
				if (t->marks[j].type == type)
					mt = &t->marks[j];
			if (mt) {
				if (strcmp(mt->title, title) || mt->stack != !strcmp(ct, "stack"))
					return rd_error_set(err, OVR_RULE_MARK, t->streams[i].json,
							    -1,
							    "mark with type %ld already registered "
							    "with another title or channel type",
							    type);
				continue;
			}
			nm = realloc(t->marks, (t->nmarks + 1) * sizeof(*nm));
			if (!nm)
				return rd_error_set(err, OVR_RULE_IO, t->dir, -1, "out of memory");
			t->marks = nm;
			nm[t->nmarks].type = (int)type;
			nm[t->nmarks].stack = !strcmp(ct, "stack");
			if (!(nm[t->nmarks].title = strdup(title)))
				return rd_error_set(err, OVR_RULE_IO, t->dir, -1, "out of memory");
			t->nmarks++;
		}
	}
	{
		const char *v = ovj_dotget_string(t->streams[0].meta, "ovni.lib.version");
		const char *c = ovj_dotget_string(t->streams[0].meta, "ovni.lib.commit");
		t->lib_version = strdup(v ? v : "?");
		t->lib_commit = strdup(c ? c : "?");
		for (size_t i = 1; i < t->nstreams; i++) {
			v = ovj_dotget_string(t->streams[i].meta, "ovni.lib.version");
			if (v && t->lib_version && strcmp(v, t->lib_version)) {
				ovr_warn(t, "thread is using a different libovni version (%s): %s",
					 v, t->streams[i].relpath);
				break;
			}
		}
	}
	return 0;
}

static int ovr_cmp_stream(const void *a, const void *b)
{
	return strcmp(((const struct ovr_stream *)a)->relpath,
		      ((const struct ovr_stream *)b)->relpath);
}

int ovr_open(const char *dir, struct ovr_trace **out, struct rd_error *err)
{
	struct ovr_found f = { 0 };
	struct ovr_trace *t = calloc(1, sizeof(*t));
	size_t n;
	int ret = -1;

	*out = NULL;
	if (!t || !(t->dir = strdup(dir)))
		goto oom;
	if (ovr_scan(dir, "", 0, &f, err) < 0)
		goto out;
	if (f.n3 && f.n2) {
		rd_error_set(err, OVR_RULE_LAYOUT, dir, -1,
			     "both v3 streams (%s/stream.json) and v2 streams (%s) in one trace",
			     f.v3[0], f.v2[0]);
		goto out;
	}
	if (!f.n3 && !f.n2) {
		rd_error_set(err, OVR_RULE_LAYOUT, dir, -1,
			     "no ovni streams (no stream.json, no loom.*/proc.*/thread.*.obs)");
		goto out;
	}
	if (f.n_empty)
		ovr_warn(t, "%zu empty stream.obs with no stream.json ignored (a thread killed as "
			 "its stream was made; ovniemu ignores it): %s",
			 f.n_empty, f.empty_obs);
	t->layout = f.n3 ? OVR_V3 : OVR_V2;
	n = f.n3 ? f.n3 : f.n2;
	t->streams = calloc(n, sizeof(*t->streams));
	if (!t->streams)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		struct ovr_stream *s = &t->streams[t->nstreams];
		char *rel = t->layout == OVR_V3 ? f.v3[i] : f.v2[i];
		int r;

		s->relpath = strdup(rel);
		if (t->layout == OVR_V3) {
			char *d = rd_path_join(dir, rel);
			s->obs = d ? rd_path_join(d, "stream.obs") : NULL;
			s->json = d ? rd_path_join(d, "stream.json") : NULL;
			free(d);
		} else {
			size_t len = strlen(rel);
			char *j = malloc(len + 2);
			if (j) {
				memcpy(j, rel, len - 4);
				strcpy(j + len - 4, ".json");
			}
			s->obs = rd_path_join(dir, rel);
			s->json = j ? rd_path_join(dir, j) : NULL;
			free(j);
		}
		if (!s->relpath || !s->obs || !s->json)
			goto oom;
		t->nstreams++;
		r = t->layout == OVR_V3 ? ovr_load_v3(t, s, err) : ovr_load_v2(t, s, err);
		if (r < 0)
			goto out;
		if (r == 0) { /* not a thread stream: forget it */
			t->nstreams--;
			free(s->relpath);
			free(s->obs);
			free(s->json);
			ovj_free(s->meta);
			memset(s, 0, sizeof(*s));
			continue;
		}
		if (ovr_map(s, err) < 0)
			goto out;
	}
	if (t->nstreams == 0) {
		rd_error_set(err, OVR_RULE_LAYOUT, dir, -1, "no thread streams");
		goto out;
	}
	qsort(t->streams, t->nstreams, sizeof(*t->streams), ovr_cmp_stream);
	if (ovr_check_structure(t, err) < 0)
		goto out;
	*out = t;
	t = NULL;
	ret = 0;
	goto out;
oom:
	rd_error_set(err, OVR_RULE_IO, dir, -1, "out of memory");
out:
	for (size_t i = 0; i < f.n3; i++)
		free(f.v3[i]);
	for (size_t i = 0; i < f.n2; i++)
		free(f.v2[i]);
	free(f.v3);
	free(f.v2);
	free(f.empty_obs);
	ovr_close(t);
	return ret;
}

void ovr_close(struct ovr_trace *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nstreams; i++) {
		struct ovr_stream *s = &t->streams[i];
		if (s->buf)
			munmap((void *)s->buf, s->size);
		free(s->relpath);
		free(s->obs);
		free(s->json);
		ovj_free(s->meta);
	}
	for (size_t i = 0; i < t->nprocs; i++)
		ovj_free(t->procs[i].meta);
	for (size_t i = 0; i < t->nlooms; i++) {
		free(t->looms[i].name);
		free(t->looms[i].cpus);
	}
	for (size_t i = 0; i < t->nmarks; i++)
		free(t->marks[i].title);
	for (size_t i = 0; i < t->nwarnings; i++)
		free(t->warnings[i]);
	free(t->warnings);
	free(t->marks);
	free(t->streams);
	free(t->procs);
	free(t->looms);
	free(t->lib_version);
	free(t->lib_commit);
	free(t->dir);
	free(t);
}

/* --- events ----------------------------------------------------------------------------- */

void ovr_cursor_init(struct ovr_cursor *c, const struct ovr_trace *t, const struct ovr_stream *s)
{
	memset(c, 0, sizeof(*c));
	c->trace = t;
	c->stream = s;
	c->off = 8;
}

int ovr_cursor_next(struct ovr_cursor *c, struct ovr_event *ev, struct rd_error *err)
{
	const struct ovr_stream *s = c->stream;
	const uint8_t *p;
	size_t left;

	/* s->buf is always the stream's file mapping: what is behind is given back */
	if (c->off >= s->size) {
		rd_map_release_end(s->buf, s->size, &c->released);
		return 0;
	}
	rd_map_release(s->buf, c->off, &c->released);
	p = s->buf + c->off;
	left = s->size - c->off;
	if (left < 12)
		return rd_error_set(err, OVR_RULE_FRAMING, s->obs, (int64_t)c->off,
				    "stream '%s' ends with incomplete event", s->relpath);
	memset(ev, 0, sizeof(*ev));
	ev->off = c->off;
	ev->flags = p[0];
	memcpy(ev->mcv, p + 1, 3);
	ev->clock = rd_get64(p + 4, false);
	if (ev->flags & 0x10) {
		if (left < 16)
			return rd_error_set(err, OVR_RULE_FRAMING, s->obs, (int64_t)c->off,
					    "stream '%s' ends with incomplete event", s->relpath);
		ev->payload = p + 12;
		ev->payload_size = 4;
		ev->jumbo_size = rd_get32(p + 12, false);
		ev->jumbo = p + 16;
		ev->size = 16 + (size_t)ev->jumbo_size;
	} else {
		ev->payload_size = ovr_payload_size(ev->flags);
		ev->payload = ev->payload_size ? p + 12 : NULL;
		ev->size = 12 + ev->payload_size;
	}
	if (ev->size > left)
		return rd_error_set(err, OVR_RULE_FRAMING, s->obs, (int64_t)c->off,
				    "stream '%s' ends with incomplete event (%c%c%c of %zu bytes, "
				    "%zu left)",
				    s->relpath, p[1], p[2], p[3], ev->size, left);
	/* ovniemu compares signed clocks, starting from 0 */
	if ((int64_t)ev->clock < (int64_t)c->last_clock)
		return rd_error_set(err, OVR_RULE_CLOCK, s->obs, (int64_t)c->off,
				    "clock goes backwards %" PRId64 " -> %" PRId64
				    " in stream '%s' "
				    "at offset %" PRIu64,
				    (int64_t)c->last_clock, (int64_t)ev->clock, s->relpath, c->off);
	c->last_clock = ev->clock;
	c->started = true;
	c->off += ev->size;
	return 1;
}
/* --- streams merged by clock --------------------------------------------------------------- */

static bool ovr_merge_before(const struct ovr_merge_head *a, const struct ovr_merge_head *b)
{
	if (a->ev.clock != b->ev.clock)
		return (int64_t)a->ev.clock < (int64_t)b->ev.clock;
	return a->idx < b->idx;
}

static void ovr_merge_sift(struct ovr_merge *m, size_t i)
{
	struct ovr_merge_head **h = m->heap;

	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, k = i;
		struct ovr_merge_head *tmp;

		if (l < m->n && ovr_merge_before(h[l], h[k]))
			k = l;
		if (r < m->n && ovr_merge_before(h[r], h[k]))
			k = r;
		if (k == i)
			return;
		tmp = h[i];
		h[i] = h[k];
		h[k] = tmp;
		i = k;
	}
}

int ovr_merge_init(struct ovr_merge *m, const struct ovr_trace *t, size_t loom,
		   struct rd_error *err)
{
	memset(m, 0, sizeof(*m));
	m->heads = calloc(t->nstreams ? t->nstreams : 1, sizeof(*m->heads));
	m->heap = calloc(t->nstreams ? t->nstreams : 1, sizeof(*m->heap));
	if (!m->heads || !m->heap)
		return -1;
	for (size_t i = 0; i < t->nstreams; i++) {
		struct ovr_merge_head *h = &m->heads[i];
		int r;

		if (loom != OVR_ALL_LOOMS && t->procs[t->streams[i].proc].loom != loom)
			continue;
		ovr_cursor_init(&h->c, t, &t->streams[i]);
		h->idx = i;
		r = ovr_cursor_next(&h->c, &h->ev, err);
		if (r < 0)
			return -1;
		if (r > 0)
			m->heap[m->n++] = h;
	}
	for (size_t i = m->n / 2; i-- > 0;)
		ovr_merge_sift(m, i);
	return 0;
}

int ovr_merge_next(struct ovr_merge *m, const struct ovr_event **ev, size_t *stream,
		   struct rd_error *err)
{
	if (m->pending) {
		struct ovr_merge_head *h = m->heap[0];
		int r = ovr_cursor_next(&h->c, &h->ev, err);

		if (r < 0)
			return -1;
		m->pending = false;
		if (r == 0)
			m->heap[0] = m->heap[--m->n];
		ovr_merge_sift(m, 0);
	}
	if (m->n == 0)
		return 0;
	m->pending = true;
	*ev = &m->heap[0]->ev;
	*stream = m->heap[0]->idx;
	return 1;
}

void ovr_merge_close(struct ovr_merge *m)
{
	free(m->heads);
	free(m->heap);
	m->heads = NULL;
	m->heap = NULL;
	m->n = 0;
}
