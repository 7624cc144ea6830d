/*
 * record_dir: the output directory of `flightrec record` (prefix recdir_).
 *
 * Role: make DIR ready for a new recording without ever destroying something that is not a
 * trace, and summarise what the runtime wrote into it afterwards.
 *
 * Invariants:
 *  - DIR missing: created. DIR empty: used as is. A symbolic link given as DIR is followed.
 *  - DIR/.flightrec is flock()ed (LOCK_EX on the descriptor prepare returns, close-on-exec,
 *    held until record exits) before anything in DIR is removed; an empty DIR gets its
 *    .flightrec first. A second record into the same DIR is refused while the first one
 *    runs, instead of emptying or mixing into its live trace. (Not DIR itself: the runtimes
 *    flock DIR around their metadata writes.)
 *  - DIR not empty: it is replaced only when it verifiably holds what a finished `flightrec
 *    record` wrote: a `.flightrec` directory (not a link) with `.flightrec/record.list`, the
 *    names that recording left in DIR (written by recdir_finish), and nothing else beside
 *    them. Then exactly those entries and what .flightrec holds are removed (a symbolic
 *    link is removed, never followed). Anything else (a trace of another tool, user files, a
 *    file added since): refused with one message naming why, nothing touched. (uftrace 0.13
 *    renames a uftrace or empty DIR to DIR.old, first removing a DIR.old of that kind; any
 *    other DIR makes its mkdir fail, "File exists", exit 255, after it wrote default.opts
 *    into it. We write nothing into a DIR we refuse, and remove nothing we did not write.)
 *  - the summary prefers the runtime's own counters (.flightrec/stats.<pid>); without them it
 *    scans the <tid>.dat files.
 */
#ifndef FLIGHTREC_CLI_RECORD_DIR_H
#define FLIGHTREC_CLI_RECORD_DIR_H

#include <stddef.h>
#include <stdint.h>

/* DIR ready for a new recording: the open, locked descriptor of DIR/.flightrec (keep it
 * open for the whole recording), or -1 after printing why DIR cannot be used */
int recdir_prepare(const char *dir);

/* after the recording: write DIR's .flightrec/record.list (see above); RINGFD from prepare */
void recdir_finish(int ringfd, const char *dir);

struct recdir_summary {
	uint64_t threads, events, bytes, lost;
	int from_runtime; /* 1: from .flightrec/stats.<pid>, 0: scanned from the .dat files */
};

void recdir_summarize(const char *dir, struct recdir_summary *s);

#endif /* FLIGHTREC_CLI_RECORD_DIR_H */
