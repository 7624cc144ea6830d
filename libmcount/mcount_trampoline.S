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
 * Fast paths: the entry and the exit of almost every call are recorded right here, the same
 * steps in the same order as the complete hooks of mcount_hooks.c (which run whenever a fast
 * path declines: first event of a thread, busy guard or exception hold, depth limit, no TSC,
 * full chunk, frames skipped by a jump): the thread's state through the initial-exec TLS
 * pointer; the busy guard raised BEFORE the depth and write position are read (a signal
 * handler that hooks in between must find them consistent); the shadow-stack push and the
 * return-address hijack; rdtsc turned into CLOCK_MONOTONIC ns (rec_clock.h); the 16-byte
 * uftrace record; the committed length (a plain store is a release on x86: the record's bytes
 * are visible first); the guard down. Written in assembly so that only the five registers it
 * uses are saved, not the nine a C leaf could clobber.
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
#include "librecord/rec_fast_asm.h"
#include "libmcount/mcount_asm.h"
#include "libmcount/mcount_save_asm.h"
	.text

/* %rax = rdtsc as CLOCK_MONOTONIC ns (rec_clock_tsc_to_ns); clobbers %rdx */
.macro CLOCK_NS
	rdtsc
	shlq $32, %rdx
	orq %rdx, %rax
	subq rec_clock_g+MC_CLK_BASE_TSC(%rip), %rax
	mulq rec_clock_g+MC_CLK_MULT(%rip)
	shrdq $32, %rdx, %rax
	addq rec_clock_g+MC_CLK_BASE_NS(%rip), %rax
.endm

/*
 * The entry fast path: %rdi = parent_loc (the child's return-address slot), %rsi = child_ip.
 * Uses %rax %rcx %rdx %rsi %rdi %r11 (the caller saved the first five). Jumps to \slow with
 * nothing changed when it declines.
 */
.macro ENTRY_FAST slow
	GUARD_UP \slow				/* the guard first, then the state */
	movl MC_X_DEPTH(%r11), %ecx
	cmpl mc_fast_max_stack(%rip), %ecx	/* 0 without a TSC */
	jae 8f
	movq REC_T_END(%r11), %rax
	subq REC_T_POS(%r11), %rax
	cmpq $16, %rax
	jb 8f
	movl %ecx, %eax				/* the frame: {parent_loc, parent_ip, child_ip, 0} */
	shlq $MC_FRAME_SHIFT, %rax
	leaq MC_X_STACK(%r11,%rax), %rax
	movq %rdi, MC_F_PARENT_LOC(%rax)
	movq (%rdi), %rdx
	movq %rdx, MC_F_PARENT_IP(%rax)
	movq %rsi, MC_F_CHILD_IP(%rax)
	movq $0, MC_F_KIND(%rax)
	leaq mcount_return(%rip), %rdx		/* hijack the return */
	movq %rdx, (%rdi)
	leal 1(%rcx), %eax
	movl %eax, MC_X_DEPTH(%r11)
	shlq $16, %rsi				/* ENTRY | magic 5 << 3 | depth << 6 | ip << 16 */
	shlq $6, %rcx
	orq %rcx, %rsi
	orq $0x28, %rsi
	movq REC_T_POS(%r11), %rdi
	movq %rsi, 8(%rdi)
	CLOCK_NS
	movq %rax, (%rdi)
	addq $16, %rdi
	COMMIT %rdi
	jmp 9f
8:
	movb $0, REC_T_BUSY(%r11)
	jmp \slow
9:
.endm

/* SAVE_ARGS / RESTORE_ARGS: mcount_save_asm.h (the PLT hooker saves the same way) */

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
	/* our own mcount for -P's stubs: in a dlopen'ed (attached) libmcount the exported name
	 * binds to libc's gprof mcount first */
	.globl mc_mcount_self
	.hidden mc_mcount_self
mcount:
_mcount:
mc_mcount_self:
	.cfi_startproc
	xchg %ax, %ax			/* patch site: `jmp mcount_tp_site` in the tfile format */
	PUSH5
	leaq 8(%rbp), %rdi		/* parent_loc: the child's slot, above its saved rbp */
	movq 40(%rsp), %rsi		/* child_ip: where mcount returns to */
	ENTRY_FAST .Lm_slow
	POP5
	ret
	.cfi_adjust_cfa_offset 40		/* \slow is reached with the five still pushed */
.Lm_slow:
	POP5
	push %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	mov %rsp, %rbp
	.cfi_def_cfa_register %rbp
	SAVE_ARGS
	mov 0(%rbp), %rdi		/* the child's frame pointer */
	add $8, %rdi			/* parent_loc: its return-address slot */
	mov 8(%rbp), %rsi		/* child_ip: where mcount returns to */
	mov %rsp, %rdx			/* the saved registers (arguments, -A) */
	call mcount_entry		/* everything the fast path does not handle */
	RESTORE_ARGS
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
	.globl mc_fentry_self		/* as mc_mcount_self: libc has a __fentry__ too */
	.hidden mc_fentry_self
__fentry__:
mc_fentry_self:
	.cfi_startproc
	xchg %ax, %ax			/* patch site: `jmp fentry_tp_site` in the tfile format */
	PUSH5
	leaq 48(%rsp), %rdi		/* parent_loc: just above our return address */
	movq 40(%rsp), %rsi		/* child_ip */
	ENTRY_FAST .Lf_slow
	POP5
	ret
	.cfi_adjust_cfa_offset 40		/* \slow is reached with the five still pushed */
.Lf_slow:
	POP5
	push %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	mov %rsp, %rbp
	.cfi_def_cfa_register %rbp
	SAVE_ARGS
	lea 16(%rbp), %rdi		/* parent_loc: saved rbp, our return, then the child's */
	mov 8(%rbp), %rsi		/* child_ip */
	mov %rsp, %rdx			/* the saved registers (arguments, -A) */
	call mcount_entry		/* everything the fast path does not handle */
	RESTORE_ARGS
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
	/* the fast path: only rax and rdx carry return values; the other scratch registers are
	 * free. The slot just consumed is at 8(%rsp). */
	LOAD_SELF
	cmpq $2, %r11
	jbe .Lr_slow
	cmpb $0, REC_T_BUSY(%r11)
	jne .Lr_slow
	movb $1, REC_T_BUSY(%r11)		/* the guard first, then the state */
	movl MC_X_DEPTH(%r11), %ecx
	subl $1, %ecx
	jb .Lr_decline				/* no frame at all */
	movl %ecx, %eax
	shlq $MC_FRAME_SHIFT, %rax
	leaq MC_X_STACK(%r11,%rax), %r8		/* the top frame must be the one returning */
	leaq 8(%rsp), %rax
	cmpq %rax, MC_F_PARENT_LOC(%r8)
	jne .Lr_decline				/* frames were skipped: the complete hook */
	cmpl $0, mc_fast_max_stack(%rip)
	je .Lr_decline
	movq REC_T_POS(%r11), %rdi
	movq REC_T_END(%r11), %rax
	subq %rdi, %rax
	cmpq $16, %rax
	jb .Lr_decline
	movq MC_F_PARENT_IP(%r8), %r9		/* read while the frame is still ours */
	movl %ecx, MC_X_DEPTH(%r11)
	movq MC_F_CHILD_IP(%r8), %rsi		/* EXIT | magic 5 << 3 | depth << 6 | ip << 16 */
	shlq $16, %rsi
	shlq $6, %rcx
	orq %rcx, %rsi
	orq $0x29, %rsi
	movq %rsi, 8(%rdi)
	CLOCK_NS
	movq %rax, (%rdi)
	addq $16, %rdi
	COMMIT %rdi
	pop %rdx
	pop %rax
	jmp *%r9
.Lr_decline:
	movb $0, REC_T_BUSY(%r11)
.Lr_slow:
	push %rbp
	mov %rsp, %rbp
	lea 24(%rsp), %rdi		/* sp at arrival */
	and $-16, %rsp
	call mcount_exit		/* everything the fast path does not handle */
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
