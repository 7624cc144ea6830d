/*
 * record_dir: the output directory of `flightrec record` (prefix recdir_).
 *
 * Role: make DIR ready for a new recording without ever destroying something that is not a
 * trace, and summarise what the runtime wrote into it afterwards.
 *
 * Invariants:
 *  - DIR missing: created. DIR empty: used as is. DIR holding a previous trace (an `info` file
 *    or a `.flightrec` directory, and nothing but trace files:
 *    info, task.txt, default.opts, *.dat, *.map, *.sym, *.dbg, *.txt, kallsyms,
 *    kernel_header, .channel, .flightrec, and the other runtimes' xray-log.*, *.trace, *.tf,
 *    ovni): its contents are removed (symbolic links are removed, never followed). Anything
 *    else: refused, nothing touched.
 *  - the summary prefers the runtime's own counters (.flightrec/stats.<pid>); without them it
 *    scans the <tid>.dat files.
 */
#ifndef FLIGHTREC_CLI_RECORD_DIR_H
#define FLIGHTREC_CLI_RECORD_DIR_H

#include <stddef.h>
#include <stdint.h>

/* 0, or -1 after printing why DIR cannot be used */
int recdir_prepare(const char *dir);

struct recdir_summary {
	uint64_t threads, events, bytes, lost;
	int from_runtime; /* 1: from .flightrec/stats.<pid>, 0: scanned from the .dat files */
};

void recdir_summarize(const char *dir, struct recdir_summary *s);

#endif /* FLIGHTREC_CLI_RECORD_DIR_H */
