/*
 * xray_main: xray-rt's front end description, start-up and shut-down, XRAY_OPTIONS
 * (compiler-rt's API: xray_api.c for handlers and patching, xray_log.c for logging modes).
 *
 * Start-up (constructor): when the executable has an `xray_instr_map` (else this is some
 * other program that inherited LD_PRELOAD: nothing is started, nothing written), start the
 * session, then patch every sled. Preloaded, the constructor runs before the program's own
 * constructors; linked statically (libxray-rt.a) it runs first among the program's (priority
 * 101); when the program has already taken XRay over through the API (xray_api.c), it patches
 * nothing. The shared objects with sleds it finds then, and the ones dlopen'ed later
 * (xray_wrap.c), are patched as the executable is (xray_patch.c). Shut-down (destructor, or
 * the _exit/exec wrappers, or a fatal signal): the calling thread's open frames get their
 * exits, then the session writes the log.
 *
 * Where the log goes: <FLIGHTREC_DIR>/xray-log.<program>.<suffix> (FLIGHTREC_DIR defaults to
 * the current directory, as compiler-rt writes there), or <xray_logfile_base><program>.<suffix>
 * when XRAY_OPTIONS gives a base; the rings and the runtime's stats then go to FLIGHTREC_DIR,
 * or to the base's directory when FLIGHTREC_DIR is not set.
 */
#include "xray-rt/internal.h"
#include "xray-rt/xray_map.h"
#include "formats/xcode/fn_decode.h"
#include "librecord/rec_util.h"
#include "formats/chrome/sink_chrome.h"
#include "formats/tfile/sink_tfile.h"
#include "formats/uftrace/sink_uftrace.h"
#include "formats/xray/xray_flags.h"

#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

/* %fs-relative fallback for xr_cpu_off when rseq is not there: always CPU 0 */
static __thread uint32_t xr_no_rseq_cpu __attribute__((tls_model("initial-exec")));
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

int xr_should_run(void);

/* makes a program linked with libxray-rt.a recognisable (xray_map.h) */
__attribute__((section(XR_MARKER_SECTION), used)) static const char xr_marker[] =
	"flightrec xray-rt";

/* Copy the value of `key` in XRAY_OPTIONS-style flags (xray_flags.h) into out. */
int xr_flag(const char *flags, const char *key, char *out, size_t size)
{
	size_t klen = strlen(key), nlen, vlen;
	const char *p = flags, *name, *val;

	while (xray_flag_next(&p, &name, &nlen, &val, &vlen)) {
		if (nlen == klen && strncmp(name, key, klen) == 0) {
			if (vlen >= size)
				return -1;
			memcpy(out, val, vlen);
			out[vlen] = '\0';
			return 0;
		}
	}
	return -1;
}

/* XRAY_OPTIONS' verbosity (compiler-rt's common flag; 0 by default) */
int xr_verbosity(void)
{
	const char *opts = rec_getenv("XRAY_OPTIONS");
	char v[16];

	if (!opts || xr_flag(opts, "verbosity", v, sizeof(v)) < 0)
		return 0;
	return atoi(v);
}

/* this copy of the runtime is linked into the executable (libxray-rt.a), not preloaded: the
 * link's own ELF header is the one whose program headers the kernel passed */
static int xr_linked(void)
{
	extern const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));

	return (uintptr_t)&__ehdr_start + __ehdr_start.e_phoff == getauxval(AT_PHDR);
}

static void xr_configured(const struct rec_config *cfg)
{
	const char *opts = rec_getenv("XRAY_OPTIONS");
	char base[REC_PATH_MAX], cwd[REC_PATH_MAX];

	xr_max_stack = cfg->max_stack; /* XR_DEFAULT_MAX_STACK unless FLIGHTREC_MAX_STACK says */
	rec_frontend_self_storage.thread_size =
		sizeof(struct xr_thread) + (size_t)xr_max_stack * sizeof(struct xr_frame);

	if (rec_sess.sink != &xray_sink || !opts ||
	    xr_flag(opts, "xray_logfile_base", base, sizeof(base)) < 0 || !base[0])
		return; /* the base names XRay logs only */
	rec_snprintf(xr_logfile_base_given, sizeof(xr_logfile_base_given), "%s", base);
	if (base[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		rec_snprintf(xr_logfile_base, sizeof(xr_logfile_base), "%s", base);
	else
		rec_snprintf(xr_logfile_base, sizeof(xr_logfile_base), "%s/%s", cwd, base);
	/* no FLIGHTREC_DIR: the rings and stats go where the log goes. `cfg` is the session's
	 * own configuration, still being set up (no thread records yet). */
	if (!rec_getenv("FLIGHTREC_DIR")) {
		char *slash = strrchr(xr_logfile_base, '/');
		size_t len = slash ? (size_t)(slash - xr_logfile_base) : 0;
		if (len == 0)
			len = 1; /* "/" */
		if (len < sizeof(rec_sess.cfg.dir)) {
			memcpy(rec_sess.cfg.dir, xr_logfile_base, len);
			rec_sess.cfg.dir[len] = '\0';
		}
	}
}

static void xr_started(void)
{
	if (&__rseq_size && &__rseq_offset && __rseq_size >= 8)
		xr_cpu_off =
			(long)__rseq_offset + 4; /* struct rseq: u32 cpu_id_start, u32 cpu_id */
	else
		xr_cpu_off =
			(long)((uintptr_t)&xr_no_rseq_cpu - (uintptr_t)__builtin_thread_pointer());
}

/* the formats besides XRay's (FLIGHTREC_FORMAT): tracepoints; the others are written from the
 * FDR records by their sinks */
static const struct rec_sink *const xr_formats[] = { &tfile_sink, &uftrace_sink,
						     &chrome_sink, NULL };

/* The thread is exiting with frames open (pthread_cancel unwound them without their exit
 * sleds): they end now, so the log has an exit for every entry. */
static void xr_thread_exit(struct rec_thread *t)
{
	if (!t->busy)
		xr_unwind_to(UINTPTR_MAX);
}

/* exits still owed when the thread's stream is closed (its ring stayed full): the sink counts
 * them lost */
static uint64_t xr_owed_at_close(const struct rec_thread *t)
{
	const struct xr_thread *xt = xr_thread_of((struct rec_thread *)t);
	uint64_t n = 0;

	for (uint32_t i = 0; i < xt->depth; i++)
		n += xt->stack[i].owed;
	return n;
}

struct rec_frontend rec_frontend_self_storage = {
	.name = "xray-rt",
	.defaults = {.dir = ".", .dir_env = NULL, .policy = REC_POLICY_BLOCK,
		     .max_stack = XR_DEFAULT_MAX_STACK},
	.sink = &xray_sink,
	.thread_size = sizeof(struct xr_thread) + 1024 * sizeof(struct xr_frame),
	.configured = xr_configured,
	.started = xr_started,
	.formats = xr_formats,
	.encoding = REC_ENC_FDR,
	.fn_addr = xr_fn_addr,
	.instr_map = xr_write_objects_map,
	.uftrace_argspec = xr_uftrace_argspec,
	.lost_per_hook = 2, /* entry hooks: the entry, and its exit (no frame pushed) */
	.image_end = xr_finish,
	.thread_exit = xr_thread_exit,
	.owed_at_close = xr_owed_at_close,
};

__attribute__((constructor(101))) static void xr_init(void)
{
	if (!xr_should_run()) {
		/* not an XRay program, or its own copy of the runtime records it. Linked into a
		 * program without sleds, compiler-rt's runtime says so at verbosity=1 (preloaded
		 * into whatever inherits LD_PRELOAD, we stay quiet). */
		if (!xr_map_ready() && xr_linked() && xr_verbosity() > 0) {
			char msg[96];
			size_t n = rec_snprintf(msg, sizeof(msg),
						"==%d==XRay instrumentation map missing. Not "
						"initializing XRay.\n", (int)getpid());
			rec_stderr_write(msg, n < sizeof(msg) ? n : sizeof(msg) - 1);
		}
		return;
	}
	if (rec_session_ensure() < 0)
		return;
	xr_log_start();
	if (!__atomic_load_n(&xr_api_driven, __ATOMIC_ACQUIRE))
		xr_patch_all(); /* else the program patches, through the API (xray_api.c) */
	xr_dso_start(); /* the shared objects with sleds loaded with the program */
}

/* The end of this image's trace: the calling thread's open frames end now. */
void xr_finish(void)
{
	if (rec_sess.state != REC_SESSION_ACTIVE || getpid() != rec_sess.pid)
		return; /* not started, already finished, or a vfork child sharing our memory */
	xr_unwind_to(UINTPTR_MAX);
	xr_patch_report();
	/* compiler-rt writes (and announces) a log only for a logging mode */
	xr_log_announce = xr_verbosity() > 0 && xr_log_mode_current();
	rec_session_finish();
}

__attribute__((destructor(101))) static void xr_fini(void)
{
	xr_finish();
}
