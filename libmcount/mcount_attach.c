/*
 * mcount_attach: libmcount loaded into a running process by `flightrec record -p PID`
 * (cli/attach.c), which stops every thread with ptrace and calls the process's own dlopen.
 *
 * The tracer hands the session's settings over as a borrowed environment: while its dlopen
 * runs, the process's `environ` points to a block of FLIGHTREC_* variables the tracer wrote,
 * with FLIGHTREC_ATTACH=1 among them (the constructor reads the environment once, as always;
 * the process's own environment is put back right after and never changes). The tracer then
 * points the program's mcount/__fentry__/__cyg_profile_func_* GOT slots at our hooks; on
 * detach it puts them back and calls mc_attach_detach, which finishes the trace and ends our
 * threads. Invariants: the library is never unloaded (a frame whose return we hijacked still
 * returns through our trampoline, popping our shadow stack; after the finish such a return
 * records nothing); a thread's shadow stack starts empty, so the frames entered before the
 * attach are neither hijacked nor given an exit (-finstrument-functions exits that match no
 * entry are dropped by the exit hook).
 *
 * A later attach to the same process finds us loaded (dlopen would return the same image and
 * run no constructor): on detach the tracer, all threads stopped and none inside our code,
 * has mc_attach_unhook put back every return address we hijacked and make each thread forget
 * its state (its initial-exec `rec_self`, reached from the thread pointer the tracer reads
 * in its registers); the next attach calls mc_attach_again, which starts a new session in
 * the same image, each thread starting afresh at its next hook.
 *
 * -P/-U (FLIGHTREC_PATCH in the borrowed environment): the constructor, or mc_attach_again,
 * patches the selected functions while the tracer holds every thread (mcount_dynamic.c:
 * their instruction pointers come in FLIGHTREC_ATTACH_IPS, the moves go back in
 * mc_attach_to); mc_attach_unhook puts every site back first, has the tracer move the
 * threads the old bytes would trap, and unmaps the stub pages no thread is on.
 */
#include "libmcount/internal.h"
#include "libmcount/mcount_dynamic.h"
#include "libmcount/mcount_plt.h"
#include "formats/uftrace/sink_uftrace.h"
#include "librecord/rec_session.h"
#include "librecord/rec_util.h"

#include <string.h>

int mc_attached;

int mc_attach_wanted(void)
{
	const char *v = rec_getenv("FLIGHTREC_ATTACH");

	return v && !strcmp(v, "1");
}

/* called by the tracer in one stopped thread, the GOT slots already back to what they were;
 * the other threads run (finish needs the helper) */
__attribute__((visibility("default"))) void mc_attach_detach(void)
{
	rec_session_detach();
}

/* A stopped thread, by its thread pointer TP, is inside a hook (in a system call there: the
 * ring's back-pressure wait, the attach of its first event), with nothing of ours at its
 * instruction pointer to tell the tracer so; its hook returns into the program later. */
static int mc_attach_busy(uintptr_t tp, intptr_t off)
{
	struct rec_thread *t = *(struct rec_thread **)(uintptr_t)(tp + (uintptr_t)off);

	if (t == REC_THREAD_OFF)
		return rec_thread_attaching_at(tp);
	return (uintptr_t)t > REC_THREAD_SENTINEL_MAX &&
	       __atomic_load_n(&t->busy, __ATOMIC_RELAXED);
}

/* The tracer, every other thread stopped and the hook slots put back, with where the N
 * threads TH are (inside: stopped in our code). Any other thread inside a hook makes it a
 * busy one: unless FORCE, nothing is done then and their number returned, for the tracer to
 * let the process run on a little and ask again. Else the threads not inside get their
 * hijacked return addresses back and forget their state, so that no frame returns into us
 * any more and a new session starts each thread with an empty shadow stack. Their states
 * stay mapped (the session's finish, which comes next, still drains them). -P: the sites are
 * put back first and TH's ip/sp say where the tracer must resume each thread
 * (mc_dyn_unpatch, which leaves what a thread inside still needs). */
__attribute__((visibility("default"))) size_t mc_attach_unhook(struct mc_attach_th *th, size_t n,
							       int force)
{
	intptr_t off = (intptr_t)((uintptr_t)&rec_self - (uintptr_t)__builtin_thread_pointer());
	size_t busy = 0;
	int inside = 0;

	for (size_t i = 0; i < n; i++)
		if (!th[i].inside && mc_attach_busy(th[i].tp, off)) {
			th[i].inside = 1;
			busy++;
		}
	if (busy)
		rec_debug("libmcount: detach: %zu threads inside a hook%s", busy,
			  force ? ": their state, and what they return through, stay" : "");
	if (busy && !force)
		return busy;
	mc_dyn_unpatch(th, n); /* -P: the sites first, so that no new call reaches us */
	for (size_t i = 0; i < n; i++)
		inside |= th[i].inside != 0;
	mc_plt_unhook(th, n, inside); /* library calls: every GOT slot back */
	mc_tp_stop(); /* tracepoints: our entry points as built, for the next attach */
	for (size_t i = 0; i < n; i++) {
		struct rec_thread **self;
		struct rec_thread *t;
		struct mc_thread *mt;

		if (th[i].inside)
			continue;
		self = (struct rec_thread **)(uintptr_t)(th[i].tp + (uintptr_t)off);
		t = *self;
		if ((uintptr_t)t <= REC_THREAD_SENTINEL_MAX)
			continue;
		mt = mc_thread_of(t);
		mc_attach_close_frames(t);
		/* newest first: frames sharing a slot (tail calls) leave the oldest value */
		for (uint32_t d = mt->depth; d-- > 0;) {
			struct mc_frame *f = &mt->rstack[d];
			if (f->kind != MC_FRAME_CYG && !f->restored &&
			    *f->parent_loc == mc_frame_tramp(f->kind))
				*f->parent_loc = f->parent_ip;
		}
		mt->depth = 0;
		*self = NULL;
	}
	return busy;
}

void mc_attach_libcalls(void)
{
	if (__atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) == REC_SESSION_ACTIVE &&
	    rec_sess.sink == &uftrace_sink && !mc_tp_mode)
		mc_plt_setup();
}

/* The next attach, our image still loaded: a new session with the environment the tracer
 * lends for this call. 0 when it records; -1 when this process records already (started
 * under `flightrec record`, or an attach not detached). */
__attribute__((visibility("default"))) int mc_attach_again(void)
{
	if (!mc_attach_wanted() || rec_session_restart() < 0)
		return -1;
	mc_dyn_patch(); /* this attach's -P/-U (the session's start read them again) */
	mc_attach_libcalls();
	return 0;
}
