/*
 * mcount_dynamic: dynamic patching (uftrace 0.13's -P/-U; its libmcount/dynamic.c and
 * arch/x86_64/mcount-dynamic.c for the rules, none of its code).
 *
 * When: once, from libmcount's constructor, after the session has started (mcount_main.c),
 * over the modules loaded then (the executable and its shared libraries), and for a library
 * dlopen'ed later, by libmcount's dlopen (mcount_wrap.c) once it is loaded.
 *
 * What: for every function the patterns select (mcount_dynsel.h) in a module they name, its
 * 5-byte patch site (mcount_dynsel.h: the entry nops of -fpatchable-function-entry or of
 * -pg -mfentry -mnop-mcount, or -pg -mnop-mcount's nop after the frame set-up) becomes
 * `call rel32` to a stub page mapped within reach of the module (a call from a non-PIE
 * executable cannot reach libmcount.so directly), whose `jmp *(%rip)` goes to __fentry__ or
 * mcount. The hooks see exactly what a -mfentry or -pg build's call gives them (the return
 * address is the site + 5, the stack as at the entry or after the frame set-up), so the
 * records and uftrace.data are the same as for those builds. A function whose site is not
 * there is left alone and, with FLIGHTREC_DEBUG set, named with the reason (uftrace says so
 * under --debug); a selection that patches nothing at all is one warning. Functions not
 * selected keep their nops: they cost nothing.
 *
 * Sites: from __patchable_function_entries (a function is patched only if a listed site is at
 * its entry or in the nops before it) and __mcount_loc (the -pg sites, which are inside the
 * function), read from memory, where the dynamic loader has relocated them; a module without
 * either (-Wl,--gc-sections drops __patchable_function_entries) is taken by the nops at its
 * functions' entries, as uftrace does.
 *
 * Safety: the bytes are written while no other thread of the program runs: either none exists
 * (checked in /proc/self/task), or the others are stopped for the writes (mcount_dynstop.c:
 * ptrace from a child process) and a site where one of them stopped inside is left out. No
 * thread can run a half written call, and the thread writing (libmcount's constructor, or
 * dlopen's caller) is inside none of the functions it patches. Threads that cannot be
 * stopped (a debugger traces the process): nothing of the module is patched, one warning.
 * Attached (`flightrec record -p`): the tracer holds every thread already and says where each
 * stopped (FLIGHTREC_ATTACH_IPS); the same rule applies, the moves are the tracer's to make
 * (mc_attach_to), and every write keeps the old bytes for mc_dyn_unpatch on detach, which
 * also moves the threads the old bytes would trap (inside an XRay sled, on a stub) and gives
 * the stub pages back where no thread is on one. Each
 * module's executable segments are made writable for the writes
 * (keeping exec: the module may be one whose code we call meanwhile) and get their own
 * protections back after. libmcount's own module is never patched.
 */
#include "libmcount/internal.h"
#include "libmcount/mcount_dynamic.h"
#include "libmcount/mcount_dynsel.h"
#include "libmcount/mcount_dynreloc.h"
#include "libmcount/mcount_dynstop.h"
#include "librecord/rec_elf.h"
#include "librecord/rec_symtab.h"
#include "librecord/rec_util.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* the hooks a patched site calls (mcount_trampoline.S): our own, by hidden names; the
 * exported __fentry__ and mcount bind to libc's (gprof's, which record nothing) when we are
 * dlopen'ed by `flightrec record -p` rather than preloaded */
void mc_fentry_self(void);
void mc_mcount_self(void);

static struct mc_dyn_spec mc_dyn; /* 32 compiled patterns: not on the stack */
static int mc_dyn_on;

int mc_dyn_wanted(void)
{
	const char *p = rec_getenv("FLIGHTREC_PATCH"), *u = rec_getenv("FLIGHTREC_UNPATCH");

	return (p && *p) || (u && *u);
}

int mc_dyn_check(char *why, size_t len)
{
	const char *p = rec_getenv("FLIGHTREC_PATCH"), *u = rec_getenv("FLIGHTREC_UNPATCH");
	const char *match = rec_getenv("FLIGHTREC_MATCH");
	char err[300];

	mc_dyn_on = 0;
	if (!mc_dyn_wanted())
		return 0;
	/* (FLIGHTREC_MATCH's value is checked by mc_filter_setup, which runs first) */
	if (mc_dyn_parse(&mc_dyn, p, u, match && !strcmp(match, "glob"), err, sizeof(err)) < 0) {
		rec_snprintf(why, len, "FLIGHTREC_PATCH/_UNPATCH: %s", err);
		return -1;
	}
	mc_dyn_on = mc_dyn.n > 0;
	return 0;
}

/* ---- the module's file: its sections ---- */

/* section NAME of the mapped file: its address (the file's) and size; 0, or -1 if none */
static int dyn_section(const struct rec_elf_map *m, const char *name, uint64_t *addr,
		       uint64_t *size)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)m->p;
	const Elf64_Shdr *sh, *strsh;

	if (m->size < sizeof(*eh) || !eh->e_shoff || eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    eh->e_shoff > m->size || (m->size - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum ||
	    eh->e_shstrndx >= eh->e_shnum)
		return -1;
	sh = (const Elf64_Shdr *)(m->p + eh->e_shoff);
	strsh = &sh[eh->e_shstrndx];
	if (strsh->sh_offset > m->size || strsh->sh_size > m->size - strsh->sh_offset)
		return -1;
	for (size_t i = 0; i < eh->e_shnum; i++) {
		const char *n = (const char *)m->p + strsh->sh_offset + sh[i].sh_name;

		if (sh[i].sh_name >= strsh->sh_size ||
		    strnlen(n, strsh->sh_size - sh[i].sh_name) == strsh->sh_size - sh[i].sh_name)
			continue;
		if (!strcmp(n, name) && (sh[i].sh_flags & SHF_ALLOC) &&
		    sh[i].sh_type != SHT_NOBITS) {
			*addr = sh[i].sh_addr;
			*size = sh[i].sh_size;
			return 0;
		}
	}
	return -1;
}

struct dyn_sites {
	uintptr_t *a; /* run-time addresses, sorted (rec_mem_grow'n) */
	size_t n;
	int present; /* the section exists (n may still be 0) */
};

static int dyn_addr_cmp(const void *x, const void *y)
{
	uintptr_t a = *(const uintptr_t *)x, b = *(const uintptr_t *)y;

	return a < b ? -1 : a > b;
}

/* The section's addresses, as the loader relocated them in memory. */
static void dyn_sites_load(const struct rec_elf_map *em, const struct rec_module *m,
			   const char *name, struct dyn_sites *s)
{
	uint64_t addr, size;
	const uintptr_t *mem;

	*s = (struct dyn_sites){0};
	if (dyn_section(em, name, &addr, &size) < 0)
		return;
	s->present = 1;
	if (size < sizeof(uintptr_t))
		return;
	s->a = rec_mem_grow(NULL, size);
	if (!s->a)
		return;
	mem = (const uintptr_t *)(m->bias + (uintptr_t)addr);
	s->n = size / sizeof(uintptr_t);
	memcpy(s->a, mem, s->n * sizeof(uintptr_t));
	rec_sort(s->a, s->n, sizeof(uintptr_t), dyn_addr_cmp);
}

/* the first site >= lo, NULL if none below hi */
static const uintptr_t *dyn_sites_in(const struct dyn_sites *s, uintptr_t lo, uintptr_t hi)
{
	size_t a = 0, b = s->n;

	while (a < b) {
		size_t mid = a + (b - a) / 2;
		if (s->a[mid] < lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a < s->n && s->a[a] < hi ? &s->a[a] : NULL;
}

/* ---- the code arenas near a module: at 0 `jmp *0(%rip)` to __fentry__, at 16 to mcount (the
 * nop sites' calls), then the thunks of relocated functions ---- */

#define DYN_REACH  ((uintptr_t)0x7fff0000) /* rel32, with room for the module's own size */
#define DYN_ARENA  ((size_t)64 << 10)
#define DYN_ARENAS 64
#define DYN_THUNK  128 /* bytes per relocated function */

static int dyn_reaches(uintptr_t p, uintptr_t lo, uintptr_t hi)
{
	uintptr_t far_lo = p > lo ? p - lo : lo - p;
	uintptr_t far_hi = p > hi ? p - hi : hi - p;

	return far_lo < DYN_REACH && far_hi < DYN_REACH;
}

/* LEN bytes mapped read-write within rel32 reach of [lo, hi), NULL if none */
static uint8_t *dyn_map_near(uintptr_t lo, uintptr_t hi, size_t len)
{
	const uintptr_t step = (uintptr_t)16 << 20;

	/* above the module first (the heap is often just above a non-PIE executable: its
	 * brk area is left alone by MAP_FIXED_NOREPLACE), then below it */
	for (int dir = 0; dir < 2; dir++) {
		for (uintptr_t i = 0; i < 120; i++) {
			uintptr_t hint = dir == 0 ? ((hi + 0xffff) & ~(uintptr_t)0xffff) + i * step
						  : (lo & ~(uintptr_t)0xffff) - (i + 1) * step;
			void *q;

			if ((dir == 1 && hint > lo) || !dyn_reaches(hint, lo, hi))
				break;
			q = mmap((void *)hint, len, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (q == MAP_FAILED)
				continue;
			if (!dyn_reaches((uintptr_t)q, lo, hi) ||
			    !dyn_reaches((uintptr_t)q + len, lo, hi)) {
				/* a kernel that ignores MAP_FIXED_NOREPLACE placed it elsewhere */
				munmap(q, len);
				continue;
			}
			return q;
		}
	}
	return NULL;
}

/* `jmp *0(%rip)` to TO at P: 14 bytes */
static void dyn_put_jmp(uint8_t *p, uintptr_t to)
{
	static const uint8_t jmp[6] = {0xff, 0x25, 0, 0, 0, 0};

	memcpy(p, jmp, sizeof(jmp));
	memcpy(p + 6, &to, sizeof(to));
}

struct dyn_arena {
	uintptr_t lo, hi; /* the module */
	uint8_t *base[DYN_ARENAS];
	size_t n, used; /* arenas mapped; bytes used of the last */
};

/* Attached: every arena mapped this attach, for mc_dyn_unpatch to give back (one that does
 * not fit here stays mapped, as when preloaded: the process ends with it) */
#define DYN_KEPT_MAX 256
static uint8_t *dyn_kept[DYN_KEPT_MAX];
static size_t dyn_nkept;

/* N bytes of the current arena (a new one when it is full), NULL if none can be mapped */
static uint8_t *dyn_arena_alloc(struct dyn_arena *a, size_t n)
{
	uint8_t *p;

	if (!a->n || a->used + n > DYN_ARENA) {
		if (a->n == DYN_ARENAS || !(p = dyn_map_near(a->lo, a->hi, DYN_ARENA)))
			return NULL;
		dyn_put_jmp(p, (uintptr_t)mc_fentry_self);
		dyn_put_jmp(p + 16, (uintptr_t)mc_mcount_self);
		a->base[a->n++] = p;
		a->used = 32;
		if (mc_attached && dyn_nkept < DYN_KEPT_MAX)
			dyn_kept[dyn_nkept++] = p;
	}
	p = a->base[a->n - 1] + a->used;
	a->used += n;
	return p;
}

/* where a nop site's call goes: the current arena's stub for the hook */
static uintptr_t dyn_arena_stub(struct dyn_arena *a, enum mc_dyn_target to)
{
	if (!a->n && !dyn_arena_alloc(a, 0))
		return 0;
	return (uintptr_t)a->base[a->n - 1] + (to == MC_DYN_MCOUNT ? 16 : 0);
}

/* the arenas become code: read and execute only */
static void dyn_arena_seal(struct dyn_arena *a)
{
	for (size_t i = 0; i < a->n; i++)
		(void)mprotect(a->base[i], DYN_ARENA, PROT_READ | PROT_EXEC);
}

/* The thunk of a relocated function at T (DYN_THUNK bytes): %r11 pushed and set to its
 * copy, on to mc_dyn_entry (mcount_dynamic_tramp.S), then the copy of the replaced
 * instructions and a jump back after them. 0, or -1 with the reason. */
void mc_dyn_entry(void);
static int dyn_thunk(uint8_t *t, uintptr_t fn, size_t size, uintptr_t entry, size_t *len,
		     const char **why)
{
	struct mc_reloc r;
	uintptr_t copy = (uintptr_t)t + 32;

	if (mc_reloc_prologue(fn, size, entry, copy, &r, why) < 0)
		return -1;
	if (32 + r.code_len + 14 > DYN_THUNK) {
		*why = "its first instructions are too long";
		return -1;
	}
	t[0] = 0x41; /* push %r11 (the caller's: -fipa-ra code may keep a value there) */
	t[1] = 0x53;
	t[2] = 0x49; /* movabs $copy, %r11 */
	t[3] = 0xbb;
	memcpy(t + 4, &copy, sizeof(copy));
	dyn_put_jmp(t + 12, (uintptr_t)mc_dyn_entry);
	memset(t + 26, 0xcc, 6);
	memcpy(t + 32, r.code, r.code_len);
	if (!r.ends)
		dyn_put_jmp(t + 32 + r.code_len, entry + r.len);
	*len = r.len;
	return 0;
}

/* ---- the writes ---- */

struct dyn_seg {
	uintptr_t lo, hi; /* page-aligned */
	int prot;	  /* what it gets back */
};

struct dyn_module_segs {
	uintptr_t bias, lo, hi;
	struct dyn_seg seg[8];
	size_t n;
};

static int dyn_segs_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct dyn_module_segs *ms = arg;

	(void)size;
	if (info->dlpi_addr != ms->bias)
		return 0;
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || hi <= ms->lo ||
		    lo >= ms->hi || ms->n >= sizeof(ms->seg) / sizeof(ms->seg[0]))
			continue;
		ms->seg[ms->n++] = (struct dyn_seg){
			.lo = lo & ~(uintptr_t)4095,
			.hi = (hi + 4095) & ~(uintptr_t)4095,
			.prot = ((ph->p_flags & PF_R) ? PROT_READ : 0) |
				((ph->p_flags & PF_W) ? PROT_WRITE : 0) | PROT_EXEC,
		};
	}
	return 0;
}

struct dyn_patch {
	uintptr_t site;
	uintptr_t to;
	size_t len; /* bytes replaced: the call, then 0x90 up to len (a relocated prologue) */
	int xray;   /* an XRay entry sled: its old bytes are `jmp` to site + len */
};

static int dyn_threads(void);

/*
 * Attached (`flightrec record -p`, mcount_attach.c): the tracer holds every thread of the
 * program stopped with ptrace while our constructor runs (so mc_stop_others, which would
 * seize them, cannot: EPERM), and tells where they stopped in FLIGHTREC_ATTACH_IPS (hex,
 * ':'-separated, in its order). dyn_spare_busy applies the same rule to those; where a thread
 * must resume instead is left in mc_attach_to[k] (0: where it is) for the tracer to set.
 * Every site written keeps its old bytes in dyn_undo for mc_dyn_unpatch (detach).
 */
__attribute__((visibility("default"))) uintptr_t mc_attach_to[MC_STOP_MAX];
static uintptr_t dyn_attach_ip[MC_STOP_MAX];
static size_t dyn_attach_n;

struct dyn_undo {
	uintptr_t site;
	size_t len;
	int skip; /* the old bytes only go to site + len (nops, an XRay sled's jmp) */
	uint8_t old[16];
	uint8_t ours[16]; /* what we wrote: a site that no longer holds it is not ours */
};
static struct dyn_undo *dyn_undo;
static size_t dyn_nundo, dyn_undo_cap;

/* the tracer's instruction pointers, once per attach (mc_dyn_patch) */
static void dyn_attach_ips(void)
{
	const char *v = rec_getenv("FLIGHTREC_ATTACH_IPS");

	dyn_attach_n = 0;
	memset(mc_attach_to, 0, sizeof(mc_attach_to));
	while (v && *v && dyn_attach_n < MC_STOP_MAX) {
		char *end;

		dyn_attach_ip[dyn_attach_n++] = (uintptr_t)strtoull(v, &end, 16);
		v = *end == ':' ? end + 1 : NULL;
	}
}

/* the old bytes of a site about to be written; 0, or -1 (out of memory: not to be written) */
static int dyn_undo_keep(uintptr_t site, size_t len, int skip)
{
	if (dyn_nundo == dyn_undo_cap) {
		size_t cap = dyn_undo_cap ? 2 * dyn_undo_cap : 256;
		struct dyn_undo *u = rec_mem_grow(dyn_undo, cap * sizeof(*u));

		if (!u)
			return -1;
		dyn_undo = u;
		dyn_undo_cap = cap;
	}
	dyn_undo[dyn_nundo].site = site;
	dyn_undo[dyn_nundo].len = len;
	dyn_undo[dyn_nundo].skip = skip;
	memcpy(dyn_undo[dyn_nundo].old, (const void *)site, len);
	dyn_nundo++;
	return 0;
}

/* the LEN bytes at C are one-byte nops */
static int dyn_all_nops(const volatile uint8_t *c, size_t len)
{
	size_t b = 0;

	while (b < len && c[b] == 0x90)
		b++;
	return b == len;
}

/* A stopped thread's instruction pointer strictly inside a site: resumed there, it would run
 * the middle of the new instruction. Inside one-byte nops (-fpatchable-function-entry) or an
 * XRay sled (whose first instruction jumps to its end) it is moved past them, which is what
 * running them would have done; inside anything else (a relocated prologue) the site is left
 * out (len 0). The number of sites left out. */
static size_t dyn_spare_busy(const struct rec_module *m, struct dyn_patch *pt, size_t n,
			     struct mc_stop *stop)
{
	size_t spared = 0;

	for (size_t k = 0; k < stop->n; k++) {
		uintptr_t ip = stop->ip[k];

		for (size_t i = 0; i < n; i++) {
			const uint8_t *c = (const uint8_t *)pt[i].site;

			if (!pt[i].len || ip <= pt[i].site || ip >= pt[i].site + pt[i].len)
				continue;
			if (pt[i].xray || dyn_all_nops(c, pt[i].len)) {
				stop->to[k] = pt[i].site + pt[i].len;
				rec_debug("libmcount: -P: a thread stopped inside the %s at %#lx "
					  "(%s) is moved past them",
					  pt[i].xray ? "XRay sled" : "nops",
					  (unsigned long)pt[i].site, m->path);
				continue;
			}
			rec_debug("libmcount: -P: a function at %#lx (%s) not patched: a thread is "
				  "stopped inside its patch site",
				  (unsigned long)pt[i].site, m->path);
			pt[i].len = 0;
			spared++;
		}
	}
	return spared;
}

/* Write every call; when other threads of the program run, they are stopped for the writes
 * (mcount_dynstop.c) and a site one of them stopped inside is left out. The number of calls
 * written, or -1 with errno (EBUSY: the threads could not be stopped, said in one warning;
 * or the module's code cannot be made writable) when nothing of the module was changed. */
static int dyn_write(const struct rec_module *m, struct dyn_patch *pt, size_t n)
{
	struct dyn_module_segs ms = {.bias = m->bias, .lo = m->lo, .hi = m->hi};
	struct mc_stop stop = {0};
	size_t done = 0, spared = 0;
	struct timespec t0, t1;
	int err = 0, threads;

	/* before any stop: dl_iterate_phdr takes the loader's lock, which a stopped thread may
	 * hold (an unwinder, a dlopen) */
	dl_iterate_phdr(dyn_segs_cb, &ms);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (mc_attached) {
		/* every thread of the program is the tracer's, stopped (see mc_attach_to) */
		stop.n = dyn_attach_n;
		stop.ip = dyn_attach_ip;
		stop.to = mc_attach_to;
		spared = dyn_spare_busy(m, pt, n, &stop);
		goto write;
	}
	threads = dyn_threads();
	if (threads != 1) {
		char why[160];

		if (threads < 0) {
			snprintf(why, sizeof(why), "/proc/self/task cannot be read");
		} else if (mc_stop_others(&stop, why, sizeof(why)) == 0) {
			spared = dyn_spare_busy(m, pt, n, &stop);
			clock_gettime(CLOCK_MONOTONIC, &t1);
			rec_debug("libmcount: -P: %s: %zu threads stopped in %ld us for the writes",
				  m->path, stop.n,
				  (long)((t1.tv_sec - t0.tv_sec) * 1000000 +
					 (t1.tv_nsec - t0.tv_nsec) / 1000));
			goto write;
		}
		rec_warn("libmcount: FLIGHTREC_PATCH: %s not patched: %d other threads run and %s",
			 m->path, threads - 1, why);
		errno = EBUSY;
		return -1;
	}
write:
	for (size_t s = 0; s < ms.n; s++) {
		struct dyn_seg *g = &ms.seg[s];
		size_t first = done;

		while (done < n && pt[done].site >= g->lo && pt[done].site + 5 <= g->hi)
			done++;
		if (done == first)
			continue;
		if (mprotect((void *)g->lo, g->hi - g->lo, PROT_READ | PROT_WRITE | PROT_EXEC) <
		    0) {
			err = errno;
			break;
		}
		for (size_t i = first; i < done; i++) {
			volatile uint8_t *c = (volatile uint8_t *)pt[i].site;
			int32_t rel = (int32_t)(pt[i].to - (pt[i].site + 5));

			if (!pt[i].len)
				continue; /* spared: a thread stopped inside */
			if (mc_attached &&
			    (pt[i].len > sizeof(dyn_undo->old) ||
			     dyn_undo_keep(pt[i].site, pt[i].len,
					   pt[i].xray || dyn_all_nops(c, pt[i].len)) < 0)) {
				pt[i].len = 0; /* could not be undone on detach */
				spared++;
				continue;
			}
			c[1] = (uint8_t)rel;
			c[2] = (uint8_t)(rel >> 8);
			c[3] = (uint8_t)(rel >> 16);
			c[4] = (uint8_t)(rel >> 24);
			for (size_t k = 5; k < pt[i].len; k++)
				c[k] = 0x90; /* never run: the call does not return here */
			c[0] = 0xe8;	     /* call rel32 */
			if (mc_attached)
				memcpy(dyn_undo[dyn_nundo - 1].ours, (const void *)c, pt[i].len);
		}
		__builtin___clear_cache((char *)g->lo, (char *)g->hi);
		(void)mprotect((void *)g->lo, g->hi - g->lo, g->prot);
	}
	if (!mc_attached)
		mc_stop_resume(&stop);
	if (!err && done < n)
		err = EFAULT; /* a site outside the module's executable segments (sorted: none) */
	errno = err;
	return err ? -1 : (int)(n - spared);
}

/* ---- one module ---- */

struct dyn_stats {
	size_t selected, patched;
};

static void dyn_skip(const struct rec_module *m, const char *name, const char *why)
{
	const char *base = strrchr(m->path, '/');

	rec_debug("libmcount: -P: %s (%s) not patched: %s", name, base ? base + 1 : m->path, why);
}

static int dyn_is_csu(const char *name)
{
	return !strcmp(name, "_start") || !strcmp(name, "__libc_csu_init") ||
	       !strcmp(name, "__libc_csu_fini");
}

/*
 * XRay's entry sleds (clang -fxray-instrument; uftrace's read_xray_map): the function entry
 * `jmp .+11; nopw 0x200(%rax,%rax,1)`, listed in xray_instr_map (32-byte entries: address,
 * function, kind (0: entry), always, version; version 2 addresses relative to their field).
 * Read from memory, where the loader relocated the older versions' absolute ones. The call to
 * __fentry__ over the sled's first 5 bytes records the entry and hijacks the return, as
 * everywhere else: the exit sleds are not needed.
 */
static void dyn_xray_load(const struct rec_elf_map *em, const struct rec_module *m,
			  struct dyn_sites *s)
{
	uint64_t addr, size;
	const uint8_t *mem;
	size_t n = 0;

	*s = (struct dyn_sites){0};
	if (dyn_section(em, "xray_instr_map", &addr, &size) < 0)
		return;
	s->present = 1;
	if (size < 32 || !(s->a = rec_mem_grow(NULL, size / 32 * sizeof(uintptr_t))))
		return;
	mem = (const uint8_t *)(m->bias + (uintptr_t)addr);
	for (size_t i = 0; i < size / 32; i++) {
		const uint8_t *e = mem + 32 * i;
		uint64_t a;

		memcpy(&a, e, 8);
		if (e[16] != 0) /* kind: entries only */
			continue;
		if (e[18] >= 2)
			a += (uintptr_t)e;
		s->a[n++] = (uintptr_t)a;
	}
	s->n = n;
	rec_sort(s->a, s->n, sizeof(uintptr_t), dyn_addr_cmp);
}

static int dyn_is_xray_sled(const uint8_t *p)
{
	static const uint8_t sled[11] = {0xeb, 0x09, 0x66, 0x0f, 0x1f, 0x84,
					 0x00, 0x00, 0x02, 0x00, 0x00};

	return !memcmp(p, sled, sizeof(sled));
}

/* Does the file import one of the hooks (a -pg or -finstrument-functions build)? */
static int dyn_imports_hooks(const struct rec_elf_map *em)
{
	static const char *const hooks[] = {"mcount", "_mcount", "__fentry__",
					    "__cyg_profile_func_enter"};
	const struct rec_elf_tab *tabs[2] = {&em->dynsym, &em->symtab};

	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < tabs[k]->nsyms; i++) {
			if (tabs[k]->syms[i].st_shndx != SHN_UNDEF)
				continue;
			for (size_t h = 0; h < sizeof(hooks) / sizeof(hooks[0]); h++)
				if (!strcmp(rec_elf_tab_name(tabs[k], i), hooks[h]))
					return 1;
		}
	return 0;
}

/* A module our own code calls while patching or recording: its prologues are not relocated. */
static int dyn_runtime_module(const char *base)
{
	static const char *const names[] = {"libc.so",	  "libc-",  "ld-linux",	   "ld-",
					    "libpthread", "libdl.", "libcapstone", "libelf",
					    "libz.",	  "libm.",  "libgcc_s"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strncmp(base, names[i], strlen(names[i])))
			return 1;
	return 0;
}

/*
 * How the module's functions are patched (uftrace's module types): where it has patch sites
 * (__patchable_function_entries, __mcount_loc, or nops at some function's entry) only those;
 * a -pg or -finstrument-functions build is hooked already (nothing); any other by relocating
 * the prologue (mcount_dynreloc.h).
 */
enum dyn_mode { DYN_NOPS, DYN_HOOKED, DYN_RELOC, DYN_XRAY };

static enum dyn_mode dyn_module_mode(const struct rec_module *m, const struct rec_elf_map *em,
				     const struct dyn_sites *pfe, const struct dyn_sites *mloc,
				     const struct dyn_sites *xray)
{
	size_t off;

	if (xray->present)
		return DYN_XRAY;
	if (pfe->present || mloc->present)
		return DYN_NOPS;
	for (size_t i = 0; i < m->nsyms; i++)
		if (m->syms[i].size >= 6 && mc_dyn_entry_site((const uint8_t *)m->syms[i].addr,
							      m->syms[i].size, &off) != MC_DYN_NONE)
			return DYN_NOPS;
	return dyn_imports_hooks(em) ? DYN_HOOKED : DYN_RELOC;
}

static void dyn_patch_module(const struct rec_module *m, const char *base,
			     struct mc_namer *namer, struct dyn_stats *st)
{
	struct rec_elf_map em;
	struct dyn_sites pfe, mloc, xray;
	struct dyn_arena arena = {.lo = m->lo, .hi = m->hi};
	struct dyn_patch *pt = NULL;
	size_t npt = 0, cap = 0, sel0 = st->selected;
	enum dyn_mode mode;

	if (rec_elf_map_open(m->path, &em) < 0) {
		rec_debug("libmcount: -P: %s: cannot read the file", m->path);
		return;
	}
	dyn_sites_load(&em, m, "__patchable_function_entries", &pfe);
	dyn_sites_load(&em, m, "__mcount_loc", &mloc);
	dyn_xray_load(&em, m, &xray);
	mode = dyn_module_mode(m, &em, &pfe, &mloc, &xray);
	rec_elf_map_close(&em);

	for (size_t i = 0; i < m->nsyms;) {
		const struct rec_sym *sym = &m->syms[i];
		uintptr_t fn = sym->addr, to_addr = 0;
		const char *name = rec_symtab_name(m, sym), *why = NULL;
		int sel = 0;
		size_t j;

		/* the aliases at one address: patched if one of them is selected */
		for (j = i; j < m->nsyms && m->syms[j].addr == fn; j++) {
			const char *n = mc_namer_name(namer, rec_symtab_name(m, &m->syms[j]));

			if (!sel && mc_dyn_selected(&mc_dyn, base, m->is_exe, n)) {
				sel = 1;
				name = rec_symtab_name(m, &m->syms[j]);
			}
		}
		i = j;
		if (!sel || dyn_is_csu(name))
			continue;
		st->selected++;

		enum mc_dyn_target to = MC_DYN_NONE;
		size_t size = sym->size, off = 0, len = 5;
		int is_xray = 0;
		const uintptr_t *s;

		if (size < 6) {
			/* uftrace's minimum: a call and something to return */
			why = size ? "smaller than 6 bytes" : "its symbol has no size";
		} else if (mc_fconf.min_size && size < mc_fconf.min_size) {
			why = "smaller than -Z (FLIGHTREC_MIN_SIZE)";
		} else if (mode == DYN_XRAY) {
			s = dyn_sites_in(&xray, fn, fn + size);
			if (!s)
				why = "no XRay entry sled (under -fxray-instruction-threshold?)";
			else if (!dyn_is_xray_sled((const uint8_t *)*s))
				why = "its XRay entry sled is not the expected 11 bytes (patched?)";
			else {
				off = *s - fn;
				len = 11;
				is_xray = 1;
				to = MC_DYN_FENTRY;
			}
		} else if (mode == DYN_HOOKED) {
			why = "its module calls the hooks already (-pg, -finstrument-functions)";
		} else if (mode == DYN_RELOC && dyn_runtime_module(base)) {
			why = "the recording runtime calls into its module (libc, the loader, "
			      "libcapstone): only patchable nops are patched there";
		} else if (mode == DYN_RELOC) {
			uint8_t *t = dyn_arena_alloc(&arena, DYN_THUNK);
			static const uint8_t endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};

			off = !memcmp((const void *)fn, endbr64, 4) ? 4 : 0;
			if (!t)
				why = "no page for its thunk within 2 GiB of the module";
			else if (dyn_thunk(t, fn, size, fn + off, &len, &why) == 0)
				to_addr = (uintptr_t)t;
			else
				arena.used -= DYN_THUNK; /* the last one: given back */
		} else if (mloc.present && (s = dyn_sites_in(&mloc, fn, fn + size)) != NULL) {
			off = *s - fn;
			to = mc_dyn_mcount_site((const uint8_t *)fn, size, off, &why);
		} else if ((to = mc_dyn_entry_site((const uint8_t *)fn, size, &off)) ==
			   MC_DYN_NONE) {
			why = "no nops at its entry (built without -fpatchable-function-entry=5 or "
			      "-mnop-mcount)";
		} else if (pfe.present &&
			   !dyn_sites_in(&pfe, fn >= 64 ? fn - 64 : 0, fn + off + 1)) {
			to = MC_DYN_NONE;
			why = "not listed in __patchable_function_entries";
		}
		if (to != MC_DYN_NONE) {
			to_addr = dyn_arena_stub(&arena, to);
			if (!to_addr)
				why = "no page for the call's stub within 2 GiB of the module";
		}
		if (!to_addr) {
			dyn_skip(m, name, why);
			continue;
		}
		if (npt == cap) {
			struct dyn_patch *g = rec_mem_grow(pt, (cap ? 2 * cap : 256) * sizeof(*pt));
			if (!g) {
				dyn_skip(m, name, "out of memory");
				continue;
			}
			pt = g;
			cap = cap ? 2 * cap : 256;
		}
		pt[npt++] = (struct dyn_patch){
			.site = fn + off, .to = to_addr, .len = len, .xray = is_xray};
	}
	dyn_arena_seal(&arena);
	if (npt) {
		int w = dyn_write(m, pt, npt);

		if (w < 0 && errno != EBUSY)
			rec_debug("libmcount: -P: %s: %zu functions not patched: its code cannot "
				  "be made writable: %s",
				  m->path, npt, strerror(errno));
		npt = w < 0 ? 0 : (size_t)w;
	}
	st->patched += npt;
	if (st->selected > sel0)
		rec_debug("libmcount: -P: %s: %zu of %zu selected functions patched%s", base, npt,
			  st->selected - sel0, mode == DYN_RELOC ? " (prologues relocated)" : "");
	if (pfe.a)
		rec_mem_free(pfe.a);
	if (mloc.a)
		rec_mem_free(mloc.a);
	if (xray.a)
		rec_mem_free(xray.a);
	if (pt)
		rec_mem_free(pt);
}

/* threads of this process that may run its code (not our flusher, keeper and helper, which
 * run only ours), -1 if /proc cannot tell */
static int dyn_threads(void)
{
	char buf[1024];
	int fd, n = 0;
	long got;

	fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while ((got = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long o = 0; o < got;) {
			struct dirent64 *d = (struct dirent64 *)(buf + o);
			n += d->d_name[0] != '.' &&
			     !rec_own_thread((pid_t)strtol(d->d_name, NULL, 10));
			o += d->d_reclen;
		}
	}
	close(fd);
	return got < 0 ? -1 : n;
}

/* one module, its C++ names matched as the filters match them (mcount_filter.h mc_namer) */
static void dyn_patch_one(const struct rec_module *m, const char *base, struct dyn_stats *st)
{
	struct mc_namer namer;

	mc_namer_init(&namer);
	dyn_patch_module(m, base, &namer, st);
	mc_namer_fini(&namer);
}

void mc_dyn_patch(void)
{
	struct mc_namer namer;
	struct dyn_stats st = {0};
	const struct rec_module *self;

	if (mc_attached)
		dyn_attach_ips(); /* mc_attach_to cleared even when nothing is patched */
	if (!mc_dyn_on)
		return;
	if (rec_symtab_load() < 0) {
		rec_warn("libmcount: FLIGHTREC_PATCH: cannot read the program's symbols: nothing "
			 "patched");
		return;
	}
	/* C++ names are matched as the filters match them (mcount_filter.h mc_namer) */
	mc_namer_init(&namer);
	self = rec_symtab_module((uintptr_t)mc_dyn_patch);
	for (size_t k = 0; k < rec_symtab_nmodules(); k++) {
		const struct rec_module *m = rec_symtab_module_at(k);
		const char *base = strrchr(m->path, '/');

		base = base ? base + 1 : m->path;
		if (m == self || !m->path[0] || !mc_dyn_names_module(&mc_dyn, base, m->is_exe))
			continue;
		dyn_patch_module(m, base, &namer, &st);
	}
	mc_namer_fini(&namer);
	if (!st.patched)
		rec_warn("libmcount: FLIGHTREC_PATCH: nothing patched: %s",
			 st.selected ? "no selected function can be patched (FLIGHTREC_DEBUG=1 "
				       "says why for each)"
				     : "no function matches the patterns");
}

struct dyn_range {
	uintptr_t bias, lo, hi;
};

static int dyn_range_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct dyn_range *r = arg;

	(void)size;
	if (info->dlpi_addr != r->bias)
		return 0;
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD)
			continue;
		if (!r->lo || lo < r->lo)
			r->lo = lo;
		if (lo + ph->p_memsz > r->hi)
			r->hi = lo + ph->p_memsz;
	}
	return 1;
}

/* A dlopen'ed module the symbol table does not hold: its symbols read for the patching only */
static void dyn_patch_unlisted(uintptr_t bias, const char *name, const char *base)
{
	static struct rec_module m; /* a 512-byte path: not on the stack */
	struct dyn_range r = {.bias = bias};
	struct dyn_stats st = {0};
	char path[512];

	dl_iterate_phdr(dyn_range_cb, &r);
	memset(&m, 0, sizeof(m));
	m.bias = bias;
	m.lo = r.lo;
	m.hi = r.hi;
	if (!r.hi || !realpath(name, path) || rec_symtab_read_module(&m, path) < 0) {
		rec_debug("libmcount: -P: %s (dlopen) not patched: its file cannot be read", base);
		return;
	}
	dyn_patch_one(&m, base, &st);
	rec_symtab_free_module(&m);
}

void mc_dyn_dlopen(uintptr_t bias, const char *name)
{
	struct dyn_stats st = {0};
	const char *want = strrchr(name, '/');

	want = want ? want + 1 : name;
	if (!mc_dyn_on || rec_symtab_load() < 0)
		return;
	/* newest first: a library dlclose'd may have left an entry at the same address */
	for (size_t k = rec_symtab_nmodules(); k-- > 0;) {
		const struct rec_module *m = rec_symtab_module_at(k);
		const char *base = strrchr(m->path, '/');

		base = base ? base + 1 : m->path;
		if (m->bias != bias || strcmp(base, want))
			continue;
		if (!mc_dyn_names_module(&mc_dyn, base, 0))
			return;
		dyn_patch_one(m, base, &st);
		return;
	}
	/* not in the table: loaded where a library closed before was, which the table keeps */
	if (mc_dyn_names_module(&mc_dyn, want, 0))
		dyn_patch_unlisted(bias, name, want);
}

/* TH's thread is on a stub (an arena's first 32 bytes: one `jmp *(%rip)` each): the call of
 * its site is undone (its return address popped), as if the site had been its old bytes */
static void dyn_off_stub(struct mc_attach_th *th)
{
	for (size_t a = 0; a < dyn_nkept; a++) {
		uintptr_t b = (uintptr_t)dyn_kept[a];

		if (th->ip < b || th->ip >= b + 32)
			continue;
		th->ip = *(const uint64_t *)(uintptr_t)th->sp;
		th->sp += 8;
		rec_debug("libmcount: -P: a thread on a stub at %#lx goes back to %#lx",
			  (unsigned long)b, (unsigned long)th->ip);
		return;
	}
}

/* The stub pages no thread is on are unmapped; the others stay (a thread in a relocated
 * prologue's copy goes on through it). Nothing is given back when a thread stays inside
 * libmcount: it may be on its way to a copy (mc_dyn_entry). */
static void dyn_arenas_free(const struct mc_attach_th *th, size_t n, size_t inside)
{
	size_t kept = 0;

	for (size_t a = 0; a < dyn_nkept; a++) {
		uintptr_t b = (uintptr_t)dyn_kept[a];
		int busy = inside > 0;

		for (size_t k = 0; k < n && !busy; k++)
			busy = th[k].ip >= b && th[k].ip < b + DYN_ARENA;
		if (busy || munmap(dyn_kept[a], DYN_ARENA) < 0) {
			rec_debug("libmcount: -P: the stub page at %#lx stays mapped: a thread may "
				  "be on it",
				  (unsigned long)b);
			dyn_kept[kept++] = dyn_kept[a];
		}
	}
	dyn_nkept = kept;
}

/* the site still holds the call we wrote (or the read is refused, a seccomp filter: as if it
 * did, the stubs it would call are about to go) */
static int dyn_still_ours(const struct dyn_undo *u)
{
	uint8_t now[sizeof(u->ours)];
	struct iovec l = {now, u->len}, r = {(void *)u->site, u->len};
	ssize_t got = process_vm_readv(getpid(), &l, 1, &r, 1, 0);

	if ((got < 0 && errno != EFAULT) ||
	    (got == (ssize_t)u->len && !memcmp(now, u->ours, u->len)))
		return 1;
	rec_debug("libmcount: -P: the site at %#lx is left as it is: its library was closed "
		  "since it was patched",
		  (unsigned long)u->site);
	return 0;
}

/*
 * Attached, on detach (mc_attach_unhook: every thread of the program stopped by the tracer,
 * none inside our code but those marked inside): every site mc_dyn_patch wrote gets its old
 * bytes back, newest first. A thread on a stub is sent back to its site's end first (the call
 * undone). A thread strictly inside a site can only be past the call, in the nops that follow
 * (an XRay sled's last 6 bytes): the old bytes there are the middle of the sled's 9-byte nop,
 * so it is moved to the site's end, where the sled's jmp would have taken it. A thread that
 * stays inside libmcount will return into an XRay sled's nops at some later time: those sites
 * keep the call (a warning), the rest are put back. A site that no longer holds what we
 * wrote (its library dlclose'd while attached: unmapped, or another one loaded there; read
 * with process_vm_readv, which fails where a load would fault) is left alone. Then the stub
 * pages no thread is on are unmapped (one page per 64 KiB arena, per module patched, per
 * attach otherwise).
 */
void mc_dyn_unpatch(struct mc_attach_th *th, size_t n)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t inside = 0, left = 0;

	for (size_t k = 0; k < n; k++) {
		if (th[k].inside)
			inside++;
		else
			dyn_off_stub(&th[k]);
	}
	while (dyn_nundo > 0) {
		struct dyn_undo *u = &dyn_undo[--dyn_nundo];
		uintptr_t lo = u->site & ~(uintptr_t)(page - 1);
		uintptr_t hi = (u->site + u->len + page - 1) & ~(uintptr_t)(page - 1);

		if (inside && u->len > 5) {
			left++; /* a hook's return to site + 5 must still find nops */
			continue;
		}
		if (!dyn_still_ours(u))
			continue;
		if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE | PROT_EXEC) < 0) {
			rec_warn("libmcount: -P: the site at %#lx cannot be put back: %s",
				 (unsigned long)u->site, strerror(errno));
			continue;
		}
		memcpy((void *)u->site, u->old, u->len);
		__builtin___clear_cache((char *)u->site, (char *)u->site + u->len);
		(void)mprotect((void *)lo, hi - lo, PROT_READ | PROT_EXEC);
		for (size_t k = 0; k < n && u->skip; k++) {
			if (th[k].ip <= u->site || th[k].ip >= u->site + u->len)
				continue;
			rec_debug("libmcount: -P: a thread at %#lx, inside the site at %#lx put "
				  "back, is moved past it",
				  (unsigned long)th[k].ip, (unsigned long)u->site);
			th[k].ip = u->site + u->len;
		}
	}
	if (left)
		rec_warn("libmcount: -P: %zu XRay sleds keep their call: a thread stays inside "
			 "the runtime",
			 left);
	dyn_arenas_free(th, n, inside);
}
