/*
 * ovni_main: ovni-rt's front end and the libovni API around the event path: version checks,
 * process and thread lifecycle, CPUs and ranks, thread attributes and mark definitions.
 *
 * Set-up is lazy: a process that loads the library but never calls ovni_proc_init() starts
 * no session and writes nothing. ovni_proc_init() reads OVNI_TRACEDIR, OVNI_TMPDIR and
 * FLIGHTREC_OVNI_FORMAT, creates the process directory and starts librecord's session (its
 * rings live in <trace or tmp dir>/.flightrec); ovni_thread_init() attaches the thread
 * (librecord ring) and creates its stream.
 *
 * Misuse of the API dies as libovni does ("FATAL: <call>: <why>", abort); a set-up failure
 * (a directory that cannot be created, a ring that cannot be mapped) warns once and turns
 * recording off: the program runs on and every later call does nothing. A setuid/setgid
 * process (AT_SECURE) is off from ovni_proc_init() on, silently: it creates nothing.
 *
 * Fork: our atfork child handler is registered before librecord's, so it runs first in the
 * child. It forgets the parent's process state (the child may call ovni_proc_init() for its
 * own pid) and clears the forking thread's TLS pointer, so librecord drops the parent's
 * rings and stream descriptors from the child without writing to them.
 */
#include "ovni-rt/internal.h"
#include "ovni-rt/ovni_clock.h"
#include "librecord/rec_util.h"

#include <errno.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

__thread int ovni_tls_freed __attribute__((tls_model("initial-exec")));

/* Recording is off (a set-up error, warned once): the thread's metadata is kept here, so that
 * attributes, requirements and ovni_thread_isready() behave as if it recorded (the program
 * must not notice; libovni would have died in ovni_proc_init). Only this thread sees it. */
static __thread struct oj *ovni_off_meta;

/* That metadata, when this thread was initialized while recording is off; NULL otherwise. */
static struct oj *ovni_meta_off(void)
{
	return rec_self == REC_THREAD_OFF ? ovni_off_meta : NULL;
}

/* --- messages (ovni_vmsg: formats/ovni/ovni_state.c) ------------------------------------- */

void ovni_die(const char *func, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ovni_vmsg("FATAL", func, fmt, ap);
	va_end(ap);
	abort();
}



/* --- versions --------------------------------------------------------------------------- */

/*
 * A version as libovni 1.14 reads it (and ovniemu the versions a thread requires): shorter
 * than 64 characters; major and minor are the first two tokens between dots, patch the next
 * token up to a dot or a '-' (empty tokens are skipped, what follows patch is ignored); each
 * token is a whole strtol number (leading blanks and a sign allowed), not negative. So
 * "1.2.3-rc1", " 1.2.3" and "1..2.3" are 1.2.3; "1.2", "1.x.3" and "-1.2.3" are refused.
 * 0 on success.
 */
static int ovni_version_parse(const char *s, int v[3])
{
	static const char *const delim[3] = { ".", ".", ".-" };
	char buf[64], *str = buf, *save = NULL;

	if (strlen(s) >= sizeof(buf))
		return -1;
	memcpy(buf, s, strlen(s) + 1);
	for (int i = 0; i < 3; i++) {
		char *tok = strtok_r(str, delim[i], &save), *end = NULL;
		long x;

		str = NULL;
		if (!tok)
			return -1;
		errno = 0;
		x = strtol(tok, &end, 10);
		if (errno || end == tok || *end || x < 0)
			return -1;
		v[i] = (int)x; /* as libovni: a number past INT_MAX wraps */
	}
	return 0;
}

void ovni_version_get(const char **version, const char **commit)
{
	if (version)
		*version = OVNI_LIB_VERSION;
	if (commit)
		*commit = OVNI_GIT_COMMIT;
}

void ovni_version_check_str(const char *version)
{
	int want[3], have[3];

	if (version == NULL)
		ovni_die("ovni_version_check_str", "ovni version string is NULL");
	if (ovni_version_parse(version, want) != 0)
		ovni_die("ovni_version_check_str", "failed to parse provided version \"%s\"",
			 version);
	ovni_version_parse(OVNI_LIB_VERSION, have);
	if (want[0] != have[0])
		ovni_die("ovni_version_check_str",
			 "incompatible ovni major version: wants %s, got %s", version,
			 OVNI_LIB_VERSION);
	if (want[1] > have[1])
		ovni_die("ovni_version_check_str",
			 "incompatible ovni minor version: wants %s, got %s", version,
			 OVNI_LIB_VERSION);
}

/* --- front end -------------------------------------------------------------------------- */

static void ovni_configured(const struct rec_config *cfg)
{
	struct rec_config *c = &rec_sess.cfg; /* the session's own copy; cfg points at it */

	(void)cfg;
	/* ovni streams must be complete: full chunks are written by the flusher while the
	 * thread runs on, and by the thread itself when the flusher is behind (help, the
	 * default), by the flusher only (block) or by the thread only (drain, libovni's way);
	 * never dropped or overwritten */
	if (c->policy != REC_POLICY_HELP && c->policy != REC_POLICY_DRAIN &&
	    c->policy != REC_POLICY_BLOCK) {
		ovni_warn("ovni-rt: FLIGHTREC_POLICY must be help, drain or block for ovni "
			  "streams (events may not be lost), using help");
		c->policy = REC_POLICY_HELP;
	}
	/* waiting for a free chunk: as long as it takes, rather than drop an event */
	if (!getenv("FLIGHTREC_BLOCK_MS"))
		c->block_ms = 3600000;
	/* a thread that writes its own chunks needs only the one it fills and the next */
	if (c->policy == REC_POLICY_DRAIN && !getenv("FLIGHTREC_BUFCOUNT"))
		c->chunk_count = 2;
	/* help: room for the flusher to fall a little behind before the thread writes itself */
	if (c->policy == REC_POLICY_HELP && !getenv("FLIGHTREC_BUFCOUNT"))
		c->chunk_count = 4;
}

struct rec_frontend rec_frontend_self_storage = {
	.name = "ovni-rt",
	.defaults = { .dir = OVNI_TRACEDIR, .dir_env = NULL, .policy = REC_POLICY_HELP },
	.sink = &ovni_sink,
	.thread_size = sizeof(struct ovni_thread),
	.configured = ovni_configured,
	/* exec and _exit finish every stream first (rec_wrap_exec.c); a custom exec environment
	 * is the program's choice: libovni adds nothing to it either */
	.exec_env_off = 1,
};

/* At exit: write what every thread still has, finish streams and process metadata. */
__attribute__((destructor)) static void ovni_rt_fini(void)
{
	rec_session_finish();
}

static void ovni_atfork_child(void)
{
	if (__atomic_load_n(&ovni_proc.state, __ATOMIC_RELAXED) == OVNI_PROC_UNINIT &&
	    !ovni_proc.forked)
		return;
	pthread_mutex_init(&ovni_proc.lock, NULL);
	ovni_proc.forked = 1;
	ovni_proc.off = 0;
	ovni_proc.rank_set = 0;
	ovni_proc.cpus.n = 0;
	ovni_proc.lost = 0;
	__atomic_store_n(&ovni_proc.state, OVNI_PROC_UNINIT, __ATOMIC_RELEASE);
	/* librecord's child handler runs next: with no current thread it unmaps every ring
	 * and closes every stream descriptor inherited from the parent */
	rec_self = NULL;
	ovni_tls_freed = 0;
	oclk_fork_child();
}

/* --- process ---------------------------------------------------------------------------- */

static int ovni_abspath(char *out, size_t size, const char *path)
{
	char cwd[PATH_MAX];

	if (path[0] == '/')
		return snprintf(out, size, "%s", path) >= (int)size ? -1 : 0;
	if (!getcwd(cwd, sizeof(cwd)))
		return -1;
	return snprintf(out, size, "%s/%s", cwd, path) >= (int)size ? -1 : 0;
}

/* mkdir -p with mode 0755 (as libovni); 0 or -1 with errno. */
static int ovni_mkpath(const char *path)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);

	if (n >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, 0755) < 0 && errno != EEXIST)
		return -1;
	{
		struct stat st;
		if (stat(buf, &st) < 0)
			return -1;
		if (!S_ISDIR(st.st_mode)) {
			errno = ENOTDIR;
			return -1;
		}
	}
	return 0;
}

static int ovni_layout_from_env(void)
{
	const char *v = getenv("FLIGHTREC_OVNI_FORMAT");

	/* v3 unless asked: what libovni 1.14, whose version we report, writes, and the only
	 * layout ovniemu 1.11+ reads (it finds no stream in a v2 trace and still says ok) */
	if (!v || !*v || !strcmp(v, "v3") || !strcmp(v, "3"))
		return OVNI_LAYOUT_V3;
	if (!strcmp(v, "v2") || !strcmp(v, "2"))
		return OVNI_LAYOUT_V2;
	ovni_warn("ovni-rt: FLIGHTREC_OVNI_FORMAT=%s is not v2 or v3, using v3", v);
	return OVNI_LAYOUT_V3;
}

/* Compute and create the process directories; -1 (warned) if that is impossible. */
static int ovni_proc_dirs(const char *loom, int pid)
{
	const char *tmpdir = getenv("OVNI_TMPDIR");
	const char *tracedir = getenv("OVNI_TRACEDIR");
	char tdir[PATH_MAX];
	struct ovni_proc *p = &ovni_proc;

	if (!tracedir || !*tracedir)
		tracedir = OVNI_TRACEDIR;
	if (tmpdir && !*tmpdir)
		tmpdir = NULL;
	if (ovni_abspath(tdir, sizeof(tdir), tracedir) < 0 ||
	    snprintf(p->loomdir_final, PATH_MAX, "%s/loom.%s", tdir, loom) >= PATH_MAX ||
	    snprintf(p->procdir_final, PATH_MAX, "%s/proc.%d", p->loomdir_final, pid) >= PATH_MAX) {
		ovni_warn("ovni-rt: ovni_proc_init: trace directory path too long: %s", tracedir);
		return -1;
	}
	rec_snprintf(p->ringdir, PATH_MAX, "%s", tdir);
	p->move_to_final = tmpdir != NULL;
	if (tmpdir) {
		if (ovni_abspath(p->tmpdir, PATH_MAX, tmpdir) < 0 ||
		    snprintf(p->loomdir_tmp, PATH_MAX, "%s/loom.%s", p->tmpdir, loom) >= PATH_MAX ||
		    snprintf(p->procdir, PATH_MAX, "%s/proc.%d", p->loomdir_tmp, pid) >= PATH_MAX) {
			ovni_warn("ovni-rt: ovni_proc_init: OVNI_TMPDIR path too long: %s", tmpdir);
			return -1;
		}
		rec_snprintf(p->ringdir, PATH_MAX, "%s", p->tmpdir);
		if (ovni_mkpath(p->procdir) < 0) {
			ovni_warn("ovni-rt: ovni_proc_init: cannot create %s, recording is off:",
				  p->procdir);
			return -1;
		}
	} else {
		rec_snprintf(p->procdir, PATH_MAX, "%s", p->procdir_final);
	}
	if (ovni_mkpath(p->procdir_final) < 0) {
		ovni_warn("ovni-rt: ovni_proc_init: cannot create %s, recording is off:",
			  p->procdir_final);
		return -1;
	}
	return 0;
}

void ovni_proc_init(int app, const char *loom, int pid)
{
	static int atfork_registered;
	int st = OVNI_PROC_UNINIT;
	struct ovni_proc *p = &ovni_proc;

	if (!__atomic_compare_exchange_n(&p->state, &st, OVNI_PROC_INIT, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		if (st == OVNI_PROC_INIT)
			ovni_die("ovni_proc_init", "pid %d already being initialized", pid);
		else if (st == OVNI_PROC_READY)
			ovni_die("ovni_proc_init", "pid %d already initialized", pid);
		ovni_die("ovni_proc_init", "pid %d has finished, cannot init again", pid);
	}
	if (loom == NULL)
		ovni_die("ovni_proc_init", "loom name is NULL");
	if (strlen(loom) >= OVNI_MAX_HOSTNAME)
		ovni_die("ovni_proc_init", "loom name too long: %s", loom);
	if (app <= 0)
		ovni_warn("ovni_proc_init: app id %d is not > 0: ovniemu will reject the trace",
			  app);
	if (strchr(loom, '/'))
		ovni_warn("ovni_proc_init: loom name '%s' contains '/': ovniemu will reject the "
			  "trace",
			  loom);
	if (pid == 0)
		ovni_warn("ovni_proc_init: pid 0: ovniemu will reject the trace");

	snprintf(p->loom, sizeof(p->loom), "%s", loom);
	p->app = app;
	p->pid = pid;
	p->layout = ovni_layout_from_env();
	p->off = 0;
	/* setuid/setgid: nothing is created or written for a privileged image (librecord's
	 * session start says the same, but it comes after the directories below) */
	if (getauxval(AT_SECURE) || ovni_proc_dirs(loom, pid) < 0) {
		p->off = 1;
		__atomic_store_n(&p->state, OVNI_PROC_READY, __ATOMIC_RELEASE);
		return;
	}
	if (!atfork_registered) {
		/* before librecord's (registered by the session start below): runs first */
		pthread_atfork(NULL, NULL, ovni_atfork_child);
		atfork_registered = 1;
	}
	rec_frontend_self_storage.defaults.dir = p->ringdir;
	if (rec_session_start(rec_frontend_self) < 0)
		p->off = 1; /* librecord said why */
	else
		oclk_start();
	if (!p->off && p->layout == OVNI_LAYOUT_V2)
		ovni_sink_write_proc_meta(); /* version and app_id from the start */
	__atomic_store_n(&p->state, OVNI_PROC_READY, __ATOMIC_RELEASE);
}

void ovni_proc_fini(void)
{
	int st = OVNI_PROC_READY;

	if (!__atomic_compare_exchange_n(&ovni_proc.state, &st, OVNI_PROC_GONE, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		ovni_die("ovni_proc_fini", "process not ready");
	if (ovni_proc.off)
		return;
	if (ovni_proc.layout == OVNI_LAYOUT_V2)
		ovni_sink_write_proc_meta();
	ovni_sink_clean_tmp();
}

static void ovni_proc_require_ready(const char *func)
{
	if (__atomic_load_n(&ovni_proc.state, __ATOMIC_ACQUIRE) != OVNI_PROC_READY)
		ovni_die(func, "process not ready (call ovni_proc_init() first)");
}

/* The calling thread's state for a metadata call; NULL when recording is off. */
static struct rec_thread *ovni_meta_thread(const char *func)
{
	struct rec_thread *t = rec_self;

	if ((uintptr_t)t > REC_THREAD_SENTINEL_MAX && ovni_thread_of(t)->state == OVNI_THREAD_READY)
		return t;
	if (t == REC_THREAD_OFF)
		return NULL;
	if (ovni_tls_freed)
		ovni_die(func, "thread already finished (ovni_thread_free() was called)");
	if (t == NULL && ovni_proc.forked &&
	    __atomic_load_n(&ovni_proc.state, __ATOMIC_ACQUIRE) != OVNI_PROC_READY)
		ovni_die(func, "thread not initialized (in a fork child, call ovni_proc_init() "
			       "and ovni_thread_init() first)");
	if ((uintptr_t)t > REC_THREAD_SENTINEL_MAX)
		return NULL; /* finished by exit while still running */
	ovni_die(func, "thread not initialized (call ovni_thread_init() first)");
}

static void ovni_meta_changed(struct rec_thread *t)
{
	/* the next emit (or flush, or free) rewrites the metadata file, so that a crash
	 * loses as little as possible; only this thread reads fe_hold */
	t->fe_hold |= OVNI_HOLD_META;
}


void ovni_add_cpu(int index, int phyid)
{
	struct rec_thread *t;
	struct ovni_thread *ot;
	int known = 0;

	if (index < 0)
		ovni_die("ovni_add_cpu", "cannot use negative index %d", index);
	if (phyid < 0)
		ovni_die("ovni_add_cpu", "cannot use negative CPU id %d", phyid);
	ovni_proc_require_ready("ovni_add_cpu");
	if (!(t = ovni_meta_thread("ovni_add_cpu")))
		return;
	ot = ovni_thread_of(t);
	pthread_mutex_lock(&ot->meta_lock);
	if (ovni_cpus_add(&ot->cpus, index, phyid) < 0)
		ovni_die("ovni_add_cpu", "out of memory");
	pthread_mutex_unlock(&ot->meta_lock);
	/* v2: one process-wide list, without repeated CPUs */
	pthread_mutex_lock(&ovni_proc.lock);
	for (size_t i = 0; i < ovni_proc.cpus.n; i++)
		known |= ovni_proc.cpus.v[i].phyid == phyid;
	if (!known && ovni_cpus_add(&ovni_proc.cpus, index, phyid) < 0)
		ovni_die("ovni_add_cpu", "out of memory");
	pthread_mutex_unlock(&ovni_proc.lock);
	ovni_meta_changed(t);
}

void ovni_proc_set_rank(int rank, int nranks)
{
	struct rec_thread *t;
	struct ovni_thread *ot;

	ovni_proc_require_ready("ovni_proc_set_rank");
	if (!(t = ovni_meta_thread("ovni_proc_set_rank")))
		return;
	if (rank < 0 || nranks <= 0 || rank >= nranks)
		ovni_warn("ovni_proc_set_rank: rank %d of %d ranks: ovniemu will reject the trace "
			  "(it needs 0 <= rank < nranks)",
			  rank, nranks);
	ot = ovni_thread_of(t);
	pthread_mutex_lock(&ot->meta_lock);
	ot->rank_set = 1;
	ot->rank = rank;
	ot->nranks = nranks;
	pthread_mutex_unlock(&ot->meta_lock);
	pthread_mutex_lock(&ovni_proc.lock);
	ovni_proc.rank_set = 1;
	ovni_proc.rank = rank;
	ovni_proc.nranks = nranks;
	pthread_mutex_unlock(&ovni_proc.lock);
	ovni_meta_changed(t);
}

/* --- thread ----------------------------------------------------------------------------- */

/* Set a key of the calling thread's metadata: t's, or, t NULL, the one kept while recording
 * is off (dropped if there is none). */
static void ovni_meta_set(const char *func, struct rec_thread *t, const char *key, struct oj *v)
{
	struct ovni_thread *ot = t ? ovni_thread_of(t) : NULL;
	struct oj *meta = ot ? ot->meta : ovni_off_meta;
	int r;

	if (!v)
		ovni_die(func, "out of memory or invalid value for '%s'", key);
	/* replacing the whole "ovni" object drops the keys the emulator needs (libovni aborts
	 * later, at ovni_thread_free, or leaves a trace the emulator refuses): refused here */
	if (!strcmp(key, "ovni"))
		ovni_die(func, "cannot replace 'ovni': it holds the runtime's metadata (set keys "
			       "below it, like 'ovni.x')");
	if (!meta) {
		oj_free(v);
		return;
	}
	if (ot)
		pthread_mutex_lock(&ot->meta_lock);
	r = oj_dotset(meta, key, v);
	if (ot)
		pthread_mutex_unlock(&ot->meta_lock);
	if (r != 0)
		ovni_die(func, "cannot set '%s': a part of the path is not an object", key);
	if (t)
		ovni_meta_changed(t);
}

static void ovni_require(const char *func, struct rec_thread *t, const char *model,
			 const char *version)
{
	char path[128];
	int v[3];

	if (model == NULL)
		ovni_die(func, "model string is NULL");
	if (strpbrk(model, " .") != NULL)
		ovni_die(func, "malformed model name '%s' (no spaces or dots)", model);
	if (strlen(model) <= 1)
		ovni_die(func, "model name '%s' must have more than 1 character", model);
	if (version == NULL)
		ovni_die(func, "version string is NULL");
	if (ovni_version_parse(version, v) != 0)
		ovni_die(func, "failed to parse provided version \"%s\"", version);
	if (snprintf(path, sizeof(path), "ovni.require.%s", model) >= (int)sizeof(path))
		ovni_die(func, "model name too long");
	ovni_meta_set(func, t, path, oj_string(version));
}

void ovni_thread_require(const char *model, const char *version)
{
	struct rec_thread *t = ovni_meta_thread("ovni_thread_require");

	if (!t && !ovni_meta_off())
		return;
	ovni_require("ovni_thread_require", t, model, version);
	if (t)
		ovni_thread_of(t)->required = 1;
}

/* The keys libovni 1.14 writes at ovni_thread_init, in its order. */
static struct oj *ovni_meta_initial(int tid)
{
	struct oj *m = oj_new(OJ_OBJECT);

	if (!m || oj_dotset(m, "version", oj_number(OVNI_METADATA_VERSION)) ||
	    oj_dotset(m, "ovni.lib.version", oj_string(OVNI_LIB_VERSION)) ||
	    oj_dotset(m, "ovni.lib.commit", oj_string(OVNI_GIT_COMMIT)) ||
	    oj_dotset(m, "ovni.part", oj_string("thread")) ||
	    oj_dotset(m, "ovni.tid", oj_number(tid)) ||
	    oj_dotset(m, "ovni.pid", oj_number(ovni_proc.pid)) ||
	    oj_dotset(m, "ovni.loom", oj_string(ovni_proc.loom)) ||
	    oj_dotset(m, "ovni.app_id", oj_number(ovni_proc.app))) {
		oj_free(m);
		return NULL;
	}
	return m;
}

/* The thread records nothing (recording is off), but its metadata is kept (ovni_off_meta). */
static void ovni_thread_init_off(int tid)
{
	rec_self = REC_THREAD_OFF;
	if (!ovni_off_meta) {
		ovni_off_meta = ovni_meta_initial(tid);
		if (!ovni_off_meta)
			ovni_die("ovni_thread_init", "out of memory");
		ovni_require("ovni_thread_init", NULL, "ovni", OVNI_MODEL_VERSION);
	}
}

void ovni_thread_init(pid_t tid)
{
	struct rec_thread *t = rec_self;
	struct ovni_thread *ot;

	if ((uintptr_t)t > REC_THREAD_SENTINEL_MAX &&
	    ovni_thread_of(t)->state == OVNI_THREAD_READY) {
		ovni_warn("thread %d already initialized, ignored", (int)tid);
		return;
	}
	if (ovni_tls_freed)
		ovni_die("ovni_thread_init", "thread %d has finished, cannot init again", (int)tid);
	if (tid == 0)
		ovni_die("ovni_thread_init", "cannot use tid=%d", (int)tid);
	if (__atomic_load_n(&ovni_proc.state, __ATOMIC_ACQUIRE) != OVNI_PROC_READY)
		ovni_die("ovni_thread_init", "process not ready (call ovni_proc_init() first)");
	if (ovni_proc.off || t == REC_THREAD_OFF || t == REC_THREAD_DEAD) {
		ovni_thread_init_off((int)tid);
		return;
	}
	if (!t) {
		/* attach: this thread's ring (no event: nothing lost if it cannot have one) */
		t = rec_thread_get_quiet();
		if (!t) {
			ovni_thread_init_off((int)tid); /* librecord warned once */
			return;
		}
	}
	ot = ovni_thread_of(t);
	t->fe_hold = OVNI_HOLD_META; /* emits from a signal handler meanwhile: slow path */
	ot->tid = (int)tid;
	ot->ob_len = 0; /* libovni's buffer is empty once the stream header is written */
	pthread_mutex_init(&ot->meta_lock, NULL);
	ot->meta = ovni_meta_initial((int)tid);
	if (!ot->meta)
		ovni_die("ovni_thread_init", "out of memory");
	/* the requirement is in the metadata before the stream exists: the stream's creation
	 * writes the metadata file, the one salvage finishes */
	ovni_require("ovni_thread_init", t, "ovni", OVNI_MODEL_VERSION);
	if (ovni_sink_create_stream(t) < 0) {
		ovni_thread_init_off((int)tid); /* warned; t is closed with the session */
		return;
	}
	/* the stream header is in the file already (ovni_sink_create_stream) */
	t->fe_hold = 0;
	__atomic_store_n(&ot->state, OVNI_THREAD_READY, __ATOMIC_RELEASE);
}

/* Wait (bounded) until the sink has finished the stream; then drop our reference. */
static void ovni_wait_done(struct ovni_done *d)
{
	/* the sink wakes d->done when it sets it (sink_ovni.c): the thread goes on as soon as
	 * its stream is final, where sleeps of 20 us doubling to 1.28 ms overslept by 0.5 ms
	 * on average per thread. The timeout only bounds a wake-up the flusher missed (it was
	 * asleep: nudged again each round), 60 s in all as before. */
	struct timespec ts = {0, 1000000};

	for (int i = 0; i < 60000 && !__atomic_load_n(&d->done, __ATOMIC_ACQUIRE); i++) {
		if (__atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) != REC_SESSION_ACTIVE)
			break; /* finish writes it (or has) */
		rec_flusher_wake();
		rec_futex(&d->done, FUTEX_WAIT_PRIVATE, 0, &ts);
	}
	ovni_done_put(d);
}

void ovni_thread_free(void)
{
	struct rec_thread *t = rec_self;
	struct ovni_thread *ot;
	struct ovni_done *d = NULL;

	if (ovni_tls_freed)
		ovni_die("ovni_thread_free", "thread already finished");
	if (t == REC_THREAD_OFF) {
		ovni_tls_freed = 1;
		rec_self = REC_THREAD_DEAD;
		oj_free(ovni_off_meta);
		ovni_off_meta = NULL;
		return;
	}
	if ((uintptr_t)t <= REC_THREAD_SENTINEL_MAX ||
	    ovni_thread_of(t)->state == OVNI_THREAD_NEW) {
		if (t == NULL && ovni_proc.forked)
			ovni_die("ovni_thread_free", "thread not initialized (in a fork child, the "
						     "parent's threads are not inherited)");
		ovni_die("ovni_thread_free", "thread not initialized");
	}
	ot = ovni_thread_of(t);
	t->busy = 1; /* emits from signal handlers from now on are dropped */
	__asm__ __volatile__("" ::: "memory");
	if (ot->state == OVNI_THREAD_READY) {
		/* the sink finishes the stream as a proper ovni_thread_free once the last chunk is
		 * written, and tells us through d (two references: ours and the sink's) */
		d = malloc(sizeof(*d));
		if (d) {
			d->done = 0;
			d->refs = 2;
		}
		pthread_mutex_lock(&ot->meta_lock);
		ot->freeing = 1;
		ot->done = d;
		pthread_mutex_unlock(&ot->meta_lock);
	}
	ovni_tls_freed = 1;
	/* librecord: DEAD from now on; the last chunk is handed over (written here under the
	 * drain policy), then the flusher writes what is left, closes the stream (our sink
	 * writes the final metadata) and frees t: nothing of t may be touched below */
	rec_thread_retire(t);
	if (d)
		ovni_wait_done(d);
}

int ovni_thread_isready(void)
{
	struct rec_thread *t = rec_self;
	if (t == REC_THREAD_OFF)
		return ovni_meta_off() != NULL; /* initialized, recording off */
	return (uintptr_t)t > REC_THREAD_SENTINEL_MAX &&
	       ovni_thread_of(t)->state == OVNI_THREAD_READY;
}

/* --- attributes ------------------------------------------------------------------------- */

/* The calling thread's metadata and its lock (NULL: recording is off, only this thread sees
 * it); NULL when there is none (the thread was finished at exit). */
static struct oj *ovni_meta_of(const char *func, pthread_mutex_t **lock)
{
	struct rec_thread *t = ovni_meta_thread(func);

	*lock = NULL;
	if (!t)
		return ovni_meta_off();
	*lock = &ovni_thread_of(t)->meta_lock;
	return ovni_thread_of(t)->meta;
}

/* The same, for a call that cannot do without it: dies when there is none. */
static struct oj *ovni_attr_meta(const char *func, pthread_mutex_t **lock)
{
	struct oj *meta = ovni_meta_of(func, lock);

	if (!meta)
		ovni_die(func, "thread metadata is not available (the thread was finished at exit)");
	return meta;
}

/* Look a key up; dies if absent. Returned value stays owned by the tree. With lockp, the
 * metadata's lock (stored there; NULL when there is none) is still held on return. */
static struct oj *ovni_attr_lookup(const char *func, const char *key, pthread_mutex_t **lockp)
{
	pthread_mutex_t *lock;
	struct oj *meta = ovni_attr_meta(func, &lock), *v;

	if (!key)
		ovni_die(func, "key is NULL");
	if (lock)
		pthread_mutex_lock(lock);
	v = oj_dotget(meta, key);
	if (lock && !lockp)
		pthread_mutex_unlock(lock);
	if (!v) {
		if (lock && lockp)
			pthread_mutex_unlock(lock);
		ovni_die(func, "key not found: %s", key);
	}
	if (lockp)
		*lockp = lock;
	return v;
}

int ovni_attr_has(const char *key)
{
	pthread_mutex_t *lock;
	struct oj *meta = ovni_meta_of("ovni_attr_has", &lock);
	int has;

	if (!meta)
		return 0;
	if (!key)
		ovni_die("ovni_attr_has", "key is NULL");
	if (lock)
		pthread_mutex_lock(lock);
	has = oj_dotget(meta, key) != NULL;
	if (lock)
		pthread_mutex_unlock(lock);
	return has;
}

static void ovni_attr_set(const char *func, const char *key, struct oj *v)
{
	struct rec_thread *t = ovni_meta_thread(func);

	if (!t && !ovni_meta_off()) {
		oj_free(v);
		return;
	}
	if (!key)
		ovni_die(func, "key is NULL");
	ovni_meta_set(func, t, key, v);
}

void ovni_attr_set_double(const char *key, double num)
{
	struct oj *v = oj_number(num);
	if (!v)
		ovni_die("ovni_attr_set_double", "%s: %g is not a finite number", key ? key : "?",
			 num);
	ovni_attr_set("ovni_attr_set_double", key, v);
}

void ovni_attr_set_boolean(const char *key, int value)
{
	ovni_attr_set("ovni_attr_set_boolean", key, oj_bool(value));
}

void ovni_attr_set_str(const char *key, const char *value)
{
	struct oj *v;

	if (!value)
		ovni_die("ovni_attr_set_str", "value of '%s' is NULL", key ? key : "?");
	v = oj_string(value);
	if (!v)
		ovni_die("ovni_attr_set_str", "value of '%s' is not valid UTF-8", key ? key : "?");
	ovni_attr_set("ovni_attr_set_str", key, v);
}

void ovni_attr_set_json(const char *key, const char *json)
{
	struct oj *v;

	if (!json)
		ovni_die("ovni_attr_set_json", "json text of '%s' is NULL", key ? key : "?");
	v = oj_parse(json, strlen(json));
	if (!v)
		ovni_die("ovni_attr_set_json", "cannot parse json: %s", json);
	ovni_attr_set("ovni_attr_set_json", key, v);
}

double ovni_attr_get_double(const char *key)
{
	struct oj *v = ovni_attr_lookup("ovni_attr_get_double", key, NULL);
	if (v->type != OJ_NUMBER)
		ovni_die("ovni_attr_get_double", "value with key '%s' is not a number", key);
	return v->u.number;
}

int ovni_attr_get_boolean(const char *key)
{
	struct oj *v = ovni_attr_lookup("ovni_attr_get_boolean", key, NULL);
	if (v->type != OJ_BOOL)
		ovni_die("ovni_attr_get_boolean", "value with key '%s' is not a boolean", key);
	return v->u.boolean;
}

const char *ovni_attr_get_str(const char *key)
{
	struct oj *v = ovni_attr_lookup("ovni_attr_get_str", key, NULL);
	if (v->type != OJ_STRING)
		ovni_die("ovni_attr_get_str", "value with key '%s' is not a string", key);
	return v->u.string;
}

char *ovni_attr_get_json(const char *key)
{
	pthread_mutex_t *lock;
	struct oj *v = ovni_attr_lookup("ovni_attr_get_json", key, &lock);
	char *s = oj_serialize(v, 0, NULL);

	if (lock)
		pthread_mutex_unlock(lock);
	if (!s)
		ovni_die("ovni_attr_get_json", "out of memory");
	return s;
}

void ovni_attr_flush(void)
{
	struct rec_thread *t = ovni_meta_thread("ovni_attr_flush");

	if (!t)
		return;
	t->fe_hold &= (uint8_t)~OVNI_HOLD_META;
	if (ovni_sink_write_thread_meta(t) < 0)
		ovni_warn("ovni_attr_flush: cannot write the thread metadata");
}

/* --- mark definitions ------------------------------------------------------------------- */

void ovni_mark_type(int32_t type, long flags, const char *title)
{
	struct rec_thread *t;
	char key[128];

	if (type < 0 || type >= 100)
		ovni_die("ovni_mark_type", "type %d must be in [0,100) range", (int)type);
	if (!title || title[0] == '\0')
		ovni_die("ovni_mark_type", "bad title (NULL or empty) for type %d", (int)type);
	if (!(t = ovni_meta_thread("ovni_mark_type")))
		return;
	snprintf(key, sizeof(key), "ovni.mark.%d", (int)type);
	if (ovni_attr_has(key))
		ovni_die("ovni_mark_type", "type %d already defined", (int)type);
	snprintf(key, sizeof(key), "ovni.mark.%d.title", (int)type);
	ovni_meta_set("ovni_mark_type", t, key, oj_string(title));
	snprintf(key, sizeof(key), "ovni.mark.%d.chan_type", (int)type);
	ovni_meta_set("ovni_mark_type", t, key,
		      oj_string(flags & OVNI_MARK_STACK ? "stack" : "single"));
}

void ovni_mark_label(int32_t type, int64_t value, const char *label)
{
	struct rec_thread *t;
	char key[128];

	if (type < 0 || type >= 100)
		ovni_die("ovni_mark_label", "type %d must be in [0,100) range", (int)type);
	if (value <= 0)
		ovni_die("ovni_mark_label", "value %lld must be >0", (long long)value);
	if (!label || label[0] == '\0')
		ovni_die("ovni_mark_label", "bad label (NULL or empty) for type %d", (int)type);
	if (!(t = ovni_meta_thread("ovni_mark_label")))
		return;
	snprintf(key, sizeof(key), "ovni.mark.%d", (int)type);
	if (!ovni_attr_has(key))
		ovni_die("ovni_mark_label", "type %d not defined (call ovni_mark_type() first)",
			 (int)type);
	snprintf(key, sizeof(key), "ovni.mark.%d.labels.%lld", (int)type, (long long)value);
	if (ovni_attr_has(key))
		ovni_die("ovni_mark_label", "label '%s' already defined", label);
	ovni_meta_set("ovni_mark_label", t, key, oj_string(label));
}
