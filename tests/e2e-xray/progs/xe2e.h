/*
 * xe2e.h - helpers shared by the XRay end-to-end test programs (tests/e2e-xray/progs/).
 *
 * Every program is built by tests/e2e-xray/run with clang -fxray-instrument
 * -fxray-instruction-threshold=1 at -O0 and -O2, with compiler-rt's runtime linked, without
 * any runtime (-fnoxray-link-deps) and with libxray-rt.a; the per-function call counts that
 * `llvm-xray account` finds in the logs must equal the true counts of <prog>.expect.
 * - FN marks a traced function: never inlined, kept even if unused; every one touches
 *   xe2e_sink (a volatile), so no call can be dropped.
 * - NOTRACE marks helpers that must not appear in the log (xray_never_instrument).
 */
#ifndef XE2E_H
#define XE2E_H

#define FN __attribute__((noinline, used))
#define NOTRACE __attribute__((xray_never_instrument, noinline))

extern volatile long xe2e_sink;
#define XE2E_SINK_DEFINE volatile long xe2e_sink

#endif
