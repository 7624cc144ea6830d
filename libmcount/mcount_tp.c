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
 * complete hooks to do nothing, in case the text cannot be made writable.
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

/* trampolines (mcount_trampoline.S) and hooks (mcount_hooks.c) */
void mcount(void);
void __fentry__(void);
void mcount_tp_site(void);
void fentry_tp_site(void);
void cyg_tp(void);
void __cyg_profile_func_enter(void *fn, void *call_site);
void __cyg_profile_func_exit(void *fn, void *call_site);

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

/* Make [lo, hi) writable (1) or executable again (0). */
static int mc_text_writable(uintptr_t lo, uintptr_t hi, int writable)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t a = lo & ~((uintptr_t)page - 1),
		  b = (hi + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);

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
	uint8_t *mc = mc_code(mcount), *fe = mc_code(__fentry__);
	uint8_t *mc_site = mc_code(mcount_tp_site), *fe_site = mc_code(fentry_tp_site);
	uint8_t *enter = mc_code((void (*)(void))__cyg_profile_func_enter);
	uint8_t *exit_ = mc_code((void (*)(void))__cyg_profile_func_exit);
	uintptr_t lo = (uintptr_t)mc_site, hi = lo;
	uintptr_t pts[] = {(uintptr_t)mc, (uintptr_t)fe, (uintptr_t)fe_site, (uintptr_t)enter - 5,
			   (uintptr_t)exit_};
	int32_t rel;
	int bad = 0;

	for (size_t i = 0; i < sizeof(pts) / sizeof(pts[0]); i++) {
		if (pts[i] < lo)
			lo = pts[i];
		if (pts[i] + 2 > hi)
			hi = pts[i] + 2;
	}
	if (mc_text_writable(lo, hi, 1) < 0)
		return 3;
	bad += mc_short_jmp(mc, mc_site) < 0;
	bad += mc_short_jmp(fe, fe_site) < 0;
	/* __cyg_profile_func_enter: jmp cyg_tp in the 5 bytes before it, then the short jump;
	 * __cyg_profile_func_exit: ret */
	if (enter[-5] == 0x90 && enter[0] == 0x90 && enter[1] == 0x90 && exit_[0] == 0x90 &&
	    exit_[1] == 0x90) {
		rel = (int32_t)((intptr_t)mc_code(cyg_tp) - (intptr_t)enter);
		enter[-5] = 0xe9;
		memcpy(enter - 4, &rel, 4);
		bad += mc_short_jmp(enter, enter - 5) < 0;
		mc_store16(exit_, 0x90c3); /* ret; nop */
	} else {
		bad++;
	}
	mc_text_writable(lo, hi, 0);
	return bad;
}

void mc_tp_start(void)
{
	mc_fast_max_stack = 0; /* the uftrace fast paths decline, the complete hooks do nothing */
	if (mc_tp_patch())
		rec_warn("libmcount: cannot patch its own entry points for tracepoints: some "
			 "hooks record nothing");
}
