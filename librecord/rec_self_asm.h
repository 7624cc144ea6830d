/*
 * rec_self_asm: the assembly side of rec_thread.h's one TLS pointer, for the front ends'
 * trampolines (libmcount, xray-rt). rec_self is initial-exec TLS in a shared object: its
 * offset from the thread pointer is read from the GOT, then the pointer through %fs.
 * Included by assembly: macros only.
 */
#ifndef REC_SELF_ASM_H
#define REC_SELF_ASM_H

/* %r11 = the calling thread's struct rec_thread (or a sentinel: NULL, DEAD, OFF) */
.macro LOAD_SELF
	movq rec_self@gottpoff(%rip), %r11
	movq %fs:(%r11), %r11
.endm

#endif
