/*
 * rec_fpsafe: thunks that call librecord's slow paths with the x87/SSE state saved.
 * Hooks run in the middle of the traced program's code (with live argument and return
 * registers) and are compiled without SSE; the slow paths are ordinary C calling libc.
 * Each thunk keeps rdi/rsi (the arguments) and returns rax untouched by fxrstor.
 */
	.text

/* \name: call \fn with a 512-byte fxsave area, 64-byte aligned, around it */
.macro FPSAFE_THUNK name, fn
	.globl \name
	.hidden \name
	.type \name, @function
\name:
	.cfi_startproc
	push %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	mov %rsp, %rbp
	.cfi_def_cfa_register %rbp
	sub $528, %rsp
	and $-64, %rsp
	fxsave64 (%rsp)
	call \fn
	fxrstor64 (%rsp)
	leave
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size \name, .-\name
.endm

	FPSAFE_THUNK rec_thread_get_slow_fpsafe, rec_thread_get_slow
	FPSAFE_THUNK rec_reserve_slow_fpsafe, rec_reserve_slow
	/* vfork's call and returns (getpid, the child's attach), from the PLT hooks */
	FPSAFE_THUNK rec_vfork_enter_fpsafe, rec_vfork_enter
	FPSAFE_THUNK rec_vfork_return_fpsafe, rec_vfork_return
	FPSAFE_THUNK rec_vfork_stateless_parent_fpsafe, rec_vfork_stateless_parent
	/* rec_tp_thread_stack (libc: pthread_getattr_np), called from a tracepoint hook */
	FPSAFE_THUNK rec_tp_thread_stack_fpsafe, rec_tp_thread_stack
	/* rec_fd_call (libc: sigfillset's memset, pthread_sigmask), from libmcount's read= */
	FPSAFE_THUNK rec_fd_call_fpsafe, rec_fd_call

	.section .note.GNU-stack,"",@progbits
