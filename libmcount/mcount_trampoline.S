/*
 * mcount_trampoline: x86_64 entry points the compilers call, and the return trampoline.
 *
 * mcount / _mcount  gcc/clang -pg: called after the prologue (push %rbp; mov %rsp,%rbp), so
 *                   the child's return-address slot is at 8(child's %rbp).
 * __fentry__        -pg -mfentry: called as the first instruction; the slot is just above
 *                   our own return address.
 * mcount_return     where a hijacked function returns to: it records the exit and jumps to
 *                   the real return address.
 *
 * Each entry point first calls the leaf fast path (mcount_fast.c), then the complete hook
 * (mcount_hooks.c) only when the fast path declines.
 *
 * Registers: the C hooks never touch SSE/x87 (-mgeneral-regs-only, and their slow paths
 * fxsave), so only the integer registers that may carry arguments (rdi rsi rdx rcx r8 r9,
 * rax = vector count for varargs, r10 = static chain) or return values (rax rdx) are saved.
 * The stack is re-aligned to 16 bytes whatever the caller's alignment was.
 */
	.text

	.globl mcount
	.type mcount, @function
	.globl _mcount
	.type _mcount, @function
mcount:
_mcount:
	.cfi_startproc
	push %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	mov %rsp, %rbp
	.cfi_def_cfa_register %rbp
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
	mov 0(%rbp), %rdi		/* the child's frame pointer */
	add $8, %rdi			/* parent_loc: its return-address slot */
	mov 8(%rbp), %rsi		/* child_ip: where mcount returns to */
	call mcount_entry_fast
	test %eax, %eax
	jz 1f
	mov 0(%rbp), %rdi
	add $8, %rdi
	mov 8(%rbp), %rsi
	call mcount_entry		/* everything the fast path does not handle */
1:
	mov 0(%rsp), %r10
	mov 8(%rsp), %rax
	mov 16(%rsp), %r9
	mov 24(%rsp), %r8
	mov 32(%rsp), %rcx
	mov 40(%rsp), %rdx
	mov 48(%rsp), %rsi
	mov 56(%rsp), %rdi
	leave
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size mcount, .-mcount
	.size _mcount, .-_mcount

	.globl __fentry__
	.type __fentry__, @function
__fentry__:
	.cfi_startproc
	push %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	mov %rsp, %rbp
	.cfi_def_cfa_register %rbp
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
	lea 16(%rbp), %rdi		/* parent_loc: saved rbp, our return, then the child's */
	mov 8(%rbp), %rsi		/* child_ip */
	call mcount_entry_fast
	test %eax, %eax
	jz 1f
	lea 16(%rbp), %rdi
	mov 8(%rbp), %rsi
	call mcount_entry		/* everything the fast path does not handle */
1:
	mov 0(%rsp), %r10
	mov 8(%rsp), %rax
	mov 16(%rsp), %r9
	mov 24(%rsp), %r8
	mov 32(%rsp), %rcx
	mov 40(%rsp), %rdx
	mov 48(%rsp), %rsi
	mov 56(%rsp), %rdi
	leave
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size __fentry__, .-__fentry__

	.globl mcount_return
	.hidden mcount_return
	.type mcount_return, @function
mcount_return:
	/*
	 * Arrived by the child's `ret`, with %rsp just above the consumed slot. We leave by an
	 * indirect jmp, not a ret: the return stack buffer then stays aligned with the real
	 * call stack, so only the child's own ret (to here) is mispredicted, not every return
	 * of the callers above it.
	 */
	push %rax
	push %rdx
	push %rbp
	mov %rsp, %rbp
	lea 24(%rsp), %rdi		/* sp at arrival */
	and $-16, %rsp
	call mcount_exit_fast
	test %rax, %rax
	jnz 1f
	lea 24(%rbp), %rdi
	call mcount_exit		/* everything the fast path does not handle */
1:
	mov %rax, %r11			/* real return address; r11 carries no return value */
	mov %rbp, %rsp
	pop %rbp
	pop %rdx
	pop %rax
	jmp *%r11
	.size mcount_return, .-mcount_return

	.section .note.GNU-stack,"",@progbits
