/*
 * tfile_defs: the tracepoint definitions file of a recording process image,
 * <dir>/.flightrec/tp.<pid>.<session ns>: what a GDB trace file's definitions need and the
 * rings do not hold, kept where salvage (formats/tfile/salvage_tfile.c) can read it after a SIGKILL.
 *
 * Layout (little-endian, this machine's structs):
 *   [ struct tfile_defs_hdr, padded to TFILE_DEFS_HDR_SIZE ]
 *   [ the tracepoint table: ntp x struct rec_tp, padded to a page multiple (table_size) ]
 *   [ nmod x struct tfile_defs_module ]
 *
 * Who writes what (sink_tfile.c):
 *   - at session start (and in a fork child, for its own image), the whole file is written
 *     under a temporary name (.tp.<pid>.<session ns>.tmp) and renamed: salvage sees it whole
 *     or not at all;
 *   - the table region is then mapped MAP_SHARED and becomes the process's tracepoint table
 *     (rec_tp_move): the hit counters (the one atomic add of a hit, as before) and the hit
 *     addresses set later (rec_tp.pc) go to the page cache, so a SIGKILL does not lose them.
 *     Nothing else in the file changes after the rename;
 *   - finish removes the file once the trace file is published; until then, salvage may use it.
 * The modules are those loaded at session start (a library opened later is not in a salvaged
 * trace's gdb script; its frames are there, only its symbols are not loaded).
 * Salvage trusts none of it: sizes against the file's, every string terminated and printable
 * (they go into a gdb script), tracepoint numbers 1..ntp, the file owned by the rings' owner.
 */
#ifndef TFILE_DEFS_H
#define TFILE_DEFS_H

#include <stdint.h>

#include "librecord/rec_tp.h"

#define TFILE_DEFS_MAGIC    "FRTPDEF1"
#define TFILE_DEFS_VERSION  1
#define TFILE_DEFS_HDR_SIZE 4096u
#define TFILE_DEFS_MAX_MODS 4096u

struct tfile_defs_hdr {
	char magic[8];		/* TFILE_DEFS_MAGIC */
	uint32_t version;	/* TFILE_DEFS_VERSION */
	uint32_t hdr_size;	/* offset of the table: TFILE_DEFS_HDR_SIZE */
	int32_t pid;
	uint32_t ntp;		/* tracepoints in the table */
	uint64_t session_ns;	/* rec_session.start_ns: the rings' session_ns, the spools' name */
	uint64_t start_real_ns; /* CLOCK_REALTIME at session_ns (tstatus start and stop times) */
	uint32_t tp_size;	/* sizeof(struct rec_tp) */
	uint32_t table_size;	/* bytes of the table region, a multiple of 4096 */
	uint32_t nmod;		/* modules after the table */
	uint32_t mod_size;	/* sizeof(struct tfile_defs_module) */
	uint32_t forked;	/* a fork child: its trace is <program>.<pid>.tf */
	uint32_t tp_stack;	/* FLIGHTREC_TP_STACK */
	uint64_t max_frames;	/* FLIGHTREC_TP_MAX_FRAMES */
	char exe[2048];		/* /proc/self/exe */
};
_Static_assert(sizeof(struct tfile_defs_hdr) <= TFILE_DEFS_HDR_SIZE, "header fits its page");

struct tfile_defs_module {
	char path[512];
	uint64_t bias;
	uint32_t is_exe;
	uint32_t is_dyn;
};

static inline uint32_t tfile_defs_table_size(uint32_t ntp)
{
	uint64_t n = (uint64_t)(ntp ? ntp : 1) * sizeof(struct rec_tp);
	return (uint32_t)((n + 4095) & ~(uint64_t)4095);
}

#endif
