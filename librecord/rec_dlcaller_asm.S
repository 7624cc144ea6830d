/*
 * rec_dlcall_via(file, mode, fn, via): jump to fn(file, mode) with `via` as its return address
 * and, below it, the return into this function. `via` is a `ret` byte in the object the loader
 * must take for the caller (rec_dlcaller.c): fn returns there, and that ret pops the address
 * pushed here. The stack is as a call would leave it (rsp = 8 mod 16 at fn's entry).
 */
	.text
	.globl rec_dlcall_via
	.hidden rec_dlcall_via
	.type rec_dlcall_via, @function
rec_dlcall_via:
	.cfi_startproc
	push %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	mov %rsp, %rbp
	.cfi_def_cfa_register %rbp
	sub $8, %rsp		/* so that the two pushes leave rsp = 8 mod 16, as after a call */
	lea 1f(%rip), %rax
	push %rax		/* where the ret at `via` comes back to */
	push %rcx		/* fn's return address: the ret at `via` */
	jmp *%rdx
1:	leave
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size rec_dlcall_via, .-rec_dlcall_via

	.section .note.GNU-stack, "", @progbits
