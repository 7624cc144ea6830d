/*
 * mcount_asm: the structure offsets the assembly fast paths (mcount_trampoline.S) use. Each
 * is checked against the C definitions at compile time (mcount_hooks.c), so moving a field of
 * struct mc_thread, struct mc_frame or struct rec_clock breaks the build instead of the
 * trampolines. Those of struct rec_thread and struct rec_chunk, which xray-rt's fast paths use
 * too, are in librecord/rec_fast_asm.h. Included by assembly: #defines only.
 */
#ifndef MCOUNT_ASM_H
#define MCOUNT_ASM_H

#include "librecord/rec_fast_asm.h"

/* struct mc_thread, at REC_T_FE */
#define MC_X_DEPTH (REC_T_FE + 0)
#define MC_X_STACK (REC_T_FE + 32)
/* struct mc_frame: 32 bytes {parent_loc, parent_ip, child_ip, kind:4, restored:4} */
#define MC_FRAME_SHIFT 5
#define MC_F_PARENT_LOC 0
#define MC_F_PARENT_IP 8
#define MC_F_CHILD_IP 16
#define MC_F_KIND 24
/* struct rec_clock */
#define MC_CLK_BASE_TSC 0
#define MC_CLK_BASE_NS 8
#define MC_CLK_MULT 16

#endif
