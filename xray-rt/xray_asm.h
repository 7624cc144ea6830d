/*
 * xray_asm: the structure offsets the assembly fast paths (xray_trampoline.S) use. Each one is
 * checked against the C definitions at compile time (xray_fast.c), so a change to struct
 * xr_thread that moves a field breaks the build instead of the trampolines. Those of struct
 * rec_thread and struct rec_chunk, which libmcount's fast paths use too, are in
 * librecord/rec_fast_asm.h. Included by assembly: #defines only.
 */
#ifndef XRAY_RT_XRAY_ASM_H
#define XRAY_RT_XRAY_ASM_H

#include "librecord/rec_fast_asm.h"

/* struct xr_thread, at REC_T_FE */
#define XR_X_LAST_TSC (REC_T_FE + 0)
#define XR_X_CPU (REC_T_FE + 8)
#define XR_X_DEPTH (REC_T_FE + 12)
#define XR_X_STACK (REC_T_FE + 16)
#define XR_FRAME_SHIFT 4 /* sizeof(struct xr_frame) == 16: slot, then fid and owed */
/* xr_thread.cpu holds the CPU number + XR_CPU_BIAS, so that 0 ("no NewCPUId yet") is never a
 * value rseq's cpu_id can give: a CPU number, -1 (not registered) or -2 (registration failed) */
#define XR_CPU_BIAS 3

#endif
