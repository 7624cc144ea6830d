/*
 * read_xray: walk and lint XRay FDR logs (see read_xray.h for the rules).
 *
 * The block grammar is llvm-xray 14's (BlockVerifier), made a little stricter where the spec
 * is: a CallArgument follows an entry-with-arguments record (or another CallArgument), not any
 * function record; buffers follow each other with nothing in between (llvm-xray skips junk
 * between buffers of version 3 and later, compiler-rt never writes any); a BufferExtents never
 * appears inside a buffer. Blocks may go on across buffers, as llvm-xray reads them.
 *
 * The walk never reads past the mapped file: every record's size is checked against its
 * buffer's end before it is decoded.
 */
#include "formats/xray/read_xray.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
	const uint8_t *d;
	size_t len;
	const char *file;
	struct xfr_header h;
	struct xfr_counts c;
	struct rd_error *err;
	xfr_rec_fn fn;
	void *ctx;
	enum state st;
	int32_t tid;
	int64_t pid;
	uint64_t tsc;
	struct thr *cur; /* the current block's thread, once its first NewCPUId is seen */
	struct thr *thr;
	size_t nthr, capthr;
	bool mapped;	 /* d is the file's mapping: its pages are given back once walked */
	size_t released; /* ... those before this offset */
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
	const uint8_t *p = w->d + off;
	struct xfr_rec r;
	enum state next;
	uint16_t v = w->h.version;

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
	if (w->fn) {
		int ret = w->fn(w->ctx, &w->h, &r);
		if (ret)
			return ret;
	}
	return r.kind == XFR_END_OF_BUFFER ? 1 : 0;
}

/* the records of one buffer, [off, end) */
static int walk_buffer(struct walk *w, uint64_t off, uint64_t end)
{
	while (off < end) {
		uint64_t size = 0;
		int ret = walk_record(w, off, end, &size);
		if (ret < 0)
			return ret;
		if (ret == 1) { /* EndOfBuffer: the rest of a version 1 buffer is garbage */
			w->cur = NULL;
			return 0;
		}
		if (ret > 1)
			return ret;
		off += size;
		if (w->mapped)
			rd_map_release(w->d, off, &w->released);
	}
	return 0;
}

static int walk_mem(const uint8_t *data, size_t len, const char *file, struct xfr_header *h,
		    struct xfr_counts *c, xfr_rec_fn fn, void *ctx, struct rd_error *err,
		    bool mapped)
{
	struct walk w;
	uint64_t off = HDR;
	int ret = 0;

	memset(&w, 0, sizeof(w));
	w.mapped = mapped;
	w.d = data;
	w.len = len;
	w.file = file;
	w.err = err;
	w.fn = fn;
	w.ctx = ctx;
	if (len < HDR)
		return rd_error_set(err, XFR_RULE_HEADER, file, -1,
				    "%zu bytes, shorter than the 32-byte XRay file header", len);
	w.h.version = rd_le16(data);
	w.h.type = rd_le16(data + 2);
	w.h.bits = rd_le32(data + 4);
	w.h.cycle_frequency = rd_le64(data + 8);
	w.h.buffer_size = rd_le64(data + 16);
	if (w.h.type == 0) /* compiler-rt's basic mode */
		return xfr_walk_basic(data, len, file, h, c, fn, ctx, err);
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
			const uint8_t *p = data + off;
			uint64_t size, end;
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
	return walk_mem(data, len, file, h, c, fn, ctx, err, false);
}

int xfr_walk_map(const uint8_t *data, size_t len, const char *file, struct xfr_header *h,
		 struct xfr_counts *c, xfr_rec_fn fn, void *ctx, struct rd_error *err)
{
	return walk_mem(data, len, file, h, c, fn, ctx, err, true);
}

/* the walk (fn set) or xfr_verify_buf (fn NULL, verify) over the file mapped */
static int walk_file(const char *path, struct xfr_header *h, struct xfr_counts *c, xfr_rec_fn fn,
		     void *ctx, bool verify, struct rd_error *err)
{
	struct stat st;
	void *m = NULL;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		ret = rd_error_set(err, XFR_RULE_IO, path, -1, "cannot open: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return ret;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return rd_error_set(err, XFR_RULE_IO, path, -1, "not a regular file");
	}
	if (st.st_size > 0) {
		m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED) {
			ret = rd_error_set(err, XFR_RULE_IO, path, -1, "cannot map: %s",
					   strerror(errno));
			close(fd);
			return ret;
		}
	}
	close(fd);
	if (verify)
		ret = xfr_verify_map(m, (size_t)st.st_size, path, h, c, err);
	else
		ret = walk_mem(m, (size_t)st.st_size, path, h, c, fn, ctx, err, m != NULL);
	if (m)
		munmap(m, (size_t)st.st_size);
	return ret;
}

int xfr_walk(const char *path, struct xfr_header *h, struct xfr_counts *c, xfr_rec_fn fn, void *ctx,
	     struct rd_error *err)
{
	return walk_file(path, h, c, fn, ctx, false, err);
}

int xfr_verify(const char *path, struct xfr_header *h, struct xfr_counts *c, struct rd_error *err)
{
	return walk_file(path, h, c, NULL, NULL, true, err);
}
