/*
 * mcount_dynamic_tramp: the entry of a function patched by prologue relocation
 * (mcount_dynamic.c, a module without patchable nops: uftrace's __dentry__).
 *
 * The function's first instructions (5 bytes or more) were replaced by `call THUNK`; the
 * thunk pushed %r11 and set it to the relocated copy of those instructions, and jumped here:
 *   0(%rsp)  the caller's %r11
 *   8(%rsp)  the patched entry + 5: the address recorded (inside the function, as -mfentry's)
 *  16(%rsp)  the function's return address (its slot is hijacked, as __fentry__ does)
 * We record the entry through mcount_entry (the complete hook, with the argument registers
 * saved as the -pg trampolines save them, for -A), then go to the copy with the stack and
 * every register as the function's entry had them; the copy ends with a jump back after the
 * replaced bytes.
 *
 * Every caller-saved register is kept, at the entry and at the exit (mc_dyn_return, put in the
 * return slot instead of mcount_return): code built without instrumentation may be compiled
 * with -fipa-ra, where a caller keeps values in the registers its callee is known not to
 * touch (uftrace's dynamic_return does the same, for the same reason). Where the return is
 * hijacked again after an exception or a stack walk, it is mcount_return's (which keeps only
 * the return value registers).
 */
#include "libmcount/mcount_save_asm.h"

	.text
	.globl mc_dyn_entry
	.hidden mc_dyn_entry
	.type mc_dyn_entry, @function
	.p2align 4
mc_dyn_entry:
	.cfi_startproc
	.cfi_adjust_cfa_offset 8	/* the thunk's push; the return address: entry + 5 */
	push %rax			/* swap: r11 back, the copy on the stack (no xchg: */
	.cfi_adjust_cfa_offset 8	/* an atomic RMW) */
	mov 8(%rsp), %rax
	mov %r11, 8(%rsp)
	mov %rax, %r11
	pop %rax
	.cfi_adjust_cfa_offset -8
	push %rbp			/* 0 saved rbp, 8 the copy, 16 entry + 5, 24 the slot */
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbp, -24
	mov %rsp, %rbp
	.cfi_def_cfa_register %rbp
	push %r11
	SAVE_ARGS			/* the -pg trampolines' layout (mcount_save_asm.h) */
	lea 24(%rbp), %rdi		/* parent_loc */
	mov 16(%rbp), %rsi		/* child_ip: the patched entry + 5 */
	mov %rsp, %rdx			/* the saved registers (arguments, -A) */
	call mcount_entry
	lea mcount_return(%rip), %rax	/* hijacked: through the return that keeps them all */
	cmp %rax, 24(%rbp)
	jne 1f
	lea mc_dyn_return(%rip), %rax
	mov %rax, 24(%rbp)
1:
	RESTORE_ARGS
	mov -8(%rbp), %r11
	leave
	.cfi_def_cfa %rsp, 16
	mov %r11, -8(%rsp)		/* the red zone: signals leave it alone */
	pop %r11			/* the copy */
	.cfi_adjust_cfa_offset -8
	mov %r11, (%rsp)		/* over entry + 5 */
	mov -16(%rsp), %r11
	ret				/* to the copy, the stack as at the function's entry */
	.cfi_endproc
	.size mc_dyn_entry, .-mc_dyn_entry

/* A relocated function returns here (its slot was hijacked): every caller-saved register is
 * kept; mcount_exit gives the real return address. rax first, at the arrival sp - 8, where
 * mcount_exit's -R reads the return value (as mcount_return leaves it). */
	.globl mc_dyn_return
	.hidden mc_dyn_return
	.type mc_dyn_return, @function
	.p2align 4
mc_dyn_return:
	push %rax
	push %rdx
	push %rcx
	push %rsi
	push %rdi
	push %r8
	push %r9
	push %r10
	push %r11
	push %rbp
	mov %rsp, %rbp
	lea 80(%rbp), %rdi		/* sp at arrival */
	and $-16, %rsp
	call mcount_exit
	mov 72(%rbp), %rcx		/* the return value; its slot takes the real address */
	mov %rax, 72(%rbp)
	mov %rcx, %rax
	mov %rbp, %rsp
	pop %rbp
	pop %r11
	pop %r10
	pop %r9
	pop %r8
	pop %rdi
	pop %rsi
	pop %rcx
	pop %rdx
	ret
	.size mc_dyn_return, .-mc_dyn_return

	.section .note.GNU-stack,"",@progbits
