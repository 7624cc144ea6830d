/*
 * rec_fpsafe: thunks that call librecord's slow paths with the x87/SSE state saved.
 * Hooks run in the middle of the traced program's code (with live argument and return
 * registers) and are compiled without SSE; the slow paths are ordinary C calling libc.
 * Each thunk keeps rdi/rsi (the arguments) and returns rax untouched by fxrstor.
 */
	.text

	.globl rec_thread_get_slow_fpsafe
	.hidden rec_thread_get_slow_fpsafe
	.type rec_thread_get_slow_fpsafe, @function
rec_thread_get_slow_fpsafe:
	.cfi_startproc
	push %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	mov %rsp, %rbp
	.cfi_def_cfa_register %rbp
	sub $528, %rsp
	and $-64, %rsp
	fxsave64 (%rsp)
	call rec_thread_get_slow
	fxrstor64 (%rsp)
	leave
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size rec_thread_get_slow_fpsafe, .-rec_thread_get_slow_fpsafe

	.globl rec_reserve_slow_fpsafe
	.hidden rec_reserve_slow_fpsafe
	.type rec_reserve_slow_fpsafe, @function
rec_reserve_slow_fpsafe:
	.cfi_startproc
	push %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	mov %rsp, %rbp
	.cfi_def_cfa_register %rbp
	sub $528, %rsp
	and $-64, %rsp
	fxsave64 (%rsp)
	call rec_reserve_slow
	fxrstor64 (%rsp)
	leave
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size rec_reserve_slow_fpsafe, .-rec_reserve_slow_fpsafe

	.section .note.GNU-stack,"",@progbits
