/*
 * read_xray: walk and lint XRay FDR logs (see read_xray.h for the rules).
 *
 * The block grammar is llvm-xray 14's (BlockVerifier), made a little stricter where the spec
 * is: a CallArgument follows an entry-with-arguments record (or another CallArgument), not any
 * function record; buffers follow each other with nothing in between (llvm-xray skips junk
 * between buffers of version 3 and later, compiler-rt never writes any); a BufferExtents never
 * appears inside a buffer. Blocks may go on across buffers, as llvm-xray reads them.
 *
 * The walk never reads past the file: every record's size is checked against its buffer's end
 * before it is decoded. A file is read through a window (rd_win: pread into a buffer that
 * stays in the cache), so memory is bounded whatever its size; a record's bytes are asked of
 * the window before it is decoded, its payload included (r.payload points into the window
 * until the callback returns).
 */
#include "formats/xray/read_xray.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HDR 32
#define META 16
#define FNREC 8

enum state {
	ST_NONE,   /* outside a block */
	ST_NEWBUF, /* NewBuffer seen */
	ST_WALL,   /* WallClock seen */
	ST_PID,	   /* Pid seen */
	ST_BODY,   /* NewCPUId, TSCWrap, custom or typed event seen */
	ST_FN,	   /* a function record other than an entry with arguments */
	ST_FNARG,  /* an entry with arguments */
	ST_ARG,	   /* a CallArgument */
};

struct thr {
	int64_t pid;
	int32_t tid;
	uint64_t depth;
};

struct walk {
	struct rd_win *src;
	uint64_t len;
	const char *file;
	struct xfr_header h;
	struct xfr_counts c;
	struct rd_error *err;
	xfr_rec_fn fn;
	xfr_run_fn run; /* takes the function records when set (fn the others) */
	void *ctx;
	enum state st;
	int32_t tid;
	int64_t pid;
	uint64_t tsc;
	struct thr *cur; /* the current block's thread, once its first NewCPUId is seen */
	struct thr *thr;
	size_t nthr, capthr;
};

const char *xfr_kind_name(int kind)
{
	static const char *const names[] = {
		"NewBuffer",   "EndOfBuffer",  "NewCPUId",	"TSCWrap",    "WallClock",
		"CustomEvent", "CallArgument", "BufferExtents", "TypedEvent", "Pid"};
	if (kind == XFR_FUNCTION)
		return "Function";
	if (kind >= 0 && kind < (int)(sizeof(names) / sizeof(names[0])))
		return names[kind];
	return "?";
}

const char *xfr_fn_type_name(unsigned type)
{
	static const char *const names[] = {"Enter", "Exit", "TailExit", "EnterArgs"};
	return type < 4 ? names[type] : "?";
}

static const char *state_name(enum state st)
{
	static const char *const names[] = {"outside a block",
					    "after NewBuffer",
					    "after WallClock",
					    "after Pid",
					    "in the block's body",
					    "after a function record",
					    "after an entry with arguments",
					    "after a CallArgument"};
	return names[st];
}

#define FAIL(w, rule, off, ...) rd_error_set((w)->err, rule, (w)->file, (int64_t)(off), __VA_ARGS__)

static bool in_body(enum state st)
{
	return st == ST_BODY || st == ST_FN || st == ST_FNARG || st == ST_ARG;
}

/* the block's thread (pid, tid), found or added */
static int thread_enter(struct walk *w)
{
	for (size_t i = 0; i < w->nthr; i++)
		if (w->thr[i].pid == w->pid && w->thr[i].tid == w->tid) {
			w->cur = &w->thr[i];
			return 0;
		}
	if (w->nthr == w->capthr) {
		size_t cap = w->capthr ? w->capthr * 2 : 16;
		struct thr *t = realloc(w->thr, cap * sizeof(*t));
		if (!t)
			return rd_error_set(w->err, XFR_RULE_IO, w->file, -1, "out of memory");
		w->thr = t;
		w->capthr = cap;
	}
	w->cur = &w->thr[w->nthr++];
	w->cur->pid = w->pid;
	w->cur->tid = w->tid;
	w->cur->depth = 0;
	w->c.threads = w->nthr;
	return 0;
}

/* A block that ends must have reached its body. */
static int block_end(struct walk *w, uint64_t off)
{
	if (w->st == ST_NEWBUF || w->st == ST_WALL || w->st == ST_PID)
		return FAIL(w, XFR_RULE_TRUNCATED, off,
			    "the block of thread %d ends before its first NewCPUId", (int)w->tid);
	w->st = ST_NONE;
	w->cur = NULL;
	return 0;
}

/*
 * One record at `off`, which must end by `end` (its buffer's end). *size gets its length.
 * Returns 1 after an EndOfBuffer (version 1: the rest of the buffer is skipped).
 */
static int walk_record(struct walk *w, uint64_t off, uint64_t end, uint64_t *size)
{
	/* a metadata record's 16 bytes, fewer at the end of the buffer (checked below) */
	const uint8_t *p = rd_win_at(w->src, off, end - off < META ? (size_t)(end - off) : META);
	struct xfr_rec r;
	enum state next;
	uint16_t v = w->h.version;

	if (!p)
		return -1;
	memset(&r, 0, sizeof(r));
	r.off = off;
	if (!(p[0] & 1)) {
		/* function record */
		uint32_t word;
		if (end - off < FNREC)
			return FAIL(
				w, XFR_RULE_OVERREAD, off,
				"a function record crosses the end of its buffer (%llu bytes left)",
				(unsigned long long)(end - off));
		word = rd_le32(p);
		r.kind = XFR_FUNCTION;
		r.fn_type = (word >> 1) & 7;
		r.fid = word >> 4;
		r.delta = rd_le32(p + 4);
		*size = FNREC;
		if (r.fn_type > 3)
			return FAIL(w, XFR_RULE_FN_TYPE, off, "function record of unknown type %u",
				    r.fn_type);
		if (!in_body(w->st))
			return FAIL(w, XFR_RULE_ORDER, off,
				    "function record %s (before the block's first NewCPUId)",
				    state_name(w->st));
		w->tsc += r.delta;
		w->c.records++;
		if (r.fn_type == XFR_ENTER || r.fn_type == XFR_ENTER_ARGS) {
			w->c.entries++;
			w->c.args += r.fn_type == XFR_ENTER_ARGS;
			w->cur->depth++;
		} else {
			if (r.fn_type == XFR_EXIT)
				w->c.exits++;
			else
				w->c.tail_exits++;
			if (w->cur->depth)
				w->cur->depth--;
			else
				w->c.unmatched_exits++;
		}
		next = r.fn_type == XFR_ENTER_ARGS ? ST_FNARG : ST_FN;
		goto emit;
	}

	r.kind = p[0] >> 1;
	if (end - off < META)
		return FAIL(w, XFR_RULE_OVERREAD, off,
			    "a metadata record crosses the end of its buffer (%llu bytes left)",
			    (unsigned long long)(end - off));
	*size = META;
	if (r.kind > XFR_PID)
		return FAIL(w, XFR_RULE_KIND, off, "unknown metadata record kind %d", r.kind);
	switch (r.kind) {
	case XFR_NEW_BUFFER:
		if (w->st != ST_NONE && block_end(w, off) < 0)
			return -1;
		r.ivalue = (int32_t)rd_le32(p + 1);
		w->tid = (int32_t)r.ivalue;
		w->pid = 0;
		w->c.blocks++;
		next = ST_NEWBUF;
		break;
	case XFR_END_OF_BUFFER:
		if (v >= 2)
			return FAIL(w, XFR_RULE_KIND, off,
				    "EndOfBuffer record in a version %u log (version 1 only)", v);
		if (!in_body(w->st))
			return FAIL(w, XFR_RULE_ORDER, off, "EndOfBuffer %s", state_name(w->st));
		next = ST_NONE;
		break;
	case XFR_NEW_CPU:
		if (!(w->st == ST_WALL || w->st == ST_PID || in_body(w->st)))
			return FAIL(w, XFR_RULE_ORDER, off, "NewCPUId %s", state_name(w->st));
		r.cpu = rd_le16(p + 1);
		r.value = rd_le64(p + 3);
		w->tsc = r.value;
		if (!w->cur && thread_enter(w) < 0)
			return -1;
		w->c.cpu_changes++;
		next = ST_BODY;
		break;
	case XFR_TSC_WRAP:
		if (!in_body(w->st))
			return FAIL(w, XFR_RULE_ORDER, off, "TSCWrap %s", state_name(w->st));
		r.value = rd_le64(p + 1);
		w->tsc = r.value;
		w->c.tsc_wraps++;
		next = ST_BODY;
		break;
	case XFR_WALLCLOCK:
		if (w->st != ST_NEWBUF)
			return FAIL(w, XFR_RULE_ORDER, off,
				    "WallClock %s (it must follow NewBuffer)", state_name(w->st));
		r.value = rd_le64(p + 1);
		r.ivalue = (int32_t)rd_le32(p + 9);
		next = ST_WALL;
		break;
	case XFR_CUSTOM_EVENT:
	case XFR_TYPED_EVENT:
		if (!in_body(w->st))
			return FAIL(w, XFR_RULE_ORDER, off,
				    "%s event before the block's first NewCPUId",
				    r.kind == XFR_CUSTOM_EVENT ? "custom" : "typed");
		r.ivalue = (int32_t)rd_le32(p + 1);
		if (r.kind == XFR_TYPED_EVENT || v >= 5) {
			r.event_delta = (int32_t)rd_le32(p + 5);
			w->tsc += (uint64_t)(int64_t)r.event_delta;
			if (r.kind == XFR_TYPED_EVENT)
				r.event_type = rd_le16(p + 9);
		} else {
			r.value = rd_le64(p + 5);
			if (v == 4)
				r.cpu = rd_le16(p + 13);
		}
		if (r.ivalue <= 0)
			return FAIL(w, XFR_RULE_EVENT_SIZE, off, "%s event of size %lld",
				    r.kind == XFR_CUSTOM_EVENT ? "custom" : "typed",
				    (long long)r.ivalue);
		if ((uint64_t)r.ivalue > end - off - META)
			return FAIL(w, XFR_RULE_OVERREAD, off,
				    "%s event of %lld bytes crosses the end of its buffer",
				    r.kind == XFR_CUSTOM_EVENT ? "custom" : "typed",
				    (long long)r.ivalue);
		p = rd_win_at(w->src, off, META + (size_t)r.ivalue);
		if (!p)
			return -1;
		r.payload = p + META;
		r.payload_len = (size_t)r.ivalue;
		*size = META + (uint64_t)r.ivalue;
		if (r.kind == XFR_CUSTOM_EVENT)
			w->c.custom++;
		else
			w->c.typed++;
		next = ST_BODY;
		break;
	case XFR_CALL_ARG:
		if (w->st != ST_FNARG && w->st != ST_ARG)
			return FAIL(w, XFR_RULE_ORDER, off,
				    "CallArgument %s (it must follow an entry with arguments)",
				    state_name(w->st));
		r.value = rd_le64(p + 1);
		next = ST_ARG;
		break;
	case XFR_BUFFER_EXTENTS:
		return FAIL(w, XFR_RULE_ORDER, off, "BufferExtents inside a buffer");
	case XFR_PID:
		if (v < 3)
			return FAIL(w, XFR_RULE_KIND, off,
				    "Pid record in a version %u log (3 and later)", v);
		if (w->st != ST_WALL)
			return FAIL(w, XFR_RULE_ORDER, off, "Pid %s (it must follow WallClock)",
				    state_name(w->st));
		r.ivalue = (int32_t)rd_le32(p + 1);
		w->pid = r.ivalue;
		next = ST_PID;
		break;
	default:
		return FAIL(w, XFR_RULE_KIND, off, "unknown metadata record kind %d", r.kind);
	}
	w->c.records++;
emit:
	r.tsc = w->tsc;
	r.tid = w->tid;
	r.pid = (int32_t)w->pid;
	w->st = next;
	if (w->run && r.kind == XFR_FUNCTION) {
		int ret = w->run(w->ctx, &w->h, r.pid, r.tid, off, r.tsc - r.delta, p, 1);
		if (ret)
			return ret;
	} else if (w->fn) {
		int ret = w->fn(w->ctx, &w->h, &r);
		if (ret)
			return ret;
	}
	return r.kind == XFR_END_OF_BUFFER ? 1 : 0;
}

/*
 * A run of function records from OFF in a block's body, up to END or the window's end: most
 * of a log, so they skip walk_record's general decoding (same checks, counts and record
 * handed to fn). Stops before anything else (a metadata record, an unknown function type,
 * a record crossing END), which walk_record then takes. Returns the offset reached, or
 * ~0 when fn (or run) stopped the walk (*ret has its value).
 */
static uint64_t walk_fn_run(struct walk *w, uint64_t off, uint64_t end, int *ret)
{
	const uint8_t *p = rd_win_at(w->src, off, FNREC), *first = p;
	size_t n = rd_win_avail(w->src, off);
	uint64_t tsc = w->tsc, stop, off0 = off, tsc0 = w->tsc;
	struct thr *cur = w->cur;
	struct xfr_rec r;
	unsigned type = XFR_EXIT;

	if (n > end - off)
		n = (size_t)(end - off);
	stop = off + n / FNREC * FNREC;
	memset(&r, 0, sizeof(r));
	r.kind = XFR_FUNCTION;
	r.tid = w->tid;
	r.pid = (int32_t)w->pid;
	for (; off < stop; off += FNREC, p += FNREC) {
		uint32_t word = rd_le32(p);

		type = (word >> 1) & 7;
		if ((word & 1) || type > XFR_ENTER_ARGS)
			break;
		tsc += rd_le32(p + 4);
		if (type == XFR_ENTER || type == XFR_ENTER_ARGS) {
			w->c.entries++;
			w->c.args += type == XFR_ENTER_ARGS;
			cur->depth++;
		} else {
			if (type == XFR_EXIT)
				w->c.exits++;
			else
				w->c.tail_exits++;
			if (cur->depth)
				cur->depth--;
			else
				w->c.unmatched_exits++;
		}
		w->c.records++;
		w->st = type == XFR_ENTER_ARGS ? ST_FNARG : ST_FN;
		if (w->fn && !w->run) {
			r.off = off;
			r.fn_type = type;
			r.fid = word >> 4;
			r.delta = rd_le32(p + 4);
			r.tsc = tsc;
			w->tsc = tsc;
			*ret = w->fn(w->ctx, &w->h, &r);
			if (*ret)
				return ~(uint64_t)0;
		}
	}
	w->tsc = tsc;
	if (w->run && off > off0) {
		*ret = w->run(w->ctx, &w->h, r.pid, r.tid, off0, tsc0, first,
			      (size_t)(off - off0) / FNREC);
		if (*ret)
			return ~(uint64_t)0;
	}
	return off;
}

/* the records of one buffer, [off, end) */
static int walk_buffer(struct walk *w, uint64_t off, uint64_t end)
{
	while (off < end) {
		uint64_t size = 0;
		int ret;

		if (in_body(w->st) && end - off >= FNREC) {
			uint64_t to = walk_fn_run(w, off, end, &ret);
			if (to == ~(uint64_t)0)
				return ret;
			if (to != off) {
				off = to;
				continue;
			}
		}
		ret = walk_record(w, off, end, &size);
		if (ret < 0)
			return ret;
		if (ret == 1) { /* EndOfBuffer: the rest of a version 1 buffer is garbage */
			w->cur = NULL;
			return 0;
		}
		if (ret > 1)
			return ret;
		off += size;
	}
	return 0;
}

int xfr_walk_win(struct rd_win *src, const char *file, struct xfr_header *h, struct xfr_counts *c,
		 xfr_rec_fn fn, void *ctx, struct rd_error *err)
{
	return xfr_walk_runs(src, file, h, c, fn, NULL, ctx, err);
}

int xfr_walk_runs(struct rd_win *src, const char *file, struct xfr_header *h, struct xfr_counts *c,
		  xfr_rec_fn fn, xfr_run_fn run, void *ctx, struct rd_error *err)
{
	struct walk w;
	uint64_t off = HDR, len = src->size;
	const uint8_t *data;
	int ret = 0;

	memset(&w, 0, sizeof(w));
	w.src = src;
	w.len = len;
	w.file = file;
	w.err = err;
	w.fn = fn;
	w.run = run;
	w.ctx = ctx;
	if (len < HDR)
		return rd_error_set(err, XFR_RULE_HEADER, file, -1,
				    "%zu bytes, shorter than the 32-byte XRay file header",
				    (size_t)len);
	data = rd_win_at(src, 0, HDR);
	if (!data)
		return -1;
	w.h.version = rd_le16(data);
	w.h.type = rd_le16(data + 2);
	w.h.bits = rd_le32(data + 4);
	w.h.cycle_frequency = rd_le64(data + 8);
	w.h.buffer_size = rd_le64(data + 16);
	if (w.h.type == 0) /* compiler-rt's basic mode */
		return xfr_walk_basic_win(src, file, h, c, fn, ctx, err);
	if (w.h.type != 1)
		return rd_error_set(err, XFR_RULE_HEADER, file, 2,
				    "log type %u is neither FDR (1) nor basic (0)", w.h.type);
	if (w.h.version < 1 || w.h.version > 5)
		return rd_error_set(err, XFR_RULE_VERSION, file, 0,
				    "FDR log version %u (this reader knows 1 to 5)", w.h.version);
	if (h)
		*h = w.h;
	if (w.h.version == 1) {
		if (w.h.buffer_size < 3 * META)
			return rd_error_set(err, XFR_RULE_EXTENTS, file, 16,
					    "version 1 buffer size %llu is too small",
					    (unsigned long long)w.h.buffer_size);
		while (off < len && ret == 0) {
			uint64_t end = off + w.h.buffer_size;
			if (end > len)
				ret = rd_error_set(
					err, XFR_RULE_EXTENTS, file, (int64_t)off,
					"buffer of %llu bytes extends past the end of the "
					"file (%llu bytes left)",
					(unsigned long long)w.h.buffer_size,
					(unsigned long long)(len - off));
			else
				ret = walk_buffer(&w, off, end);
			off = end;
		}
	} else {
		while (off < len && ret == 0) {
			const uint8_t *p =
				rd_win_at(src, off, len - off < META ? (size_t)(len - off) : META);
			uint64_t size, end;
			if (!p) {
				ret = -1;
				break;
			}
			if (len - off < META || p[0] != (XFR_BUFFER_EXTENTS << 1 | 1)) {
				ret = rd_error_set(
					err, XFR_RULE_EXTENTS, file, (int64_t)off,
					"expected a BufferExtents record (version %u buffers "
					"start with one), found byte 0x%02x",
					w.h.version, p[0]);
				break;
			}
			size = rd_le64(p + 1);
			if (fn) {
				struct xfr_rec r;
				memset(&r, 0, sizeof(r));
				r.off = off;
				r.kind = XFR_BUFFER_EXTENTS;
				r.value = size;
				r.tsc = w.tsc;
				r.tid = w.tid;
				r.pid = (int32_t)w.pid;
				ret = fn(ctx, &w.h, &r);
				if (ret)
					break;
			}
			if (size > len - off - META) {
				ret = rd_error_set(
					err, XFR_RULE_EXTENTS, file, (int64_t)off,
					"buffer of %llu bytes extends past the end of the "
					"file (%llu bytes left)",
					(unsigned long long)size,
					(unsigned long long)(len - off - META));
				break;
			}
			end = off + META + size;
			ret = walk_buffer(&w, off + META, end);
			off = end;
		}
	}
	if (ret == 0 && w.st != ST_NONE)
		ret = block_end(&w, len);
	if (ret == 0 && w.c.blocks == 0)
		ret = rd_error_set(err, XFR_RULE_EMPTY, file, -1,
				   "no block in the log (llvm-xray rejects a log without one)");
	if (c)
		*c = w.c;
	free(w.thr);
	return ret;
}

bool xfr_sniff_file(const char *path)
{
	uint8_t hdr[HDR];
	struct stat st;
	bool ok = false;
	int fd;

	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < HDR)
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (read(fd, hdr, sizeof(hdr)) == (ssize_t)sizeof(hdr)) {
		uint16_t version = rd_le16(hdr), type = rd_le16(hdr + 2);
		uint64_t hz = rd_le64(hdr + 8);
		/* a basic log's first four bytes are those of many files (a Cacheray trace has no
		 * header: its first record's bytes could read as version 1, type 0): the rest of
		 * its header must look like one too, only the two TSC bits set, a TSC frequency
		 * between 1 MHz and 100 GHz, whole 32-byte records after it */
		ok = (type == 1 && version >= 1 && version <= 5) ||
		     (type == 0 && version >= 1 && version <= 3 && !(rd_le32(hdr + 4) & ~3u) &&
		      hz >= 1000000 && hz <= 100000000000ull && (st.st_size - HDR) % HDR == 0);
	}
	close(fd);
	return ok;
}

int xfr_walk_buf(const uint8_t *data, size_t len, const char *file, struct xfr_header *h,
		 struct xfr_counts *c, xfr_rec_fn fn, void *ctx, struct rd_error *err)
{
	struct rd_win src;

	rd_win_mem(&src, data, len);
	return xfr_walk_win(&src, file, h, c, fn, ctx, err);
}

/* the walk (fn, run) or xfr_verify_win (verify) over the file read through a window */
static int walk_file(const char *path, struct xfr_header *h, struct xfr_counts *c, xfr_rec_fn fn,
		     xfr_run_fn run, void *ctx, bool verify, struct rd_error *err)
{
	struct rd_win src;
	int ret;

	if (rd_win_open(&src, path, XFR_RULE_IO, err) < 0)
		return -1;
	if (verify)
		ret = xfr_verify_win(&src, path, h, c, err);
	else
		ret = xfr_walk_runs(&src, path, h, c, fn, run, ctx, err);
	rd_win_close(&src);
	return ret;
}

int xfr_walk(const char *path, struct xfr_header *h, struct xfr_counts *c, xfr_rec_fn fn, void *ctx,
	     struct rd_error *err)
{
	return walk_file(path, h, c, fn, NULL, ctx, false, err);
}

int xfr_walk_file_runs(const char *path, struct xfr_header *h, struct xfr_counts *c, xfr_rec_fn fn,
		       xfr_run_fn run, void *ctx, struct rd_error *err)
{
	return walk_file(path, h, c, fn, run, ctx, false, err);
}

int xfr_verify(const char *path, struct xfr_header *h, struct xfr_counts *c, struct rd_error *err)
{
	return walk_file(path, h, c, NULL, NULL, NULL, true, err);
}
