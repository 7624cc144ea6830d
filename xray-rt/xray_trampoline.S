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
 * The fast paths need no stack alignment; before a complete hook the stack is re-aligned to
 * 16 bytes, whatever the caller's alignment was.
 *
 * Fast paths: entry and exit, the two events of almost every call, are recorded right here
 * (the same steps, in the same order, as the C leaves in xray_fast.c, which tail exits use):
 * the thread's state through the initial-exec TLS pointer, the busy guard, rdtsc, the CPU from
 * rseq, the 8-byte function record (after a NewCPUId or TSCWrap when needed), the shadow-stack
 * push or pop, the committed length. They use a handful of registers (entry: rax rdx rcx rsi
 * rdi, saved; r10 and r11, which carry no argument at a function's entry; exit: rax rdx saved,
 * the rest dead at a return) and no call. Anything unusual jumps, with the registers as they
 * came, to the complete path. Measured on the 2-vCPU VM: the C leaf behind a 9-register save
 * cost ~4 ns more per call than this, about 15 % of the whole (doc/design.md).
 * Structure offsets: xray_asm.h, checked against the C structs at compile time.
 *
 * The program's own handlers (compiler-rt's API, xray_api.c): each trampoline first tests its
 * handler slot (entry, exit, tail: xr_api_fn; log-args: xr_api_arg1, then xr_api_fn; custom:
 * xr_api_custom), one load and a branch that is never taken while the program set none.
 * When one is set, the API path calls it the way compiler-rt's trampolines do: arguments
 * (fid, XRayEntryType[, the function's first argument]) or (data, size); the stack aligned to
 * 16 bytes; the integer argument registers, rax, r10, r11 and xmm0-7 kept (the handler is
 * ordinary code that may use SSE); the flags too around a custom event.
 */
#include "xray-rt/xray_asm.h"
#include "librecord/rec_tp_asm.h"
#include "librecord/rec_fast_asm.h"
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

/* %rdx = rdtsc; %eax = the CPU number + XR_CPU_BIAS (xr_thread.cpu's encoding) */
.macro TSC_CPU
	rdtsc
	shlq $32, %rdx
	orq %rax, %rdx
	movq xr_cpu_off(%rip), %rax
	movl %fs:(%rax), %eax
	addl $XR_CPU_BIAS, %eax
.endm

/* at %rsi, a NewCPUId for CPU %eax - XR_CPU_BIAS at TSC %rdx (clobbers %rax, \tmp); %rsi += 16,
 * %rax = 0 (the delta of the record that follows) */
.macro PUT_NEW_CPU tmp
	movl %eax, XR_X_CPU(%r11)
	subl $XR_CPU_BIAS, %eax
	movzwl %ax, %eax
	shlq $8, %rax
	movq %rdx, \tmp
	shlq $24, \tmp
	orq \tmp, %rax
	orq $5, %rax
	movq %rax, (%rsi)
	movq %rdx, %rax
	shrq $40, %rax
	movq %rax, 8(%rsi)
	addq $16, %rsi
	xorl %eax, %eax
.endm

/* at %rsi, a TSCWrap at TSC %rdx (clobbers %rax); %rsi += 16, %rax = 0 */
.macro PUT_TSC_WRAP
	movq %rdx, %rax
	shlq $8, %rax
	orq $7, %rax
	movq %rax, (%rsi)
	movq %rdx, %rax
	shrq $56, %rax
	movq %rax, 8(%rsi)
	addq $16, %rsi
	xorl %eax, %eax
.endm


/* --- the program's handlers ------------------------------------------------------------ */

/* everything an instrumented function may hold at a sled: the integer argument registers,
 * rax (a varargs call's vector count, or a return value), rdx, r10, r11 and xmm0-7; the stack
 * aligned to 16 bytes below them (frame on rbp) */
.macro API_SAVE
	push %rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbp, 0
	mov %rsp, %rbp
	.cfi_def_cfa_register %rbp
	and $-16, %rsp
	sub $208, %rsp
	mov %rdi, 0(%rsp)
	mov %rsi, 8(%rsp)
	mov %rdx, 16(%rsp)
	mov %rcx, 24(%rsp)
	mov %r8, 32(%rsp)
	mov %r9, 40(%rsp)
	mov %rax, 48(%rsp)
	mov %r10, 56(%rsp)
	mov %r11, 64(%rsp)
	movups %xmm0, 80(%rsp)
	movups %xmm1, 96(%rsp)
	movups %xmm2, 112(%rsp)
	movups %xmm3, 128(%rsp)
	movups %xmm4, 144(%rsp)
	movups %xmm5, 160(%rsp)
	movups %xmm6, 176(%rsp)
	movups %xmm7, 192(%rsp)
.endm

.macro API_RESTORE
	movups 80(%rsp), %xmm0
	movups 96(%rsp), %xmm1
	movups 112(%rsp), %xmm2
	movups 128(%rsp), %xmm3
	movups 144(%rsp), %xmm4
	movups 160(%rsp), %xmm5
	movups 176(%rsp), %xmm6
	movups 192(%rsp), %xmm7
	mov 0(%rsp), %rdi
	mov 8(%rsp), %rsi
	mov 16(%rsp), %rdx
	mov 24(%rsp), %rcx
	mov 32(%rsp), %r8
	mov 40(%rsp), %r9
	mov 48(%rsp), %rax
	mov 56(%rsp), %r10
	mov 64(%rsp), %r11
	mov %rbp, %rsp
	.cfi_def_cfa_register %rsp
	pop %rbp
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbp
.endm

/* an entry, exit or tail sled for the handler in xr_api_fn: handler(fid, \type) */
.macro API_FN name, type
	.type \name, @function
	.p2align 4
\name:
	.cfi_startproc
	API_SAVE
	movq xr_api_fn(%rip), %rax
	testq %rax, %rax
	jz 1f
	movl %r10d, %edi
	movl $\type, %esi
	call *%rax
1:
	API_RESTORE
	ret
	.cfi_endproc
	.size \name, .-\name
.endm

	API_FN xray_entry_api, 0
	API_FN xray_exit_api, 1
	API_FN xray_tail_api, 2

/* a log-args sled: handler(fid, LOG_ARGS_ENTRY, first argument), the arg1 handler or else
 * the entry one */
	.type xray_args_api, @function
	.p2align 4
xray_args_api:
	.cfi_startproc
	API_SAVE
	movq xr_api_arg1(%rip), %rax
	testq %rax, %rax
	jnz 2f
	movq xr_api_fn(%rip), %rax
	testq %rax, %rax
	jz 1f
2:
	movq %rdi, %rdx
	movl $3, %esi
	movl %r10d, %edi
	call *%rax
1:
	API_RESTORE
	ret
	.cfi_endproc
	.size xray_args_api, .-xray_args_api

/* a custom event: handler(data, size); rdi and rsi are the sled's, which restores them */
	.type xray_custom_api, @function
	.p2align 4
xray_custom_api:
	.cfi_startproc
	pushfq
	.cfi_adjust_cfa_offset 8
	API_SAVE
	movq xr_api_custom(%rip), %rax
	testq %rax, %rax
	jz 1f
	call *%rax
1:
	API_RESTORE
	popfq
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size xray_custom_api, .-xray_custom_api

	.globl xray_tramp_entry
	.hidden xray_tramp_entry
	.type xray_tramp_entry, @function
	.p2align 4
xray_tramp_entry:
	.cfi_startproc
	cmpq $0, xr_api_fn(%rip)
	jne xray_entry_api
	PUSH5
	/* 40(%rsp): our return address; 48(%rsp): the function's return-address slot */
	GUARD_UP .Le_slow
	movl XR_X_DEPTH(%r11), %ecx
	cmpl xr_max_stack(%rip), %ecx
	jae .Le_decline
	movq REC_T_POS(%r11), %rsi
	movq REC_T_END(%r11), %rax
	subq %rsi, %rax
	cmpq $24, %rax
	jb .Le_decline
	TSC_CPU
	cmpl XR_X_CPU(%r11), %eax
	jne .Le_new_cpu
	movq %rdx, %rax
	subq XR_X_LAST_TSC(%r11), %rax		/* the delta */
	cmpq $0x7fffffff, %rax
	ja .Le_wrap
.Le_record:
	movq %rdx, XR_X_LAST_TSC(%r11)
	shlq $32, %rax
	movl %r10d, %edi
	shll $4, %edi				/* type 0: entry */
	orq %rdi, %rax
	movq %rax, (%rsi)
	addq $8, %rsi
	movl %ecx, %eax				/* push {slot, fid, owed = 0} */
	shlq $XR_FRAME_SHIFT, %rax
	leaq 48(%rsp), %rdx
	movq %rdx, XR_X_STACK(%r11,%rax)
	movl %r10d, %edx
	movq %rdx, XR_X_STACK+8(%r11,%rax)
	incl %ecx
	movl %ecx, XR_X_DEPTH(%r11)
	COMMIT %rsi
	POP5
	ret
	.cfi_adjust_cfa_offset 40
.Le_new_cpu:
	PUT_NEW_CPU %rdi
	jmp .Le_record
.Le_wrap:
	PUT_TSC_WRAP
	jmp .Le_record
.Le_decline:
	movb $0, REC_T_BUSY(%r11)
.Le_slow:
	POP5
	jmp xray_entry_complete
	.cfi_endproc
	.size xray_tramp_entry, .-xray_tramp_entry

/* everything the entry fast path declines: the complete hook, all argument registers kept */
	.type xray_entry_complete, @function
	.p2align 4
xray_entry_complete:
	.cfi_startproc
	SAVE9
	mov 8(%rsp), %edi		/* the id, from the saved r10 */
	lea 80(%rsp), %rsi
	xor %edx, %edx			/* FDR_ENTER */
	xor %ecx, %ecx
	CALL_ALIGNED xray_entry_hook
	RESTORE9
	ret
	.cfi_endproc
	.size xray_entry_complete, .-xray_entry_complete

	.globl xray_tramp_args
	.hidden xray_tramp_args
	.type xray_tramp_args, @function
	.p2align 4
xray_tramp_args:
	.cfi_startproc
	cmpq $0, xr_api_arg1(%rip)
	jne xray_args_api
	cmpq $0, xr_api_fn(%rip)
	jne xray_args_api
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
	cmpq $0, xr_api_fn(%rip)
	jne xray_tail_api
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
	cmpq $0, xr_api_fn(%rip)
	jne xray_exit_api
	push %rax
	.cfi_adjust_cfa_offset 8
	push %rdx
	.cfi_adjust_cfa_offset 8
	/* 16(%rsp): the slot our `ret` consumes; rcx rsi rdi r8-r11 are dead at a return */
	GUARD_UP .Lx_slow
	movl XR_X_DEPTH(%r11), %ecx
	testl %ecx, %ecx
	jz .Lx_decline
	decl %ecx
	movl %ecx, %r8d				/* the top frame must be this one */
	shlq $XR_FRAME_SHIFT, %r8
	leaq 16(%rsp), %rax
	cmpq %rax, XR_X_STACK(%r11,%r8)
	jne .Lx_decline
	movq REC_T_POS(%r11), %rsi
	movq REC_T_END(%r11), %rax
	subq %rsi, %rax
	cmpq $24, %rax
	jb .Lx_decline
	TSC_CPU
	cmpl XR_X_CPU(%r11), %eax
	jne .Lx_new_cpu
	movq %rdx, %rax
	subq XR_X_LAST_TSC(%r11), %rax
	cmpq $0x7fffffff, %rax
	ja .Lx_wrap
.Lx_record:
	movq %rdx, XR_X_LAST_TSC(%r11)
	shlq $32, %rax
	movl XR_X_STACK+8(%r11,%r8), %edi	/* the frame's id */
	shll $4, %edi
	orl $2, %edi				/* type 1: exit */
	orq %rdi, %rax
	movq %rax, (%rsi)
	addq $8, %rsi
	movl %ecx, XR_X_DEPTH(%r11)
	COMMIT %rsi
	pop %rdx
	.cfi_adjust_cfa_offset -8
	pop %rax
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_adjust_cfa_offset 16
.Lx_new_cpu:
	PUT_NEW_CPU %rdi
	jmp .Lx_record
.Lx_wrap:
	PUT_TSC_WRAP
	jmp .Lx_record
.Lx_decline:
	movb $0, REC_T_BUSY(%r11)
.Lx_slow:
	pop %rdx
	.cfi_adjust_cfa_offset -8
	pop %rax
	.cfi_adjust_cfa_offset -8
	jmp xray_exit_complete
	.cfi_endproc
	.size xray_tramp_exit, .-xray_tramp_exit

/* everything the exit fast path declines: the complete hook, return registers kept */
	.type xray_exit_complete, @function
	.p2align 4
xray_exit_complete:
	.cfi_startproc
	push %rax
	.cfi_adjust_cfa_offset 8
	push %rdx
	.cfi_adjust_cfa_offset 8
	push %r10
	.cfi_adjust_cfa_offset 8
	mov %r10d, %edi
	lea 24(%rsp), %rsi		/* the slot */
	mov $1, %edx			/* FDR_EXIT */
	CALL_ALIGNED xray_exit_hook
	pop %r10
	.cfi_adjust_cfa_offset -8
	pop %rdx
	.cfi_adjust_cfa_offset -8
	pop %rax
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size xray_exit_complete, .-xray_exit_complete

	.globl xray_tramp_custom
	.hidden xray_tramp_custom
	.type xray_tramp_custom, @function
	.globl __xray_CustomEvent
	.type __xray_CustomEvent, @function
	.p2align 4
xray_tramp_custom:
__xray_CustomEvent:
	.cfi_startproc
	cmpq $0, xr_api_custom(%rip)
	jne xray_custom_api
	SAVE9
	mov 72(%rsp), %rdx		/* our return address: which sled called */
	CALL_ALIGNED xray_custom_hook	/* rdi, rsi: still the sled's data and size */
	RESTORE9
	ret
	.cfi_endproc
	.size xray_tramp_custom, .-xray_tramp_custom
	.size __xray_CustomEvent, .-__xray_CustomEvent

/* the tfile format: the entry sled of a tracepoint's function calls this; the registers are
 * the function's first instruction's but r10 (the sled's `mov $id, %r10d`) */
	.globl xray_tramp_tp
	.hidden xray_tramp_tp
	.type xray_tramp_tp, @function
	.p2align 4
xray_tramp_tp:
	.cfi_startproc
	TP_CAPTURE
	mov %rsp, %rdi
	mov %r10d, %esi			/* the function id */
	call xr_tp_entry
	TP_RESTORE
	ret
	.cfi_endproc
	.size xray_tramp_tp, .-xray_tramp_tp

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
