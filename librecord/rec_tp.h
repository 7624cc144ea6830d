/*
 * rec_tp: tracepoints for the GDB trace file format (sink_tfile.c): which functions are
 * traced, what a hit captures, and how a hit goes into the thread's ring.
 *
 * FLIGHTREC_TRACEPOINTS names functions; rec_tp_setup() resolves each name in every loaded
 * module (a name found at several addresses gives one tracepoint per address) and numbers
 * them from 1 in the order given. Front ends then call rec_tp_hit() at the entry of a traced
 * function, with the registers their trampoline captured (rec_tp_asm.h) fixed up to be those
 * of the function's first instruction: rip = the function's address, rsp = the stack pointer
 * it was entered with (pointing at its return address).
 *
 * A hit is one record in the ring (struct rec_tp_frame): the registers, the thread id, the
 * time, the hit's ordinal among the tracepoint's hits (counted process-wide with one atomic
 * add: the only shared write of a hit), and FLIGHTREC_TP_STACK bytes of stack from rsp,
 * clipped to the thread's stack. Hits past FLIGHTREC_TP_MAX_FRAMES are counted, not recorded.
 * No trap, no syscall, no lock, no allocation per hit (a thread's first hit finds its stack's
 * bounds once, through libc).
 *
 * The table (counters included) is where the sink puts it (rec_tp_move): the tfile sink maps
 * it from its definitions file, so hit counts survive a SIGKILL for salvage (tfile_defs.h).
 */
#ifndef REC_TP_H
#define REC_TP_H

#include <stddef.h>
#include <stdint.h>

#include "librecord/rec_tp_asm.h"

#pragma GCC visibility push(hidden)

#define REC_TP_MAX	256
#define REC_TP_NAME_MAX 128

/* What a trampoline captures, in the order of gdb's amd64 register numbers. */
struct rec_tp_regs {
	uint64_t gpr[16]; /* rax rbx rcx rdx rsi rdi rbp rsp r8 r9 r10 r11 r12 r13 r14 r15 */
	uint64_t rip;
	uint64_t eflags;
	uint64_t fs_base;
	uint32_t mxcsr;
	uint16_t fcw;
	uint16_t fsw;
	uint8_t xmm[16][16];
};
_Static_assert(sizeof(struct rec_tp_regs) == REC_TP_REGS_SIZE, "rec_tp_asm.h: size");

enum { REC_TP_RBP = 6, REC_TP_RSP = 7, REC_TP_R10 = 10 };

#define REC_TP_FRAME_MAGIC 0x4654u /* "TF" */

/* One hit, as the hooks put it in the ring. */
struct rec_tp_frame {
	uint32_t size;	/* bytes of this record: header, stack, padding to 8 */
	uint16_t magic; /* REC_TP_FRAME_MAGIC */
	uint16_t tpnum; /* tracepoint number, 1-based */
	uint32_t tid;
	uint32_t stack_len; /* bytes of stack after the header, from regs.gpr[REC_TP_RSP] */
	uint64_t ns;	    /* CLOCK_MONOTONIC ns (rec_clock_ns) */
	uint64_t hit;	    /* 1 for the tracepoint's first hit in the process, ... */
	struct rec_tp_regs regs;
};

struct rec_tp {
	uint64_t hits;	 /* atomic: hits so far, recorded or not */
	uintptr_t addr;	 /* the function's run-time address (rip of every frame) */
	uintptr_t end;	 /* end of the function (hooks report addresses inside it) */
	uintptr_t bias;	 /* load bias of its module */
	uintptr_t pc;	 /* where hits are taken when not at addr (-finstrument-functions:
			  * after the call to the hook), 0: at addr */
	uint32_t num;	 /* 1-based */
	uint32_t module; /* index of its module (rec_symtab) */
	char name[REC_TP_NAME_MAX];
} __attribute__((aligned(64))); /* hits of different tracepoints on different lines */

/* The table: a static array until the sink moves it (rec_tp_move) into memory that outlives
 * the process (the tfile sink maps its definitions file: tfile_defs.h). */
extern struct rec_tp *rec_tps;
extern uint32_t rec_ntp;
extern uint32_t rec_tp_stack;	   /* FLIGHTREC_TP_STACK */
extern uint64_t rec_tp_max_frames; /* FLIGHTREC_TP_MAX_FRAMES */

/* Resolve FLIGHTREC_TRACEPOINTS (session start, slow path); a name found nowhere gets one
 * warning. Returns the number of tracepoints (0: nothing will be recorded). */
int rec_tp_setup(const char *spec, uint32_t stack, uint32_t max_frames);

/* Make `to` (a copy of the table's rec_ntp entries the caller made, 64-byte aligned) the table
 * every lookup uses. Slow path: after rec_tp_setup, before recording starts, or in a fork
 * child. */
void rec_tp_move(struct rec_tp *to);

/* The tracepoint whose function holds pc, NULL if none. Binary search over the tracepoints
 * sorted by address: a few compares. */
struct rec_tp *rec_tp_find(uintptr_t pc);

/* Record a hit of tp with registers r (already those of the function's first instruction).
 * Hook code: general registers only; never blocks beyond the ring's policy. */
void rec_tp_hit(struct rec_tp *tp, const struct rec_tp_regs *r);

/* Bytes a hit with `stack_len` bytes of stack takes in the ring. */
static inline size_t rec_tp_frame_size(uint32_t stack_len)
{
	return (sizeof(struct rec_tp_frame) + stack_len + 7) & ~(size_t)7;
}

#pragma GCC visibility pop

#endif
