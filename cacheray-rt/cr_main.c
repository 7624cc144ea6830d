/*
 * cr_main: cacheray-rt's front end: CACHERAY_OPTIONS, where the trace goes, start-up (lazy, at
 * the first __tsan_init or record), the slow path of every record, and shut-down.
 *
 * Start-up. Each instrumented module's constructor calls __tsan_init: that notes the module as
 * instrumented (cr_modules.c) and starts the session, which creates the trace file, as
 * Cacheray's runtime does. Nothing starts a session in a program that calls no __tsan_* hook
 * and no RTTA function (a shell that inherited LD_PRELOAD writes nothing), and a preloaded copy
 * of the runtime in a program that links libcacheray-rt.a never sees a hook, so it stays idle.
 *
 * Where the trace goes: CACHERAY_OPTIONS=tracefile=PATH (default cacheray.trace); a relative
 * PATH is taken in $FLIGHTREC_DIR (what `flightrec record -d DIR` sets), else in the current
 * directory, as Cacheray does. The rings and the runtime's stats (.flightrec/) go to
 * $FLIGHTREC_DIR, else next to the trace.
 *
 * enabled=0 records nothing and writes nothing (not even an empty trace). Options Cacheray does
 * not have: malloc=0|1|auto (RTTA records for malloc/calloc/realloc/free calls of instrumented
 * code; auto: on when the runtime is LD_PRELOADed, for modules that do not call the MallocTracker
 * hooks themselves) and memfuncs=0|1 (memcpy/memmove/memset called by instrumented code are
 * recorded as ranges, as TSan checks them; default 1).
 *
 * Full buffers: the block policy, and no time-out unless FLIGHTREC_BLOCK_MS says otherwise: a
 * cache simulation needs every access, so a thread waits for the flusher as long as it takes.
 */
#include "cacheray-rt/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cr_options cr_opts;
int cr_disabled;

static pthread_once_t cr_once = PTHREAD_ONCE_INIT;

static void cr_init(void)
{
	int saved = errno;

	cr_options_parse(getenv("CACHERAY_OPTIONS"), &cr_opts);
	if (!cr_opts.enabled)
		cr_disabled = 1;
	cr_intercept_init();
	errno = saved;
}

void cr_init_once(void)
{
	pthread_once(&cr_once, cr_init);
}

/* --- the session -------------------------------------------------------------------------- */

/* The trace's absolute path; without FLIGHTREC_DIR the rings go next to it. `cfg` is the
 * session's own configuration, still being set up (no thread records yet). */
static void cr_configured(const struct rec_config *cfg)
{
	const char *tf = cr_opts.tracefile;
	char base[REC_PATH_MAX], cwd[REC_PATH_MAX];
	int from_env = getenv("FLIGHTREC_DIR") && *getenv("FLIGHTREC_DIR");

	if (!getenv("FLIGHTREC_BLOCK_MS"))
		rec_sess.cfg.block_ms = 3600000; /* as long as it takes (the maximum) */

	if (tf[0] == '/') {
		rec_snprintf(cr_trace_path, sizeof(cr_trace_path), "%s", tf);
	} else {
		if (cfg->dir[0] == '/')
			rec_snprintf(base, sizeof(base), "%s", cfg->dir);
		else if (getcwd(cwd, sizeof(cwd)))
			rec_snprintf(base, sizeof(base), "%s/%s", cwd, cfg->dir);
		else
			rec_snprintf(base, sizeof(base), "%s", cfg->dir);
		/* "./x" -> "x": cosmetic only */
		size_t n = strlen(base);
		if (n >= 2 && !strcmp(base + n - 2, "/."))
			base[n - 2] = '\0';
		rec_snprintf(cr_trace_path, sizeof(cr_trace_path), "%s/%s", base[0] ? base : "",
			     tf);
	}
	if (!from_env) {
		char *slash = strrchr(cr_trace_path, '/');
		size_t len = slash ? (size_t)(slash - cr_trace_path) : 0;
		if (len == 0)
			len = 1; /* "/" */
		if (len < sizeof(rec_sess.cfg.dir)) {
			memcpy(rec_sess.cfg.dir, cr_trace_path, len);
			rec_sess.cfg.dir[len] = '\0';
		}
	}
}

/* exec (librecord's rec_wrap_exec.c writes the trace first): the trace descriptor (and its
 * shared lock, sink_cacheray.c) lives through the exec, so the next image appends to the
 * same trace instead of starting a new one. Returns the descriptor whose close-on-exec flag
 * was cleared (-1: none). */
static int cr_exec_keep(void)
{
	int fd = cr_trace_fd();

	if (fd >= 0 && fcntl(fd, F_SETFD, 0) == 0)
		return fd;
	return -1;
}

static void cr_exec_failed(int fd)
{
	if (fd >= 0)
		fcntl(fd, F_SETFD, FD_CLOEXEC);
}

static const char *const cr_exec_env[] = { "CACHERAY_OPTIONS", NULL };

struct rec_frontend rec_frontend_self_storage = {
	.name = "cacheray-rt",
	.defaults = {.dir = ".", .dir_env = NULL, .policy = REC_POLICY_BLOCK},
	.sink = &cacheray_sink,
	.thread_size = 0,
	.configured = cr_configured,
	.exec_keep = cr_exec_keep,
	.exec_failed = cr_exec_failed,
	.exec_env = cr_exec_env,
};

struct rec_thread *cr_thread(int start)
{
	struct rec_thread *t = rec_self;
	int saved;

	if (likely((uintptr_t)t > REC_THREAD_SENTINEL_MAX))
		return t;
	if (t == REC_THREAD_OFF) /* while recording: the slow path counts a thread's events it
				  * could not give a ring (file system full) */
		return start && __atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) ==
					REC_SESSION_ACTIVE ? rec_thread_get_slow() : NULL;
	if (t == REC_THREAD_DEAD)
		return start ? rec_thread_get_slow() : NULL; /* counts it as lost_dead */
	/* interposed libc functions only join a session that runs: they are called from the
	 * session's own start-up (and we must not start it from there) */
	if (!start && __atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) != REC_SESSION_ACTIVE)
		return NULL;
	saved = errno;
	cr_init_once();
	if (cr_disabled) {
		rec_self = REC_THREAD_OFF;
		errno = saved;
		return NULL;
	}
	t = start == CR_ATTACH ? rec_thread_get_quiet() : rec_thread_get_slow();
	if (!t && rec_self == NULL) {
		int st = __atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE);
		/* never going to record: later events take the cheapest way out */
		if (st == REC_SESSION_OFF || st == REC_SESSION_FINISHED)
			rec_self = REC_THREAD_OFF;
	}
	errno = saved;
	return t;
}

void cr_access_slow(unsigned tag, uintptr_t addr, unsigned size)
{
	struct rec_thread *t = cr_thread(1);
	uint8_t *p;

	if (!t)
		return;
	if (t->busy) {
		rec_count_lost(t, REC_LOST_NESTED, 1);
		return;
	}
	t->busy = 1;
	CR_BARRIER();
	p = rec_reserve(t, CR_ACCESS_BYTES);
	if (p) {
		cr_put_access(p, tag, addr, size, (uint64_t)(uint32_t)t->tid);
		rec_commit(t);
	}
	CR_BARRIER();
	t->busy = 0;
}

/* --- the instrumentation's entry points ----------------------------------------------------- */

/* Called by every instrumented module's constructor. */
CR_EXPORT void __tsan_init(void)
{
	cr_module_note();
	cr_thread(CR_ATTACH);
}

/* --- shut-down ---------------------------------------------------------------------------- */

void cr_finish(void)
{
	if (__atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) != REC_SESSION_ACTIVE ||
	    getpid() != rec_sess.pid)
		return; /* not started, already finished, or a vfork child sharing our memory */
	rec_session_finish();
}

/* Preloaded, this runs before the program's constructors; linked in (libcacheray-rt.a), among
 * the first. It only finds the real libc functions; the session starts at the first hook. */
__attribute__((constructor(101))) static void cr_ctor(void)
{
	cr_init_once();
}

/* Preloaded or linked in, this runs after the program's own destructors. */
__attribute__((destructor(101))) static void cr_dtor(void)
{
	cr_finish();
}
