/*
 * mcount_asm: the structure offsets the assembly fast paths (mcount_trampoline.S) use. Each
 * is checked against the C definitions at compile time (mcount_hooks.c), so moving a field of
 * struct rec_thread, struct mc_thread, struct mc_frame, struct rec_chunk or struct rec_clock
 * breaks the build instead of the trampolines. Included by assembly: #defines only.
 */
#ifndef MCOUNT_ASM_H
#define MCOUNT_ASM_H

/* struct rec_thread */
#define MC_T_POS 0
#define MC_T_END 8
#define MC_T_CHUNK 16
#define MC_T_EVENTS 24
#define MC_T_BUSY 32
#define MC_T_HOLD 33
#define MC_T_FE 256
/* struct mc_thread, at MC_T_FE */
#define MC_X_DEPTH (MC_T_FE + 0)
#define MC_X_STACK (MC_T_FE + 32)
/* struct mc_frame: 32 bytes {parent_loc, parent_ip, child_ip, kind:4, restored:4} */
#define MC_FRAME_SHIFT 5
#define MC_F_PARENT_LOC 0
#define MC_F_PARENT_IP 8
#define MC_F_CHILD_IP 16
#define MC_F_KIND 24
/* struct rec_chunk */
#define MC_C_COMMITTED 16
#define MC_C_DATA 64
/* struct rec_clock */
#define MC_CLK_BASE_TSC 0
#define MC_CLK_BASE_NS 8
#define MC_CLK_MULT 16

#endif
