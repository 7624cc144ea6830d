/*
 * rec_fast_asm: what the assembly fast paths of the front ends (libmcount's
 * mcount_trampoline.S, xray-rt's xray_trampoline.S) share: the offsets of the librecord
 * structures they touch (struct rec_thread, struct rec_chunk; checked against the C structs at
 * compile time in rec_thread.c, so moving a field breaks the build instead of the trampolines)
 * and the steps both take alike: saving the five scratch registers a fast entry uses, raising
 * the busy guard and committing the record. What is a front end's own (its fe_state, its
 * frames, its record format) stays in mcount_asm.h and xray_asm.h.
 * Included by assembly and by C (the offsets only).
 */
#ifndef REC_FAST_ASM_H
#define REC_FAST_ASM_H

/* struct rec_thread */
#define REC_T_POS 0
#define REC_T_END 8
#define REC_T_CHUNK 16
#define REC_T_EVENTS 24
#define REC_T_BUSY 32
#define REC_T_HOLD 33
#define REC_T_FE 384
/* struct rec_chunk */
#define REC_C_COMMITTED 16
#define REC_C_DATA 64

#ifdef __ASSEMBLER__
#include "librecord/rec_self_asm.h"
/* clang-format off */

/* the five registers a fast entry path uses, saved below its return address (PUSH5 leaves
 * 40(%rsp) = that return address); POP5 undoes it */
.macro PUSH5
	push %rax
	.cfi_adjust_cfa_offset 8
	push %rdx
	.cfi_adjust_cfa_offset 8
	push %rcx
	.cfi_adjust_cfa_offset 8
	push %rsi
	.cfi_adjust_cfa_offset 8
	push %rdi
	.cfi_adjust_cfa_offset 8
.endm

.macro POP5
	pop %rdi
	.cfi_adjust_cfa_offset -8
	pop %rsi
	.cfi_adjust_cfa_offset -8
	pop %rcx
	.cfi_adjust_cfa_offset -8
	pop %rdx
	.cfi_adjust_cfa_offset -8
	pop %rax
	.cfi_adjust_cfa_offset -8
.endm

/* %r11 = the thread's struct rec_thread, busy guard raised; jumps to \slow with the guard
 * untouched when there is no thread state yet (a sentinel) or the guard or the front end's
 * hold is up. The guard goes up BEFORE the caller reads any state (a signal handler that hooks
 * in between must find it consistent). Clobbers %rax, %r11. */
.macro GUARD_UP slow
	LOAD_SELF
	cmpq $2, %r11
	jbe \slow
	movzbl REC_T_BUSY(%r11), %eax		/* two byte loads: a 16-bit one would stall */
	orb REC_T_HOLD(%r11), %al
	jnz \slow
	movb $1, REC_T_BUSY(%r11)
.endm

/* the record written up to \pos: pos = \pos, one more event, committed = \pos - chunk data
 * (a plain store is a release on x86: the record's bytes are visible first), busy = 0
 * (rec_commit). Clobbers %rax, %rdx, \pos. */
.macro COMMIT pos
	movq \pos, REC_T_POS(%r11)
	incq REC_T_EVENTS(%r11)
	movq REC_T_CHUNK(%r11), %rax
	leaq REC_C_DATA(%rax), %rdx
	subq %rdx, \pos
	movq \pos, REC_C_COMMITTED(%rax)
	movb $0, REC_T_BUSY(%r11)
.endm

/* clang-format on */
#endif

#endif
