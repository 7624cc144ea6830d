/*
 * mcount_main: libmcount's front end description, start-up and shut-down.
 *
 * The constructor starts the session (a hook that runs earlier starts it itself through
 * rec_session_ensure); the destructor, which runs after the program's own destructors
 * because a preloaded library is initialised before the program, finishes the trace.
 */
#include "libmcount/internal.h"
#include "formats/chrome/sink_chrome.h"
#include "formats/tfile/sink_tfile.h"
#include "formats/uftrace/sink_uftrace.h"
#include "formats/xray/sink_xray.h"
#include "formats/xcode/fn_decode.h"
#include "formats/uftrace/uftrace_format.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void mc_configured(const struct rec_config *cfg)
{
	mc_tp_mode = rec_sess.sink == &tfile_sink;

	/* uftrace's depth field has 10 bits: deeper frames could not be told apart */
	mc_max_stack = cfg->max_stack > UFTRACE_DEPTH_MAX + 1 ? UFTRACE_DEPTH_MAX + 1 : cfg->max_stack;
	rec_frontend_self_storage.thread_size =
		sizeof(struct mc_thread) + (size_t)mc_max_stack * sizeof(struct mc_frame);
}

/* The clock is calibrated now: the fast paths read only the TSC. */
static void mc_started(void)
{
	mc_fast_max_stack = rec_clock_g.use_tsc ? mc_max_stack : 0;
	if (mc_tp_mode)
		mc_tp_start();
}

/* A fork child keeps the forking thread's frames: their returns are still hijacked. */
static void mc_fork_thread(struct rec_thread *child, const struct rec_thread *parent)
{
	const struct mc_thread *p = rec_thread_fe((struct rec_thread *)parent);
	struct mc_thread *c = mc_thread_of(child);

	memcpy(c, p, sizeof(*p) + (size_t)p->depth * sizeof(struct mc_frame));
}

/* the formats besides uftrace (FLIGHTREC_FORMAT): tracepoints; the others are written from
 * the uftrace records by their sinks */
static const struct rec_sink *const mc_formats[] = { &tfile_sink, &xray_sink,
						     &chrome_sink, NULL };

struct rec_frontend rec_frontend_self_storage = {
	.name = "libmcount",
	.defaults = { .dir = "uftrace.data", .dir_env = "UFTRACE_DIR", .policy = REC_POLICY_BLOCK },
	.sink = &uftrace_sink,
	.thread_size = sizeof(struct mc_thread) + 1024 * sizeof(struct mc_frame),
	.configured = mc_configured,
	.started = mc_started,
	.fork_thread = mc_fork_thread,
	.lost_per_hook = 2, /* entry hooks: the entry, and the exit of a frame not hijacked */
	.thread_exit = mc_thread_exit,
	.formats = mc_formats,
	.encoding = REC_ENC_UFTRACE,
};

/* Does the program import one of our hooks? Programs that do not (a shell started by
 * system(), any tool run from a traced program with LD_PRELOAD inherited) get no session and
 * write nothing; an instrumented library they load still starts one at its first hook. */
static int mc_exe_uses_hooks(void)
{
	static const char *const hooks[] = { "mcount", "_mcount", "__fentry__",
					     "__cyg_profile_func_enter" };
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), found = 0;
	Elf_Scn *scn = NULL;
	Elf *elf;

	if (fd < 0)
		return 1; /* cannot tell: record */
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	while (elf && !found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) ||
		    sh.sh_entsize == 0 || !(data = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize && !found; i++) {
			GElf_Sym sym;
			const char *name;
			if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx != SHN_UNDEF)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			for (size_t h = 0; name && h < sizeof(hooks) / sizeof(hooks[0]); h++)
				found |= strcmp(name, hooks[h]) == 0;
		}
	}
	if (elf)
		elf_end(elf);
	else
		found = 1;
	close(fd);
	return found;
}

__attribute__((constructor)) static void mc_init(void)
{
	int uses;

	/* libelf allocates: with the program's own malloc that is a hook, not to be recorded */
	rec_in_runtime = 1;
	uses = mc_exe_uses_hooks();
	rec_in_runtime = 0;
	if (uses)
		rec_session_ensure();
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
