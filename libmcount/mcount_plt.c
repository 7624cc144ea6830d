/*
 * mcount_plt: library calls through the PLT, recorded as uftrace records them (on by default;
 * FLIGHTREC_NO_LIBCALL=1 or `flightrec record --no-libcall` turns it off). The program's PLT;
 * with FLIGHTREC_NEST_LIBCALL=1 (--nest-libcall) also those of the libraries loaded at
 * start-up, but the base ones (uftrace's list: libc, libm, libgcc_s, libpthread, libdl, the
 * loader, the vDSO, and us).
 *
 * How (uftrace 0.13's way, libmcount/plthook.c): for each hooked PLT (at most MC_PLT_MODS
 * modules, set up once from the constructor), GOT[2], the lazy resolver's slot that PLT0
 * jumps through, becomes mc_plt_hooker (mcount_plt_tramp.S), and every GOT[3+i] that is
 * resolved already (BIND_NOW, -z now, LD_BIND_NOW, or a call made before us) is saved in
 * resolved[i] and pointed back at its PLT stub (`push $i; jmp PLT0`), so that every call
 * through the PLT reaches the hooker with the module id (GOT[1]) and i pushed. mc_plt_entry
 * records the entry at the PLT entry's address (named by the 'P' lines of the .sym file,
 * uftrace_sym.c), pushes a MC_FRAME_PLT frame on the shadow stack and hijacks the return
 * address (mcount_hooks.c, the -pg hooks' own stack), and the hooker jumps to resolved[i], or,
 * not known yet, to the real resolver with both pushes in place. That resolver writes GOT[3+i]; at the return (mc_plt_exit) the value is saved and the
 * slot pointed at the stub again, so the next call comes through us.
 *
 * Invariants and bars:
 *  - the hooker and mc_plt_return keep every argument and return register: the C code here is
 *    compiled -mgeneral-regs-only (no SSE/x87 use), and the trampolines save the integer ones;
 *  - no lock, no atomic RMW, no malloc, no call into the program: resolved[] and the GOT slots
 *    are written with plain stores by whichever thread returns first; two threads racing on a
 *    first call write the same values, and a call that finds resolved[i] still 0 goes through
 *    the real resolver, which is always right;
 *  - a GOT in RELRO (-z now) is written only at setup, under a temporary mprotect: every slot
 *    is resolved then, so the return path never writes it;
 *  - calls that are not traced (uftrace's list: our own hooks, __libc_start_main, the C++
 *    unwinding entry points) jump through without a frame: their GOT slot keeps the resolved
 *    address after the first call;
 *  - vfork (uftrace's prepare_vfork/setup_vfork/restore_vfork): traced; the child returns
 *    first through the hijacked slot (glibc's vfork keeps the return address in a register
 *    across the call, so both processes return through mc_plt_return), and gets a thread
 *    state of its own there (rec_vfork_return, librecord/rec_thread.h): its `} vfork` and
 *    what it calls before exec are its records, under its tid, on a copy of the parent's
 *    frames; the parent's own return puts the parent's state back, untouched, and writes
 *    the parent's exit of vfork. A vfork by a vfork child is not traced;
 *  - setjmp (uftrace's way, which its replay expects): traced, so the jmp_buf keeps the
 *    hijacked return (mc_plt_return); the call is remembered per thread (mc_plt_jmps: the
 *    jmp_buf, slot, depth). A longjmp to that jmp_buf (mcount_wrap.c) ends the frames it skips
 *    with no exit record, and lands in mc_plt_return with no frame for the slot: the setjmp
 *    "returns again" (an exit record at its depth, mc_setjmp_return);
 *  - a call sent to the resolver that never returns (longjmp, pthread_exit) cannot re-point
 *    its slot at its return: the thread remembers it (mc_plt_pend_*) and re-points it at its
 *    next PLT entry or exit, a longjmp landing, or in the pthread_exit wrapper, so that the
 *    next call of that function is traced too (uftrace: update_pltgot at the longjmp's return,
 *    its own resolution of pthread_exit and exec* at entry);
 *  - LD_BIND_NOT (--no-pltbind): the resolver never writes the GOT; every call resolves again;
 *  - a module with no PLT relocations (-fno-plt, uftrace's t212) calls through GOT slots bound
 *    at load time: each slot of a function gets a stub of ours (`push $i; jmp head`, head
 *    `push id; jmp *mc_plt_hooker`, uftrace's noplt trampolines) for good, the call recorded
 *    at its reloc's address ('P' lines too), resolved[i] its target; a 0 slot (an undefined
 *    weak function the program tests for) is left 0.
 *  - attached (`flightrec record -p`, mcount_attach.c): set up by the constructor (or the next
 *    attach's mc_attach_again) while the tracer holds every thread; mc_plt_unhook, every
 *    thread stopped again, puts each slot back to what the process would hold without us:
 *    GOT[1] and GOT[2] as they were, a slot that leads to its stub gets the target known for
 *    it (resolved before the attach or by the loader meanwhile) or stays lazy, a -fno-plt
 *    slot its load-time target. The per-thread state (a pending re-point, the setjmp ring)
 *    carries the hooking's generation: a thread's stale one is ignored in the next attach.
 */
#define REC_HOOK_FPSAFE 1
#include "libmcount/internal.h"
#include "libmcount/mcount_plt.h"
#include "libmcount/mcount_dynamic.h"
#include "libmcount/mcount_args.h"
#include "libmcount/mcount_filter.h"
#include "librecord/rec_elf.h"
#include "librecord/rec_util.h"

#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MC_PLT_MODS 64

struct mc_plt_mod {
	uintptr_t id;	    /* GOT[1]: what PLT0 pushes (-fno-plt: our stubs' push) */
	uintptr_t *got;	    /* DT_PLTGOT */
	uintptr_t first;    /* the address reloc 0 is recorded at */
	uintptr_t end;	    /* ... and the end of reloc nrel - 1's */
	uintptr_t stub0;    /* GOT[3] before resolution; 0: -fno-plt (no slot ever re-pointed) */
	uint32_t step;	    /* reloc i is recorded at first + step i (rec_elf.h) */
	uintptr_t resolver; /* GOT[2] as the loader set it (0 with BIND_NOW) */
	uint32_t nrel;
	uintptr_t *resolved; /* nrel entries: the real target, 0 while unknown */
	uint8_t *flags;	     /* nrel entries: MC_PLT_* */
	/* attached only, for mc_plt_unhook */
	uintptr_t **slots;	    /* -fno-plt: nrel entries, each reloc's slot */
	uintptr_t relro, relro_end; /* the GOT's RELRO pages (0: none) */
	void *mem, *code;	    /* resolved/flags/slots; -fno-plt's stubs */
	size_t bytes, code_len;
	int id_ours; /* GOT[1] was 0 (BIND_NOW): ours to clear */
};
#define MC_PLT_SKIP   1 /* not traced */
#define MC_PLT_SETJMP 2 /* the setjmp family */
#define MC_PLT_VFORK 4	/* vfork (see the top) */

/* the thread's setjmp calls traced (a ring, newest replaces the oldest or its own jmp_buf) */
#define MC_PLT_JMPS 8
struct mc_plt_jmp {
	uintptr_t env, *slot, parent_ip, child_ip;
	uint32_t depth;
	uint32_t rec_depth; /* the filtering paths: its depth in the trace */
	uint32_t written;   /* ... and its entry is in the trace */
};
static __thread struct mc_plt_jmp mc_plt_jmps[MC_PLT_JMPS];
static __thread uint32_t mc_plt_njmps;
/* the jmp_buf of the longjmp this thread is making to a traced setjmp: where it lands is that
 * setjmp's, even when another traced setjmp of the same caller returned through the same
 * stack slot (two setjmp calls of one function: uftrace's t145_longjmp3) */
static __thread uintptr_t mc_plt_jumping;
/* the traced call this thread last sent to the resolver, its slot not re-pointed yet */
static __thread struct mc_plt_mod *mc_plt_pend_mod;
static __thread uint32_t mc_plt_pend_idx;
/* attached: the hooking these thread-local states belong to (mc_plt_gen when they were set) */
static __thread uint32_t mc_plt_tgen;
static uint32_t mc_plt_gen;
/* attached, after mc_plt_unhook: a call still on its way through us re-points nothing */
static int mc_plt_off;

static struct mc_plt_mod mc_plt_mods[MC_PLT_MODS];
static uint32_t mc_plt_nmods;
/* a resolver for a module whose own GOT[2] was 0 (BIND_NOW) */
static uintptr_t mc_plt_any_resolver;

void mc_plt_hooker(void);

/* the functions whose calls are not traced, or traced with care (see the top): MC_PLT_* */
static int mc_plt_special(const char *name)
{
	static const char *const names[] = {
		"mcount",
		"_mcount",
		"__fentry__",
		"__cyg_profile_func_enter",
		"__cyg_profile_func_exit",
		"_mcleanup",
		"__libc_start_main",
		"__cxa_throw",
		"__cxa_rethrow",
		"__cxa_begin_catch",
		"__cxa_end_catch",
		"__cxa_finalize",
		"__gxx_personality_v0",
		"_Unwind_Resume",
	};
	static const char *const setjmps[] = {"setjmp", "_setjmp", "sigsetjmp", "__sigsetjmp"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return MC_PLT_SKIP;
	for (size_t i = 0; i < sizeof(setjmps) / sizeof(setjmps[0]); i++)
		if (!strcmp(name, setjmps[i]))
			return MC_PLT_SETJMP;
	if (!strcmp(name, "vfork"))
		return MC_PLT_VFORK;
	return 0;
}

/* a setjmp(env) traced, its frame the thread's newest: remembered for a longjmp to env */
static void mc_plt_setjmp(uintptr_t env, uintptr_t *slot)
{
	struct rec_thread *t = rec_self;
	struct mc_thread *mt;
	struct mc_frame *f;
	struct mc_plt_jmp *j = NULL;

	if ((uintptr_t)t <= REC_THREAD_SENTINEL_MAX)
		return;
	mt = mc_thread_of(t);
	if (!mt->depth)
		return;
	f = &mt->rstack[mt->depth - 1];
	if (f->parent_loc != slot || f->kind != MC_FRAME_PLT)
		return; /* not hijacked (busy, too deep) */
	for (uint32_t i = 0; i < MC_PLT_JMPS && !j; i++)
		if (mc_plt_jmps[i].env == env)
			j = &mc_plt_jmps[i];
	if (!j)
		j = &mc_plt_jmps[mc_plt_njmps++ % MC_PLT_JMPS];
	*j = (struct mc_plt_jmp){.env = env,
				 .slot = slot,
				 .parent_ip = f->parent_ip,
				 .child_ip = f->child_ip,
				 .depth = mt->depth - 1};
	if (mc_fconf.active) {
		/* its entry was just written (or held by -t/-C: then no second exit either) */
		const struct mc_fframe *ff = mc_fframe_of(mt, mt->depth - 1);

		j->rec_depth = ff->rec_depth;
		j->written = (ff->flags & (MC_FF_WRITTEN | MC_FF_NORECORD)) == MC_FF_WRITTEN;
	}
}

/* a vfork call: its frame the thread's newest, its return hijacked (else neither process
 * comes back through us, and both go on with this state, as before) */
static void mc_plt_vfork(uintptr_t *slot)
{
	struct rec_thread *t = rec_self;
	struct mc_thread *mt;

	if ((uintptr_t)t <= REC_THREAD_SENTINEL_MAX)
		return;
	mt = mc_thread_of(t);
	if (mt->depth && mt->rstack[mt->depth - 1].parent_loc == slot &&
	    mt->rstack[mt->depth - 1].kind == MC_FRAME_PLT)
		rec_vfork_enter();
}

int mc_plt_setjmp_known(const void *env)
{
	if (mc_plt_tgen != mc_plt_gen)
		return 0;
	for (uint32_t i = 0; i < MC_PLT_JMPS; i++) {
		if (mc_plt_jmps[i].env == (uintptr_t)env && mc_plt_jmps[i].slot) {
			mc_plt_jumping = (uintptr_t)env;
			return 1;
		}
	}
	return 0;
}

static void mc_plt_new_gen(void);

/* A return at sp with no frame of ours on top for its slot, to a slot a traced setjmp
 * returned through: a longjmp landing. Its setjmp call, or NULL. Called only while the
 * thread remembers setjmp calls (mc_plt_njmps): the attach generation is checked here, off
 * the way of every other return. */
static __attribute__((noinline)) struct mc_plt_jmp *mc_plt_landing(uintptr_t *sp)
{
	struct rec_thread *t = rec_self;
	struct mc_thread *mt;
	struct mc_frame *f;

	if (unlikely(mc_plt_tgen != mc_plt_gen)) {
		mc_plt_new_gen(); /* an earlier attach's calls */
		return NULL;
	}
	if ((uintptr_t)t <= REC_THREAD_SENTINEL_MAX)
		return NULL;
	mt = mc_thread_of(t);
	if (mt->depth) {
		f = &mt->rstack[mt->depth - 1];
		if (f->parent_loc == sp - 1 && f->kind == MC_FRAME_PLT)
			return NULL; /* an ordinary return (the setjmp's first one among them) */
	}
	/* the one the jump named, else (a jump we did not see) any with that slot */
	for (uint32_t i = 0; i < MC_PLT_JMPS; i++) {
		if (mc_plt_jmps[i].slot == sp - 1 && mc_plt_jmps[i].env == mc_plt_jumping) {
			mc_plt_jumping = 0;
			return &mc_plt_jmps[i];
		}
	}
	for (uint32_t i = 0; i < MC_PLT_JMPS; i++)
		if (mc_plt_jmps[i].slot == sp - 1)
			return &mc_plt_jmps[i];
	return NULL;
}

/* GOT[3+k] of m leads to the hooker again, the resolver's result kept */
static void mc_plt_repoint(struct mc_plt_mod *m, uintptr_t k)
{
	uintptr_t stub = m->stub0 + 16 * k, now = m->got[3 + k];

	if (now != stub && !mc_plt_off) {
		m->resolved[k] = now;
		m->got[3 + k] = stub;
	}
}

/* attached: this thread's state from an earlier attach is forgotten (cold: once per thread
 * and attach) */
static void mc_plt_new_gen(void)
{
	mc_plt_pend_mod = NULL;
	mc_plt_njmps = 0;
	mc_plt_jumping = 0;
	memset(mc_plt_jmps, 0, sizeof(mc_plt_jmps));
	mc_plt_tgen = mc_plt_gen;
}

void mc_plt_fix_pending(void)
{
	struct mc_plt_mod *m = mc_plt_pend_mod;

	if (unlikely(mc_plt_tgen != mc_plt_gen)) {
		mc_plt_new_gen();
		return;
	}

	if (m) {
		mc_plt_pend_mod = NULL;
		mc_plt_repoint(m, mc_plt_pend_idx);
	}
}

static struct mc_plt_mod *mc_plt_by_id(uintptr_t id)
{
	uint32_t n = __atomic_load_n(&mc_plt_nmods, __ATOMIC_ACQUIRE);

	for (uint32_t i = 0; i < n; i++)
		if (mc_plt_mods[i].id == id)
			return &mc_plt_mods[i];
	return NULL;
}

/* mc_plt_entry of a setjmp or vfork call (flags) */
static __attribute__((noinline)) uintptr_t
mc_plt_entry_special(uintptr_t *ret_loc, struct mc_plt_mod *m, uintptr_t idx, uint8_t flags,
		     const uintptr_t *regs, uintptr_t target)
{
	int saved;

	/* a vfork by a vfork child: not traced (see the top) */
	if ((flags & MC_PLT_VFORK) && rec_vfork_pid)
		return target;
	/* the setjmp ring is written below: an earlier attach's is forgotten first */
	if (unlikely(mc_plt_tgen != mc_plt_gen))
		mc_plt_new_gen();
	saved = errno;
	mc_hijack_entry(ret_loc, m->first + m->step * idx, MC_FRAME_PLT, regs);
	if (flags & MC_PLT_SETJMP)
		mc_plt_setjmp(regs[MC_SAVED_RDI], ret_loc);
	else
		mc_plt_vfork(ret_loc);
	errno = saved;
	return target;
}

/*
 * The hooker's C half: ret_loc is the caller's return-address slot, idx the reloc index, id
 * the module's GOT[1], regs the argument registers as SAVE_ARGS saved them (the -pg
 * trampolines' layout: -A reads them, and the stack arguments above ret_loc, as a -pg
 * function's). Returns where to jump with the two pushes dropped, or 0: jump to *resolver
 * with them in place (the real resolver).
 */
uintptr_t mc_plt_entry(uintptr_t *ret_loc, uintptr_t idx, uintptr_t id, uintptr_t *resolver,
		       const uintptr_t *regs)
{
	struct mc_plt_mod *m = mc_plt_by_id(id);
	uintptr_t target;
	uint8_t flags;
	int saved;

	*resolver = m && m->resolver ? m->resolver : mc_plt_any_resolver;
	if (unlikely(!m || idx >= m->nrel))
		return 0;
	/* the thread's state of an earlier attach (mc_plt_tgen) is checked where it is used:
	 * the pending re-point here (mc_plt_fix_pending), the setjmp ring in the special path
	 * and at a return that may be a landing; an ordinary call tests nothing more */
	if (unlikely(mc_plt_pend_mod))
		mc_plt_fix_pending();
	target = m->resolved[idx];
	flags = m->flags[idx];
	if (flags & MC_PLT_SKIP)
		return target;
	if (unlikely(!target)) {
		mc_plt_pend_mod = m;
		mc_plt_pend_idx = (uint32_t)idx;
	}
	/* the special ones (setjmp, vfork) apart: one test on the way of every other call */
	if (unlikely(flags & (MC_PLT_SETJMP | MC_PLT_VFORK)))
		return mc_plt_entry_special(ret_loc, m, idx, flags, regs, target);
	saved = errno;
	mc_hijack_entry(ret_loc, m->first + m->step * idx, MC_FRAME_PLT, regs);
	errno = saved;
	return target;
}

/* mc_plt_return's C half: sp as it arrived. Returns the real return address. */
uintptr_t mc_plt_exit(uintptr_t *sp)
{
	struct mc_plt_jmp *j;
	uintptr_t ip, ret;
	uint32_t n;
	int saved = errno;

	/* a vfork pending on this thread: which process returns, and with whose state */
	if (unlikely(rec_vfork_pid))
		rec_vfork_return();
	/* (the attach generation: mc_plt_landing, mc_plt_fix_pending) */
	j = unlikely(mc_plt_njmps) ? mc_plt_landing(sp) : NULL;
	if (unlikely(mc_plt_pend_mod))
		mc_plt_fix_pending();
	if (unlikely(j)) {
		ret = mc_setjmp_return(sp, j->depth, j->parent_ip, j->child_ip, j->rec_depth,
				       (int)j->written);
		errno = saved;
		return ret;
	}
	ret = mc_hijack_exit(sp, MC_FRAME_PLT, &ip);
	/* the resolver ran for this call: its result is kept, the slot leads to us again */
	n = __atomic_load_n(&mc_plt_nmods, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; ip && i < n; i++) {
		struct mc_plt_mod *m = &mc_plt_mods[i];

		if (ip < m->first || ip >= m->end)
			continue;
		if (m->stub0) /* -fno-plt: the slot still leads to our stub */
			mc_plt_repoint(m, (ip - m->first) / 16);
		break;
	}
	errno = saved;
	return ret;
}

/* the load bias and dynamic section of the module whose link map is lm */
static uintptr_t *mc_plt_pltgot(const ElfW(Dyn) * dyn)
{
	for (; dyn && dyn->d_tag != DT_NULL; dyn++)
		if (dyn->d_tag == DT_PLTGOT)
			return (uintptr_t *)dyn->d_un.d_ptr;
	return NULL;
}

/* the code of a -fno-plt module's stubs (uftrace 0.13's, arch/x86_64/mcount-noplt.c): at
 * MC_NOPLT_HEAD, `push id(%rip); jmp *hooker(%rip)` (the two words after it), PLT0's part;
 * then one 16-byte stub per reloc i, `push $i; jmp head`: the stack the hooker expects */
#define MC_NOPLT_HEAD 32
#define MC_NOPLT_STUB 16

static void mc_plt_noplt_code(uint8_t *code, uintptr_t id, size_t nrel)
{
	static const uint8_t head[16] = {0xff, 0x35, 0x0a, 0, 0, 0, 0xff, 0x25, 0x0c, 0, 0, 0,
					 0xcc, 0xcc, 0xcc, 0xcc};
	uintptr_t hooker = (uintptr_t)mc_plt_hooker;

	memcpy(code, head, sizeof(head));
	memcpy(code + 16, &id, sizeof(id));
	memcpy(code + 24, &hooker, sizeof(hooker));
	for (size_t i = 0; i < nrel; i++) {
		uint8_t *e = code + MC_NOPLT_HEAD + MC_NOPLT_STUB * i;
		uint32_t idx = (uint32_t)i;
		int32_t rel = (int32_t)(code - (e + 10));

		memset(e, 0xcc, MC_NOPLT_STUB);
		e[0] = 0x68;
		memcpy(e + 1, &idx, 4);
		e[5] = 0xe9;
		memcpy(e + 6, &rel, 4);
	}
}

/*
 * Hook the library calls of the module at bias `base` whose file is `path`, program headers
 * phdr[phnum] and dynamic section dyn: its PLT, or with none (-fno-plt) its GOT slots of
 * functions (rec_elf.h), each pointed at a stub of ours that reaches the hooker as its PLT
 * entry would (uftrace's way; the slots keep them: every callee is bound at load time). Slow
 * path (constructor, dlopen). 0, or -1 (nothing changed).
 */
static int mc_plt_hook(const char *path, uintptr_t base, const ElfW(Phdr) * phdr, size_t phnum,
		       const ElfW(Dyn) * dyn)
{
	struct rec_elf_map em;
	struct rec_elf_plt plt;
	struct mc_plt_mod *m;
	uintptr_t relro = 0, relro_end = 0, *got = mc_plt_pltgot(dyn);
	size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes, code_len = 0;
	uint8_t *code = NULL;
	void *mem;
	int ret = -1;

	if (mc_plt_nmods >= MC_PLT_MODS || rec_elf_map_open(path, &em) < 0)
		return -1;
	if (rec_elf_plt(&em, &plt) < 0 || (!plt.noplt && !got))
		goto out;
	bytes = plt.nrel * (sizeof(uintptr_t) + 1);
	if (mc_attached && plt.noplt)
		bytes += plt.nrel * sizeof(uintptr_t); /* the slots, for mc_plt_unhook */
	mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		goto out;
	m = &mc_plt_mods[mc_plt_nmods];
	*m = (struct mc_plt_mod){.got = got,
				 .first = base + plt.first,
				 .end = base + plt.first + plt.step * plt.nrel,
				 .step = plt.step,
				 .stub0 = plt.noplt ? 0 : base + plt.stub0,
				 .nrel = (uint32_t)plt.nrel,
				 .resolved = mem,
				 .flags = (uint8_t *)mem + plt.nrel * sizeof(uintptr_t),
				 .resolver = plt.noplt ? 0 : got[2],
				 .id = plt.noplt ? (uintptr_t)m : got[1],
				 .mem = mem,
				 .bytes = bytes};
	if (mc_attached && plt.noplt)
		m->slots = (uintptr_t **)((uint8_t *)mem + plt.nrel * (sizeof(uintptr_t) + 1));
	if (plt.noplt) {
		code_len = MC_NOPLT_HEAD + MC_NOPLT_STUB * plt.nrel;
		code = mmap(NULL, code_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			    0);
		if (code == MAP_FAILED)
			goto unmap;
		mc_plt_noplt_code(code, m->id, plt.nrel);
		if (mprotect(code, code_len, PROT_READ | PROT_EXEC) < 0)
			goto unmap;
	}
	for (size_t i = 0; i < phnum; i++) {
		if (phdr[i].p_type == PT_GNU_RELRO) {
			relro = (base + phdr[i].p_vaddr) & ~(page - 1);
			relro_end = base + phdr[i].p_vaddr + phdr[i].p_memsz;
		}
	}
	m->relro = relro;
	m->relro_end = relro_end;
	m->code = code;
	m->code_len = code_len;
	/* -z now: the GOT is read-only by now; writable while we set it */
	if (relro && mprotect((void *)relro, relro_end - relro, PROT_READ | PROT_WRITE) < 0)
		goto unmap;
	if (!m->id) {
		/* BIND_NOW leaves GOT[1] 0: an id of our own for the hooker to find us by */
		m->id = (uintptr_t)m;
		got[1] = m->id;
		m->id_ours = 1;
	}
	if (m->resolver && !mc_plt_any_resolver)
		mc_plt_any_resolver = m->resolver;
	for (size_t i = 0; i < plt.nrel; i++) {
		const char *name = rec_elf_plt_name(&em, &plt, i);
		uintptr_t stub = m->stub0 + 16 * i;

		m->flags[i] = (uint8_t)(*name ? mc_plt_special(name) : MC_PLT_SKIP);
		if (plt.noplt) {
			uintptr_t *slot = (uintptr_t *)(base + plt.rela[i].r_offset);

			if (m->slots)
				m->slots[i] = slot;
			/* bound at load time; 0 (an undefined weak function the program tests
			 * for) stays 0. Pointed at our stub once published, below */
			m->resolved[i] = m->flags[i] & MC_PLT_SKIP ? 0 : *slot;
			if (!m->resolved[i])
				m->flags[i] |= MC_PLT_SKIP;
			continue;
		}
		if (m->flags[i] & MC_PLT_SKIP) {
			/* not ours (an IRELATIVE slot) or not traced: the slot as it is */
			if (got[3 + i] != stub)
				m->resolved[i] = got[3 + i];
			continue;
		}
		if (got[3 + i] != stub) {
			m->resolved[i] = got[3 + i];
			got[3 + i] = stub;
		}
	}
	/* published before any call can reach the hooker through it */
	__atomic_store_n(&mc_plt_nmods, mc_plt_nmods + 1, __ATOMIC_RELEASE);
	if (plt.noplt) {
		for (size_t i = 0; i < plt.nrel; i++)
			if (!(m->flags[i] & MC_PLT_SKIP))
				*(uintptr_t *)(base + plt.rela[i].r_offset) =
					(uintptr_t)(code + MC_NOPLT_HEAD + MC_NOPLT_STUB * i);
	} else {
		got[2] = (uintptr_t)mc_plt_hooker;
	}
	if (relro)
		mprotect((void *)relro, relro_end - relro, PROT_READ);
	ret = 0;
	goto out;
unmap:
	if (code && code != MAP_FAILED)
		munmap(code, code_len);
	munmap(mem, bytes);
out:
	rec_elf_map_close(&em);
	return ret;
}

/* a variable set to anything but "" or "0" */
static int mc_plt_env(const char *name)
{
	const char *v = rec_getenv(name);

	return v && *v && strcmp(v, "0");
}

/* the libraries --nest-libcall leaves alone (uftrace's list: its own runtime and the base
 * system libraries), by the start of their file name; compared by hand, not with fnmatch,
 * which may call the program's malloc */
static int mc_plt_base_lib(const char *path)
{
	static const char *const libs[] = {"libmcount",	     "libc.so.",      "libc-2.",
					   "libm.so.",	     "libm-2.",	      "libgcc_s.so.",
					   "libpthread.so.", "libpthread-2.", "linux-vdso.so.",
					   "linux-gate.so.", "ld-linux",      "libdl.so.",
					   "libdl-2."};
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++)
		if (!strncmp(base, libs[i], strlen(libs[i])))
			return 1;
	return 0;
}

/* the program (the first object), and with --nest-libcall (arg) every library loaded now
 * but the base ones; a module's dynamic section is found through its phdrs */
static int mc_plt_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	int *first = arg, exe = *first;
	const char *path = exe ? "/proc/self/exe" : info->dlpi_name;

	(void)size;
	*first = 0;
	if (!exe && (!path || !*path || mc_plt_base_lib(path)))
		return 0;
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
			const ElfW(Dyn) *dyn =
				(const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
			if (mc_plt_hook(path, info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum,
					dyn) < 0)
				rec_debug("libmcount: the PLT of %s is not hooked", path);
			break;
		}
	}
	return exe && !mc_plt_env("FLIGHTREC_NEST_LIBCALL");
}

void mc_plt_setup(void)
{
	int first = 1;

	if (mc_plt_env("FLIGHTREC_NO_LIBCALL"))
		return;
	mc_plt_off = 0;
	dl_iterate_phdr(mc_plt_module, &first);
}

/* one module's slots back (see the top); RELRO pages writable meanwhile */
static void mc_plt_unhook_mod(struct mc_plt_mod *m)
{
	if (m->relro &&
	    mprotect((void *)m->relro, m->relro_end - m->relro, PROT_READ | PROT_WRITE) < 0) {
		rec_warn("libmcount: the PLT slots of a module cannot be put back: %s",
			 strerror(errno));
		return;
	}
	for (uint32_t i = 0; i < m->nrel; i++) {
		if (m->flags[i] & MC_PLT_SKIP)
			continue; /* never changed */
		if (!m->stub0) {
			if (m->slots)
				*m->slots[i] = m->resolved[i];
		} else if (m->got[3 + i] == m->stub0 + 16 * i && m->resolved[i]) {
			m->got[3 + i] = m->resolved[i];
		}
	}
	if (m->stub0) {
		m->got[2] = m->resolver;
		if (m->id_ours)
			m->got[1] = 0;
	}
	if (m->relro)
		mprotect((void *)m->relro, m->relro_end - m->relro, PROT_READ);
}

void mc_plt_unhook(const struct mc_attach_th *th, size_t n, int inside)
{
	uint32_t nmods = mc_plt_nmods;

	mc_plt_off = 1;
	for (uint32_t k = 0; k < nmods; k++)
		mc_plt_unhook_mod(&mc_plt_mods[k]);
	if (inside)
		return; /* a thread on its way through the hooker still reads the tables */
	for (uint32_t k = 0; k < nmods; k++) {
		struct mc_plt_mod *m = &mc_plt_mods[k];
		int busy = 0;

		for (size_t i = 0; i < n && m->code; i++)
			busy |= th[i].ip >= (uintptr_t)m->code &&
				th[i].ip < (uintptr_t)m->code + m->code_len;
		if (m->code && !busy)
			munmap(m->code, m->code_len);
		munmap(m->mem, m->bytes);
	}
	__atomic_store_n(&mc_plt_nmods, 0, __ATOMIC_RELEASE);
	mc_plt_any_resolver = 0;
	mc_plt_gen++;
}
