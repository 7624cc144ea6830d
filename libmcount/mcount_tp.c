/*
 * mcount_tp: libmcount in the tfile format: a tracepoint hit at the entry of each traced
 * function, and no function events at all (nothing is hijacked).
 *
 * The format is chosen at start-up (mc_tp_start), not tested per event:
 *   mcount, __fentry__        their first 2 bytes (a nop) become a short jump to the 5-byte
 *                             jmp placed just before them, to mcount_tp / fentry_tp
 *                             (mcount_trampoline.S);
 *   __cyg_profile_func_enter  built with 16 nops before its entry and 2 at it
 *                             (patchable_function_entry): the 5 become a jmp to cyg_tp, the 2 a
 *                             short jump to them;
 *   __cyg_profile_func_exit   its 2 entry nops become `ret`.
 * Entry bytes are written with one 16-bit store each (a thread running through them sees the
 * old or the new instruction); the bytes before an entry are never executed until the entry
 * jumps to them. The fast paths are also told to decline (mc_fast_max_stack = 0) and the
 * complete hooks to do nothing, in case the text cannot be made writable. The entry points
 * are ours by their hidden names (mc_mcount_self, ...): in a dlopen'ed libmcount (attach) the
 * exported ones bind to libc's, and patching those (with the span of pages between libc and
 * us, which holds the program's thread stacks, made read-only again) killed the process.
 * Only the pages of each site are made writable. An attached session's detach puts the
 * bytes back (mc_tp_stop), for the next attach, in whatever format.
 *
 * What a hit holds (rec_tp.h): the registers as the trampoline found them, fixed up to the
 * function's first instruction:
 *   __fentry__  called by the first instruction: rip = the function, rsp + 8 = the entry rsp;
 *   mcount      called after `push %rbp; mov %rsp, %rbp` (gcc, clang): the entry rsp is the
 *               frame pointer + 8 and the caller's rbp is saved at the frame pointer (clang
 *               has also saved and reused some callee-saved registers by then);
 *   -finstrument-functions  called from the function's body once its prologue has run (and
 *               at -O0 its arguments are in their stack slots): a function's entry state is
 *               gone, so the hit is taken where the call returns to, with the registers and
 *               the stack pointer of that point, and the tracepoint is placed there, which
 *               keeps gdb's unwinding (bt) and tdump right.
 */
#pragma GCC target("general-regs-only")
#include "libmcount/internal.h"
#include "librecord/rec_tp.h"
#include "librecord/rec_util.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int mc_tp_mode;

/* trampolines (mcount_trampoline.S) and hooks (mcount_hooks.c), by their hidden names: in a
 * dlopen'ed libmcount (`flightrec record -p`) the exported mcount, __fentry__ and
 * __cyg_profile_func_* bind to libc's, which come first in the global scope */
void mc_mcount_self(void);
void mc_fentry_self(void);
void mcount_tp_site(void);
void fentry_tp_site(void);
void cyg_tp(void);
void mc_cyg_enter_self(void *fn, void *call_site);
void mc_cyg_exit_self(void *fn, void *call_site);

/* which entry points mc_tp_start patched, for mc_tp_stop to put back (only those: one left
 * alone may not hold the bytes the build put there) */
#define MC_TP_MCOUNT 1
#define MC_TP_FENTRY 2
#define MC_TP_CYG    4
static int mc_tp_patched;

/* code bytes at a function's address (through an integer: the compiler must not reason
 * about the bounds of a function object) */
static uint8_t *mc_code(void (*fn)(void))
{
	uintptr_t a = (uintptr_t)fn;
	__asm__("" : "+r"(a));
	return (uint8_t *)a;
}

void mc_tp_entry(struct rec_tp_regs *r, int kind);
void mc_tp_entry(struct rec_tp_regs *r, int kind)
{
	struct rec_tp *tp;

	if (kind == 2) { /* -finstrument-functions: rdi is the function */
		tp = rec_tp_find(r->gpr[5]);
		if (!tp)
			return;
		/* every hit of a function comes from the same call: the tracepoint is there */
		if (!tp->pc)
			__atomic_store_n(&tp->pc, r->rip, __ATOMIC_RELAXED);
		rec_tp_hit(tp, r);
		return;
	}
	tp = rec_tp_find(r->rip); /* where the hook returns to, inside the function */
	if (!tp)
		return;
	if (kind == 1) {
		uintptr_t fp = r->gpr[REC_TP_RBP];
		r->gpr[REC_TP_RBP] = *(const uint64_t *)fp;
		r->gpr[REC_TP_RSP] = fp + 8;
	}
	r->rip = tp->addr;
	rec_tp_hit(tp, r);
}

static void mc_store16(uint8_t *p, uint16_t v)
{
	__atomic_store_n((uint16_t *)p, v, __ATOMIC_RELEASE);
}

/* Make the pages of [p, p + len) writable (1) or executable again (0): each site's own pages,
 * never a span between two sites (which may hold other mappings: the program's stacks, when
 * a name bound elsewhere). */
static int mc_text_writable(uint8_t *p, size_t len, int writable)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)p & ~(page - 1), b = ((uintptr_t)p + len + page - 1) & ~(page - 1);

	return mprotect((void *)a, b - a, PROT_READ | PROT_EXEC | (writable ? PROT_WRITE : 0));
}

/* `jmp site` at entry (site within -128 bytes: a short jump) */
static int mc_short_jmp(uint8_t *entry, const uint8_t *site)
{
	long rel = (long)(site - (entry + 2));

	if (rel < -128 || rel > 127 || (entry[0] != 0x66 && entry[0] != 0x90))
		return -1;
	mc_store16(entry, (uint16_t)(0xeb | ((uint8_t)(int8_t)rel << 8)));
	return 0;
}

/* 0: every entry point patched; else the number of hook kinds left as they were */
static int mc_tp_patch(void)
{
	uint8_t *mc = mc_code(mc_mcount_self), *fe = mc_code(mc_fentry_self);
	uint8_t *mc_site = mc_code(mcount_tp_site), *fe_site = mc_code(fentry_tp_site);
	uint8_t *enter = mc_code((void (*)(void))mc_cyg_enter_self);
	uint8_t *exit_ = mc_code((void (*)(void))mc_cyg_exit_self);
	int32_t rel;
	int bad = 0;

	if (mc_text_writable(mc, 2, 1) < 0 || mc_text_writable(fe, 2, 1) < 0 ||
	    mc_text_writable(enter - 5, 7, 1) < 0 || mc_text_writable(exit_, 2, 1) < 0)
		bad = 3;
	if (!bad) {
		if (mc_short_jmp(mc, mc_site) == 0)
			mc_tp_patched |= MC_TP_MCOUNT;
		else
			bad++;
		if (mc_short_jmp(fe, fe_site) == 0)
			mc_tp_patched |= MC_TP_FENTRY;
		else
			bad++;
		/* __cyg_profile_func_enter: jmp cyg_tp in the 5 bytes before it, then the short
		 * jump; __cyg_profile_func_exit: ret */
		if (enter[-5] == 0x90 && enter[0] == 0x90 && enter[1] == 0x90 && exit_[0] == 0x90 &&
		    exit_[1] == 0x90) {
			rel = (int32_t)((intptr_t)mc_code(cyg_tp) - (intptr_t)enter);
			enter[-5] = 0xe9;
			memcpy(enter - 4, &rel, 4);
			bad += mc_short_jmp(enter, enter - 5) < 0;
			mc_store16(exit_, 0x90c3); /* ret; nop */
			mc_tp_patched |= MC_TP_CYG;
		} else {
			bad++;
		}
	}
	mc_text_writable(mc, 2, 0);
	mc_text_writable(fe, 2, 0);
	mc_text_writable(enter - 5, 7, 0);
	mc_text_writable(exit_, 2, 0);
	return bad;
}

void mc_tp_start(void)
{
	mc_fast_max_stack = 0; /* the uftrace fast paths decline, the complete hooks do nothing */
	if (mc_tp_patch())
		rec_warn("libmcount: cannot patch its own entry points for tracepoints: some "
			 "hooks record nothing");
}

/* An attached session's detach (mc_attach_unhook: the program's slots back, no thread inside
 * our code): the entry points as they were built, so that a later attach in another format
 * records through them, and one in this format can patch them again. Each entry first (one
 * 16-bit store), then the bytes it jumped to, which nothing reaches any more. */
void mc_tp_stop(void)
{
	uint8_t *mc = mc_code(mc_mcount_self), *fe = mc_code(mc_fentry_self);
	uint8_t *enter = mc_code((void (*)(void))mc_cyg_enter_self);
	uint8_t *exit_ = mc_code((void (*)(void))mc_cyg_exit_self);

	if (!mc_tp_patched)
		return;
	if (mc_text_writable(mc, 2, 1) < 0 || mc_text_writable(fe, 2, 1) < 0 ||
	    mc_text_writable(enter - 5, 7, 1) < 0 || mc_text_writable(exit_, 2, 1) < 0) {
		rec_warn("libmcount: cannot put its own entry points back: a later attach records "
			 "nothing through them");
	} else {
		if (mc_tp_patched & MC_TP_MCOUNT)
			mc_store16(mc, 0x9066); /* xchg %ax, %ax */
		if (mc_tp_patched & MC_TP_FENTRY)
			mc_store16(fe, 0x9066);
		if (mc_tp_patched & MC_TP_CYG) {
			mc_store16(enter, 0x9090);
			memset(enter - 5, 0x90, 5);
			mc_store16(exit_, 0x9090);
		}
		mc_tp_patched = 0;
	}
	mc_text_writable(mc, 2, 0);
	mc_text_writable(fe, 2, 0);
	mc_text_writable(enter - 5, 7, 0);
	mc_text_writable(exit_, 2, 0);
}
