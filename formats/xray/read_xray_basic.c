/*
 * read_xray_basic: reader and linter of compiler-rt's basic-mode ("naive") XRay logs, the
 * other kind llvm-xray 14 reads (lib/XRay/Trace.cpp, loadNaiveFormatLog): after the 32-byte
 * header (type 0, version 1..3), 32-byte records. Record type 0, a function: u8 cpu @2, u8
 * type @3 (enter, exit, tail exit, enter with argument), i32 function id @4, u64 TSC @8,
 * u32 tid @16, u32 pid @20 (version 3). Record type 1, an argument: i32 function id @4, u32
 * tid @8, u32 pid @12 (version 3), u64 argument @16; llvm-xray attaches it to the record
 * before it, which must be of the same function, thread and (version 3) process.
 *
 * Written from llvm-xray's reading, apart from the writer (sink_xray_basic.c) on purpose.
 * Invariant: nothing read from the file sizes anything; every record is bounds-checked
 * against the length before it is read, through the walk's window (rd_win: a file is read as
 * it goes), so the function record an argument follows is kept as a copy, not a pointer.
 */
#include "formats/xray/read_xray.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define XBR_HDR 32
#define XBR_REC 32

struct xbr_thread {
	int32_t pid, tid;
};

/* counts a (pid, tid) the first time it is seen; -1 on no memory */
static int xbr_thread_seen(struct xbr_thread **v, size_t *n, size_t *cap, int32_t pid, int32_t tid)
{
	for (size_t i = *n; i-- > 0;)
		if ((*v)[i].pid == pid && (*v)[i].tid == tid)
			return 0;
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		struct xbr_thread *nv = realloc(*v, c * sizeof(*nv));
		if (!nv)
			return -1;
		*v = nv;
		*cap = c;
	}
	(*v)[(*n)++] = (struct xbr_thread){pid, tid};
	return 1;
}

int xfr_walk_basic(const uint8_t *data, size_t len, const char *file, struct xfr_header *h,
		   struct xfr_counts *c, xfr_rec_fn fn, void *ctx, struct rd_error *err)
{
	struct rd_win src;

	rd_win_mem(&src, data, len);
	return xfr_walk_basic_win(&src, file, h, c, fn, ctx, err);
}

int xfr_walk_basic_win(struct rd_win *src, const char *file, struct xfr_header *h,
		       struct xfr_counts *c, xfr_rec_fn fn, void *ctx, struct rd_error *err)
{
	struct xfr_header hd;
	struct xfr_counts cnt;
	struct xbr_thread *thr = NULL;
	size_t nthr = 0, capthr = 0, len = (size_t)src->size;
	uint8_t prevbuf[XBR_REC];
	const uint8_t *prev = NULL; /* the last function record (a copy in prevbuf) */
	const uint8_t *data;
	int ret = 0;

	memset(&cnt, 0, sizeof(cnt));
	if (len < XBR_HDR)
		return rd_error_set(err, XFR_RULE_HEADER, file, -1,
				    "%zu bytes, shorter than the 32-byte XRay file header", len);
	data = rd_win_at(src, 0, XBR_HDR);
	if (!data)
		return -1;
	hd.version = rd_le16(data);
	hd.type = rd_le16(data + 2);
	hd.bits = rd_le32(data + 4);
	hd.cycle_frequency = rd_le64(data + 8);
	hd.buffer_size = 0;
	if (hd.type != 0)
		return rd_error_set(err, XFR_RULE_HEADER, file, 2,
				    "log type %u is not a basic-mode log (0)", hd.type);
	if (hd.version < 1 || hd.version > 3)
		return rd_error_set(err, XFR_RULE_VERSION, file, 0,
				    "basic-mode log version %u (this reader knows 1 to 3)",
				    hd.version);
	if (h)
		*h = hd;
	if ((len - XBR_HDR) % XBR_REC)
		return rd_error_set(err, XFR_RULE_BASIC_SIZE, file,
				    (int64_t)(len - (len - XBR_HDR) % XBR_REC),
				    "%zu bytes of records, not a whole number of 32-byte records "
				    "(%zu bytes left over)",
				    len - XBR_HDR, (len - XBR_HDR) % XBR_REC);
	for (size_t off = XBR_HDR; off < len && ret == 0; off += XBR_REC) {
		const uint8_t *p = rd_win_at(src, off, XBR_REC);
		uint16_t rt;
		struct xfr_rec r;

		if (!p) {
			ret = -1;
			break;
		}
		rt = rd_le16(p);
		memset(&r, 0, sizeof(r));
		r.off = off;
		if (rt == 0) {
			r.kind = XFR_FUNCTION;
			r.cpu = p[2];
			r.fn_type = p[3];
			r.fid = rd_le32(p + 4);
			r.tsc = rd_le64(p + 8);
			r.tid = (int32_t)rd_le32(p + 16);
			r.pid = hd.version >= 3 ? (int32_t)rd_le32(p + 20) : 0;
			if (r.fn_type > XFR_ENTER_ARGS) {
				ret = rd_error_set(err, XFR_RULE_FN_TYPE, file, (int64_t)off + 3,
						   "function record of type %u (0..3 are known)",
						   r.fn_type);
				break;
			}
			cnt.entries += r.fn_type == XFR_ENTER || r.fn_type == XFR_ENTER_ARGS;
			cnt.exits += r.fn_type == XFR_EXIT;
			cnt.tail_exits += r.fn_type == XFR_TAIL_EXIT;
			memcpy(prevbuf, p, XBR_REC);
			prev = prevbuf;
		} else if (rt == 1) {
			r.kind = XFR_CALL_ARG;
			r.fid = rd_le32(p + 4);
			r.tid = (int32_t)rd_le32(p + 8);
			r.pid = hd.version >= 3 ? (int32_t)rd_le32(p + 12) : 0;
			r.value = rd_le64(p + 16);
			if (!prev) {
				ret = rd_error_set(err, XFR_RULE_BASIC_ARG, file, (int64_t)off,
						   "argument of function %" PRIu32
						   " with no function "
						   "record before it (llvm-xray rejects it)",
						   r.fid);
				break;
			}
			if (rd_le32(prev + 4) != r.fid || (int32_t)rd_le32(prev + 16) != r.tid ||
			    (hd.version >= 3 && (int32_t)rd_le32(prev + 20) != r.pid)) {
				ret = rd_error_set(err, XFR_RULE_BASIC_ARG, file, (int64_t)off,
						   "argument of function %" PRIu32 " on thread %d "
						   "after a record of function %" PRIu32
						   " on thread "
						   "%d (llvm-xray rejects it)",
						   r.fid, (int)r.tid, rd_le32(prev + 4),
						   (int)rd_le32(prev + 16));
				break;
			}
			r.tsc = rd_le64(prev + 8);
			r.cpu = prev[2];
			cnt.args++;
		} else {
			ret = rd_error_set(err, XFR_RULE_BASIC_RECORD, file, (int64_t)off,
					   "record type %u (0: function, 1: argument)", rt);
			break;
		}
		cnt.records++;
		int seen = xbr_thread_seen(&thr, &nthr, &capthr, r.pid, r.tid);
		if (seen < 0) {
			ret = rd_error_set(err, XFR_RULE_IO, file, -1, "out of memory");
			break;
		}
		cnt.threads += (uint64_t)seen;
		if (fn)
			ret = fn(ctx, &hd, &r);
	}
	free(thr);
	if (c)
		*c = cnt;
	return ret;
}
