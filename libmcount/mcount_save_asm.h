/*
 * mcount_save_asm: the register save every libmcount entry trampoline shares (the slow entry
 * paths of mcount and __fentry__ in mcount_trampoline.S, the PLT hooker in
 * mcount_plt_tramp.S), so that the C side (mcount_args.c) reads the arguments of a -pg
 * function and of a library call from one layout: MC_SAVED_* of mcount_args.h, the address of
 * the block in %rsp after SAVE_ARGS. Included by assembly only: .macro definitions.
 *
 * After `push %rbp; mov %rsp, %rbp`: the stack aligned to 16 bytes, then every register that
 * may carry an argument (rdi rsi rdx rcx r8 r9, rax = vector count for varargs, r10 = static
 * chain) below it. Vector registers are not saved: the C halves never touch them
 * (-mgeneral-regs-only), and mcount_args reads xmm0-7 as they still are.
 */
#ifndef MCOUNT_SAVE_ASM_H
#define MCOUNT_SAVE_ASM_H

.macro SAVE_ARGS
	and $-16, %rsp
	sub $64, %rsp
	mov %rdi, 56(%rsp)
	mov %rsi, 48(%rsp)
	mov %rdx, 40(%rsp)
	mov %rcx, 32(%rsp)
	mov %r8, 24(%rsp)
	mov %r9, 16(%rsp)
	mov %rax, 8(%rsp)
	mov %r10, 0(%rsp)
.endm

/* the registers SAVE_ARGS saved; `leave` then undoes the frame */
.macro RESTORE_ARGS
	mov 0(%rsp), %r10
	mov 8(%rsp), %rax
	mov 16(%rsp), %r9
	mov 24(%rsp), %r8
	mov 32(%rsp), %rcx
	mov 40(%rsp), %rdx
	mov 48(%rsp), %rsi
	mov 56(%rsp), %rdi
.endm

#endif
