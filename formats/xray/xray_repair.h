/*
 * xray_repair: the stream of a thread with gaps (a chunk the overwrite policy reused, a failed
 * write, a salvaged ring), made acceptable to llvm-xray's account and stack: exits without
 * their entry are left out, their TSC deltas carried to the next timestamped record (a
 * TSCWrap when the sum overflows). Shared by the sink's log assembly (sink_xray.c) and by
 * salvage (formats/xray/salvage_xray.c).
 */
#ifndef XRAY_RT_XRAY_REPAIR_H
#define XRAY_RT_XRAY_REPAIR_H

#include <stdint.h>
#include <string.h>

#include "librecord/rec_util.h"
#include "formats/xray/fdr_encode.h"

/*
 * The stream of a spool with gaps, without its exits that have no entry before them in the
 * stream. Counts the bytes that would be written when out < 0; writes them otherwise. Returns
 * the byte count, or -1 on a write error; *left_out (if not NULL) gets the exits left out.
 * Walks our own encoding (trusted: we wrote it).
 */
static inline int64_t xr_repair(const uint8_t *d, uint64_t n, int out, uint64_t *left_out)
{
	uint64_t pos = 0, run = 0, depth = 0, carry = 0, tsc = 0, total = 0;

#define XR_FLUSH_RUN(upto)                                                                         \
	do {                                                                                       \
		if ((upto) > run && out >= 0 && rec_write_all(out, d + run, (upto) - run) < 0)     \
			return -1;                                                                 \
		total += (upto) - run;                                                             \
	} while (0)

	while (pos < n) {
		const uint8_t *p = d + pos;
		uint64_t size = FDR_META_SIZE, head = FDR_META_SIZE, delta_off = 0;
		int64_t delta = 0; /* of a timestamped record: function (u32), custom event (i32) */
		int timed = 0;

		if (!(p[0] & 1)) {
			uint32_t w, d32;
			unsigned type;
			size = head = FDR_FN_SIZE;
			if (pos + size > n)
				break;
			memcpy(&w, p, 4);
			memcpy(&d32, p + 4, 4);
			delta = d32;
			type = (w >> 1) & 7;
			if (type == FDR_ENTER || type == FDR_ENTER_ARGS) {
				depth++;
			} else if (depth == 0) {
				/* an exit whose entry is gone: leave it out, keep its time */
				XR_FLUSH_RUN(pos);
				if (left_out)
					++*left_out;
				carry += d32;
				tsc += d32;
				pos += size;
				run = pos;
				continue;
			} else {
				depth--;
			}
			timed = 1;
			delta_off = 4;
		} else {
			unsigned kind = p[0] >> 1;
			if (pos + size > n)
				break;
			if (kind == FDR_NEW_CPU || kind == FDR_TSC_WRAP) {
				memcpy(&tsc, p + (kind == FDR_NEW_CPU ? 3 : 1), 8);
				carry = 0; /* an absolute time base */
			} else if (kind == FDR_CUSTOM_EVENT) {
				int32_t esize, d32;
				memcpy(&esize, p + 1, 4);
				memcpy(&d32, p + 5, 4);
				size += esize > 0 ? (uint64_t)esize : 0;
				delta = d32;
				timed = 1;
				delta_off = 5;
			}
			if (pos + size > n)
				break;
		}
		if (timed)
			tsc += (uint64_t)delta;
		if (timed && carry) {
			/* this record's delta grows by what the left-out exits had */
			uint8_t rec[FDR_META_SIZE], wrap[FDR_META_SIZE];
			int64_t nd = delta + (int64_t)carry;
			uint32_t nd32;
			XR_FLUSH_RUN(pos);
			if (nd < 0 || nd > (int64_t)FDR_DELTA_MAX) {
				fdr_put_tsc_wrap(wrap, tsc);
				if (out >= 0 && rec_write_all(out, wrap, sizeof(wrap)) < 0)
					return -1;
				total += sizeof(wrap);
				nd = 0;
			}
			nd32 = (uint32_t)nd;
			memcpy(rec, p, head);
			memcpy(rec + delta_off, &nd32, 4);
			if (out >= 0 && rec_write_all(out, rec, head) < 0)
				return -1;
			total += head;
			run = pos + head; /* a custom event's payload goes out with the next run */
			carry = 0;
		}
		pos += size;
	}
	XR_FLUSH_RUN(pos);
#undef XR_FLUSH_RUN
	return (int64_t)total;
}

#endif
