/*
 * mcount_dynamic_tramp: the entry of a function patched by prologue relocation
 * (mcount_dynamic.c, a module without patchable nops: uftrace's __dentry__).
 *
 * The function's first instructions (5 bytes or more) were replaced by `call THUNK`; the
 * thunk set %r11 to the relocated copy of those instructions (r11 is free at a function's
 * entry: the psABI's scratch register, used by no argument) and jumped here, so that:
 *   0(%rsp)  the patched entry + 5: the address recorded (inside the function, as -mfentry's)
 *   8(%rsp)  the function's return address (its slot is hijacked, as __fentry__ does)
 * We record the entry through mcount_entry (the complete hook, with the argument registers
 * saved as the -pg trampolines save them, for -A), then drop our return address and go to the
 * copy with the stack and every argument register as the function's entry had them; the copy
 * ends with a jump back after the replaced bytes.
 */
	.text
	.globl mc_dyn_entry
	.hidden mc_dyn_entry
	.type mc_dyn_entry, @function
	.p2align 4
mc_dyn_entry:
	.cfi_startproc
	push %r11			/* the copy: where this entry goes on */
	.cfi_adjust_cfa_offset 8
	push %rbp
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbp, -24
	mov %rsp, %rbp
	.cfi_def_cfa_register %rbp
	and $-16, %rsp
	sub $64, %rsp			/* mcount_trampoline.S's SAVE_ARGS layout */
	mov %rdi, 56(%rsp)
	mov %rsi, 48(%rsp)
	mov %rdx, 40(%rsp)
	mov %rcx, 32(%rsp)
	mov %r8, 24(%rsp)
	mov %r9, 16(%rsp)
	mov %rax, 8(%rsp)
	mov %r10, 0(%rsp)
	lea 24(%rbp), %rdi		/* parent_loc: saved rbp, the copy, entry + 5, then it */
	mov 16(%rbp), %rsi		/* child_ip: the patched entry + 5 */
	mov %rsp, %rdx			/* the saved registers (arguments, -A) */
	call mcount_entry
	mov 0(%rsp), %r10
	mov 8(%rsp), %rax
	mov 16(%rsp), %r9
	mov 24(%rsp), %r8
	mov 32(%rsp), %rcx
	mov 40(%rsp), %rdx
	mov 48(%rsp), %rsi
	mov 56(%rsp), %rdi
	leave
	.cfi_def_cfa %rsp, 16
	pop %r11
	.cfi_adjust_cfa_offset -8
	add $8, %rsp			/* entry + 5: not returned to */
	.cfi_adjust_cfa_offset -8
	jmp *%r11
	.cfi_endproc
	.size mc_dyn_entry, .-mc_dyn_entry

	.section .note.GNU-stack,"",@progbits
