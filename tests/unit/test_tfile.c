/*
 * test_tfile: the GDB trace file writer's frame encoding (formats/tfile/sink_tfile.c) against the
 * offline reader (formats/tfile/read_tfile), written apart: a frame built from a tracepoint hit reads back
 * block for block (the register block at gdb's amd64 offsets, the stack slice, the trace state
 * variables); every rule of the reader rejects a file that breaks it, naming the offset; the
 * files gdb itself wrote (tests/samples/gdb-tfile) pass. Also: tracepoints resolved by name
 * in this very binary (rec_tp_setup, rec_tp_find), and the ring encodings read back as function
 * events (fn_decode).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/xcode/fn_decode.h"
#include "librecord/rec_session.h"
#include "librecord/rec_tp.h"
#include "formats/tfile/sink_tfile.h"
#include "formats/uftrace/uftrace_format.h"
#include "formats/tfile/read_tfile.h"
#include "formats/xray/fdr_encode.h"
#include "unit_util.h"

struct rec_frontend rec_frontend_self_storage = {.name = "test_tfile"};

/* --- a file builder ------------------------------------------------------------------- */

struct tf {
	uint8_t b[1 << 16];
	size_t len;
};

static void tf_str(struct tf *t, const char *s)
{
	memcpy(t->b + t->len, s, strlen(s));
	t->len += strlen(s);
}

static void tf_bytes(struct tf *t, const void *p, size_t n)
{
	memcpy(t->b + t->len, p, n);
	t->len += n;
}

/* a minimal file: header, R 230, one tracepoint, the definitions' end */
static void tf_head(struct tf *t, const char *extra)
{
	t->len = 0;
	tf_str(t, "\x7fTRACE0\n");
	tf_str(t, "R 230\n");
	tf_str(t, "tp T1:401000:E:0:0\n");
	tf_str(t, "tsv 1:0:0:746964\n"); /* tid */
	if (extra)
		tf_str(t, extra);
	tf_str(t, "\n");
}

static char *tf_save(const struct tf *t)
{
	static char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/test_tfile.%d.tf", (int)getpid());
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(t->b, 1, t->len, f), t->len);
	fclose(f);
	return path;
}

/* open + walk; the rule broken (0: none) and its offset */
static int tf_check(const struct tf *t, int64_t *off)
{
	char *path = tf_save(t);
	struct rd_error err;
	struct tfr_file f;
	int ret;

	rd_error_clear(&err);
	ret = tfr_open(path, &f, &err);
	if (ret == 0)
		ret = tfr_walk(&f, NULL, NULL, NULL, &err);
	tfr_close(&f);
	unlink(path);
	if (off)
		*off = err.offset;
	return ret == 0 ? 0 : err.rule;
}

/* a hit as the hooks leave it in the ring, with recognisable registers and stack */
static struct rec_tp_frame *make_frame(uint32_t stack_len)
{
	struct rec_tp_frame *f = calloc(1, rec_tp_frame_size(stack_len));
	uint8_t *stack = (uint8_t *)(f + 1);

	f->size = (uint32_t)rec_tp_frame_size(stack_len);
	f->magic = REC_TP_FRAME_MAGIC;
	f->tpnum = 1;
	f->tid = 4242;
	f->stack_len = stack_len;
	f->ns = 123456789;
	f->hit = 7;
	for (int i = 0; i < 16; i++)
		f->regs.gpr[i] = 0x1000 + (uint64_t)i;
	f->regs.gpr[REC_TP_RSP] = 0x7ffd0000;
	f->regs.rip = 0x401000;
	f->regs.eflags = 0x246;
	f->regs.fs_base = 0x7f0000001000;
	f->regs.mxcsr = 0x1f80;
	f->regs.fcw = 0x37f;
	for (int i = 0; i < 16; i++)
		memset(f->regs.xmm[i], 0xa0 + i, 16);
	for (uint32_t i = 0; i < stack_len; i++)
		stack[i] = (uint8_t)(i * 7);
	return f;
}

/* --- the writer's frames, read back ---------------------------------------------------- */

struct seen {
	int frames;
	int r, m, v;
	uint64_t vals[4];
	const uint8_t *regs;
	uint64_t maddr;
	uint32_t mlen;
	uint8_t mfirst, mlast;
};

static int seen_block(void *arg, const struct tfr_frame *fr, const struct tfr_block *b)
{
	struct seen *s = arg;

	(void)fr;
	if (b->type == 'R') {
		s->r++;
		s->regs = b->data;
	} else if (b->type == 'M') {
		s->m++;
		s->maddr = b->addr;
		s->mlen = b->len;
		s->mfirst = b->data[0];
		s->mlast = b->data[b->len - 1];
	} else {
		if (b->tsv >= 1 && b->tsv <= 3)
			s->vals[b->tsv] = (uint64_t)b->value;
		s->v++;
	}
	return 0;
}

static int seen_frame(void *arg, const struct tfr_frame *fr)
{
	struct seen *s = arg;
	assert_int_equal(fr->tpnum, 1);
	s->frames++;
	return 0;
}

static void test_frame_roundtrip(void **state)
{
	struct rec_tp_frame *f = make_frame(512);
	uint8_t *frame = malloc(tfile_frame_size(f));
	struct tf *t = calloc(1, sizeof(*t));
	struct seen s = {0};
	struct rd_error err;
	struct tfr_file tf;
	size_t n = tfile_encode_frame(f, frame);
	uint32_t v32;
	uint64_t v64;
	char *path;

	(void)state;
	assert_int_equal(n, tfile_frame_size(f));
	assert_int_equal(n, 6 + 1 + 560 + 11 + 512 + 3 * 13);
	tf_head(t, "status 0;tstop::0;tframes:2;tcreated:2;\n");
	tf_bytes(t, frame, n);
	tf_bytes(t, frame, n);
	tf_bytes(t, "\0\0\0\0", 4);
	path = tf_save(t);
	rd_error_clear(&err);
	assert_int_equal(tfr_open(path, &tf, &err), 0);
	assert_int_equal(tf.regsize, 560);
	assert_int_equal(tfr_walk(&tf, seen_frame, seen_block, &s, &err), 0);
	assert_int_equal(s.frames, 2);
	assert_int_equal(s.r, 2);
	assert_int_equal(s.m, 2);
	assert_int_equal(s.v, 6);
	assert_int_equal(tf.nframes, 2);
	/* gdb's amd64 layout: 16 GPRs, rip, eflags, cs, ss, ..., xmm0 at 276, mxcsr at 532 */
	memcpy(&v64, s.regs + 0, 8);
	assert_int_equal(v64, 0x1000);
	memcpy(&v64, s.regs + 15 * 8, 8);
	assert_int_equal(v64, 0x100f);
	memcpy(&v64, s.regs + 7 * 8, 8);
	assert_int_equal(v64, 0x7ffd0000);
	memcpy(&v64, s.regs + 128, 8);
	assert_int_equal(v64, 0x401000);
	memcpy(&v32, s.regs + 136, 4);
	assert_int_equal(v32, 0x246);
	memcpy(&v32, s.regs + 140, 4);
	assert_int_equal(v32, 0x33);
	memcpy(&v32, s.regs + 144, 4);
	assert_int_equal(v32, 0x2b);
	memcpy(&v32, s.regs + 244, 4);
	assert_int_equal(v32, 0x37f);
	assert_int_equal(s.regs[276], 0xa0);
	assert_int_equal(s.regs[276 + 15 * 16], 0xaf);
	memcpy(&v32, s.regs + 532, 4);
	assert_int_equal(v32, 0x1f80);
	memcpy(&v64, s.regs + 544, 8);
	assert_int_equal(v64, 0x7f0000001000);
	/* the stack slice from rsp, the variables */
	assert_int_equal(s.maddr, 0x7ffd0000);
	assert_int_equal(s.mlen, 512);
	assert_int_equal(s.mfirst, 0);
	assert_int_equal(s.mlast, (uint8_t)(511 * 7));
	assert_int_equal(s.vals[1], 4242);
	assert_int_equal(s.vals[2], 123456789);
	assert_int_equal(s.vals[3], 7);
	tfr_close(&tf);
	unlink(path);
	/* without a stack slice: no M block */
	free(f);
	f = make_frame(0);
	n = tfile_encode_frame(f, frame);
	assert_int_equal(n, 6 + 1 + 560 + 3 * 13);
	tf_head(t, NULL);
	tf_bytes(t, frame, n);
	tf_bytes(t, "\0\0", 2);
	assert_int_equal(tf_check(t, NULL), 0);
	free(f);
	free(frame);
	free(t);
}

/* --- every rule ------------------------------------------------------------------------ */

static void test_rules(void **state)
{
	struct rec_tp_frame *f = make_frame(16);
	uint8_t frame[2048];
	size_t n = tfile_encode_frame(f, frame), defs;
	struct tf *t = calloc(1, sizeof(*t));
	int64_t off;
	char line[1100];

	(void)state;
	/* the header */
	tf_head(t, NULL);
	t->b[1] = 'X';
	assert_int_equal(tf_check(t, &off), TFR_RULE_HEADER);
	assert_int_equal(off, 0);
	/* no end of the definitions */
	t->len = 0;
	tf_str(t, "\x7fTRACE0\nR 230\n");
	assert_int_equal(tf_check(t, NULL), TFR_RULE_LINE);
	/* a line of 1000 bytes */
	memset(line, 'a', sizeof(line));
	memcpy(line, "notes ", 6);
	line[1000] = '\n';
	line[1001] = '\0';
	tf_head(t, line);
	assert_int_equal(tf_check(t, NULL), TFR_RULE_LINE);
	/* an unknown line is fine (gdb warns) */
	tf_head(t, "flightrec something\n");
	tf_bytes(t, "\0\0", 2);
	assert_int_equal(tf_check(t, NULL), 0);
	/* no R line; two R lines */
	t->len = 0;
	tf_str(t, "\x7fTRACE0\ntp T1:401000:E:0:0\n\n\0\0");
	assert_int_equal(tf_check(t, NULL), TFR_RULE_REGSIZE);
	tf_head(t, "R 88\n");
	assert_int_equal(tf_check(t, NULL), TFR_RULE_REGSIZE);
	/* the size read as decimal by mistake: "R 560" is 0x560 bytes for gdb, the blocks
	 * overrun their frame */
	t->len = 0;
	tf_str(t, "\x7fTRACE0\nR 560\ntp T1:401000:E:0:0\n\n");
	defs = t->len;
	tf_bytes(t, frame, n);
	tf_bytes(t, "\0\0", 2);
	assert_int_equal(tf_check(t, &off), TFR_RULE_BLOCK);
	assert_int_equal(off, (int64_t)defs + 6);
	/* a bad status, tp, tsv line */
	tf_head(t, "status 2;\n");
	assert_int_equal(tf_check(t, NULL), TFR_RULE_DEF);
	tf_head(t, "tp T2:zz:E:0:0\n");
	assert_int_equal(tf_check(t, NULL), TFR_RULE_DEF);
	tf_head(t, "tsv 5:0:0:7\n");
	assert_int_equal(tf_check(t, NULL), TFR_RULE_DEF);
	/* the end marker missing; a frame cut short */
	tf_head(t, NULL);
	defs = t->len;
	tf_bytes(t, frame, n);
	assert_int_equal(tf_check(t, &off), TFR_RULE_TRUNCATED);
	assert_int_equal(off, (int64_t)(defs + n));
	t->len -= 10;
	assert_int_equal(tf_check(t, &off), TFR_RULE_TRUNCATED);
	assert_int_equal(off, (int64_t)defs);
	/* an unknown block type */
	tf_head(t, NULL);
	defs = t->len;
	tf_bytes(t, frame, n);
	t->b[defs + 6] = 'X';
	tf_bytes(t, "\0\0", 2);
	assert_int_equal(tf_check(t, &off), TFR_RULE_BLOCK);
	assert_int_equal(off, (int64_t)defs + 6);
	/* a frame of a tracepoint no tp T line defines */
	tf_head(t, NULL);
	defs = t->len;
	tf_bytes(t, frame, n);
	t->b[defs] = 2;
	tf_bytes(t, "\0\0", 2);
	assert_int_equal(tf_check(t, &off), TFR_RULE_TP);
	assert_int_equal(off, (int64_t)defs);
	/* tframes says otherwise */
	tf_head(t, "status 0;tstop::0;tframes:3;\n");
	tf_bytes(t, frame, n);
	tf_bytes(t, "\0\0", 2);
	assert_int_equal(tf_check(t, NULL), TFR_RULE_COUNT);
	free(f);
	free(t);
}

/* the files gdb 13 wrote itself, and our synthetic one */
static void test_samples(void **state)
{
	char dir[512];
	DIR *d;
	struct dirent *de;
	int files = 0;

	(void)state;
	unit_sample_path(dir, sizeof(dir), "gdb-tfile");
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d))) {
		char path[600];
		struct rd_error err;
		struct tfr_file f;
		size_t len = strlen(de->d_name);
		if (len < 4 || strcmp(de->d_name + len - 3, ".tf"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		rd_error_clear(&err);
		assert_int_equal(tfr_open(path, &f, &err), 0);
		assert_int_equal(tfr_walk(&f, NULL, NULL, NULL, &err), 0);
		assert_int_equal(f.nframes, 3);
		assert_true(f.ntps == 1 && f.tps[0].defined && f.tps[0].hits == 3);
		tfr_close(&f);
		files++;
	}
	closedir(d);
	assert_int_equal(files, 4); /* the 3 files gdb wrote and our synthetic one */
}

/* --- tracepoints by name, in this binary ------------------------------------------------ */

__attribute__((noinline, used)) int tp_test_alpha(int x)
{
	__asm__ __volatile__("" ::: "memory");
	return x * 3 + 1;
}

__attribute__((noinline, used)) int tp_test_beta(int x)
{
	__asm__ __volatile__("" ::: "memory");
	return x * 5 + 2;
}

static void test_tp_find(void **state)
{
	uintptr_t a = (uintptr_t)tp_test_alpha, b = (uintptr_t)tp_test_beta;
	struct rec_tp *ta, *tb;

	(void)state;
	assert_int_equal(rec_tp_setup("tp_test_beta, tp_test_alpha,tp_no_such_function", 256, 10),
			 2);
	assert_int_equal(rec_tp_stack, 256);
	assert_int_equal(rec_tp_max_frames, 10);
	/* numbered in the order given */
	assert_string_equal(rec_tps[0].name, "tp_test_beta");
	assert_int_equal(rec_tps[0].num, 1);
	assert_int_equal(rec_tps[1].num, 2);
	ta = rec_tp_find(a);
	tb = rec_tp_find(b);
	assert_non_null(ta);
	assert_non_null(tb);
	assert_ptr_equal(ta->addr, a);
	assert_ptr_equal(tb->addr, b);
	/* an address inside the function (a -pg hook reports one) */
	assert_ptr_equal(rec_tp_find(a + 4), ta);
	assert_true(rec_tp_find(a - 1) != ta); /* before the function: not its tracepoint */
	assert_ptr_equal(rec_tp_find(ta->end - 1), ta);
	assert_true(rec_tp_find(ta->end) != ta);
	assert_null(rec_tp_find((uintptr_t)test_tp_find));
	assert_null(rec_tp_find(0));
	rec_ntp = 0;
}

/* --- the ring encodings, read back ------------------------------------------------------ */

struct evs {
	int n;
	struct fn_ev ev[8];
};

static void collect(void *arg, const struct fn_ev *ev)
{
	struct evs *e = arg;
	if (e->n < 8)
		e->ev[e->n] = *ev;
	e->n++;
}

static uintptr_t fake_fn_addr(uint32_t fid)
{
	return 0x400000 + fid * 0x10;
}

static void test_decode(void **state)
{
	struct uftrace_record u[4] = {
		{100, uftrace_record_word(UFTRACE_ENTRY, 0, 0x401234)},
		{0, uftrace_record_word(UFTRACE_LOST, 0, 5)},
		{150, uftrace_record_word(UFTRACE_EXIT, 0, 0x401234)},
		{0, 0}, /* bad magic */
	};
	struct fn_decoder d = {.enc = REC_ENC_UFTRACE};
	uint8_t fdr[64];
	struct evs e = {0};

	(void)state;
	assert_int_equal(fn_decode(&d, (uint8_t *)u, 3 * sizeof(u[0]), collect, &e), 2);
	assert_int_equal(e.n, 2);
	assert_int_equal(e.ev[0].kind, FN_ENTRY);
	assert_int_equal(e.ev[0].ns, 100);
	assert_int_equal(e.ev[0].addr, 0x401234);
	assert_int_equal(e.ev[1].kind, FN_EXIT);
	assert_int_equal(e.ev[1].ns, 150);
	e.n = 0;
	assert_int_equal(fn_decode(&d, (uint8_t *)u, sizeof(u), collect, &e), -1);

	/* FDR: NewCPUId, entry +5, exit +7, tail exit +1 */
	d = (struct fn_decoder){.enc = REC_ENC_FDR, .fn_addr = fake_fn_addr};
	fdr_put_new_cpu(fdr, 3, 1000);
	fdr_put_fn(fdr + 16, FDR_ENTER, 9, 5);
	fdr_put_fn(fdr + 24, FDR_EXIT, 9, 7);
	fdr_put_call_arg(fdr + 32, 42);
	fdr_put_fn(fdr + 48, FDR_TAIL_EXIT, 2, 1);
	e.n = 0;
	assert_int_equal(fn_decode(&d, fdr, 56, collect, &e), 3);
	assert_int_equal(e.ev[0].kind, FN_ENTRY);
	assert_int_equal(e.ev[0].time, 1005);
	assert_int_equal(e.ev[0].fid, 9);
	assert_int_equal(e.ev[0].addr, 0x400090);
	assert_int_equal(e.ev[0].cpu, 3);
	assert_int_equal(e.ev[1].kind, FN_EXIT);
	assert_int_equal(e.ev[1].time, 1012);
	assert_int_equal(e.ev[2].kind, FN_EXIT);
	assert_int_equal(e.ev[2].time, 1013);
	/* a record cut short */
	e.n = 0;
	assert_int_equal(fn_decode(&d, fdr, 20, collect, &e), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frame_roundtrip), cmocka_unit_test(test_rules),
		cmocka_unit_test(test_samples),		cmocka_unit_test(test_tp_find),
		cmocka_unit_test(test_decode),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
