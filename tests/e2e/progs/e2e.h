/*
 * e2e.h - helpers shared by the end-to-end test programs (tests/e2e/progs/).
 *
 * Every program is built by tests/e2e/run with several hook flavours (gcc -pg, -pg -mfentry,
 * -finstrument-functions, clang -pg) at -O0 and -O2, then recorded by uftrace and by flightrec,
 * and the per-function entry counts are compared.  For that the counts must not depend on the
 * compiler or the optimisation level:
 * - FN marks a traced function: never inlined, never cloned or split by gcc's IPA passes
 *   (noipa; clang has no such passes on noinline functions), kept even if unused.
 * - Every traced function touches e2e_sink, a volatile, so no call can be dropped as pure.
 * - The runner adds -fno-optimize-sibling-calls so tail calls stay calls.
 * - NOTRACE marks helpers that must not appear in the trace (gcc and clang honour
 *   no_instrument_function for -pg and -finstrument-functions alike).
 *
 * The expected counts of each program live next to it in <prog>.expect
 * ("<count> <function>" lines); programs print only deterministic text.
 */
#ifndef E2E_H
#define E2E_H

#if defined(__clang__)
#define FN __attribute__((noinline, used))
#else
#define FN __attribute__((noinline, noipa, used))
#endif
#define NOTRACE __attribute__((no_instrument_function))

#ifdef __cplusplus
extern "C" {
#endif
extern volatile long e2e_sink;
#ifdef __cplusplus
}
#endif

/* One definition per program: put E2E_SINK_DEFINE in exactly one file. */
#define E2E_SINK_DEFINE volatile long e2e_sink

#endif
