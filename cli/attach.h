/*
 * attach: load libmcount into a running process and route its hooks to it, with ptrace
 * (`flightrec record -p PID`); see attach.c for the steps and their invariants.
 */
#ifndef FLIGHTREC_ATTACH_H
#define FLIGHTREC_ATTACH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define ATTACH_MAX_THREADS 4096
#define ATTACH_MAX_SLOTS 256
#define ATTACH_MAX_XRAY	    16 /* modules with XRay sleds whose runtime flag is held */
#define ATTACH_MAX_XRAY_PAT 32 /* their patterns: libmcount's MC_DYN_MAX */

struct attach_thread {
	pid_t tid;
	int sig; /* a signal it stopped for, handed back when it goes on */
};

/* one GOT slot of the program (or of a library) that called a hook of libc's */
struct attach_slot {
	uint64_t addr;
	uint64_t orig; /* what it held: put back on detach */
	uint64_t hook; /* what we wrote: libmcount's function (plus the addend) */
};

struct attach {
	pid_t pid;
	char lib[4096];             /* libmcount.so, as the process will map it */
	uint64_t dlopen_fn;         /* libc's dlopen in the process */
	uint64_t environ_var;       /* the variable libc's getenv reads (`__environ`) */
	struct attach_thread th[ATTACH_MAX_THREADS];
	size_t nth;
	pid_t first[ATTACH_MAX_THREADS]; /* the program's threads at the attach (none of ours) */
	size_t nfirst;
	struct attach_slot slot[ATTACH_MAX_SLOTS];
	size_t nslot;
	size_t nhooks; /* slots of the hooks themselves (the others: wrappers) */
	uint64_t detach_fn; /* mc_attach_detach in the process, once loaded */
	uint64_t unhook_fn; /* mc_attach_unhook */
	int again;          /* libmcount is loaded already (an earlier attach): mc_attach_again */
	int patching;	    /* -P/-U: libmcount patches sites while the threads are stopped */
	size_t xray;	    /* modules with XRay sleds (xray_instr_map) */
	int xray_own;	    /* the program's XRay runtime patches its sleds: left alone */
	/* the XRayPatching flags of the modules that have one, held set while attached */
	uint64_t xray_busy_var[ATTACH_MAX_XRAY];
	size_t nxray_busy;
	int xray_held; /* we set them */
	/* -P's patterns that take every module's XRay sleds (".", ".@libx.so"; ';'-joined) */
	char xray_pat[2560];
	size_t xray_npat, xray_left; /* modules in xray_pat; those left out (no room) */
};

/* Read PID's maps and files: libc's dlopen and environ, the GOT slots of the hooks (none
 * needed when PATCHING: -P/-U, or with XRay sleds, which the caller then has -P patch with
 * xray_pat: the executable's and every shared library's), the XRay sleds of every module and
 * whether the program patches them itself (refused when they would be patched). Touches
 * nothing. 0, or -1 with WHY. */
int attach_open(struct attach *a, pid_t pid, const char *lib, int patching, char *why, size_t len);
/* Stop every thread (PTRACE_SEIZE + PTRACE_INTERRUPT, until no new one appears). 0, or -1
 * with WHY (nothing stopped then when the first thread could not be seized). */
int attach_stop_all(struct attach *a, char *why, size_t len);
/* Let every thread go on (PTRACE_DETACH), handing back the signals they stopped for. */
void attach_resume_all(struct attach *a);
/* All threads stopped: dlopen LIB in one of them with ENV (NULL-terminated "NAME=VALUE"s) as
 * its borrowed environment, then point the hooks' GOT slots at libmcount's. 0, or -1 with
 * WHY (the slots are left as they were then). */
int attach_inject(struct attach *a, char *const *env, char *why, size_t len);
/* All threads stopped: put the slots back, let the other threads go, call mc_attach_detach
 * in one thread (it finishes the trace), let it go. 0, or -1 with WHY. */
int attach_detach(struct attach *a, char *why, size_t len);
/* PID's main thread is still alive (not a zombie, not gone) */
int attach_alive(pid_t pid);

#endif
