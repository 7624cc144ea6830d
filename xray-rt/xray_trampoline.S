/*
 * xray_trampoline: what patched XRay sleds call (x86_64). A patched sled is
 *   41 BA <id:4>   mov $id, %r10d
 *   E8/E9 <rel32>  call (entry, tail, log-args) or jmp (exit) to one of these, or to a stub
 *                  `jmp *abs(%rip)` within 2 GB of the text when the runtime is too far away
 *
 * xray_tramp_entry   function entry: arrived by call, the function's return-address slot
 *                    is just above our own return address
 * xray_tramp_tail    before a tail call: same stack shape as entry (the frame is torn down,
 *                    the slot is the one the function was entered with)
 * xray_tramp_args    entry of an xray_log_args function: also records %rdi
 * xray_tramp_exit    replaces the function's `ret`: arrived by jmp with %rsp on the slot;
 *                    our `ret` returns to the function's caller
 * xray_tramp_custom  __xray_CustomEvent: called from a custom-event sled (rdi = data,
 *                    rsi = size), which saves and restores rdi and rsi itself
 *
 * Registers: the C hooks never touch SSE/x87 (general-regs-only; their slow paths fxsave), so
 * only integer registers are saved: entry/tail/args/custom keep every register that may carry
 * an argument (rdi rsi rdx rcx r8 r9, rax = vector count of a varargs call) plus r10 and r11
 * (an indirect tail call may jump through r11); exit keeps the return registers rax and rdx.
 * The leaf fast path needs no stack alignment; before the complete hook the stack is
 * re-aligned to 16 bytes, whatever the caller's alignment was.
 */
	.text

/* the 9 registers entry-like trampolines keep; after SAVE9, 72(%rsp) is our return address and
 * 80(%rsp) the instrumented function's return-address slot; 8(%rsp) holds r10 (the id) */
.macro SAVE9
	push %rdi
	.cfi_adjust_cfa_offset 8
	push %rsi
	.cfi_adjust_cfa_offset 8
	push %rdx
	.cfi_adjust_cfa_offset 8
	push %rcx
	.cfi_adjust_cfa_offset 8
	push %r8
	.cfi_adjust_cfa_offset 8
	push %r9
	.cfi_adjust_cfa_offset 8
	push %rax
	.cfi_adjust_cfa_offset 8
	push %r10
	.cfi_adjust_cfa_offset 8
	push %r11
	.cfi_adjust_cfa_offset 8
.endm

.macro RESTORE9
	pop %r11
	.cfi_adjust_cfa_offset -8
	pop %r10
	.cfi_adjust_cfa_offset -8
	pop %rax
	.cfi_adjust_cfa_offset -8
	pop %r9
	.cfi_adjust_cfa_offset -8
	pop %r8
	.cfi_adjust_cfa_offset -8
	pop %rcx
	.cfi_adjust_cfa_offset -8
	pop %rdx
	.cfi_adjust_cfa_offset -8
	pop %rsi
	.cfi_adjust_cfa_offset -8
	pop %rdi
	.cfi_adjust_cfa_offset -8
.endm

/* call \fn with the stack aligned to 16 bytes (arguments already in place) */
.macro CALL_ALIGNED fn
	push %rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbp, 0
	mov %rsp, %rbp
	.cfi_def_cfa_register %rbp
	and $-16, %rsp
	call \fn
	mov %rbp, %rsp
	.cfi_def_cfa_register %rsp
	pop %rbp
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbp
.endm

	.globl xray_tramp_entry
	.hidden xray_tramp_entry
	.type xray_tramp_entry, @function
	.p2align 4
xray_tramp_entry:
	.cfi_startproc
	SAVE9
	mov %r10d, %edi
	lea 80(%rsp), %rsi
	call xray_entry_fast
	test %eax, %eax
	jnz 2f
1:
	RESTORE9
	ret
2:
	.cfi_adjust_cfa_offset 72
	mov 8(%rsp), %edi		/* the id, from the saved r10 */
	lea 80(%rsp), %rsi
	xor %edx, %edx			/* FDR_ENTER */
	xor %ecx, %ecx
	CALL_ALIGNED xray_entry_hook
	jmp 1b
	.cfi_endproc
	.size xray_tramp_entry, .-xray_tramp_entry

	.globl xray_tramp_args
	.hidden xray_tramp_args
	.type xray_tramp_args, @function
	.p2align 4
xray_tramp_args:
	.cfi_startproc
	SAVE9
	mov 8(%rsp), %edi
	lea 80(%rsp), %rsi
	mov $3, %edx			/* FDR_ENTER_ARGS */
	mov 64(%rsp), %rcx		/* the first argument, from the saved rdi */
	CALL_ALIGNED xray_entry_hook
	RESTORE9
	ret
	.cfi_endproc
	.size xray_tramp_args, .-xray_tramp_args

	.globl xray_tramp_tail
	.hidden xray_tramp_tail
	.type xray_tramp_tail, @function
	.p2align 4
xray_tramp_tail:
	.cfi_startproc
	SAVE9
	mov %r10d, %edi
	lea 80(%rsp), %rsi
	mov $2, %edx			/* FDR_TAIL_EXIT */
	call xray_exit_fast
	test %eax, %eax
	jnz 2f
1:
	RESTORE9
	ret
2:
	.cfi_adjust_cfa_offset 72
	mov 8(%rsp), %edi
	lea 80(%rsp), %rsi
	mov $2, %edx
	CALL_ALIGNED xray_exit_hook
	jmp 1b
	.cfi_endproc
	.size xray_tramp_tail, .-xray_tramp_tail

	.globl xray_tramp_exit
	.hidden xray_tramp_exit
	.type xray_tramp_exit, @function
	.p2align 4
xray_tramp_exit:
	.cfi_startproc
	push %rax
	.cfi_adjust_cfa_offset 8
	push %rdx
	.cfi_adjust_cfa_offset 8
	push %r10
	.cfi_adjust_cfa_offset 8
	mov %r10d, %edi
	lea 24(%rsp), %rsi		/* the slot our `ret` consumes */
	mov $1, %edx			/* FDR_EXIT */
	call xray_exit_fast
	test %eax, %eax
	jnz 2f
1:
	pop %r10
	.cfi_adjust_cfa_offset -8
	pop %rdx
	.cfi_adjust_cfa_offset -8
	pop %rax
	.cfi_adjust_cfa_offset -8
	ret
2:
	.cfi_adjust_cfa_offset 24
	mov 0(%rsp), %edi
	lea 24(%rsp), %rsi
	mov $1, %edx
	CALL_ALIGNED xray_exit_hook
	jmp 1b
	.cfi_endproc
	.size xray_tramp_exit, .-xray_tramp_exit

	.globl xray_tramp_custom
	.hidden xray_tramp_custom
	.type xray_tramp_custom, @function
	.globl __xray_CustomEvent
	.type __xray_CustomEvent, @function
	.p2align 4
xray_tramp_custom:
__xray_CustomEvent:
	.cfi_startproc
	SAVE9
	CALL_ALIGNED xray_custom_hook	/* rdi, rsi: still the sled's data and size */
	RESTORE9
	ret
	.cfi_endproc
	.size xray_tramp_custom, .-xray_tramp_custom
	.size __xray_CustomEvent, .-__xray_CustomEvent

/* typed-event sleds are never patched (llvm-xray 14 cannot load a map that has them), but a
 * program using __xray_typedevent must still link */
	.globl __xray_TypedEvent
	.type __xray_TypedEvent, @function
	.p2align 4
__xray_TypedEvent:
	.cfi_startproc
	ret
	.cfi_endproc
	.size __xray_TypedEvent, .-__xray_TypedEvent

	.section .note.GNU-stack,"",@progbits
