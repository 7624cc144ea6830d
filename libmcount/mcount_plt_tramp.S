/*
 * mcount_plt_tramp: the PLT trampolines (mcount_plt.c).
 *
 * mc_plt_hooker  GOT[2] of a hooked module: PLT0 jumps here with the module id (GOT[1]) at
 *                0(%rsp), the reloc index at 8(%rsp) and the caller's return address at
 *                16(%rsp). Every register that may carry an argument (rdi rsi rdx rcx r8 r9,
 *                rax = vector count for varargs, r10 = static chain) is saved around the C
 *                half, by the -pg trampolines' SAVE_ARGS, so -A reads a library call's
 *                arguments as a -pg function's; vector registers are not touched by it
 *                (-mgeneral-regs-only). Then
 *                either the two pushes are dropped and the target is jumped to, or (target not
 *                known yet) the real resolver is jumped to with them in place, as PLT0 would.
 * mc_plt_return  where a hijacked PLT call returns to: rax and rdx (the integer return
 *                values) are kept, the exit recorded, and the real return address jumped to
 *                (xmm0/xmm1 and st0 are not touched by the C half).
 * The stack is re-aligned to 16 bytes for the C calls whatever it was.
 */
#include "libmcount/mcount_save_asm.h"
	.text

	.globl mc_plt_hooker
	.hidden mc_plt_hooker
	.type mc_plt_hooker, @function
	.p2align 4
mc_plt_hooker:
	.cfi_startproc
	.cfi_adjust_cfa_offset 16		/* the two pushes of the PLT */
	push %rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbp, 0
	mov %rsp, %rbp
	.cfi_def_cfa_register %rbp
	sub $16, %rsp			/* 64(%rsp), below the saved rbp: *resolver */
	SAVE_ARGS			/* aligned; the -pg trampolines' layout (mcount_save_asm.h) */
	lea 24(%rbp), %rdi		/* ret_loc: above saved rbp, module id, index */
	mov 16(%rbp), %rsi		/* reloc index */
	mov 8(%rbp), %rdx		/* module id */
	lea 64(%rsp), %rcx		/* *resolver */
	mov %rsp, %r8			/* the saved registers (setjmp's jmp_buf, -A) */
	call mc_plt_entry
	mov %rax, %r11
	RESTORE_ARGS
	test %r11, %r11
	jz 1f
	leave
	.cfi_def_cfa %rsp, 24
	add $16, %rsp			/* the target: as if called by the caller itself */
	.cfi_adjust_cfa_offset -16
	jmp *%r11
1:
	.cfi_def_cfa %rbp, 16+16
	mov 64(%rsp), %r11		/* the real resolver, with the PLT's pushes */
	leave
	.cfi_def_cfa %rsp, 24
	jmp *%r11
	.cfi_endproc
	.size mc_plt_hooker, .-mc_plt_hooker

	.globl mc_plt_return
	.hidden mc_plt_return
	.type mc_plt_return, @function
	.p2align 4
mc_plt_return:
	/* arrived by the callee's `ret`: no unwind information, as mcount_return */
	push %rax
	push %rdx
	push %rbp
	mov %rsp, %rbp
	lea 24(%rsp), %rdi		/* sp at arrival */
	and $-16, %rsp
	call mc_plt_exit
	mov %rax, %r11			/* the real return address; r11 carries no return value */
	mov %rbp, %rsp
	pop %rbp
	pop %rdx
	pop %rax
	jmp *%r11
	.size mc_plt_return, .-mc_plt_return

	.section .note.GNU-stack,"",@progbits
