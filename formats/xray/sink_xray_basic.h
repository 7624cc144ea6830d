/*
 * sink_xray_basic: compiler-rt's basic ("naive") XRay log, written from xray-rt's FDR streams
 * (see sink_xray_basic.c). The layout, as llvm-xray 14 reads it (version 3):
 *   header, 32 bytes: u16 version = 3, u16 type = 0 (naive), u32 bits (1 constant_tsc,
 *     2 nonstop_tsc), u64 cycle frequency, 16 bytes free
 *   records, 32 bytes each, u16 record type first:
 *     0 function: u8 cpu @2, u8 type @3 (0 enter, 1 exit, 2 tail exit, 3 enter with
 *       argument), i32 function id @4, u64 TSC @8, u32 tid @16, u32 pid @20, 8 bytes free
 *     1 argument: i32 function id @4, u32 tid @8, u32 pid @12, u64 argument @16, 8 free;
 *       it follows the enter-with-argument record of the same function, thread and process
 */
#ifndef SINK_XRAY_BASIC_H
#define SINK_XRAY_BASIC_H

#include <stddef.h>
#include <stdint.h>

#include "librecord/rec_config.h"

#pragma GCC visibility push(hidden)

#define XB_HEADER_SIZE	32
#define XB_RECORD_SIZE	32
#define XB_VERSION	3
#define XB_TYPE_NAIVE	0
#define XB_REC_FUNCTION 0
#define XB_REC_ARG	1

/* compiler-rt's basic-mode options (XRAY_BASIC_OPTIONS, or XRAY_OPTIONS' xray_naive_log_*) */
struct xb_options {
	uint64_t threshold_us; /* func_duration_threshold_us: shorter calls are left out (5) */
	uint32_t max_depth;    /* max_stack_depth: deeper calls are left out (64) */
	uint32_t buffer_size;  /* thread_buffer_size: records per write; a short call is left
				* out only while its entry is still in the buffer (1024) */
};

/* The basic log of this process tree: when path[0] is set, finish writes every thread's
 * records there (appended: a fork child appends to its parent's log, as compiler-rt's children
 * write to the descriptor they inherit) instead of an FDR log. */
struct xb_log {
	char path[REC_PATH_MAX + 300];
	struct xb_options opt;
	uint64_t threshold_ticks;
};
extern struct xb_log xb_log;

/* The defaults, then `flags` (compiler-rt's flag syntax) on top; 0, or -1 on a bad value. */
void xb_options_default(struct xb_options *o);
int xb_options_parse(struct xb_options *o, const char *flags, const char *prefix);

/* Create the log (fresh name <base><program>.<6 random characters>, header written) for the
 * options given; announce it at verbosity=1 (sink_xray.h's xr_log_announce). 0 or -1. */
int xb_log_create(const struct xb_options *o, uint64_t tsc_hz, uint32_t tsc_bits);

/* The header of a basic log */
void xb_put_header(uint8_t *p, uint64_t hz, uint32_t bits);

/* Scratch for xb_transcode: the output buffer and the shadow stack (one thread at a time) */
struct xb_work {
	uint8_t *out;  /* opt.buffer_size (at least 2) records */
	size_t cap, n; /* records the buffer holds, records in it */
	struct xb_frame {
		uint32_t fid;
		uint8_t cpu, type;
		uint64_t tsc;
		size_t at; /* its record's number (written + buffered): in out[] while >= written */
	} * stack;	   /* stack_cap frames (max_depth, or fewer: deeper calls are written
			    * without the duration filter) */
	uint64_t stack_cap;
	uint64_t depth; /* calls open, the filtered ones included */
	int fd;
	uint64_t written;  /* records written */
	uint64_t filtered; /* records left out by the filters */
};

/*
 * Turn one thread's FDR stream (xray-rt's ring records: NewCPUId, TSCWrap, function records,
 * CallArgument, custom events) into basic records with compiler-rt's filters and append them
 * to w->fd, thread_buffer_size records per write (an enter-with-argument record never apart
 * from its argument). An exit whose entry is not in the stream (a gap) is left out. Returns 0,
 * or -1 on a write error or a stream that is not ours (trusted input: we wrote it).
 */
int xb_transcode(struct xb_work *w, const struct xb_options *o, uint64_t threshold_ticks,
		 const uint8_t *d, size_t n, uint32_t tid, uint32_t pid);
/* the records left in the buffer, written */
int xb_flush(struct xb_work *w);

/* The log open at fd (read-write, its appender's flock held): the runs of records of one
 * process put in the order of their first record's TSC, stably (a fork child's part, appended
 * when it ended, goes after its parent's). 0, or -1 (the file is left as it was). */
int xb_order_runs(int fd);

#pragma GCC visibility pop

#endif
