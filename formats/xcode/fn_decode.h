/*
 * fn_decode: the front ends' ring encodings read back as function events, for the sinks of
 * other formats (any hook into any format: a -pg program written as an XRay log, an XRay
 * program as uftrace.data, either as Chrome trace JSON).
 *
 * A front end writes its own format's records into its rings (the fastest thing its hooks can
 * do, and what its own sink copies as they are); a sink of another format decodes each chunk
 * with fn_decode() on the flusher, off the hot path, and encodes the events its way.
 *   REC_ENC_UFTRACE  libmcount: 16-byte uftrace records (ns, type, depth, address inside the
 *                    function; LOST and EVENT records are skipped: losses reach sinks as
 *                    lost_before)
 *   REC_ENC_FDR      xray-rt: XRay FDR records; every chunk starts with a NewCPUId (the time
 *                    base), function records carry a TSC delta and an id, which the front
 *                    end's fn_addr turns into the function's address; an EnterWithArgs
 *                    record's CallArgument (written with it, in the same chunk) comes with
 *                    its entry as has_arg/arg
 *   REC_ENC_TP       tracepoint frames (rec_tp.h): no function events
 */
#ifndef REC_DECODE_H
#define REC_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "librecord/rec_encoding.h"

#pragma GCC visibility push(hidden)

enum fn_kind {
	FN_ENTRY = 0,
	FN_EXIT = 1,
};

struct fn_ev {
	uint64_t ns;	/* CLOCK_MONOTONIC ns (rec_clock's) */
	uint64_t time;	/* in the encoding's own unit: ns (uftrace) or TSC (FDR) */
	uintptr_t addr; /* uftrace: an address in the function (where the hook was called
			 * from); FDR: the function's address (0 if the id is unknown) */
	uint32_t fid;	/* FDR: the XRay function id; uftrace: 0 */
	uint16_t cpu;	/* FDR: from the last NewCPUId; uftrace: 0 */
	uint8_t kind;	/* enum fn_kind */
	uint8_t has_arg; /* FDR: an entry with an argument (xray_log_args), in arg */
	uint64_t arg;	 /* FDR: the CallArgument after its EnterWithArgs record */
};

/* per-thread decoding state (the sink keeps one per thread) */
struct fn_decoder {
	int enc;			    /* enum rec_encoding */
	uintptr_t (*fn_addr)(uint32_t fid); /* REC_ENC_FDR */
	uint64_t tsc;			    /* FDR: the time of the last timestamped record */
	uint16_t cpu;
};

typedef void (*fn_cb)(void *arg, const struct fn_ev *ev);

/* Decode one chunk's bytes, calling cb for each function event. Returns the number of events,
 * or -1 when the bytes break the encoding (what follows the break is skipped). */
long fn_decode(struct fn_decoder *d, const uint8_t *p, size_t len, fn_cb cb, void *arg);

#pragma GCC visibility pop

#endif
