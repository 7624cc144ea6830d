/*
 * mcount_main: libmcount's front end description, start-up and shut-down.
 *
 * The constructor starts the session (a hook that runs earlier starts it itself through
 * rec_session_ensure); the destructor, which runs after the program's own destructors
 * because a preloaded library is initialised before the program, finishes the trace.
 */
#include "libmcount/internal.h"
#include "libmcount/mcount_filter.h"
#include "libmcount/mcount_args.h"
#include "libmcount/mcount_plt.h"
#include "libmcount/mcount_dynamic.h"
#include "formats/chrome/sink_chrome.h"
#include "formats/tfile/sink_tfile.h"
#include "formats/uftrace/sink_uftrace.h"
#include "formats/xray/sink_xray.h"
#include "formats/xcode/fn_decode.h"
#include "formats/uftrace/uftrace_format.h"
#include "librecord/rec_elf.h"
#include "librecord/rec_symtab.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void mc_configured(const struct rec_config *cfg)
{
	mc_tp_mode = rec_sess.sink == &tfile_sink;

	/* uftrace's depth field has 10 bits: deeper frames could not be told apart */
	mc_max_stack = cfg->max_stack > UFTRACE_DEPTH_MAX + 1 ? UFTRACE_DEPTH_MAX + 1 : cfg->max_stack;
	/* --with-syms DIR: the patterns resolve names from DIR's .sym files (uftrace's
	 * UFTRACE_SYMBOL_DIR), the sink copies them into the trace */
	rec_symtab_set_symdir(rec_getenv("FLIGHTREC_WITH_SYMS"));
	rec_frontend_self_storage.thread_size =
		sizeof(struct mc_thread) + (size_t)mc_max_stack * sizeof(struct mc_frame);
}

/* The record-time filters and triggers (mcount_filter.h): read and resolved against the modules
 * loaded
 * now; a bad value turns recording off with one warning. A thread then has the filter area
 * after its shadow stack. */
static int mc_check(char *why, size_t len)
{
	/* --srcline and -L: the source locations first, -L's filter asks them */
	mc_srcline_setup();
	if (mc_args_split_trigger(why, len) < 0 || mc_filter_setup(why, len) < 0 ||
	    mc_args_setup(why, len) < 0)
		return -1;
	/* -P/-U: the patterns now, the patching once the session is active (mc_init) */
	if (mc_dyn_check(why, len) < 0)
		return -1;
	if (mc_args_on && rec_sess.sink != &uftrace_sink) {
		/* the other formats are decoded from 16-byte uftrace records: a payload after one
		 * would be read as records */
		rec_snprintf(why, len, "FLIGHTREC_ARGUMENT/_RETVAL: arguments and return values are "
			     "recorded in the uftrace format only (FLIGHTREC_FORMAT=%s)",
			     rec_sess.sink->name);
		return -1;
	}
	if (mc_fconf.active && mc_tp_mode) {
		rec_snprintf(why, len, "the filters and triggers (FLIGHTREC_FILTER, _TRIGGER, "
			     "_CALLER, _DEPTH, _TIME_FILTER, _MIN_SIZE, _DISABLED, _SIGNAL) do not "
			     "apply to tracepoints (the tfile format)");
		return -1;
	}
	rec_frontend_self_storage.thread_size += mc_filter_area_size();
	return 0;
}

/* The clock is calibrated now: the fast paths read only the TSC. With a filter they always
 * decline (a depth limit of 0), so that every call takes the complete, filtering hooks. */
static void mc_started(void)
{
	mc_fast_max_stack = rec_clock_g.use_tsc && !mc_fconf.active ? mc_max_stack : 0;
	mc_filter_start(); /* --signal's handlers, now that the session records */
	mc_args_started(rec_sess.dirfd);
	if (mc_tp_mode)
		mc_tp_start();
}

/* A fork child keeps the forking thread's frames: their returns are still hijacked. */
static void mc_fork_thread(struct rec_thread *child, const struct rec_thread *parent)
{
	const struct mc_thread *p = rec_thread_fe((struct rec_thread *)parent);
	struct mc_thread *c = mc_thread_of(child);

	memcpy(c, p, sizeof(*p) + (size_t)p->depth * sizeof(struct mc_frame));
	if (mc_fconf.active)
		memcpy(mc_fthread_of(c), mc_fthread_of((struct mc_thread *)p),
		       sizeof(struct mc_fthread) + (size_t)p->depth * sizeof(struct mc_fframe));
}

/* what a custom environment given to exec/posix_spawn gets back, so that the next image
 * records as this one does: --no-libcall, --nest-libcall, the record-time filters and
 * triggers, -P/-U, -A/-R/-a, --with-syms, --srcline and its location filters (uftrace's
 * libmcount hands its UFTRACE_* variables on the same way); librecord's own settings (format,
 * policy, buffers, tracepoints) are carried by librecord/rec_wrap_exec.c, with these at most
 * REC_WRAP_ENV_MAX */
static const char *const mc_exec_env[] = {
	"FLIGHTREC_NO_LIBCALL", "FLIGHTREC_NEST_LIBCALL", "FLIGHTREC_FILTER", "FLIGHTREC_DEPTH",
	"FLIGHTREC_TIME_FILTER", "FLIGHTREC_MATCH", "FLIGHTREC_TRIGGER", "FLIGHTREC_CALLER",
	"FLIGHTREC_SIGNAL", "FLIGHTREC_MIN_SIZE", "FLIGHTREC_MAX_STACK", "FLIGHTREC_DISABLED",
	"FLIGHTREC_PATCH", "FLIGHTREC_UNPATCH", "FLIGHTREC_ARGUMENT", "FLIGHTREC_RETVAL",
	"FLIGHTREC_AUTO_ARGS", "FLIGHTREC_DEMANGLE", "FLIGHTREC_WITH_SYMS", "FLIGHTREC_SRCLINE",
	"FLIGHTREC_LOC_FILTER",
	NULL
};

/* the formats besides uftrace (FLIGHTREC_FORMAT): tracepoints; the others are written from
 * the uftrace records by their sinks */
static const struct rec_sink *const mc_formats[] = { &tfile_sink, &xray_sink,
						     &chrome_sink, NULL };

struct rec_frontend rec_frontend_self_storage = {
	.name = "libmcount",
	/* uftrace's depth field has 10 bits: FLIGHTREC_MAX_STACK above 1024 is refused */
	.defaults = { .dir = "uftrace.data", .dir_env = "UFTRACE_DIR", .policy = REC_POLICY_BLOCK,
		      .max_stack = UFTRACE_DEPTH_MAX + 1, .max_stack_max = UFTRACE_DEPTH_MAX + 1 },
	.sink = &uftrace_sink,
	.thread_size = sizeof(struct mc_thread) + 1024 * sizeof(struct mc_frame),
	.configured = mc_configured,
	.check = mc_check,
	.started = mc_started,
	.fork_thread = mc_fork_thread,
	.lost_per_hook = 2, /* entry hooks: the entry, and the exit of a frame not hijacked */
	.thread_exit = mc_thread_exit,
	.formats = mc_formats,
	.exec_env = mc_exec_env,
	.encoding = REC_ENC_UFTRACE,
	.uftrace_argspec = mc_args_argspec,
	.uftrace_retspec = mc_args_retspec,
};

/* Does the program import one of our hooks? Programs that do not (a shell started by
 * system(), any tool run from a traced program with LD_PRELOAD inherited) get no session and
 * write nothing; an instrumented library they load still starts one at its first hook. */
static int mc_exe_uses_hooks(void)
{
	static const char *const hooks[] = { "mcount", "_mcount", "__fentry__",
					     "__cyg_profile_func_enter" };
	/* read in place, not with libelf: it would call malloc, which may be the program's own
	 * and instrumented, before anything is set up (rec_util.h) */
	struct rec_elf_map m;
	const struct rec_elf_tab *tabs[2] = { &m.dynsym, &m.symtab };
	int found = 0;

	/* -P/-U: a program built with patchable nops imports no hook */
	if (mc_dyn_wanted())
		return 1;
	if (rec_elf_map_open("/proc/self/exe", &m) < 0)
		return 1; /* cannot tell: record */
	for (int k = 0; k < 2 && !found; k++) {
		const struct rec_elf_tab *t = tabs[k];
		for (size_t i = 0; i < t->nsyms && !found; i++) {
			const char *name;
			if (t->syms[i].st_shndx != SHN_UNDEF)
				continue;
			name = rec_elf_tab_name(t, i);
			for (size_t h = 0; h < sizeof(hooks) / sizeof(hooks[0]); h++)
				found |= strcmp(name, hooks[h]) == 0;
		}
	}
	rec_elf_map_close(&m);
	return found;
}

__attribute__((constructor)) static void mc_init(void)
{
	if (mc_attach_wanted()) {
		/* `flightrec record -p`: the tracer routes the program's hooks to us once this
		 * returns; -P/-U patch and the PLT is hooked while the tracer holds every
		 * thread, both undone on detach (mc_attach_unhook) */
		mc_attached = 1;
		rec_session_ensure();
		if (__atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) == REC_SESSION_ACTIVE)
			mc_dyn_patch();
		mc_attach_libcalls();
		return;
	}
	if (mc_exe_uses_hooks())
		rec_session_ensure();
	/* -P/-U, in every format: the patched sites call the hooks as -pg/-mfentry code does */
	if (__atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) == REC_SESSION_ACTIVE)
		mc_dyn_patch();
	/* library calls: recorded for the uftrace format only (its .sym file names them) */
	if (__atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) == REC_SESSION_ACTIVE &&
	    rec_sess.sink == &uftrace_sink && !mc_tp_mode)
		mc_plt_setup();
}

__attribute__((destructor)) static void mc_fini(void)
{
	rec_session_finish();
}

/* gcc -pg start-up files start glibc's gprof; with us preloaded there is nothing to write */
__attribute__((visibility("default"))) void __monstartup(unsigned long low, unsigned long high)
{
	(void)low;
	(void)high;
}

__attribute__((visibility("default"))) void _mcleanup(void)
{
}
