/*
 * rtstats: the recording runtime's per-process counters, <trace>/.flightrec/stats.<pid>
 * (prefix rts_).
 *
 * Role: the runtime writes one file per process image at exit, named stats.<pid> or
 * stats.<pid>.<start ns> (an exec keeps the pid), of "key=value" lines: pid, ppid, exe,
 * format, threads, events, bytes, lost_full, lost_nested, lost_dead, lost_depth. `record`
 * sums them into its summary line and `stats` prints them.
 *
 * Invariants: numbers are unsigned decimals (pid/ppid positive ints); unknown keys are kept
 * out of the struct but accepted (a newer runtime may add counters); a malformed line or a
 * known key given twice is an error naming the file, offset and line. The number of files read
 * is capped (RTS_MAX_PROCS) and each file's size too.
 */
#ifndef FLIGHTREC_RTSTATS_H
#define FLIGHTREC_RTSTATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "readers/rd_common.h"

#define RTS_MAX_PROCS 65536

enum rts_rule {
	RTS_OK = 0,
	RTS_E_IO,
	RTS_E_LINE, /* not key=value, or a bad number */
	RTS_E_DUP, /* a known key twice */
};

struct rts_proc {
	int pid, ppid;
	char exe[256];
	char format[32];
	uint64_t threads, events, bytes;
	uint64_t lost_full, lost_nested, lost_dead, lost_depth;
	bool has_pid;
	uint64_t start; /* from the file name, 0 without one; orders images of one pid */
};

struct rts_set {
	struct rts_proc *procs; /* sorted by pid, then start */
	size_t nr;
	bool present; /* the .flightrec directory exists */
};

int rts_parse(const char *buf, size_t len, const char *file, struct rts_proc *p,
	      struct rd_error *err);
/* every stats.<pid> under TRACE_DIR/.flightrec; no directory is not an error (nr = 0) */
int rts_load(const char *trace_dir, struct rts_set *set, struct rd_error *err);
void rts_free(struct rts_set *set);
uint64_t rts_lost(const struct rts_proc *p);

#endif /* FLIGHTREC_RTSTATS_H */
