/*
 * read_xray: reader and linter of XRay FDR logs, versions 1 to 5 (shared/formats/xray-fdr.rst,
 * and shared/anchors/xray.md for what llvm-xray 14 reads).
 *
 * Role: walk a log record by record, checking the grammar (file header; buffers of the header's
 * fixed size ending with EndOfBuffer in version 1, BufferExtents-delimited from version 2 on;
 * every block NewBuffer WallClock [Pid] NewCPUId then NewCPUId | TSCWrap | Function |
 * CustomEvent | TypedEvent, CallArgument only after an entry-with-arguments record or another
 * CallArgument; no record across its buffer's end), and hand each record to a callback
 * (dump) while counting (verify, stats). The first broken rule stops the walk with the byte
 * offset of the offending record.
 *
 * Written apart from xray-rt's sink on purpose: it reads what the spec and llvm-xray say, not
 * what our writer happens to write.
 */
#ifndef FLIGHTREC_READERS_XRAY_FDR_H
#define FLIGHTREC_READERS_XRAY_FDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/common/rd_common.h"

enum xfr_rule {
	XFR_RULE_IO = 1,     /* cannot open, map or read the file */
	XFR_RULE_HEADER,     /* shorter than the 32-byte header, or not type 1 (FDR) */
	XFR_RULE_VERSION,    /* a version other than 1..5 */
	XFR_RULE_EXTENTS,    /* a buffer not introduced by BufferExtents, or extending past EOF */
	XFR_RULE_KIND,	     /* a metadata kind >= 10, or one this version does not have */
	XFR_RULE_FN_TYPE,    /* a function record of type 4..7 */
	XFR_RULE_ORDER,	     /* a record where the block grammar does not allow it */
	XFR_RULE_OVERREAD,   /* a record (or event payload) crossing its buffer's end */
	XFR_RULE_EVENT_SIZE, /* a custom/typed event of size <= 0 */
	XFR_RULE_TRUNCATED,  /* a block ending before its first NewCPUId */
	XFR_RULE_EMPTY,	     /* no block at all (llvm-xray rejects such a log) */
	/* what `llvm-xray account` (LLVM 14, default options) rejects in a well-formed log,
	 * checked by xfr_verify only (xfr_account.c) */
	XFR_RULE_EXIT_EMPTY,	/* an exit on a thread whose stack of entries is empty */
	XFR_RULE_EXIT_MISMATCH, /* an exit whose function is not the one on top of the stack */
	XFR_RULE_TSC_ORDER,	/* a record earlier than the first record account replays */
	/* basic-mode logs (header type 0, read_xray_basic.c) */
	XFR_RULE_BASIC_SIZE,   /* records not a whole number of 32 bytes */
	XFR_RULE_BASIC_RECORD, /* a record type other than 0 (function) and 1 (argument) */
	XFR_RULE_BASIC_ARG,    /* an argument not after a record of its function, thread and
				* process (llvm-xray rejects it) */
};

enum xfr_kind {
	XFR_FUNCTION = -1,
	XFR_NEW_BUFFER = 0,
	XFR_END_OF_BUFFER = 1,
	XFR_NEW_CPU = 2,
	XFR_TSC_WRAP = 3,
	XFR_WALLCLOCK = 4,
	XFR_CUSTOM_EVENT = 5,
	XFR_CALL_ARG = 6,
	XFR_BUFFER_EXTENTS = 7,
	XFR_TYPED_EVENT = 8,
	XFR_PID = 9,
};

enum xfr_fn_type { XFR_ENTER = 0, XFR_EXIT = 1, XFR_TAIL_EXIT = 2, XFR_ENTER_ARGS = 3 };

struct xfr_header {
	uint16_t version;
	uint16_t type;
	uint32_t bits; /* bit 0 constant_tsc, bit 1 nonstop_tsc */
	uint64_t cycle_frequency;
	uint64_t buffer_size; /* version 1: the size of every buffer */
};

/* One record, decoded; fields that its kind does not have are 0. */
struct xfr_rec {
	uint64_t off; /* file offset */
	int kind;     /* enum xfr_kind */
	/* function records */
	unsigned fn_type; /* enum xfr_fn_type */
	uint32_t fid;
	uint32_t delta;
	/* metadata */
	uint64_t value;		/* extents size, tsc of NewCPUId/TSCWrap/v1-4 custom event,
				   * call argument, wallclock seconds */
	int64_t ivalue;		/* tid, pid, wallclock micros, event size */
	int32_t event_delta;	/* v5 custom / typed events */
	uint16_t cpu;		/* NewCPUId, v4 custom event */
	uint16_t event_type;	/* typed event */
	const uint8_t *payload; /* custom/typed event bytes */
	size_t payload_len;
	/* the reader's time model: running TSC after this record (function, NewCPUId, TSCWrap,
	 * v5 events), and the block's thread */
	uint64_t tsc;
	int32_t tid;
	int32_t pid;
};

struct xfr_counts {
	uint64_t blocks, records, entries, exits, tail_exits, args, custom, typed, cpu_changes,
		tsc_wraps;
	uint64_t unmatched_exits; /* exits whose thread shows no open entry (not a grammar error:
				   * compiler-rt's flight recorder drops old buffers) */
	uint64_t threads;	  /* distinct (pid, tid) */
};

/* returns 0 to go on, non-zero to stop the walk (returned by xfr_walk) */
typedef int (*xfr_rec_fn)(void *ctx, const struct xfr_header *h, const struct xfr_rec *r);

/* Does PATH look like an FDR log (a regular file: version 1..5, type 1) or a basic-mode log
 * (version 1..3, type 0)? */
bool xfr_sniff_file(const char *path);
/* Walk the log at PATH; fn (optional) sees every record. 0 ok, -1 with err set, or fn's
 * non-zero value. */
int xfr_walk(const char *path, struct xfr_header *h, struct xfr_counts *c, xfr_rec_fn fn, void *ctx,
	     struct rd_error *err);
/* Same over bytes in memory (FILE names them in errors); for tests and fuzzers. */
int xfr_walk_buf(const uint8_t *data, size_t len, const char *file, struct xfr_header *h,
		 struct xfr_counts *c, xfr_rec_fn fn, void *ctx, struct rd_error *err);
/* Same over a window (a file's, read as the walk goes, or a buffer's): what the others call.
 * A record's payload (r.payload) is valid until fn returns. */
int xfr_walk_win(struct rd_win *src, const char *file, struct xfr_header *h, struct xfr_counts *c,
		 xfr_rec_fn fn, void *ctx, struct rd_error *err);
/* A run of N function records of an FDR log (raw, 8 bytes each, their types checked), from
 * file offset OFF, in the block of (PID, TID), the running TSC before the first TSC0: for a
 * callback that takes them in a loop rather than one call each (verify's accounting: the
 * call per record was half its time). Returns as xfr_rec_fn does. */
typedef int (*xfr_run_fn)(void *ctx, const struct xfr_header *h, int32_t pid, int32_t tid,
			  uint64_t off, uint64_t tsc0, const uint8_t *recs, size_t n);
/* xfr_walk_win where RUN takes the function records of FDR logs, FN the others (all the
 * records of a basic log: RUN is for FDR's 8-byte records) */
int xfr_walk_runs(struct rd_win *src, const char *file, struct xfr_header *h, struct xfr_counts *c,
		  xfr_rec_fn fn, xfr_run_fn run, void *ctx, struct rd_error *err);
/* xfr_walk_runs over the file at PATH (xfr_walk's window) */
int xfr_walk_file_runs(const char *path, struct xfr_header *h, struct xfr_counts *c, xfr_rec_fn fn,
		       xfr_run_fn run, void *ctx, struct rd_error *err);

/*
 * compiler-rt's basic-mode ("naive") logs, which xfr_walk_buf hands here (header type 0):
 * version 1..3, then 32-byte records (formats/xray/sink_xray_basic.h has the layout), each
 * given to fn as an XFR_FUNCTION (fn_type, fid, cpu, tsc = the record's absolute TSC, tid,
 * pid: 0 before version 3) or an XFR_CALL_ARG (value) record; blocks stay 0. Rules:
 * XFR_RULE_VERSION, XFR_RULE_BASIC_SIZE, XFR_RULE_BASIC_RECORD, XFR_RULE_FN_TYPE,
 * XFR_RULE_BASIC_ARG. A log of no record (the header alone) is valid, as compiler-rt writes
 * one when nothing was recorded. xfr_verify adds account's rules: llvm-xray replays a basic
 * log in file order, so the base TSC is the first record's.
 */
int xfr_walk_basic(const uint8_t *data, size_t len, const char *file, struct xfr_header *h,
		   struct xfr_counts *c, xfr_rec_fn fn, void *ctx, struct rd_error *err);
int xfr_walk_basic_win(struct rd_win *src, const char *file, struct xfr_header *h,
		       struct xfr_counts *c, xfr_rec_fn fn, void *ctx, struct rd_error *err);

/*
 * verify: the walk (every rule above, XFR_RULE_IO .. XFR_RULE_EMPTY), then the rules of
 * `llvm-xray account` with its default options (no --keep-going, no --deduce-sibling-calls),
 * which replays the records thread by thread and stops at the first it cannot account:
 *  - XFR_RULE_EXIT_EMPTY: an exit or tail exit on a thread (keyed by tid alone, as account
 *    keys its stacks) with no open entry;
 *  - XFR_RULE_EXIT_MISMATCH: an exit or tail exit of another function than the innermost
 *    open entry (the message says whether --deduce-sibling-calls would accept it: the
 *    function is open further down the stack);
 *  - XFR_RULE_TSC_ORDER: a function record or event whose TSC is below the first non-zero
 *    one account replays: the first record of the thread its block index iterates first
 *    (formats/xray/xray_order.h models that index; logs of one process only).
 * A thread's records are taken in file order: account sorts a thread's blocks by WallClock,
 * which keeps file order for clocks that go forward and up to 16 blocks (llvm-xray 14 breaks
 * the order past 16: shared/anchors/xray.md 1.9). Entries still open at the end are fine.
 */
int xfr_verify(const char *path, struct xfr_header *h, struct xfr_counts *c, struct rd_error *err);
int xfr_verify_buf(const uint8_t *data, size_t len, const char *file, struct xfr_header *h,
		   struct xfr_counts *c, struct rd_error *err);
/* the same over a window (it walks it twice where the TSC rule breaks) */
int xfr_verify_win(struct rd_win *src, const char *file, struct xfr_header *h, struct xfr_counts *c,
		   struct rd_error *err);

const char *xfr_kind_name(int kind);
const char *xfr_fn_type_name(unsigned type);

#endif /* FLIGHTREC_READERS_XRAY_FDR_H */
