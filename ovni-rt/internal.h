/*
 * ovni-rt internal declarations. The process and thread state it shares with the writer is
 * formats/ovni/ovni_state.h's (who touches what is said there).
 *
 * The thread's lifecycle, in TLS terms (rec_self is librecord's one TLS pointer):
 *   NULL --ovni_thread_init--> state (READY) --ovni_thread_free--> DEAD + ovni_tls_freed
 *   state --thread exits without ovni_thread_free--> DEAD (librecord's TSD destructor; the
 *         flusher finishes the stream: metadata with ovni.finished = 1)
 *   OFF: recording is off (set-up failed, AT_SECURE): every call does nothing
 */
#ifndef OVNI_RT_INTERNAL_H
#define OVNI_RT_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "librecord/rec_session.h"
#include "librecord/rec_thread.h"
#define OVNI_NO_INLINE 1 /* the library defines the event builders itself */
#include "ovni-rt/ovni.h"
#include "formats/ovni/ovni_state.h"

#pragma GCC visibility push(hidden)

_Static_assert(OVNI_LOOM_MAX == OVNI_MAX_HOSTNAME, "the writer's loom names hold ovni.h's");

/* This thread called ovni_thread_free (so a later call is misuse, not a late destructor). */
extern __thread int ovni_tls_freed __attribute__((tls_model("initial-exec")));

/* API misuse, in libovni's shape: "FATAL: <call>: <msg>" then abort. */
void ovni_die(const char *func, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn, cold));

/* ovni_emit.c: emit from the runtime itself (marks, flush markers); clock handled there. */
void ovni_emit_internal(struct rec_thread *t, const struct ovni_ev *ev);
/* The calling thread's state if it may record; dies (as func) if it is not initialised. */
struct rec_thread *ovni_thread_ready(const char *func);

#pragma GCC visibility pop

#endif
