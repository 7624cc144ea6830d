/*
 * xray_asm: the structure offsets the assembly fast paths (xray_trampoline.S) use. Each one is
 * checked against the C definitions at compile time (xray_fast.c), so a change to struct
 * rec_thread, struct xr_thread or struct rec_chunk that moves a field breaks the build instead
 * of the trampolines. Included by assembly: #defines only.
 */
#ifndef XRAY_RT_XRAY_ASM_H
#define XRAY_RT_XRAY_ASM_H

/* struct rec_thread */
#define XR_T_POS 0
#define XR_T_END 8
#define XR_T_CHUNK 16
#define XR_T_EVENTS 24
#define XR_T_BUSY 32
#define XR_T_HOLD 33
#define XR_T_FE 256
/* struct xr_thread, at XR_T_FE */
#define XR_X_LAST_TSC (XR_T_FE + 0)
#define XR_X_CPU (XR_T_FE + 8)
#define XR_X_DEPTH (XR_T_FE + 12)
#define XR_X_STACK (XR_T_FE + 16)
#define XR_FRAME_SHIFT 4 /* sizeof(struct xr_frame) == 16: slot, then fid and owed */
/* xr_thread.cpu holds the CPU number + XR_CPU_BIAS, so that 0 ("no NewCPUId yet") is never a
 * value rseq's cpu_id can give: a CPU number, -1 (not registered) or -2 (registration failed) */
#define XR_CPU_BIAS 3
/* struct rec_chunk */
#define XR_C_COMMITTED 16
#define XR_C_DATA 64

#endif
