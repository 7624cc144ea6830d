/*
 * test_xray_basic: compiler-rt's basic-mode ("naive") XRay logs. The reader
 * (formats/xray/read_xray_basic.c, through xfr_walk_buf/xfr_verify_buf) on logs laid out here
 * byte by byte from llvm-xray's reading (not with the writer's helpers): a good log reads back
 * record for record, the header alone is valid, and each rule rejects a malformed log naming
 * the offending record's offset (size, record type, function type, version, an argument
 * after another function's record or first, account's empty-stack exit and the TSC below
 * the first record). The writer's transcoder (formats/xray/sink_xray_basic.c, xb_transcode):
 * FDR streams in, basic records out, with compiler-rt's filters (duration threshold, stack
 * depth), arguments after their entry, and an exit without its entry left out.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/xray/read_xray.h"
#include "formats/xray/fdr_encode.h"
#include "formats/xray/sink_xray_basic.h"
#include "unit_util.h"

/* --- a basic log laid out by hand ------------------------------------------------------ */

struct blog {
	uint8_t b[2048];
	size_t len;
};

static void put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static void bl_header(struct blog *l, uint16_t version)
{
	memset(l, 0, sizeof(*l));
	put16(l->b, version);
	put16(l->b + 2, 0); /* naive */
	put32(l->b + 4, 3);
	put64(l->b + 8, 1000000000ull);
	l->len = 32;
}

static size_t bl_fn(struct blog *l, uint8_t type, uint32_t fid, uint64_t tsc, uint32_t tid,
		    uint32_t pid)
{
	uint8_t *p = l->b + l->len;
	put16(p, 0);
	p[2] = 1; /* cpu */
	p[3] = type;
	put32(p + 4, fid);
	put64(p + 8, tsc);
	put32(p + 16, tid);
	put32(p + 20, pid);
	l->len += 32;
	return l->len - 32;
}

static size_t bl_arg(struct blog *l, uint32_t fid, uint32_t tid, uint32_t pid, uint64_t arg)
{
	uint8_t *p = l->b + l->len;
	put16(p, 1);
	put32(p + 4, fid);
	put32(p + 8, tid);
	put32(p + 12, pid);
	put64(p + 16, arg);
	l->len += 32;
	return l->len - 32;
}

/* enter f1 (arg 42), enter f2, exit f2, tail-exit f1 on thread 7; f3 on thread 8 */
static void good_log(struct blog *l)
{
	bl_header(l, 3);
	bl_fn(l, 3, 1, 100, 7, 50);
	bl_arg(l, 1, 7, 50, 42);
	bl_fn(l, 0, 2, 110, 7, 50);
	bl_fn(l, 1, 2, 120, 7, 50);
	bl_fn(l, 0, 3, 125, 8, 50);
	bl_fn(l, 2, 1, 130, 7, 50);
	bl_fn(l, 1, 3, 140, 8, 50);
}

struct seen {
	struct xfr_rec r[32];
	size_t n;
};

static int collect(void *ctx, const struct xfr_header *h, const struct xfr_rec *r)
{
	struct seen *s = ctx;
	(void)h;
	if (s->n < 32)
		s->r[s->n++] = *r;
	return 0;
}

static void expect_reject(const struct blog *l, int rule, int64_t off, int verify)
{
	struct rd_error err;
	int r;

	rd_error_clear(&err);
	r = verify ? xfr_verify_buf(l->b, l->len, "t.xray", NULL, NULL, &err)
		   : xfr_walk_buf(l->b, l->len, "t.xray", NULL, NULL, NULL, NULL, &err);
	assert_int_equal(r, -1);
	assert_int_equal(err.rule, rule);
	assert_int_equal(err.offset, off);
}

static void test_good(void **state)
{
	struct blog l;
	struct seen s = {.n = 0};
	struct xfr_header h;
	struct xfr_counts c;
	struct rd_error err;

	(void)state;
	good_log(&l);
	rd_error_clear(&err);
	assert_int_equal(xfr_walk_buf(l.b, l.len, "t.xray", &h, &c, collect, &s, &err), 0);
	assert_int_equal(h.type, 0);
	assert_int_equal(h.version, 3);
	assert_int_equal(h.cycle_frequency, 1000000000ull);
	assert_int_equal(c.records, 7);
	assert_int_equal(c.entries, 3);
	assert_int_equal(c.exits, 2);
	assert_int_equal(c.tail_exits, 1);
	assert_int_equal(c.args, 1);
	assert_int_equal(c.threads, 2);
	assert_int_equal(c.blocks, 0);
	assert_int_equal(s.n, 7);
	assert_int_equal(s.r[0].kind, XFR_FUNCTION);
	assert_int_equal(s.r[0].fn_type, XFR_ENTER_ARGS);
	assert_int_equal(s.r[0].fid, 1);
	assert_int_equal(s.r[0].tsc, 100);
	assert_int_equal(s.r[0].tid, 7);
	assert_int_equal(s.r[0].pid, 50);
	assert_int_equal(s.r[0].cpu, 1);
	assert_int_equal(s.r[1].kind, XFR_CALL_ARG);
	assert_int_equal(s.r[1].value, 42);
	assert_int_equal(s.r[1].off, 64);
	assert_int_equal(s.r[5].fn_type, XFR_TAIL_EXIT);
	assert_int_equal(s.r[6].tid, 8);
	rd_error_clear(&err);
	assert_int_equal(xfr_verify_buf(l.b, l.len, "t.xray", NULL, NULL, &err), 0);
	/* the header alone: what compiler-rt writes when nothing was recorded */
	bl_header(&l, 3);
	rd_error_clear(&err);
	assert_int_equal(xfr_verify_buf(l.b, l.len, "t.xray", NULL, &c, &err), 0);
	assert_int_equal(c.records, 0);
	/* version 2: no pid in the records */
	good_log(&l);
	put16(l.b, 2);
	s.n = 0;
	rd_error_clear(&err);
	assert_int_equal(xfr_walk_buf(l.b, l.len, "t.xray", NULL, NULL, collect, &s, &err), 0);
	assert_int_equal(s.r[0].pid, 0);
}

static void test_malformed(void **state)
{
	struct blog l;
	size_t off;

	(void)state;
	/* a version llvm-xray 14 does not read */
	good_log(&l);
	put16(l.b, 4);
	expect_reject(&l, XFR_RULE_VERSION, 0, 0);
	/* records not a whole number of 32 bytes: the offset of the partial record */
	good_log(&l);
	l.len += 5;
	expect_reject(&l, XFR_RULE_BASIC_SIZE, 32 + 7 * 32, 0);
	/* shorter than the header */
	l.len = 31;
	expect_reject(&l, XFR_RULE_HEADER, -1, 0);
	/* an unknown record type */
	good_log(&l);
	put16(l.b + 32 + 3 * 32, 7);
	expect_reject(&l, XFR_RULE_BASIC_RECORD, 32 + 3 * 32, 0);
	/* a function record of type 4 */
	good_log(&l);
	l.b[32 + 2 * 32 + 3] = 4;
	expect_reject(&l, XFR_RULE_FN_TYPE, 32 + 2 * 32 + 3, 0);
	/* an argument first */
	bl_header(&l, 3);
	off = bl_arg(&l, 1, 7, 50, 1);
	expect_reject(&l, XFR_RULE_BASIC_ARG, (int64_t)off, 0);
	/* an argument after another function's record, another thread's, another process's */
	bl_header(&l, 3);
	bl_fn(&l, 3, 1, 100, 7, 50);
	off = bl_arg(&l, 2, 7, 50, 1);
	expect_reject(&l, XFR_RULE_BASIC_ARG, (int64_t)off, 0);
	bl_header(&l, 3);
	bl_fn(&l, 3, 1, 100, 7, 50);
	off = bl_arg(&l, 1, 8, 50, 1);
	expect_reject(&l, XFR_RULE_BASIC_ARG, (int64_t)off, 0);
	bl_header(&l, 3);
	bl_fn(&l, 3, 1, 100, 7, 50);
	off = bl_arg(&l, 1, 7, 51, 1);
	expect_reject(&l, XFR_RULE_BASIC_ARG, (int64_t)off, 0);
	/* account's rules (verify only): an exit on an empty stack, of another function, and a
	 * record below the first record's TSC (a basic log is replayed in file order) */
	bl_header(&l, 3);
	bl_fn(&l, 0, 1, 100, 7, 50);
	bl_fn(&l, 1, 1, 110, 7, 50);
	off = bl_fn(&l, 1, 1, 120, 7, 50);
	expect_reject(&l, XFR_RULE_EXIT_EMPTY, (int64_t)off, 1);
	bl_header(&l, 3);
	bl_fn(&l, 0, 1, 100, 7, 50);
	off = bl_fn(&l, 1, 2, 120, 7, 50);
	expect_reject(&l, XFR_RULE_EXIT_MISMATCH, (int64_t)off, 1);
	bl_header(&l, 3);
	bl_fn(&l, 0, 1, 100, 7, 50);
	off = bl_fn(&l, 0, 2, 90, 8, 50);
	expect_reject(&l, XFR_RULE_TSC_ORDER, (int64_t)off, 1);
}

/* --- the transcoder: FDR stream in, basic records out ---------------------------------- */

struct stream {
	uint8_t b[1024];
	size_t len;
	uint64_t tsc;
};

static void st_cpu(struct stream *s, uint16_t cpu, uint64_t tsc)
{
	fdr_put_new_cpu(s->b + s->len, cpu, tsc);
	s->len += FDR_META_SIZE;
	s->tsc = tsc;
}

static void st_fn(struct stream *s, unsigned type, uint32_t fid, uint64_t tsc)
{
	fdr_put_fn(s->b + s->len, type, fid, (uint32_t)(tsc - s->tsc));
	s->len += FDR_FN_SIZE;
	s->tsc = tsc;
}

static void st_arg(struct stream *s, uint64_t arg)
{
	fdr_put_call_arg(s->b + s->len, arg);
	s->len += FDR_META_SIZE;
}

/* transcode into a temporary file; the log read back (header + records) in l */
static int transcode(const struct stream *s, const struct xb_options *o, uint64_t thr_ticks,
		     struct blog *l, uint64_t *filtered)
{
	char path[] = "/tmp/test_xray_basic.XXXXXX";
	int fd = mkstemp(path);
	struct xb_frame stack[8];
	uint8_t out[32 * 64];
	struct xb_work w = {.out = out,
			    .cap = o->buffer_size < 64 ? o->buffer_size : 64,
			    .stack = stack,
			    .stack_cap = 8,
			    .fd = fd};
	uint8_t hdr[32];
	ssize_t n;
	int r;

	assert_true(fd >= 0);
	unlink(path);
	xb_put_header(hdr, 1000000000ull, 3);
	assert_int_equal(write(fd, hdr, 32), 32);
	r = xb_transcode(&w, o, thr_ticks, s->b, s->len, 7, 50);
	if (r == 0)
		r = xb_flush(&w);
	memset(l, 0, sizeof(*l));
	n = pread(fd, l->b, sizeof(l->b), 0);
	close(fd);
	l->len = n > 0 ? (size_t)n : 0;
	if (filtered)
		*filtered = w.filtered;
	return r;
}

static void test_transcode(void **state)
{
	struct xb_options o = {.threshold_us = 0, .max_depth = 64, .buffer_size = 1024};
	struct stream s = {.len = 0};
	struct blog l;
	struct seen seen = {.n = 0};
	struct xfr_counts c;
	struct rd_error err;
	uint64_t filtered;

	(void)state;
	/* everything kept: enter-args f1 (arg 9), f2 on CPU 3 after a CPU change, exits */
	st_cpu(&s, 2, 1000);
	st_fn(&s, FDR_ENTER_ARGS, 1, 1010);
	st_arg(&s, 9);
	st_cpu(&s, 3, 1020);
	st_fn(&s, FDR_ENTER, 2, 1025);
	st_fn(&s, FDR_EXIT, 2, 1030);
	st_fn(&s, FDR_TAIL_EXIT, 1, 1040);
	assert_int_equal(transcode(&s, &o, 0, &l, &filtered), 0);
	assert_int_equal(filtered, 0);
	rd_error_clear(&err);
	assert_int_equal(xfr_walk_buf(l.b, l.len, "t", NULL, &c, collect, &seen, &err), 0);
	assert_int_equal(seen.n, 5);
	assert_int_equal(seen.r[0].fn_type, XFR_ENTER_ARGS);
	assert_int_equal(seen.r[0].tsc, 1010);
	assert_int_equal(seen.r[0].cpu, 2);
	assert_int_equal(seen.r[0].tid, 7);
	assert_int_equal(seen.r[0].pid, 50);
	assert_int_equal(seen.r[1].kind, XFR_CALL_ARG);
	assert_int_equal(seen.r[1].value, 9);
	assert_int_equal(seen.r[2].fid, 2);
	assert_int_equal(seen.r[2].tsc, 1025);
	assert_int_equal(seen.r[2].cpu, 3);
	assert_int_equal(seen.r[4].fn_type, XFR_TAIL_EXIT);
	assert_int_equal(seen.r[4].tsc, 1040);
	rd_error_clear(&err);
	assert_int_equal(xfr_verify_buf(l.b, l.len, "t", NULL, NULL, &err), 0);

	/* duration threshold 8 ticks: f2 (5 ticks) is taken out, f1 (30) stays (entry,
	 * argument, tail exit) */
	assert_int_equal(transcode(&s, &o, 8, &l, &filtered), 0);
	assert_int_equal(l.len, 32 + 3 * 32);
	assert_int_equal(filtered, 2);
	/* threshold 100: f1 stays all the same, as it ended on another CPU than it began on
	 * (compiler-rt filters a call only on one CPU) */
	assert_int_equal(transcode(&s, &o, 100, &l, &filtered), 0);
	assert_int_equal(l.len, 32 + 3 * 32);
	assert_int_equal(filtered, 2);
	/* the same on one CPU: f1 (enter + argument) goes too with a threshold of 100 */
	s.len = 0;
	st_cpu(&s, 2, 1000);
	st_fn(&s, FDR_ENTER_ARGS, 1, 1010);
	st_arg(&s, 9);
	st_fn(&s, FDR_ENTER, 2, 1025);
	st_fn(&s, FDR_EXIT, 2, 1030);
	st_fn(&s, FDR_EXIT, 1, 1040);
	assert_int_equal(transcode(&s, &o, 100, &l, &filtered), 0);
	assert_int_equal(l.len, 32);
	assert_int_equal(filtered, 5);
	/* ... unless the entry was written out already (a buffer of 2 records) */
	o.buffer_size = 2;
	assert_int_equal(transcode(&s, &o, 100, &l, &filtered), 0);
	assert_int_equal(l.len, 32 + 3 * 32); /* f1's entry, argument, exit */
	o.buffer_size = 1024;

	/* depth 1: f2's entry and exit are left out */
	o.max_depth = 1;
	assert_int_equal(transcode(&s, &o, 0, &l, &filtered), 0);
	seen.n = 0;
	rd_error_clear(&err);
	assert_int_equal(xfr_walk_buf(l.b, l.len, "t", NULL, NULL, collect, &seen, &err), 0);
	assert_int_equal(seen.n, 3);
	assert_int_equal(seen.r[2].fid, 1);
	assert_int_equal(filtered, 2);
	o.max_depth = 64;

	/* an exit whose entry is not in the stream (a gap) is left out */
	s.len = 0;
	st_cpu(&s, 0, 500);
	st_fn(&s, FDR_EXIT, 4, 510);
	st_fn(&s, FDR_ENTER, 1, 520);
	st_fn(&s, FDR_EXIT, 1, 530);
	assert_int_equal(transcode(&s, &o, 0, &l, &filtered), 0);
	assert_int_equal(l.len, 32 + 2 * 32);
	assert_int_equal(filtered, 1);
	rd_error_clear(&err);
	assert_int_equal(xfr_verify_buf(l.b, l.len, "t", NULL, NULL, &err), 0);

	/* a stream that is not ours: an unknown metadata kind */
	s.len = 0;
	st_cpu(&s, 0, 500);
	fdr_put_meta(s.b + s.len, FDR_WALLCLOCK, "x", 1);
	s.len += FDR_META_SIZE;
	assert_int_equal(transcode(&s, &o, 0, &l, NULL), -1);
}

/* a file that only begins like a basic log (a Cacheray trace has no header: its first
 * record's bytes can read as version 1, type 0) is not taken for one; a real header is */
static void test_sniff(void **state)
{
	char path[] = "/tmp/flightrec-test-xbsniff-XXXXXX";
	uint8_t buf[96] = { 1, 0, 0, 0 }; /* version 1, type 0, then a record's bytes */
	uint64_t addr = 0x7ffd12345678ull, hz = 2400000000ull;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	memcpy(buf + 8, &addr, 8); /* an address where the TSC frequency would be */
	assert_int_equal(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	assert_false(xfr_sniff_file(path));
	memcpy(buf + 8, &hz, 8); /* a basic header: a TSC frequency, whole records after */
	assert_int_equal(pwrite(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	assert_true(xfr_sniff_file(path));
	assert_int_equal(ftruncate(fd, 80), 0); /* not whole 32-byte records */
	assert_false(xfr_sniff_file(path));
	close(fd);
	unlink(path);
}

static void test_options(void **state)
{
	struct xb_options o;

	(void)state;
	xb_options_default(&o);
	assert_int_equal(o.threshold_us, 5);
	assert_int_equal(o.max_depth, 64);
	assert_int_equal(o.buffer_size, 1024);
	assert_int_equal(
		xb_options_parse(&o, "func_duration_threshold_us=1000 max_stack_depth=2", NULL), 0);
	assert_int_equal(o.threshold_us, 1000);
	assert_int_equal(o.max_depth, 2);
	/* XRAY_OPTIONS' deprecated names, among other flags */
	xb_options_default(&o);
	assert_int_equal(xb_options_parse(&o,
					  "patch_premain=true:xray_naive_log_max_stack_depth=3 "
					  "xray_naive_log_thread_buffer_size='16' verbosity=1",
					  "xray_naive_log_"),
			 0);
	assert_int_equal(o.max_depth, 3);
	assert_int_equal(o.buffer_size, 16);
	assert_int_equal(o.threshold_us, 5);
	assert_int_equal(xb_options_parse(&o, "max_stack_depth=-1", NULL), -1);
	assert_int_equal(xb_options_parse(&o, "max_stack_depth=2x", NULL), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_transcode),
		cmocka_unit_test(test_sniff),
		cmocka_unit_test(test_options),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
