/*
 * rec_tp_fpsafe: rec_tp_thread_stack (libc: pthread_getattr_np) called from a tracepoint hook
 * with the x87/SSE state saved, as rec_fpsafe.S does for the ring's slow paths. Arguments
 * (rdi, rsi) pass through untouched.
 */
	.text

	.globl rec_tp_thread_stack_fpsafe
	.hidden rec_tp_thread_stack_fpsafe
	.type rec_tp_thread_stack_fpsafe, @function
rec_tp_thread_stack_fpsafe:
	.cfi_startproc
	push %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	mov %rsp, %rbp
	.cfi_def_cfa_register %rbp
	sub $528, %rsp
	and $-64, %rsp
	fxsave64 (%rsp)
	call rec_tp_thread_stack
	fxrstor64 (%rsp)
	leave
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size rec_tp_thread_stack_fpsafe, .-rec_tp_thread_stack_fpsafe

	.section .note.GNU-stack,"",@progbits
