/*
 * fn_decode: function events out of the uftrace and FDR ring encodings (see fn_decode.h).
 * Runs on the flusher (or finish): trusted input, written by our own hooks, but checked so
 * that a broken chunk stops the decoding instead of reading past it.
 */
#include "formats/xcode/fn_decode.h"
#include "librecord/rec_clock.h"

#include <string.h>

static long fn_decode_uftrace(struct fn_decoder *d, const uint8_t *p, size_t len, fn_cb cb,
			       void *arg)
{
	long n = 0;

	(void)d;
	for (size_t off = 0; off + 16 <= len; off += 16) {
		uint64_t time, word;
		struct fn_ev ev;
		unsigned type;

		memcpy(&time, p + off, 8);
		memcpy(&word, p + off + 8, 8);
		if (((word >> 3) & 7) != 5)
			return -1;
		type = word & 3;
		if (type > 1)
			continue; /* LOST (also told as lost_before), EVENT */
		ev.ns = ev.time = time;
		ev.addr = (uintptr_t)(word >> 16);
		ev.fid = 0;
		ev.cpu = 0;
		ev.kind = type == 0 ? FN_ENTRY : FN_EXIT;
		ev.has_arg = 0;
		ev.arg = 0;
		cb(arg, &ev);
		n++;
	}
	return n;
}

static long fn_decode_fdr(struct fn_decoder *d, const uint8_t *p, size_t len, fn_cb cb,
			   void *arg)
{
	size_t off = 0;
	long n = 0;

	while (off < len) {
		const uint8_t *r = p + off;

		if (!(r[0] & 1)) { /* function record, 8 bytes */
			uint32_t w, delta;
			struct fn_ev ev;
			unsigned type;

			if (len - off < 8)
				return -1;
			memcpy(&w, r, 4);
			memcpy(&delta, r + 4, 4);
			d->tsc += delta;
			type = (w >> 1) & 7;
			ev.time = d->tsc;
			ev.ns = rec_clock_tsc_to_ns(d->tsc);
			ev.fid = w >> 4;
			ev.addr = d->fn_addr ? d->fn_addr(ev.fid) : 0;
			ev.cpu = d->cpu;
			ev.kind = (type == 0 || type == 3) ? FN_ENTRY : FN_EXIT;
			ev.has_arg = 0;
			ev.arg = 0;
			/* an entry with an argument: its CallArgument follows (xr_write_fn writes
			 * both in one reservation), and is skipped as metadata after */
			if (type == 3 && len - off >= 8 + 16 && (r[8] & 1) && r[8] >> 1 == 6) {
				memcpy(&ev.arg, r + 9, 8);
				ev.has_arg = 1;
			}
			cb(arg, &ev);
			n++;
			off += 8;
			continue;
		}
		if (len - off < 16)
			return -1;
		switch (r[0] >> 1) {
		case 2: /* NewCPUId: u16 cpu, u64 TSC */
			memcpy(&d->cpu, r + 1, 2);
			memcpy(&d->tsc, r + 3, 8);
			break;
		case 3: /* TSCWrap: u64 TSC */
			memcpy(&d->tsc, r + 1, 8);
			break;
		case 5: { /* CustomEvent (v5): i32 size, i32 delta, then the payload */
			int32_t size, delta;
			memcpy(&size, r + 1, 4);
			memcpy(&delta, r + 5, 4);
			if (size < 0 || (size_t)size > len - off - 16)
				return -1;
			d->tsc += (uint64_t)(int64_t)delta;
			off += (size_t)size;
			break;
		}
		default: /* CallArgument and the rest: nothing to decode */
			break;
		}
		off += 16;
	}
	return n;
}

long fn_decode(struct fn_decoder *d, const uint8_t *p, size_t len, fn_cb cb, void *arg)
{
	switch (d->enc) {
	case REC_ENC_UFTRACE:
		return fn_decode_uftrace(d, p, len, cb, arg);
	case REC_ENC_FDR:
		return fn_decode_fdr(d, p, len, cb, arg);
	default:
		return 0;
	}
}
