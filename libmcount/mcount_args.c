/*
 * mcount_args: argument and return-value recording (see mcount_args.h for the role and the
 * invariants of the hook side). Set-up (mc_args_setup) runs once at the session start; the
 * rest runs inside the complete hooks with the thread's busy guard up.
 *
 * Values, as uftrace 0.13's save_to_argbuf / mcount_arch_get_arg on x86_64 produce them:
 *   integer argN (N <= 6)   the register, its low ALIGN(size, 4) bytes
 *   argN (N > 6), %stackN   the word at return-address slot + (N - 6) (or N) words; an offset
 *                           outside [1, 100] gives zeros
 *   fpargN (N <= 8)         xmm(N-1): 8 bytes (f64) or 4 (otherwise, f80 too)
 *   fpargN (N > 8)          the stack at (N - 8) * 2 - 1 words
 *   strings (/s, /S)        "NULL" for a null pointer, "<0x...>" for an unreadable one, else at
 *                           most 98 bytes: a longer string is cut to 95 and "..."
 *   retval                  rax (its low `size` bytes), xmm0 for floats, st(0) for f80
 */
#define REC_HOOK_FPSAFE 1 /* the slow paths of librecord save the vector registers */
#include "libmcount/mcount_args.h"
#include "libmcount/internal.h"
#include "libmcount/mcount_argspec.h"
#include "libmcount/mcount_dwarf.h"
#include "libmcount/mcount_filter.h"
#include "libmcount/mcount_plt.h"
#include "formats/uftrace/uftrace_format.h"
#include "librecord/rec_clock.h"
#include "librecord/rec_elf.h"
#include "librecord/rec_symtab.h"
#include "librecord/rec_util.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

uint32_t mc_args_on;

static struct mc_argspec_set mc_aset; /* large: not on the stack */
static struct mc_ftable mc_atable;    /* range mode = index in mc_alists + 1 */
static struct mc_arglist *mc_alists;  /* rec_mem_grow'n */
static size_t mc_nalists, mc_calists;

/* the executable's DWARF (-a, -A/-R FUNC without items): read at the start, written to
 * <exe>.dbg once the session's directory is open (mc_args_started), then freed */
static struct mc_dwarf mc_dw;
static int mc_dw_on;

/* --srcline: the other modules' DWARF (the executable's too when -a did not read it), read at
 * the start with mc_dw's rules but no specs, written and freed as mc_dw is */
#define MC_SL_MAX 64
static struct mc_dwarf mc_sl[MC_SL_MAX];
static size_t mc_nsl;
static char mc_dw_path[512]; /* mc_args_started: the file -a's .dbg was written for */

/* The readable PT_LOAD segments of the executable, taken at the start: they stay mapped as
 * long as the process lives (a program that unmaps its own image is not supported). */
#define MC_SEGS 16
static struct {
	uintptr_t lo, hi;
} mc_segs[MC_SEGS];
static unsigned mc_nsegs;

#define MC_STR_MAX 98 /* uftrace's ARG_STR_MAX: longer strings end with "..." there */
#define MC_ALIGN4(n) (((n) + 3u) & ~3u)
/* the largest payload: every item a string of 2 + 98 bytes, rounded up */
#define MC_PAYLOAD_MAX (MC_ARGS_MAX * 104)

/* ---- set-up ---- */

static int mc_alist_same(const struct mc_arglist *x, const struct mc_arglist *y)
{
	if (x->n != y->n)
		return 0;
	for (unsigned i = 0; i < x->n; i++) {
		const struct mc_arg *a = &x->a[i], *b = &y->a[i];
		if (a->type != b->type || a->fmt != b->fmt || a->size != b->size ||
		    a->idx != b->idx || a->reg != b->reg || a->stack_ofs != b->stack_ofs ||
		    a->tsize != b->tsize || a->nregs != b->nregs ||
		    memcmp(a->regs, b->regs, sizeof(a->regs)))
			return 0;
	}
	return 1;
}

/* the index of list L in mc_alists (added if new), -1 without memory */
static long mc_alist_intern(const struct mc_arglist *l)
{
	for (size_t i = mc_nalists; i-- > 0;)
		if (mc_alist_same(&mc_alists[i], l))
			return (long)i;
	if (mc_nalists == mc_calists) {
		size_t cap = mc_calists ? mc_calists * 2 : 16;
		struct mc_arglist *p = rec_mem_grow(mc_alists, cap * sizeof(*p));
		if (!p)
			return -1;
		mc_alists = p;
		mc_calists = cap;
	}
	mc_alists[mc_nalists] = *l;
	return (long)mc_nalists++;
}

static int mc_atable_add(uintptr_t lo, uintptr_t hi, long list)
{
	struct mc_ftable *t = &mc_atable;

	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct mc_frange *r = rec_mem_grow(t->r, cap * sizeof(*r));
		if (!r)
			return -1;
		t->r = r;
		t->cap = cap;
	}
	t->r[t->n] = (struct mc_frange){ .lo = lo, .hi = hi, .mode = (uint32_t)list + 1,
					 .seq = (uint32_t)t->n };
	t->n++;
	return 0;
}

/* dl_iterate_phdr: the executable is the first object */
static int mc_exe_segs(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	for (unsigned i = 0; i < info->dlpi_phnum && mc_nsegs < MC_SEGS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R) || !ph->p_memsz)
			continue;
		mc_segs[mc_nsegs].lo = info->dlpi_addr + ph->p_vaddr;
		mc_segs[mc_nsegs].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		mc_nsegs++;
	}
	return 1; /* the first one only */
}

/* Is rule I's module uftrace's "PLT" (the program's PLT entries only, utils/filter.c)? */
static int mc_rule_plt(size_t i)
{
	return !strcasecmp(mc_aset.r[i].module, "PLT");
}

/* The list of NAME (module path, OK[] as mc_argspec_for's, DW its DWARF entry or NULL) into
 * the table at [lo, hi) */
static int mc_args_add(const char *path, const char *name, const uint8_t *ok,
		       const struct mc_dwfn *dw, uintptr_t lo, uintptr_t hi)
{
	struct mc_arglist l;
	long idx;

	mc_argspec_for_dwarf(&mc_aset, path, name, ok, dw ? dw->arg : NULL, dw ? dw->ret : NULL,
			     &l);
	if (!l.n)
		return 0;
	idx = mc_alist_intern(&l);
	if (idx < 0 || mc_atable_add(lo, hi, idx) < 0)
		return -1;
	return 0;
}

/*
 * The program's library calls (mcount_plt.c records each at its PLT entry, or with -fno-plt at
 * its GOT reloc: plt.step bytes each, rec_elf.h; named by the relocation): uftrace counts them
 * among the executable's symbols, so an entry naming the executable's module applies to them,
 * and one naming "PLT" to them only. OK[] as for the module's own symbols. A library's (with
 * --nest-libcall, whose calls are recorded too) are among its symbols, "PLT" not naming them.
 */
static int mc_args_resolve_plt(const struct rec_module *m, const uint8_t *ok_mod,
			       struct mc_namer *namer)
{
	uint8_t ok[MC_ARGRULES_MAX];
	struct rec_elf_map em;
	struct rec_elf_plt plt;
	int ret = 0;

	if (!m->path[0] || rec_elf_map_open(m->path, &em) < 0)
		return 0; /* no PLT to read: nothing of it is recorded either */
	for (size_t i = 0; i < mc_aset.n; i++)
		ok[i] = mc_rule_plt(i) ? m->is_exe : ok_mod[i];
	if (rec_elf_plt(&em, &plt) == 0) {
		for (size_t i = 0; i < plt.nrel && ret == 0; i++) {
			const char *name = rec_elf_plt_name(&em, &plt, i);
			uintptr_t lo = m->bias + (uintptr_t)plt.first + plt.step * i;

			/* demangled as the functions' ("operator new" for _Znwm) */
			if (*name)
				ret = mc_args_add(m->path, mc_namer_name(namer, name), ok, NULL,
						  lo, lo + plt.step);
		}
	}
	rec_elf_map_close(&em);
	return ret;
}

struct mc_dw_want_data {
	const struct rec_module *m;
	struct mc_namer *namer;
	int lines_only; /* --srcline's read: F: and L: lines, no spec */
};

/* mc_dwarf_read's WANT: the symbol of the module that starts at file address ADDR, and the
 * specs the entries without items (-a: all) ask of it, by its name as the filters see it */
static const char *mc_dw_want(void *data, uint64_t addr, const char *die_name, int *kinds)
{
	const struct mc_dw_want_data *w = data;
	const struct rec_module *m = w->m;
	uintptr_t a = (uintptr_t)addr + (m->is_dyn ? m->bias : 0);
	size_t lo = 0, hi = m->nsyms;
	const char *raw, *name;

	(void)die_name;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->syms[mid].addr < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == m->nsyms || m->syms[lo].addr != a)
		return NULL;
	raw = rec_symtab_name(m, &m->syms[lo]);
	*kinds = mc_aset.auto_all ? MC_DW_ARG | MC_DW_RET : 0;
	name = mc_namer_name(w->namer, raw);
	if (w->lines_only) {
		*kinds = 0;
		return name;
	}
	for (size_t i = 0; i < mc_aset.n && *kinds != (MC_DW_ARG | MC_DW_RET); i++) {
		const struct mc_argrule *r = &mc_aset.r[i];

		if (!r->n && !r->module[0] && mc_pattern_match(&r->patt, name))
			*kinds |= r->kind == MC_AR_ARG ? MC_DW_ARG : MC_DW_RET;
	}
	return name; /* the .dbg's F: name is the demangled one, as uftrace's symbol tables */
}

/* Does any spec take DWARF's? -a, or an entry without items (uftrace's extract_dwarf_args) */
static int mc_args_want_dwarf(void)
{
	if (mc_aset.auto_all)
		return 1;
	for (size_t i = 0; i < mc_aset.n; i++)
		if (!mc_aset.r[i].n)
			return 1;
	return 0;
}

/* Has the ELF file at PATH a .debug_info section? Asked first, so that -a on a program built
 * without -g neither loads libdw nor pays for it (the section headers of the mapped file) */
static int mc_has_debug_info(const char *path, uint64_t *load_base)
{
	struct rec_elf_map em;
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh, *strs;
	int found = 0;

	if (rec_elf_map_open(path, &em) < 0)
		return 0;
	*load_base = em.load_base;
	eh = (const Elf64_Ehdr *)em.p;
	if (eh->e_shoff && eh->e_shentsize == sizeof(Elf64_Shdr) && eh->e_shstrndx < eh->e_shnum &&
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) <= em.size) {
		sh = (const Elf64_Shdr *)(em.p + eh->e_shoff);
		strs = &sh[eh->e_shstrndx];
		for (unsigned i = 0; i < eh->e_shnum && !found; i++) {
			if (strs->sh_offset + sh[i].sh_name + sizeof(".debug_info") > em.size)
				continue;
			found = !memcmp(em.p + strs->sh_offset + sh[i].sh_name, ".debug_info",
					sizeof(".debug_info")) && sh[i].sh_type != SHT_NOBITS;
		}
	}
	rec_elf_map_close(&em);
	return found;
}

/* The executable's DWARF, when a spec takes it; a failure is one warning, and the table's
 * prototypes stay (uftrace without DWARF) */
static void mc_args_load_dwarf(const struct rec_module *m, struct mc_namer *namer)
{
	struct mc_dw_want_data w = { m, namer, 0 };
	uint64_t load_base = 0;
	char why[600];
	int r;

	if (!m->path[0] || !mc_args_want_dwarf() || !mc_has_debug_info(m->path, &load_base))
		return;
	r = mc_dwarf_read(&mc_dw, m->path, mc_dw_want, &w, why, sizeof(why));
	mc_dw.sym_base = load_base; /* the .dbg's addresses are the .sym files' */
	if (r < 0)
		rec_warn("%s", why);
	mc_dw_on = r > 0;
}

static int mc_args_resolve(void)
{
	/* C++ names are matched demangled, as the filters match them (mcount_filter.c
	 * mc_resolve: libstdc++'s demangler when the program has loaded it, set-up only) */
	struct mc_namer namer;
	uint8_t taken[MC_ARGRULES_MAX] = { 0 }; /* the rule's module was found already */
	uint8_t ok[MC_ARGRULES_MAX];
	int nest = mc_plt_nest_wanted();

	if (rec_symtab_load() < 0)
		return -1;
	mc_namer_init(&namer);
	for (size_t k = 0; k < rec_symtab_nmodules(); k++) {
		const struct rec_module *m = rec_symtab_module_at(k);
		int any = mc_aset.auto_all, plt = 0; /* -a: every module's functions */

		/* uftrace's find_map_by_name: the first module whose file name starts with it */
		for (size_t i = 0; i < mc_aset.n; i++) {
			ok[i] = !mc_aset.r[i].module[0];
			if (!ok[i] && !taken[i] && !mc_rule_plt(i) &&
			    mc_argspec_module_is(m->path, mc_aset.r[i].module))
				ok[i] = taken[i] = 1;
			any |= ok[i];
			plt |= mc_rule_plt(i);
		}
		if (m->is_exe && any)
			mc_args_load_dwarf(m, &namer);
		if ((m->is_exe || nest) && (any || plt) && mc_args_resolve_plt(m, ok, &namer) < 0) {
			mc_namer_fini(&namer);
			return -1;
		}
		if (!any)
			continue;
		for (size_t i = 0; i < m->nsyms; i++) {
			const char *name = mc_namer_name(&namer, rec_symtab_name(m, &m->syms[i]));
			const struct mc_dwfn *dw = NULL;

			if (m->is_exe && mc_dw_on)
				dw = mc_dwarf_find(&mc_dw, m->syms[i].addr -
								   (m->is_dyn ? m->bias : 0));
			if (mc_args_add(m->path, name, ok, dw, m->syms[i].addr, mc_sym_end(m, i)) <
			    0) {
				mc_namer_fini(&namer);
				return -1;
			}
		}
	}
	mc_namer_fini(&namer);
	mc_ftable_finish(&mc_atable);
	return 0;
}

/* the triggers' argument actions and the lists they join (plain data: no allocation at the
 * session start) */
#define MC_SPEC_LIST_MAX 8192
static char mc_trig_rest[MC_SPEC_LIST_MAX], mc_trig_args[MC_SPEC_LIST_MAX],
	mc_trig_rets[MC_SPEC_LIST_MAX];
static char mc_all_args[2 * MC_SPEC_LIST_MAX], mc_all_rets[2 * MC_SPEC_LIST_MAX];
static int mc_split_done;

/* the triggers' entries of one kind, then the variable's: "" when both are empty */
static void mc_join(char *out, size_t size, const char *trig, const char *var)
{
	rec_snprintf(out, size, "%s%s%s", trig, *trig && var && *var ? ";" : "", var ? var : "");
}

int mc_args_split_trigger(char *why, size_t len)
{
	const char *trig = rec_getenv("FLIGHTREC_TRIGGER");
	const char *args = rec_getenv("FLIGHTREC_ARGUMENT"), *rets = rec_getenv("FLIGHTREC_RETVAL");

	mc_split_done = 0;
	mc_trigger_list = NULL;
	if (!trig || !*trig)
		return 0;
	if ((args && strlen(args) >= MC_SPEC_LIST_MAX) ||
	    (rets && strlen(rets) >= MC_SPEC_LIST_MAX)) {
		rec_snprintf(why, len, "FLIGHTREC_ARGUMENT/_RETVAL: longer than %d bytes",
			     MC_SPEC_LIST_MAX - 1);
		return -1;
	}
	if (strlen(trig) >= MC_SPEC_LIST_MAX ||
	    mc_trigger_split(trig, mc_trig_rest, mc_trig_args, mc_trig_rets, sizeof(mc_trig_rest))) {
		rec_snprintf(why, len, "FLIGHTREC_TRIGGER: longer than %d bytes",
			     MC_SPEC_LIST_MAX - 1);
		return -1;
	}
	mc_trigger_list = mc_trig_rest;
	mc_join(mc_all_args, sizeof(mc_all_args), mc_trig_args, args);
	mc_join(mc_all_rets, sizeof(mc_all_rets), mc_trig_rets, rets);
	mc_split_done = 1;
	return 0;
}

const char *mc_args_argspec(void)
{
	const char *s = mc_split_done ? mc_all_args : rec_getenv("FLIGHTREC_ARGUMENT");

	return s && *s ? s : NULL;
}

const char *mc_args_retspec(void)
{
	const char *s = mc_split_done ? mc_all_rets : rec_getenv("FLIGHTREC_RETVAL");

	return s && *s ? s : NULL;
}

int mc_args_setup(char *why, size_t len)
{
	const char *args = mc_args_argspec();
	const char *rets = mc_args_retspec();
	const char *match = rec_getenv("FLIGHTREC_MATCH");
	const char *autoa = rec_getenv("FLIGHTREC_AUTO_ARGS");
	int glob = match && !strcmp(match, "glob");
	char err[400];

	mc_args_on = 0;
	mc_aset.n = 0;
	/* -a/--auto-args: the table's prototypes for every function it names */
	mc_aset.auto_all = autoa && *autoa && strcmp(autoa, "0");
	if ((!args || !*args) && (!rets || !*rets) && !mc_aset.auto_all)
		return 0;
	if (args && *args && mc_argspec_parse(&mc_aset, args, MC_AR_ARG, glob, err,
					      sizeof(err)) < 0) {
		rec_snprintf(why, len, "FLIGHTREC_ARGUMENT: %s", err);
		return -1;
	}
	if (rets && *rets && mc_argspec_parse(&mc_aset, rets, MC_AR_RET, glob, err,
					      sizeof(err)) < 0) {
		rec_snprintf(why, len, "FLIGHTREC_RETVAL: %s", err);
		return -1;
	}
	if (mc_args_resolve() < 0) {
		mc_ftable_free(&mc_atable);
		rec_snprintf(why, len, "FLIGHTREC_ARGUMENT/_RETVAL: cannot read the program's "
			     "symbols");
		return -1;
	}
	if (mc_atable.n) {
		mc_nsegs = 0;
		dl_iterate_phdr(mc_exe_segs, NULL);
		mc_args_on = 1;
		mc_fconf.active = 1; /* every call through the complete hooks, which ask here */
	}
	return 0;
}

void mc_srcline_setup(void)
{
	const char *on = rec_getenv("FLIGHTREC_SRCLINE");
	const char *loc = rec_getenv("FLIGHTREC_LOC_FILTER");
	struct mc_namer namer;
	char why[600];

	mc_nsl = 0;
	/* -L needs the locations too, and writes them as uftrace record -L does */
	if ((!on || strcmp(on, "1")) && (!loc || !*loc))
		return;
	if (rec_symtab_load() < 0)
		return;
	mc_filter_locate = mc_srcline_file;
	mc_namer_init(&namer);
	for (size_t k = 0; k < rec_symtab_nmodules() && mc_nsl < MC_SL_MAX; k++) {
		const struct rec_module *m = rec_symtab_module_at(k);
		struct mc_dw_want_data w = { m, &namer, 1 };
		uintptr_t self = (uintptr_t)&mc_srcline_setup;
		uint64_t load_base = 0;
		struct mc_dwarf *d = &mc_sl[mc_nsl];
		int r;

		/* ours is nobody's source */
		if ((self >= m->lo && self < m->hi) || !m->path[0] ||
		    !mc_has_debug_info(m->path, &load_base))
			continue;
		r = mc_dwarf_read(d, m->path, mc_dw_want, &w, why, sizeof(why));
		d->sym_base = load_base;
		if (r < 0) {
			rec_warn("--srcline: %s", why);
			if (!strncmp(why, "libdw", 5) || !strncmp(why, "libmcount", 9))
				break; /* no libdw: the same for every module */
			continue;
		}
		if (r > 0)
			mc_nsl++;
	}
	mc_namer_fini(&namer);
}

/* D as uftrace's <module>.dbg in DIRFD; frees D */
static void mc_dbg_write(int dirfd, struct mc_dwarf *d, const char *lost)
{
	char name[600], *text;
	const char *base;
	int fd;

	base = strrchr(d->path, '/');
	rec_snprintf(name, sizeof(name), "%s.dbg", base ? base + 1 : d->path);
	text = mc_dwarf_dbg_text(d);
	fd = text && dirfd >= 0 ? openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
					 0644) :
				  -1;
	if (fd < 0 || rec_write_all(fd, text, strlen(text)) < 0)
		rec_warn("cannot write %s: %s", name, lost);
	if (fd >= 0)
		close(fd);
	free(text);
	mc_dwarf_free(d);
}

const char *mc_srcline_file(const struct rec_module *m, uintptr_t addr)
{
	for (size_t i = 0; i < mc_nsl; i++) {
		const struct mc_dwfn *f;

		if (strcmp(mc_sl[i].path, m->path))
			continue;
		f = mc_dwarf_find(&mc_sl[i], addr - (m->is_dyn ? m->bias : 0));
		return f ? f->file : NULL;
	}
	return NULL;
}

void mc_args_started(int dirfd)
{
	mc_dw_path[0] = '\0';
	if (mc_dw_on)
		rec_snprintf(mc_dw_path, sizeof(mc_dw_path), "%s", mc_dw.path);
	if (mc_dw_on) {
		mc_dw_on = 0;
		mc_dbg_write(dirfd, &mc_dw,
			     "uftrace replay shows the DWARF-described arguments as raw values");
	}
	for (size_t i = 0; i < mc_nsl; i++) {
		/* -a's read of the executable has its lines and its specs: that one is written */
		if (mc_dw_path[0] && !strcmp(mc_sl[i].path, mc_dw_path))
			mc_dwarf_free(&mc_sl[i]);
		else
			mc_dbg_write(dirfd, &mc_sl[i],
				     "uftrace replay has no source line of its functions");
	}
	mc_nsl = 0;
}

/* ---- the hook side: no libc from here on ---- */

/* Where the program's memory is read from: this thread (process_vm_readv takes a tid) and a
 * window of its live stack, from our own frame up to the end of the page that holds the
 * hooked function's return-address slot (mapped: the hook is running on it). */
struct mc_rd {
	pid_t tid;
	uintptr_t lo, hi;
};

/* Is [src, src + 1) known readable without asking the kernel? The bytes up to the end of that
 * range in *end. */
static int mc_known(const struct mc_rd *rd, uintptr_t src, uintptr_t *end)
{
	if (src >= rd->lo && src < rd->hi) {
		*end = rd->hi;
		return 1;
	}
	for (unsigned i = 0; i < mc_nsegs; i++) {
		if (src >= mc_segs[i].lo && src < mc_segs[i].hi) {
			*end = mc_segs[i].hi;
			return 1;
		}
	}
	return 0;
}

/* process_vm_readv on this thread, the remote range split at the page boundary so that a
 * readable first page comes back even when the next one is not. On this kind of machine a
 * system call costs microseconds: only for memory mc_known cannot vouch for. */
static size_t mc_read_syscall(pid_t tid, void *dst, uintptr_t src, size_t len)
{
	uintptr_t page_end = (src | 4095) + 1;
	size_t first = page_end - src < len ? page_end - src : len;
	struct iovec local = { dst, len };
	struct iovec remote[2] = { { (void *)src, first }, { (void *)page_end, len - first } };
	long ret;

	/* the raw system call: errno stays the program's, and no libc code runs */
	__asm__ __volatile__("mov %5, %%r10\n\t"
			     "mov %6, %%r8\n\t"
			     "mov %7, %%r9\n\t"
			     "syscall"
			     : "=a"(ret)
			     : "0"((long)SYS_process_vm_readv), "D"((long)tid), "S"(&local),
			       "d"(1L), "r"((long)remote), "r"(len > first ? 2L : 1L), "r"(0L)
			     : "rcx", "r11", "r10", "r8", "r9", "memory");
	return ret > 0 ? (size_t)ret : 0;
}

/* Copy up to LEN bytes at SRC into DST, never faulting; with NUL, stop after a zero byte.
 * Returns the bytes copied (fewer than LEN: the rest is unreadable, or NUL stopped it). */
static size_t mc_safe_read(const struct mc_rd *rd, void *dst, uintptr_t src, size_t len, int nul)
{
	uint8_t *d = dst;
	size_t done = 0;
	uintptr_t end;

	if (!src || src + len < src)
		return 0;
	if (mc_known(rd, src, &end)) {
		size_t n = end - src < len ? end - src : len;
		const volatile uint8_t *p = (const uint8_t *)src;

		for (; done < n; done++) {
			d[done] = p[done];
			if (nul && !d[done])
				return done + 1;
		}
		if (done == len)
			return done;
	}
	return done + mc_read_syscall(rd->tid, d + done, src + done, len - done);
}

static void mc_bzero(uint8_t *p, size_t n)
{
	for (volatile uint8_t *q = p; n--; q++)
		*q = 0;
}

/* "<0x...>" as uftrace's snprintf("<%p>") writes it; returns its length */
static unsigned mc_fmt_ptr(char *out, uintptr_t v)
{
	char tmp[16];
	unsigned n = 0, k = 0;

	do {
		tmp[n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	out[k++] = '<';
	out[k++] = '0';
	out[k++] = 'x';
	while (n)
		out[k++] = tmp[--n];
	out[k++] = '>';
	return k;
}

/* A string value at DST (u16 length, bytes): returns the bytes it takes, rounded up to 4 */
static unsigned mc_put_string(const struct mc_rd *rd, uint8_t *dst, uintptr_t str)
{
	char *s = (char *)dst + 2;
	unsigned len = 0;
	size_t got;

	if (!str) {
		s[0] = 'N', s[1] = 'U', s[2] = 'L', s[3] = 'L';
		len = 4;
	} else {
		got = mc_safe_read(rd, s, str, MC_STR_MAX + 1, 1);
		if (!got) {
			len = mc_fmt_ptr(s, str);
		} else {
			while (len < got && len < MC_STR_MAX && s[len])
				len++;
			if (len == MC_STR_MAX) {
				/* uftrace: 98 bytes and more end with "..." (a string that runs
				 * into an unreadable page ends there) */
				len = MC_STR_MAX;
				s[len - 3] = s[len - 2] = s[len - 1] = '.';
			}
		}
	}
	dst[0] = (uint8_t)len;
	dst[1] = (uint8_t)(len >> 8);
	for (unsigned i = len + 2; i < MC_ALIGN4(len + 2); i++)
		dst[i] = 0;
	return MC_ALIGN4(len + 2);
}

/* std::string (libstdc++): {char *data; size_t length; ...}; uftrace reads it like /s */
static unsigned mc_put_std_string(const struct mc_rd *rd, uint8_t *dst, uintptr_t obj)
{
	uintptr_t data;

	if (obj && mc_safe_read(rd, &data, obj, sizeof(data), 0) == sizeof(data))
		return mc_put_string(rd, dst, data);
	return mc_put_string(rd, dst, obj);
}

static void mc_put_word(uint8_t *dst, const void *src, unsigned n)
{
	const uint8_t *s = src;

	for (unsigned i = 0; i < n; i++)
		dst[i] = s[i];
}

/* The saved integer register of uftrace's number 1..6 (rdi..r9) */
static uintptr_t mc_int_reg(const uintptr_t *regs, unsigned r)
{
	static const uint8_t slot[7] = { 0, MC_SAVED_RDI, MC_SAVED_RSI, MC_SAVED_RDX,
					 MC_SAVED_RCX, MC_SAVED_R8, MC_SAVED_R9 };
	return r >= 1 && r <= 6 ? regs[slot[r]] : 0;
}

/*
 * A struct passed by value into DST (uftrace's mcount_get_struct_arg): the registers that
 * carry it, 8 bytes each, or SIZE bytes of the stack at %stack+N, or the register of its
 * index; the payload takes SIZE rounded up to 4 whatever was filled (zeros past it).
 */
static unsigned mc_put_struct(const struct mc_rd *rd, uint8_t *dst, const struct mc_arg *a,
			      const uintptr_t *regs, const uintptr_t *stack, const uint64_t *xmm)
{
	unsigned size = MC_ALIGN4(a->tsize), n = 0;
	uint8_t tmp[8 * 4];
	uintptr_t v;

	mc_bzero(tmp, sizeof(tmp));
	if (a->type == MC_AT_STACK) {
		if (a->stack_ofs < 1 || a->stack_ofs > 100 ||
		    mc_safe_read(rd, dst, (uintptr_t)(stack + a->stack_ofs), size, 0) != size)
			mc_bzero(dst, size);
		return size;
	}
	for (unsigned i = 0; i < a->nregs; i++, n += 8) {
		if (a->regs[i] >= MC_REG_XMM0)
			mc_put_word(tmp + n, &xmm[a->regs[i] - MC_REG_XMM0], 8);
		else {
			v = mc_int_reg(regs, a->regs[i]);
			mc_put_word(tmp + n, &v, 8);
		}
	}
	if (!a->nregs && a->type == MC_AT_INDEX && a->idx >= 1 && a->idx <= 6) {
		v = mc_int_reg(regs, (unsigned)a->idx);
		mc_put_word(tmp, &v, 8);
	}
	mc_bzero(dst, size);
	mc_put_word(dst, tmp, size < sizeof(tmp) ? size : sizeof(tmp));
	return size;
}

/* One argument into DST; returns the bytes it takes */
static unsigned mc_put_arg(const struct mc_rd *rd, uint8_t *dst, const struct mc_arg *a,
			   const uintptr_t *regs, const uintptr_t *stack, const uint64_t *xmm)
{
	uint8_t val[16];
	unsigned size = MC_ALIGN4(a->size);
	int reg = -1;
	long ofs = 0; /* an index as large as arg2147483647 (uftrace: zeros past 100 words) */
	uintptr_t v;

	if (a->fmt == 't')
		return mc_put_struct(rd, dst, a, regs, stack, xmm);
	mc_bzero(val, sizeof(val));
	switch (a->type) {
	case MC_AT_REG:
		reg = a->reg;
		break;
	case MC_AT_INDEX:
		if (a->idx >= 1 && a->idx <= 6)
			reg = a->idx;
		else
			ofs = (long)a->idx - 6;
		break;
	case MC_AT_FLOAT:
		if (a->idx >= 1 && a->idx <= 8)
			reg = MC_REG_XMM0 + a->idx - 1;
		else
			ofs = ((long)a->idx - 8) * 2 - 1;
		break;
	default:
		ofs = a->stack_ofs;
		break;
	}
	if (reg >= MC_REG_XMM0) {
		/* movsd for 8 bytes, movss otherwise (uftrace's COPY_XMM) */
		mc_put_word(val, &xmm[reg - MC_REG_XMM0], a->size == 8 ? 8 : 4);
	} else if (reg >= 1) {
		v = mc_int_reg(regs, (unsigned)reg);
		mc_put_word(val, &v, sizeof(v));
	} else if (ofs >= 1 && ofs <= 100) {
		if (mc_safe_read(rd, val, (uintptr_t)(stack + ofs), size, 0) != size)
			mc_bzero(val, sizeof(val));
	}
	if (a->fmt == 's' || a->fmt == 'S') {
		mc_put_word((uint8_t *)&v, val, sizeof(v));
		return a->fmt == 's' ? mc_put_string(rd, dst, v) : mc_put_std_string(rd, dst, v);
	}
	mc_put_word(dst, val, size);
	return size;
}

static void mc_read_xmm(uint64_t *x)
{
	__asm__ __volatile__("movsd %%xmm0, 0(%0)\n\t"
			     "movsd %%xmm1, 8(%0)\n\t"
			     "movsd %%xmm2, 16(%0)\n\t"
			     "movsd %%xmm3, 24(%0)\n\t"
			     "movsd %%xmm4, 32(%0)\n\t"
			     "movsd %%xmm5, 40(%0)\n\t"
			     "movsd %%xmm6, 48(%0)\n\t"
			     "movsd %%xmm7, 56(%0)"
			     :
			     : "r"(x)
			     : "memory");
}

/* the record and its payload, padded to 8 */
static int mc_write(struct rec_thread *t, unsigned type, unsigned depth, uintptr_t ip,
		    uint64_t time, const uint8_t *payload, unsigned n)
{
	unsigned padded = (n + 7u) & ~7u;
	struct uftrace_record *r = rec_reserve(t, sizeof(*r) + padded);
	uint8_t *p;

	if (!r)
		return 1; /* dropped, counted */
	r->time = time;
	r->word = uftrace_record_word(type, depth, ip) | 4; /* the `more` bit */
	p = (uint8_t *)(r + 1);
	mc_put_word(p, payload, n);
	for (unsigned i = n; i < padded; i++)
		p[i] = 0;
	rec_commit(t);
	return 1;
}

static const struct mc_arglist *mc_alist_of(uintptr_t ip)
{
	uint32_t m = mc_ftable_lookup(&mc_atable, ip);

	return m ? &mc_alists[m - 1] : NULL;
}

static int mc_args_write_entry(struct rec_thread *t, const struct mc_arglist *l, unsigned depth,
			       uintptr_t ip, uint64_t time, const uintptr_t *regs,
			       const uintptr_t *stack, const uint64_t *xmm)
{
	uint8_t buf[MC_PAYLOAD_MAX];
	unsigned n = 0;
	struct mc_rd rd = { t->tid, (uintptr_t)__builtin_frame_address(0),
			    ((uintptr_t)stack | 4095) + 1 };

	for (unsigned i = 0; i < l->n; i++)
		if (l->a[i].idx != 0)
			n += mc_put_arg(&rd, buf + n, &l->a[i], regs, stack, xmm);
	return mc_write(t, UFTRACE_ENTRY, depth, ip, time, buf, n);
}

/* -t: per frame, the function and its payload (u16 length, bytes); slot 0 of a frame whose
 * payload did not fit or that has no spec holds ip 0 */
#define MC_HELD_SLOT 512
struct mc_held {
	uintptr_t ip;
	uint32_t len;
	uint8_t payload[MC_HELD_SLOT - sizeof(uintptr_t) - sizeof(uint32_t)];
};
static __thread struct mc_held *mc_held __attribute__((tls_model("initial-exec")));
static __thread size_t mc_held_n __attribute__((tls_model("initial-exec")));

void mc_args_hold(struct rec_thread *t, unsigned d, uintptr_t ip, const uintptr_t *regs,
		  const uintptr_t *stack)
{
	const struct mc_arglist *l;
	uint8_t buf[MC_PAYLOAD_MAX];
	struct mc_rd rd = { t->tid, (uintptr_t)__builtin_frame_address(0),
			    ((uintptr_t)stack | 4095) + 1 };
	uint64_t xmm[8];
	unsigned n = 0;

	mc_read_xmm(xmm);
	l = mc_alist_of(ip);
	if (!mc_held && l && l->nargs) {
		/* once per thread, like the shadow stack's graves (mcount_hooks.c) */
		size_t bytes = (size_t)mc_max_stack * sizeof(struct mc_held);
		void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		if (p == MAP_FAILED)
			return;
		mc_held = p;
		mc_held_n = mc_max_stack;
	}
	if (!mc_held || d >= mc_held_n)
		return;
	mc_held[d].ip = 0;
	if (!l || !l->nargs)
		return;
	for (unsigned i = 0; i < l->n; i++)
		if (l->a[i].idx != 0)
			n += mc_put_arg(&rd, buf + n, &l->a[i], regs, stack, xmm);
	if (n > sizeof(mc_held[d].payload))
		return; /* too big to keep: the entry goes without it */
	mc_put_word(mc_held[d].payload, buf, n);
	mc_held[d].len = n;
	mc_held[d].ip = ip;
}

int mc_args_write_held(struct rec_thread *t, unsigned d, unsigned depth, uintptr_t ip,
		       uint64_t time)
{
	if (!mc_held || d >= mc_held_n || mc_held[d].ip != ip)
		return 0;
	mc_held[d].ip = 0;
	return mc_write(t, UFTRACE_ENTRY, depth, ip, time, mc_held[d].payload, mc_held[d].len);
}

void mc_args_thread_exit(void)
{
	if (mc_held) {
		munmap(mc_held, mc_held_n * sizeof(struct mc_held));
		mc_held = NULL;
		mc_held_n = 0;
	}
}

int mc_args_entry(struct rec_thread *t, unsigned depth, uintptr_t ip, const uintptr_t *regs,
		  const uintptr_t *stack)
{
	const struct mc_arglist *l;
	uint64_t xmm[8];

	/* first: nothing has run yet that may use the vector registers */
	mc_read_xmm(xmm);
	l = mc_alist_of(ip);
	if (!l || !l->nargs)
		return 0;
	return mc_args_write_entry(t, l, depth, ip, rec_clock_ns(), regs, stack, xmm);
}

int mcount_args_capture(struct rec_thread *t, unsigned depth, uintptr_t ip, uint64_t time,
			const uintptr_t *regs, const uintptr_t *stack)
{
	const struct mc_arglist *l;
	uint64_t xmm[8];

	mc_read_xmm(xmm);
	if (!mc_args_on)
		return 0;
	l = mc_alist_of(ip);
	if (!l || !l->nargs)
		return 0;
	return mc_args_write_entry(t, l, depth, ip, time, regs, stack, xmm);
}

int mc_args_exit(struct rec_thread *t, unsigned depth, uintptr_t ip, uint64_t time,
		 const uintptr_t *rv)
{
	const struct mc_arglist *l;
	uint8_t buf[MC_PAYLOAD_MAX];
	uint64_t xmm0;
	uint8_t st0[16];
	unsigned n = 0;
	struct mc_rd rd = { t->tid, (uintptr_t)__builtin_frame_address(0),
			    ((uintptr_t)rv | 4095) + 1 };

	__asm__ __volatile__("movsd %%xmm0, %0" : "=m"(xmm0));
	l = mc_alist_of(ip);
	if (!l || !l->nret)
		return 0;
	for (unsigned i = 0; i < l->n; i++) {
		const struct mc_arg *a = &l->a[i];
		uint8_t val[16];
		unsigned size = MC_ALIGN4(a->size);

		if (a->idx != 0)
			continue;
		if (a->fmt == 't') {
			/* a struct returned by value: uftrace's buffer is left as it was, the
			 * readers skip its bytes (they print NAME{...}) */
			mc_bzero(buf + n, MC_ALIGN4(a->tsize));
			n += MC_ALIGN4(a->tsize);
			continue;
		}
		mc_bzero(val, sizeof(val));
		if (a->fmt != 'f') {
			mc_put_word(val, rv, a->size <= 8 ? a->size : 8);
		} else if (a->size == 10) {
			/* st(0) stored and loaded back: the x87 stack is as it was */
			__asm__ __volatile__("fstpt %0\n\tfldt %0" : "=m"(st0));
			mc_put_word(val, st0, 10);
		} else {
			mc_put_word(val, &xmm0, 8);
		}
		if (a->fmt == 's' || a->fmt == 'S') {
			uintptr_t v;
			mc_put_word((uint8_t *)&v, val, sizeof(v));
			n += a->fmt == 's' ? mc_put_string(&rd, buf + n, v) :
					     mc_put_std_string(&rd, buf + n, v);
		} else {
			mc_put_word(buf + n, val, size);
			n += size;
		}
	}
	return mc_write(t, UFTRACE_EXIT, depth, ip, time, buf, n);
}
