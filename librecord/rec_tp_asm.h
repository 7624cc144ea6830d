/*
 * rec_tp_asm: the register block a tracepoint trampoline captures (struct rec_tp_regs, checked
 * against these offsets in rec_tp.h) and the assembler macros that fill and unwind it. Shared
 * by the trampolines of every front end (libmcount, xray-rt), so all of them capture alike.
 *
 * TP_CAPTURE, first thing in a trampoline entered by a call from the function's first
 * instructions (the return address on top of the stack):
 *   pushes the flags and %rbp, points %rbp at the saved %rbp (8(%rbp): flags, 16(%rbp): the
 *   return address into the function), aligns %rsp to 16 below a REC_TP_REGS_SIZE block at
 *   (%rsp) and stores there every general register as it came (rbp: the caller's, from the
 *   stack), rsp = 24(%rbp)'s address (the stack pointer before the call to the trampoline, plus
 *   8: what it was at the function's first instruction when the trampoline was called from
 *   there), rip = the return address, the flags, fs_base (%fs:0, the thread pointer), mxcsr,
 *   the x87 control and status words and xmm0-15. Nothing but the flags changes before the
 *   flags are saved; nothing is stored in memory the program can see.
 * TP_RESTORE: the caller-saved registers back from the block (the C hook that ran in between
 *   may have clobbered them; it saved the callee-saved ones), the frame popped, flags back.
 */
#ifndef REC_TP_ASM_H
#define REC_TP_ASM_H

#define REC_TP_GPR 0
#define REC_TP_RIP 128
#define REC_TP_EFLAGS 136
#define REC_TP_FS_BASE 144
#define REC_TP_MXCSR 152
#define REC_TP_FCW 156
#define REC_TP_FSW 158
#define REC_TP_XMM 160
#define REC_TP_REGS_SIZE 416

#ifdef __ASSEMBLER__
/* clang-format off */
.macro TP_CAPTURE
	pushfq
	.cfi_adjust_cfa_offset 8
	push %rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbp, 0
	mov %rsp, %rbp
	.cfi_def_cfa_register %rbp
	sub $REC_TP_REGS_SIZE, %rsp
	and $-16, %rsp
	mov %rax, 0(%rsp)
	mov %rbx, 8(%rsp)
	mov %rcx, 16(%rsp)
	mov %rdx, 24(%rsp)
	mov %rsi, 32(%rsp)
	mov %rdi, 40(%rsp)
	mov 0(%rbp), %rax
	mov %rax, 48(%rsp)
	lea 24(%rbp), %rax
	mov %rax, 56(%rsp)
	mov %r8, 64(%rsp)
	mov %r9, 72(%rsp)
	mov %r10, 80(%rsp)
	mov %r11, 88(%rsp)
	mov %r12, 96(%rsp)
	mov %r13, 104(%rsp)
	mov %r14, 112(%rsp)
	mov %r15, 120(%rsp)
	mov 16(%rbp), %rax
	mov %rax, REC_TP_RIP(%rsp)
	mov 8(%rbp), %rax
	mov %rax, REC_TP_EFLAGS(%rsp)
	mov %fs:0, %rax
	mov %rax, REC_TP_FS_BASE(%rsp)
	stmxcsr REC_TP_MXCSR(%rsp)
	fnstcw REC_TP_FCW(%rsp)
	fnstsw REC_TP_FSW(%rsp)
	movdqu %xmm0, REC_TP_XMM+0(%rsp)
	movdqu %xmm1, REC_TP_XMM+16(%rsp)
	movdqu %xmm2, REC_TP_XMM+32(%rsp)
	movdqu %xmm3, REC_TP_XMM+48(%rsp)
	movdqu %xmm4, REC_TP_XMM+64(%rsp)
	movdqu %xmm5, REC_TP_XMM+80(%rsp)
	movdqu %xmm6, REC_TP_XMM+96(%rsp)
	movdqu %xmm7, REC_TP_XMM+112(%rsp)
	movdqu %xmm8, REC_TP_XMM+128(%rsp)
	movdqu %xmm9, REC_TP_XMM+144(%rsp)
	movdqu %xmm10, REC_TP_XMM+160(%rsp)
	movdqu %xmm11, REC_TP_XMM+176(%rsp)
	movdqu %xmm12, REC_TP_XMM+192(%rsp)
	movdqu %xmm13, REC_TP_XMM+208(%rsp)
	movdqu %xmm14, REC_TP_XMM+224(%rsp)
	movdqu %xmm15, REC_TP_XMM+240(%rsp)
.endm

.macro TP_RESTORE
	mov 0(%rsp), %rax
	mov 16(%rsp), %rcx
	mov 24(%rsp), %rdx
	mov 32(%rsp), %rsi
	mov 40(%rsp), %rdi
	mov 64(%rsp), %r8
	mov 72(%rsp), %r9
	mov 80(%rsp), %r10
	mov 88(%rsp), %r11
	mov %rbp, %rsp
	.cfi_def_cfa_register %rsp
	pop %rbp
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbp
	popfq
	.cfi_adjust_cfa_offset -8
.endm
/* clang-format on */
#endif

#endif
