/*
 * test_xray_fdr: xray-rt's FDR encoders (formats/xray/fdr_encode.h) against the offline reader
 * (formats/xray/read_xray), which were written apart: a log built with the encoders reads back
 * record for record (values, the running TSC, counts), logs of versions 1 to 4 in their own
 * shapes are accepted, and every rule of the reader rejects a log that breaks it, naming the
 * offset of the offending record. xfr_verify's rules of `llvm-xray account` (default options):
 * small logs account rejects (an exit on an empty stack, an exit of another function than the
 * innermost entry, a record below the first TSC replayed) are rejected with the rule and the
 * offset, logs account accepts pass (open entries at the end, the golden fdr-v5.xray). The
 * crafted logs were checked with llvm-xray 14 by hand (it rejects and accepts the same).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/xray/read_xray.h"
#include "formats/xray/fdr_encode.h"
#include "formats/xray/xray_order.h"
#include "unit_util.h"

/* --- a little log builder ------------------------------------------------------------ */

struct log {
	uint8_t b[4096];
	size_t len;
	size_t extent; /* offset of the open BufferExtents record, 0 if none */
};

static void lg_header(struct log *l, uint16_t version, uint64_t buffer_size)
{
	memset(l, 0, sizeof(*l));
	fdr_put_header(l->b, version, 3, 2500000000ull, buffer_size);
	l->len = FDR_HEADER_SIZE;
}

static void lg_meta(struct log *l, unsigned kind, const void *pl, size_t n)
{
	fdr_put_meta(l->b + l->len, kind, pl, n);
	l->len += FDR_META_SIZE;
}

/* open a buffer: BufferExtents, its size filled in by lg_close */
static void lg_open(struct log *l)
{
	uint64_t z = 0;
	l->extent = l->len;
	lg_meta(l, FDR_BUFFER_EXTENTS, &z, 8);
}

static void lg_close(struct log *l)
{
	uint64_t n = l->len - l->extent - FDR_META_SIZE;
	memcpy(l->b + l->extent + 1, &n, 8);
}

static void lg_block(struct log *l, int32_t tid, int32_t pid, uint16_t cpu, uint64_t tsc)
{
	uint8_t wall[12] = {0};
	lg_meta(l, FDR_NEW_BUFFER, &tid, 4);
	lg_meta(l, FDR_WALLCLOCK, wall, 12);
	if (pid >= 0)
		lg_meta(l, FDR_PID, &pid, 4);
	fdr_put_new_cpu(l->b + l->len, cpu, tsc);
	l->len += FDR_META_SIZE;
}

static size_t lg_fn(struct log *l, unsigned type, uint32_t fid, uint32_t delta)
{
	size_t off = l->len;
	fdr_put_fn(l->b + l->len, type, fid, delta);
	l->len += FDR_FN_SIZE;
	return off;
}

/* --- reading back --------------------------------------------------------------------- */

struct seen {
	struct xfr_rec r[64];
	size_t n;
};

static int collect(void *ctx, const struct xfr_header *h, const struct xfr_rec *r)
{
	struct seen *s = ctx;
	(void)h;
	if (s->n < 64)
		s->r[s->n++] = *r;
	return 0;
}

static int walk(const struct log *l, struct xfr_counts *c, struct seen *s, struct rd_error *err)
{
	rd_error_clear(err);
	return xfr_walk_buf(l->b, l->len, "test.xray", NULL, c, s ? collect : NULL, s, err);
}

static void test_v5_roundtrip(void **state)
{
	struct log l;
	struct xfr_counts c;
	struct seen s = {.n = 0};
	struct rd_error err;
	const char ev[] = "hello";
	uint8_t m[FDR_META_SIZE];

	(void)state;
	lg_header(&l, 5, 16384);
	lg_open(&l);
	lg_block(&l, 101, 100, 3, 1000000);
	lg_fn(&l, FDR_ENTER, 7, 0);
	lg_fn(&l, FDR_ENTER_ARGS, 0x0fffffff, 10);
	fdr_put_call_arg(l.b + l.len, 0xdeadbeefcafe0001ull);
	l.len += FDR_META_SIZE;
	fdr_put_custom_v5(l.b + l.len, (int32_t)strlen(ev), 5);
	l.len += FDR_META_SIZE;
	memcpy(l.b + l.len, ev, strlen(ev));
	l.len += strlen(ev);
	lg_fn(&l, FDR_EXIT, 0x0fffffff, 20);
	fdr_put_tsc_wrap(m, 0x123456789abcdefull);
	memcpy(l.b + l.len, m, sizeof(m));
	l.len += FDR_META_SIZE;
	lg_fn(&l, FDR_TAIL_EXIT, 7, 1);
	fdr_put_new_cpu(l.b + l.len, 65535, 0xffffffffffffff00ull);
	l.len += FDR_META_SIZE;
	lg_fn(&l, FDR_ENTER, 8, 0x7fffffff);
	lg_close(&l);

	assert_int_equal(walk(&l, &c, &s, &err), 0);
	assert_int_equal(c.blocks, 1);
	assert_int_equal(c.threads, 1);
	assert_int_equal(c.entries, 3);
	assert_int_equal(c.exits, 1);
	assert_int_equal(c.tail_exits, 1);
	assert_int_equal(c.args, 1);
	assert_int_equal(c.custom, 1);
	assert_int_equal(c.tsc_wraps, 1);
	assert_int_equal(c.cpu_changes, 2);
	assert_int_equal(c.unmatched_exits, 0);

	/* BufferExtents, NewBuffer, WallClock, Pid, NewCPUId, then the body */
	assert_int_equal(s.r[0].kind, XFR_BUFFER_EXTENTS);
	assert_int_equal(s.r[0].value, l.len - 32 - 16);
	assert_int_equal(s.r[1].kind, XFR_NEW_BUFFER);
	assert_int_equal(s.r[1].ivalue, 101);
	assert_int_equal(s.r[3].kind, XFR_PID);
	assert_int_equal(s.r[3].ivalue, 100);
	assert_int_equal(s.r[4].kind, XFR_NEW_CPU);
	assert_int_equal(s.r[4].cpu, 3);
	assert_int_equal(s.r[4].value, 1000000);
	assert_int_equal(s.r[5].kind, XFR_FUNCTION);
	assert_int_equal(s.r[5].fn_type, FDR_ENTER);
	assert_int_equal(s.r[5].fid, 7);
	assert_int_equal(s.r[5].tsc, 1000000);
	assert_int_equal(s.r[6].fn_type, FDR_ENTER_ARGS);
	assert_int_equal(s.r[6].fid, 0x0fffffff);
	assert_int_equal(s.r[6].tsc, 1000010);
	assert_int_equal(s.r[7].kind, XFR_CALL_ARG);
	assert_int_equal(s.r[7].value, 0xdeadbeefcafe0001ull);
	assert_int_equal(s.r[8].kind, XFR_CUSTOM_EVENT);
	assert_int_equal(s.r[8].payload_len, 5);
	assert_memory_equal(s.r[8].payload, ev, 5);
	assert_int_equal(s.r[8].tsc, 1000015); /* v5: a delta, like function records */
	assert_int_equal(s.r[9].fn_type, FDR_EXIT);
	assert_int_equal(s.r[9].tsc, 1000035);
	assert_int_equal(s.r[10].kind, XFR_TSC_WRAP);
	assert_int_equal(s.r[10].value, 0x123456789abcdefull);
	assert_int_equal(s.r[11].fn_type, FDR_TAIL_EXIT);
	assert_int_equal(s.r[11].tsc, 0x123456789abcdefull + 1);
	assert_int_equal(s.r[12].kind, XFR_NEW_CPU);
	assert_int_equal(s.r[12].cpu, 65535);
	assert_int_equal(s.r[12].value, 0xffffffffffffff00ull);
	assert_int_equal(s.r[13].delta, 0x7fffffff);
	assert_int_equal(s.n, 14);
}

/* several blocks and threads; a block may go on in the next buffer (llvm-xray reads it so) */
static void test_v5_blocks(void **state)
{
	struct log l;
	struct xfr_counts c;
	struct rd_error err;

	(void)state;
	lg_header(&l, 5, 16384);
	lg_open(&l);
	lg_block(&l, 1, 9, 0, 100);
	lg_fn(&l, FDR_ENTER, 1, 0);
	lg_close(&l);
	lg_open(&l);
	lg_fn(&l, FDR_EXIT, 1, 5); /* continues thread 1's block */
	lg_block(&l, 2, 9, 1, 50);
	lg_fn(&l, FDR_EXIT, 3, 1); /* an exit without its entry: counted, not an error */
	lg_close(&l);
	assert_int_equal(walk(&l, &c, NULL, &err), 0);
	assert_int_equal(c.blocks, 2);
	assert_int_equal(c.threads, 2);
	assert_int_equal(c.unmatched_exits, 1);
}

/* version 1: fixed-size buffers, EndOfBuffer, garbage after it; no Pid */
static void test_v1(void **state)
{
	struct log l;
	struct xfr_counts c;
	struct rd_error err;
	size_t start;

	(void)state;
	lg_header(&l, 1, 128);
	for (int b = 0; b < 2; b++) {
		start = l.len;
		lg_block(&l, 10 + b, -1, 0, 1000);
		lg_fn(&l, FDR_ENTER, 1, 0);
		lg_fn(&l, FDR_EXIT, 1, 3);
		lg_meta(&l, FDR_END_OF_BUFFER, NULL, 0);
		memset(l.b + l.len, 0x5a, start + 128 - l.len);
		l.len = start + 128;
	}
	assert_int_equal(walk(&l, &c, NULL, &err), 0);
	assert_int_equal(c.blocks, 2);
	assert_int_equal(c.entries, 2);
	/* a version 1 buffer that runs past the end of the file */
	l.len -= 8;
	assert_int_equal(walk(&l, &c, NULL, &err), -1);
	assert_int_equal(err.rule, XFR_RULE_EXTENTS);
	assert_int_equal(err.offset, 32 + 128);
}

/* version 4: a custom event carries an absolute TSC and a CPU */
static void test_v4_custom(void **state)
{
	struct log l;
	struct seen s = {.n = 0};
	struct xfr_counts c;
	struct rd_error err;
	uint8_t pl[14];
	int32_t size = 3;
	uint64_t tsc = 777;
	uint16_t cpu = 2;

	(void)state;
	lg_header(&l, 4, 16384);
	lg_open(&l);
	lg_block(&l, 1, 1, 0, 100);
	memcpy(pl, &size, 4);
	memcpy(pl + 4, &tsc, 8);
	memcpy(pl + 12, &cpu, 2);
	lg_meta(&l, FDR_CUSTOM_EVENT, pl, sizeof(pl));
	memcpy(l.b + l.len, "abc", 3);
	l.len += 3;
	lg_close(&l);
	assert_int_equal(walk(&l, &c, &s, &err), 0);
	assert_int_equal(s.r[5].kind, XFR_CUSTOM_EVENT);
	assert_int_equal(s.r[5].value, 777);
	assert_int_equal(s.r[5].cpu, 2);
	assert_int_equal(s.r[5].payload_len, 3);
}

/* One good v5 log, then one broken thing at a time: the rule and the offset. */
static void expect_reject(struct log *l, int rule, size_t off)
{
	struct rd_error err;
	assert_int_equal(walk(l, NULL, NULL, &err), -1);
	assert_int_equal(err.rule, rule);
	assert_int_equal(err.offset, (int64_t)off);
}

static void good_log(struct log *l, size_t *fn_off)
{
	lg_header(l, 5, 16384);
	lg_open(l);
	lg_block(l, 1, 1, 0, 100);
	*fn_off = lg_fn(l, FDR_ENTER, 1, 0);
	lg_fn(l, FDR_EXIT, 1, 4);
	lg_close(l);
}

static void test_rejects(void **state)
{
	struct log l;
	size_t off, first_body = 32 + 16 + 16 * 3; /* where NewCPUId is */
	struct rd_error err;

	(void)state;
	good_log(&l, &off);
	assert_int_equal(walk(&l, NULL, NULL, &err), 0);

	/* an unknown metadata kind */
	good_log(&l, &off);
	l.b[off] = 0xff;
	expect_reject(&l, XFR_RULE_KIND, off);
	/* a function record of type 4..7 */
	good_log(&l, &off);
	l.b[off] = 4 << 1;
	expect_reject(&l, XFR_RULE_FN_TYPE, off);
	/* a function record before the first NewCPUId: turn NewCPUId into a function record */
	good_log(&l, &off);
	l.b[first_body] = 0x10;
	expect_reject(&l, XFR_RULE_ORDER, first_body);
	/* a CallArgument after a plain entry */
	good_log(&l, &off);
	fdr_put_call_arg(l.b + off + 8, 1); /* overwrites the exit and runs 8 bytes further */
	l.len = off + 8 + FDR_META_SIZE;
	lg_close(&l);
	expect_reject(&l, XFR_RULE_ORDER, off + 8);
	/* EndOfBuffer is version 1 only */
	good_log(&l, &off);
	lg_meta(&l, FDR_END_OF_BUFFER, NULL, 0);
	lg_close(&l);
	expect_reject(&l, XFR_RULE_KIND, l.len - FDR_META_SIZE);
	/* a record crossing its buffer's end */
	good_log(&l, &off);
	{
		uint64_t n = l.len - 32 - 16 - 4;
		memcpy(l.b + 32 + 1, &n, 8);
		expect_reject(&l, XFR_RULE_OVERREAD, off + 8);
	}
	/* a custom event of size 0 */
	good_log(&l, &off);
	fdr_put_custom_v5(l.b + l.len, 0, 0);
	l.len += FDR_META_SIZE;
	lg_close(&l);
	expect_reject(&l, XFR_RULE_EVENT_SIZE, l.len - FDR_META_SIZE);
	/* a custom event whose payload crosses the buffer's end */
	good_log(&l, &off);
	fdr_put_custom_v5(l.b + l.len, 100, 0);
	l.len += FDR_META_SIZE + 10;
	lg_close(&l);
	expect_reject(&l, XFR_RULE_OVERREAD, l.len - FDR_META_SIZE - 10);
	/* junk between buffers */
	good_log(&l, &off);
	l.b[l.len++] = 0;
	expect_reject(&l, XFR_RULE_EXTENTS, l.len - 1);
	/* a buffer longer than the file */
	good_log(&l, &off);
	l.len -= 8;
	expect_reject(&l, XFR_RULE_EXTENTS, 32);
	/* a block that ends before its NewCPUId */
	lg_header(&l, 5, 16384);
	lg_open(&l);
	lg_block(&l, 1, 1, 0, 100);
	l.len -= FDR_META_SIZE; /* drop the NewCPUId */
	lg_close(&l);
	expect_reject(&l, XFR_RULE_TRUNCATED, l.len);
	/* a Pid before version 3 */
	lg_header(&l, 2, 16384);
	lg_open(&l);
	lg_block(&l, 1, 1, 0, 100);
	lg_close(&l);
	expect_reject(&l, XFR_RULE_KIND, 32 + 16 + 32);
	/* no block at all */
	lg_header(&l, 5, 16384);
	expect_reject(&l, XFR_RULE_EMPTY, (size_t)-1);
	/* version 6, and a log type that is neither FDR (1) nor basic (0, test_xray_basic.c) */
	good_log(&l, &off);
	l.b[0] = 6;
	expect_reject(&l, XFR_RULE_VERSION, 0);
	good_log(&l, &off);
	l.b[2] = 2;
	expect_reject(&l, XFR_RULE_HEADER, 2);
	/* shorter than a header */
	l.len = 20;
	expect_reject(&l, XFR_RULE_HEADER, (size_t)-1);
}

/* --- the rules of llvm-xray account (xfr_verify) --------------------------------------- */

static int verify_log(const struct log *l, struct rd_error *err)
{
	rd_error_clear(err);
	return xfr_verify_buf(l->b, l->len, "test.xray", NULL, NULL, err);
}

static void expect_account_reject(const struct log *l, int rule, size_t off, const char *text)
{
	struct rd_error err;

	/* the grammar alone accepts it: the rule is account's */
	assert_int_equal(walk(l, NULL, NULL, &err), 0);
	assert_int_equal(verify_log(l, &err), -1);
	if (err.rule != rule || err.offset != (int64_t)off || !strstr(err.msg, text))
		print_error("want rule %d at 0x%zx (\"%s\"), got rule %d at 0x%llx: %s\n", rule,
			    off, text, err.rule, (long long)err.offset, err.msg);
	assert_int_equal(err.rule, rule);
	assert_int_equal(err.offset, (int64_t)off);
	assert_non_null(strstr(err.msg, text));
}

/* one thread: enter 1, enter 2, then what the test appends */
static void two_open(struct log *l)
{
	lg_header(l, 5, 16384);
	lg_open(l);
	lg_block(l, 7, 1, 0, 1000);
	lg_fn(l, FDR_ENTER, 1, 0);
	lg_fn(l, FDR_ENTER_ARGS, 2, 10);
	fdr_put_call_arg(l->b + l->len, 42);
	l->len += FDR_META_SIZE;
}

static void test_account_exits(void **state)
{
	struct log l;
	struct rd_error err;
	size_t off;

	(void)state;
	/* accepted: balanced, a tail exit closes its own function, entries left open at the end
	 * (account only counts what it closes) */
	two_open(&l);
	lg_fn(&l, FDR_EXIT, 2, 5);
	lg_fn(&l, FDR_ENTER, 3, 5);
	lg_fn(&l, FDR_TAIL_EXIT, 3, 5);
	lg_close(&l);
	assert_int_equal(verify_log(&l, &err), 0);

	/* an exit on an empty stack: the first record of its thread */
	lg_header(&l, 5, 16384);
	lg_open(&l);
	lg_block(&l, 7, 1, 0, 1000);
	off = lg_fn(&l, FDR_EXIT, 1, 0);
	lg_close(&l);
	expect_account_reject(&l, XFR_RULE_EXIT_EMPTY, off, "Exit of function 1 on thread 7");

	/* ... or after its thread's stack was emptied */
	two_open(&l);
	lg_fn(&l, FDR_EXIT, 2, 5);
	lg_fn(&l, FDR_EXIT, 1, 5);
	off = lg_fn(&l, FDR_TAIL_EXIT, 1, 5);
	lg_close(&l);
	expect_account_reject(&l, XFR_RULE_EXIT_EMPTY, off, "TailExit of function 1");

	/* the exit of the outer function while the inner one is open: deduce-sibling-calls
	 * would close both, account by default rejects */
	two_open(&l);
	off = lg_fn(&l, FDR_EXIT, 1, 5);
	lg_close(&l);
	expect_account_reject(&l, XFR_RULE_EXIT_MISMATCH, off,
			      "innermost open entry is function 2: llvm-xray account rejects the "
			      "log (with --deduce-sibling-calls it would close 2 frames)");

	/* the exit of a function that is not open at all */
	two_open(&l);
	off = lg_fn(&l, FDR_TAIL_EXIT, 9, 5);
	lg_close(&l);
	expect_account_reject(&l, XFR_RULE_EXIT_MISMATCH, off, "even with --deduce-sibling-calls");

	/* stacks are per thread: thread 8's exit does not close thread 7's entry, even in the
	 * same buffer */
	two_open(&l);
	lg_block(&l, 8, 1, 0, 2000);
	off = lg_fn(&l, FDR_EXIT, 2, 5);
	lg_close(&l);
	expect_account_reject(&l, XFR_RULE_EXIT_EMPTY, off, "on thread 8");

	/* ... and go on across blocks of the same thread (thread 8 starts at thread 7's first
	 * TSC: whichever account replays first, no record is below it) */
	two_open(&l);
	lg_block(&l, 8, 1, 0, 1000);
	lg_fn(&l, FDR_ENTER, 5, 0);
	lg_block(&l, 7, 1, 0, 3000);
	lg_fn(&l, FDR_EXIT, 2, 5);
	lg_fn(&l, FDR_EXIT, 1, 5);
	lg_close(&l);
	assert_int_equal(verify_log(&l, &err), 0);
}

static void test_account_tsc(void **state)
{
	struct log l;
	struct rd_error err;
	size_t off;

	(void)state;
	/* one thread whose time goes back below its first record: a NewCPUId sets it */
	lg_header(&l, 5, 16384);
	lg_open(&l);
	lg_block(&l, 7, 1, 0, 1000);
	lg_fn(&l, FDR_ENTER, 1, 0);
	fdr_put_new_cpu(l.b + l.len, 1, 999);
	l.len += FDR_META_SIZE;
	off = lg_fn(&l, FDR_EXIT, 1, 0);
	lg_close(&l);
	expect_account_reject(&l, XFR_RULE_TSC_ORDER, off, "at TSC 999, below 1000");
	/* back, but not below the first record: accepted (account compares with the first) */
	l.b[off - FDR_META_SIZE + 3] = 0xe9; /* NewCPUId tsc 999 -> 1001 (0x3e9) */
	l.b[off - FDR_META_SIZE + 4] = 0x03;
	assert_int_equal(verify_log(&l, &err), 0);

	/* two threads of one process: whichever llvm-xray's index iterates first, the other
	 * one's records all lie below its first one */
	{
		int32_t tids[2] = { 7, 8 };
		uint32_t scratch[256];
		size_t first = xr_llvm_first_key(1, tids, 2, scratch);
		size_t offs[2];

		lg_header(&l, 5, 16384);
		lg_open(&l);
		for (int t = 0; t < 2; t++) {
			lg_block(&l, tids[t], 1, 0, (size_t)t == first ? 5000 : 100);
			offs[t] = lg_fn(&l, FDR_ENTER, 1, 0);
			lg_fn(&l, FDR_EXIT, 1, 5);
		}
		lg_close(&l);
		expect_account_reject(&l, XFR_RULE_TSC_ORDER, offs[1 - first], "below 5000");
	}
}

/* what account accepts: the log compiler-rt wrote (tests/samples/xray) */
static void test_account_golden(void **state)
{
	char path[512];
	struct xfr_counts c;
	struct rd_error err;

	(void)state;
	unit_sample_path(path, sizeof(path), "xray/fdr-v5.xray");
	rd_error_clear(&err);
	assert_int_equal(xfr_verify(path, NULL, &c, &err), 0);
	assert_int_equal(c.threads, 3);
	assert_int_equal(c.entries, 33);
	assert_int_equal(c.exits + c.tail_exits, 33);
}

/* --- logs read from a file (xfr_walk's window) ----------------------------------------- */

/* a log too big for struct log: several windows long */
struct biglog {
	uint8_t *b;
	size_t len, cap;
};

static uint8_t *bl_put(struct biglog *l, size_t n)
{
	if (l->len + n > l->cap) {
		l->cap = (l->len + n) * 2;
		l->b = realloc(l->b, l->cap);
		assert_non_null(l->b);
	}
	l->len += n;
	return l->b + l->len - n;
}

/* a custom event of N payload bytes (their values from the offset) */
static void bl_event(struct biglog *l, size_t n)
{
	fdr_put_custom_v5(bl_put(l, FDR_META_SIZE), (int32_t)n, 3);
	for (size_t i = 0; i < n; i++)
		bl_put(l, 1)[0] = (uint8_t)(l->len * 7);
}

/*
 * A v5 log of one buffer whose records straddle every 64 KiB boundary up to LIMIT (the
 * window's size is a multiple of that, so a window ends inside a record whatever its size):
 * before each boundary a custom event sized so that the next record starts 5 bytes before it
 * (a metadata record), or 3 (a function record); between them, blocks of two threads with
 * balanced calls and arguments. One event longer than 512 KiB, more than a window.
 */
static void bl_build(struct biglog *l, size_t limit)
{
	size_t extent, step = 64 << 10, next = step;
	uint64_t size;
	int k = 0;

	memset(l, 0, sizeof(*l));
	fdr_put_header(bl_put(l, FDR_HEADER_SIZE), 5, 3, 2500000000ull, 0);
	extent = l->len;
	bl_put(l, FDR_META_SIZE);
	while (l->len < limit) {
		int32_t tid = 10 + k % 2, pid = 7;
		uint8_t wall[12] = {0};

		fdr_put_meta(bl_put(l, FDR_META_SIZE), FDR_NEW_BUFFER, &tid, 4);
		fdr_put_meta(bl_put(l, FDR_META_SIZE), FDR_WALLCLOCK, wall, 12);
		fdr_put_meta(bl_put(l, FDR_META_SIZE), FDR_PID, &pid, 4);
		fdr_put_new_cpu(bl_put(l, FDR_META_SIZE), 1, 1000 + (uint64_t)k * 100000);
		for (int i = 0; i < 200; i++) {
			fdr_put_fn(bl_put(l, FDR_FN_SIZE), FDR_ENTER_ARGS, 5 + i % 3, 2);
			fdr_put_call_arg(bl_put(l, FDR_META_SIZE), (uint64_t)i);
			fdr_put_fn(bl_put(l, FDR_FN_SIZE), FDR_EXIT, 5 + i % 3, 1);
		}
		if (k == 3)
			bl_event(l, 600 << 10);
		/* the next record straddles the boundary: an event fills the gap up to it */
		while (next <= l->len + FDR_META_SIZE + 8)
			next += step;
		bl_event(l, next - (k % 2 ? 3 : 5) - l->len - FDR_META_SIZE);
		if (k % 2)
			fdr_put_fn(bl_put(l, FDR_FN_SIZE), FDR_ENTER, 9, 1);
		else
			fdr_put_tsc_wrap(bl_put(l, FDR_META_SIZE), 2000000000ull + l->len);
		k++;
	}
	size = l->len - extent - FDR_META_SIZE;
	fdr_put_meta(l->b + extent, FDR_BUFFER_EXTENTS, &size, 8);
}

static void bl_write(const struct biglog *l, const char *path)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(l->b, 1, l->len, f), l->len);
	assert_int_equal(fclose(f), 0);
}

/* every record as the walk hands it, its payload as a checksum (the pointer is the window's) */
struct trail {
	struct xfr_rec *r;
	uint64_t *sum;
	size_t n, cap;
};

static int trail_rec(void *ctx, const struct xfr_header *h, const struct xfr_rec *r)
{
	struct trail *t = ctx;
	uint64_t sum = 1469598103934665603ull;

	(void)h;
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 1024;
		t->r = realloc(t->r, t->cap * sizeof(*t->r));
		t->sum = realloc(t->sum, t->cap * sizeof(*t->sum));
		assert_true(t->r && t->sum);
	}
	for (size_t i = 0; i < r->payload_len; i++)
		sum = (sum ^ r->payload[i]) * 1099511628211ull;
	t->r[t->n] = *r;
	t->r[t->n].payload = NULL;
	t->sum[t->n++] = sum;
	return 0;
}

static void trail_free(struct trail *t)
{
	free(t->r);
	free(t->sum);
}

static void trail_equal(const struct trail *a, const struct trail *b)
{
	assert_int_equal(a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		if (memcmp(&a->r[i], &b->r[i], sizeof(a->r[i])) || a->sum[i] != b->sum[i])
			fail_msg("record %zu (offset 0x%llx, %s) differs", i,
				 (unsigned long long)b->r[i].off, xfr_kind_name(b->r[i].kind));
	}
}

/* a log read from its file through the window reads as the same bytes in memory: every record,
 * field and payload byte, the counts, verify's answer (after its second walk), with records
 * straddling window ends and an event longer than a window */
static void test_file_window(void **state)
{
	char dir[256], path[512];
	struct biglog l;
	struct trail mem = {0}, file = {0};
	struct xfr_counts cm, cf;
	struct rd_error err, errf;
	size_t straddle = 0;

	(void)state;
	bl_build(&l, 3 << 20);
	unit_tmpdir_make(dir, sizeof(dir), "test_xray_fdr", false);
	snprintf(path, sizeof(path), "%s/xray-log.big", dir);
	bl_write(&l, path);
	rd_error_clear(&err);
	assert_int_equal(xfr_walk_buf(l.b, l.len, path, NULL, &cm, trail_rec, &mem, &err), 0);
	assert_int_equal(xfr_walk(path, NULL, &cf, trail_rec, &file, &err), 0);
	assert_false(rd_error_isset(&err));
	trail_equal(&mem, &file);
	assert_memory_equal(&cm, &cf, sizeof(cm));
	assert_int_equal(cf.threads, 2);
	assert_true(cf.custom > 30);
	/* the log has what it is for: records across 64 KiB boundaries, of both kinds */
	for (size_t i = 0; i < file.n; i++) {
		uint64_t size = file.r[i].kind == XFR_FUNCTION ? 8 : 16;
		if ((file.r[i].off >> 16) != ((file.r[i].off + size - 1) >> 16))
			straddle |= file.r[i].kind == XFR_FUNCTION ? 1 : 2;
	}
	assert_int_equal(straddle, 3);
	/* verify: account's TSC rule breaks (thread 11, iterated first, starts later than thread
	 * 10), which takes its second walk, to the same record */
	rd_error_clear(&err);
	assert_int_equal(xfr_verify_buf(l.b, l.len, path, NULL, NULL, &err), -1);
	rd_error_clear(&errf);
	assert_int_equal(xfr_verify(path, NULL, NULL, &errf), -1);
	assert_int_equal(err.rule, XFR_RULE_TSC_ORDER);
	assert_int_equal(errf.rule, err.rule);
	assert_int_equal(errf.offset, err.offset);
	assert_string_equal(errf.msg, err.msg);
	trail_free(&mem);
	trail_free(&file);
	free(l.b);
	unit_tmpdir_remove(dir);
}

struct shrink {
	const char *path;
	size_t to;
	int calls;
};

/* on the first record, the file is cut short (another process truncating it) */
static int shrink_rec(void *ctx, const struct xfr_header *h, const struct xfr_rec *r)
{
	struct shrink *s = ctx;

	(void)h;
	(void)r;
	if (s->calls++ == 0)
		assert_int_equal(truncate(s->path, (off_t)s->to), 0);
	return 0;
}

/* a log that shrinks while it is read is an error at the offset where its bytes ran out, not
 * a crash (a mapping of it took SIGBUS on the first page past the new end) */
static void test_file_shrinks(void **state)
{
	char dir[256], path[512];
	struct biglog l;
	struct shrink s = {.path = path, .to = 8192};
	struct rd_error err;

	(void)state;
	bl_build(&l, 4 << 20);
	unit_tmpdir_make(dir, sizeof(dir), "test_xray_fdr", false);
	snprintf(path, sizeof(path), "%s/xray-log.shrinks", dir);
	bl_write(&l, path);
	rd_error_clear(&err);
	assert_int_equal(xfr_walk(path, NULL, NULL, shrink_rec, &s, &err), -1);
	assert_int_equal(err.rule, XFR_RULE_IO);
	assert_true(err.offset >= 8192 && (size_t)err.offset < l.len);
	assert_non_null(strstr(err.msg, "shrank while read"));
	free(l.b);
	unit_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v5_roundtrip), cmocka_unit_test(test_v5_blocks),
		cmocka_unit_test(test_v1),	     cmocka_unit_test(test_v4_custom),
		cmocka_unit_test(test_rejects),	     cmocka_unit_test(test_account_exits),
		cmocka_unit_test(test_account_tsc),  cmocka_unit_test(test_account_golden),
		cmocka_unit_test(test_file_window),  cmocka_unit_test(test_file_shrinks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
