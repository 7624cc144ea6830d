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
 * The tfile format (tracepoints) uses other entry points, mcount_tp and fentry_tp: they
 * capture every register for a tracepoint hit (rec_tp_asm.h) and hijack nothing. It is chosen
 * once, at start-up: the 2-byte nop that starts mcount and __fentry__ becomes a short jump to
 * the 5-byte `jmp` placed just before each (mcount_tp.c patches it), so the default format
 * pays one nop and no test.
 *
 * Registers: the C hooks never touch SSE/x87 (-mgeneral-regs-only, and their slow paths
 * fxsave), so only the integer registers that may carry arguments (rdi rsi rdx rcx r8 r9,
 * rax = vector count for varargs, r10 = static chain) or return values (rax rdx) are saved.
 * The stack is re-aligned to 16 bytes whatever the caller's alignment was.
 */
#include "librecord/rec_tp_asm.h"
	.text

	.p2align 4
	.globl mcount_tp_site
	.hidden mcount_tp_site
mcount_tp_site:
	.byte 0xe9			/* jmp rel32, never shortened: the patch counts on 5 bytes */
	.long mcount_tp - (. + 4)
	.p2align 4			/* the entry stays aligned (the short jump reaches back) */
	.globl mcount
	.type mcount, @function
	.globl _mcount
	.type _mcount, @function
mcount:
_mcount:
	.cfi_startproc
	xchg %ax, %ax			/* patch site: `jmp mcount_tp_site` in the tfile format */
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

	.p2align 4
	.globl fentry_tp_site
	.hidden fentry_tp_site
fentry_tp_site:
	.byte 0xe9
	.long fentry_tp - (. + 4)
	.p2align 4
	.globl __fentry__
	.type __fentry__, @function
__fentry__:
	.cfi_startproc
	xchg %ax, %ax			/* patch site: `jmp fentry_tp_site` in the tfile format */
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

/*
 * Tracepoint entry points (the tfile format). mcount_tp: called after the function's
 * `push %rbp; mov %rsp, %rbp`, so mc_tp_entry takes the caller's rbp and the entry rsp from
 * the frame. fentry_tp: called by the function's first instruction (after endbr64), every
 * register still as it came. mc_tp_entry records a hit when the function is a tracepoint.
 */
	.globl mcount_tp
	.hidden mcount_tp
	.type mcount_tp, @function
	.p2align 4
mcount_tp:
	.cfi_startproc
	TP_CAPTURE
	mov %rsp, %rdi
	mov $1, %esi
	call mc_tp_entry
	TP_RESTORE
	ret
	.cfi_endproc
	.size mcount_tp, .-mcount_tp

	.globl fentry_tp
	.hidden fentry_tp
	.type fentry_tp, @function
	.p2align 4
fentry_tp:
	.cfi_startproc
	TP_CAPTURE
	mov %rsp, %rdi
	xor %esi, %esi
	call mc_tp_entry
	TP_RESTORE
	ret
	.cfi_endproc
	.size fentry_tp, .-fentry_tp

/* -finstrument-functions: __cyg_profile_func_enter's patched entry comes here (rdi = the
 * function, the return address = where it called from) */
	.globl cyg_tp
	.hidden cyg_tp
	.type cyg_tp, @function
	.p2align 4
cyg_tp:
	.cfi_startproc
	TP_CAPTURE
	mov %rsp, %rdi
	mov $2, %esi
	call mc_tp_entry
	TP_RESTORE
	ret
	.cfi_endproc
	.size cyg_tp, .-cyg_tp

	.section .note.GNU-stack,"",@progbits
