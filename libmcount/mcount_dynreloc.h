/*
 * mcount_dynreloc: prologue relocation for -P on code built without patchable nops (uftrace's
 * "full dynamic" patching, which it does with libcapstone too): the first instructions of a
 * function, 5 bytes or more, are copied to run elsewhere, so that a 5-byte call can take
 * their place. The decoder is libcapstone, loaded at run time (dlmopen: not through the dlopen
 * libmcount wraps) the first time a function needs it, and given an allocator of its own (the
 * program's malloc may be instrumented, or not ready).
 *
 * A direct call, jmp or jcc that ends the bytes replaced is rewritten for the copy (a call
 * keeps the function's own return address). A function is refused (with the reason) when its
 * first bytes hold any other branch, call or return, when an instruction of the function jumps into
 * the bytes replaced (it would land in the call), when it cannot be decoded, or when a
 * %rip-relative operand would not reach its target from the copy.
 */
#ifndef MCOUNT_DYNRELOC_H
#define MCOUNT_DYNRELOC_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

#define MC_RELOC_MAX 64 /* bytes of a relocated copy */

struct mc_reloc {
	size_t len;		    /* bytes replaced at the entry (>= 5) */
	size_t code_len;	    /* bytes of code[] */
	int ends;		    /* code[] ends with a transfer: no jump back after it */
	uint8_t code[MC_RELOC_MAX]; /* the instructions, fixed to run at the address given */
};

/* Is the decoder there? 0, or -1 with the reason. */
int mc_reloc_ready(const char **why);
/* The instructions at ENTRY of the function [FN, FN + SIZE), relocated to run at AT. 0, or -1
 * with the reason in *why. */
int mc_reloc_prologue(uintptr_t fn, size_t size, uintptr_t entry, uintptr_t at, struct mc_reloc *r,
		      const char **why);

#pragma GCC visibility pop

#endif
