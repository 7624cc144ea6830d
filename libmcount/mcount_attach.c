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
 */
#include "libmcount/internal.h"
#include "librecord/rec_session.h"
#include "librecord/rec_util.h"

#include <string.h>

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
