/*
 * test_salvage_tfile: salvage of GDB trace files (formats/tfile/salvage_tfile.c), on ring
 * files, spools and definitions files built by hand the way the tfile sink leaves them when its
 * process is killed.
 *
 * A whole image (one thread with its ring and spool, one already closed with a spool only)
 * comes out as <program>.tf, accepted by the reader (formats/tfile/read_tfile.c): every committed record
 * exactly once as a frame, in time order, the hit counts of the definitions file, and the gdb
 * script beside it; nothing left in .flightrec. A write the kill cut short is undone, not
 * doubled. Without a definitions file, or with one that fails a check (a number out of range,
 * a path with a newline in it, another owner's file cannot be faked here), nothing is written
 * and the rings stay; a malformed module only leaves the script without it. A fork child's
 * trace gets its .<pid> name. A ring of the process that a live process holds makes the trace
 * wait for it (no trace short of its frames, then a second one).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/salvagers.h"
#include "formats/tfile/tfile_defs.h"
#include "formats/tfile/read_tfile.h"
#include "tests/unit/unit_util.h"

#define CHUNK	4096
#define NCHUNK	4
#define PID	4242
#define TID	4243
#define TID2	4244
#define BASE_NS 1000000000000ull
#define FN_A	0x555555555260ull
#define FN_B	0x5555555553a0ull
#define STACK	16

static char tmpdir[256];

static int setup(void **state)
{
	(void)state;
	unit_tmpdir_make(tmpdir, sizeof(tmpdir), "test_salvage_tfile", true);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unit_tmpdir_remove(tmpdir);
	return 0;
}

static bool exists(const char *fmt, ...)
{
	char rel[256], p[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	snprintf(p, sizeof(p), "%s/%s", tmpdir, rel);
	return access(p, F_OK) == 0;
}

/* --- what the sink leaves ---------------------------------------------------------------- */

struct defs_opts {
	uint32_t forked;
	const char *exe;
	const char *module; /* the one shared object's path */
	uint32_t bad_num;   /* tracepoint 1 numbered this instead */
};

/* .flightrec/tp.<pid>.<ns>: tracepoints a (hits 7) and b (hits 1), the executable and one
 * shared object */
static void defs_write(int pid, const struct defs_opts *o)
{
	uint32_t table = tfile_defs_table_size(2);
	size_t size = TFILE_DEFS_HDR_SIZE + table + 2 * sizeof(struct tfile_defs_module);
	uint8_t *buf = calloc(1, size);
	struct tfile_defs_hdr *h = (struct tfile_defs_hdr *)buf;
	struct rec_tp *tps = (struct rec_tp *)(buf + TFILE_DEFS_HDR_SIZE);
	struct tfile_defs_module *m = (struct tfile_defs_module *)(buf + TFILE_DEFS_HDR_SIZE + table);
	char p[512];
	int fd;

	assert_non_null(buf);
	memcpy(h->magic, TFILE_DEFS_MAGIC, 8);
	h->version = TFILE_DEFS_VERSION;
	h->hdr_size = TFILE_DEFS_HDR_SIZE;
	h->pid = pid;
	h->ntp = 2;
	h->session_ns = BASE_NS;
	h->start_real_ns = 1700000000000000000ull;
	h->tp_size = sizeof(struct rec_tp);
	h->table_size = table;
	h->nmod = 2;
	h->mod_size = sizeof(struct tfile_defs_module);
	h->forked = o->forked;
	h->tp_stack = STACK;
	h->max_frames = 1000;
	snprintf(h->exe, sizeof(h->exe), "%s", o->exe ? o->exe : "/opt/app/prog");
	tps[0].num = o->bad_num ? o->bad_num : 1;
	tps[0].addr = FN_A;
	tps[0].hits = 7;
	snprintf(tps[0].name, sizeof(tps[0].name), "alpha");
	tps[1].num = 2;
	tps[1].addr = FN_B;
	tps[1].hits = 1;
	snprintf(tps[1].name, sizeof(tps[1].name), "beta");
	snprintf(m[0].path, sizeof(m[0].path), "%.500s", h->exe);
	m[0].bias = 0x555555554000ull;
	m[0].is_exe = 1;
	m[0].is_dyn = 1;
	snprintf(m[1].path, sizeof(m[1].path), "%s", o->module ? o->module : "/lib/libx.so");
	m[1].bias = 0x7f0000000000ull;
	m[1].is_dyn = 1;
	snprintf(p, sizeof(p), "%s/.flightrec/tp.%d.%llu", tmpdir, pid, BASE_NS);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, size), (ssize_t)size);
	close(fd);
	free(buf);
}

/* hit k of a thread: tracepoint 1 (2 for k = 100), time BASE + 1000 + 10 k + tid % 2 */
static size_t frame_k(uint8_t *out, int tid, uint64_t k)
{
	struct rec_tp_frame *f = (struct rec_tp_frame *)out;
	size_t size = rec_tp_frame_size(STACK);

	memset(out, 0, size);
	f->size = (uint32_t)size;
	f->magic = REC_TP_FRAME_MAGIC;
	f->tpnum = k == 100 ? 2 : 1;
	f->tid = (uint32_t)tid;
	f->stack_len = STACK;
	f->ns = BASE_NS + 1000 + 10 * k + (uint64_t)(tid % 2);
	f->hit = k + 1;
	f->regs.rip = f->tpnum == 1 ? FN_A : FN_B;
	f->regs.gpr[7] = 0x7ffd00001000ull; /* rsp */
	f->regs.gpr[5] = k;		     /* rdi: the argument */
	memset(f + 1, (int)(k & 0xff), STACK);
	return size;
}

static void spool_append(int pid, int tid, uint64_t first, uint64_t n, size_t cut_bytes)
{
	uint8_t rec[1024];
	char p[512];
	int fd;

	snprintf(p, sizeof(p), "%s/.flightrec/tfile.%d.%llu.%d", tmpdir, pid, BASE_NS, tid);
	fd = open(p, O_WRONLY | O_CREAT | O_APPEND, 0600);
	assert_true(fd >= 0);
	for (uint64_t k = first; k < first + n; k++) {
		size_t len = frame_k(rec, tid, k);
		if (k + 1 == first + n && cut_bytes)
			len -= cut_bytes;
		assert_int_equal(write(fd, rec, len), (ssize_t)len);
	}
	close(fd);
}

/* this file's geometry: NCHUNK chunks of CHUNK bytes, session BASE_NS */
static void ring_create(struct unit_ring *r, int pid, int tid)
{
	unit_ring_create(r, tmpdir, pid, tid, "tfile", CHUNK, NCHUNK, BASE_NS);
}

/* chunk i holds hits [first, first + n) of the thread */
static void chunk_fill(struct unit_ring *r, int i, uint32_t state, uint64_t seq, uint64_t first,
		       uint64_t n)
{
	struct rec_chunk *c = (struct rec_chunk *)(r->map + REC_RING_HDR_SIZE + (size_t)i * CHUNK);
	uint8_t *p = (uint8_t *)(c + 1);

	for (uint64_t k = first; k < first + n; k++)
		p += frame_k(p, r->h->tid, k);
	c->state = state;
	c->seq = seq;
	c->committed = (uint64_t)(p - (uint8_t *)(c + 1));
	c->events = state == REC_CHUNK_FULL ? n : 0;
}

static int salvage(struct rec_salvage_report *rep)
{
	struct rec_salvage_opts o = {.log = stderr};
	return fmt_salvage_dir(tmpdir, &o, rep);
}

/* --- reading the result ------------------------------------------------------------------ */

struct seen {
	uint64_t frames, last_ns;
	int in_order;
	uint64_t tid_frames[2];
	uint64_t hits_sum;
};

static int seen_block(void *arg, const struct tfr_frame *fr, const struct tfr_block *b)
{
	struct seen *s = arg;

	(void)fr;
	if (b->type == 'V' && b->tsv == 1)
		s->tid_frames[b->value == TID2]++;
	if (b->type == 'V' && b->tsv == 2) {
		if ((uint64_t)b->value < s->last_ns)
			s->in_order = 0;
		s->last_ns = (uint64_t)b->value;
	}
	if (b->type == 'V' && b->tsv == 3)
		s->hits_sum += (uint64_t)b->value;
	return 0;
}

static void read_tf(const char *name, struct tfr_file *f, struct seen *s)
{
	char p[600];
	struct rd_error err;

	memset(s, 0, sizeof(*s));
	s->in_order = 1;
	snprintf(p, sizeof(p), "%s/%s", tmpdir, name);
	rd_error_clear(&err);
	assert_int_equal(tfr_open(p, f, &err), 0);
	assert_int_equal(tfr_walk(f, NULL, seen_block, s, &err), 0);
	s->frames = f->nframes;
}

static char *slurp(const char *name)
{
	char p[600];
	static char buf[8192];
	FILE *f;
	size_t n;

	snprintf(p, sizeof(p), "%s/%s", tmpdir, name);
	f = fopen(p, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* --- the cases --------------------------------------------------------------------------- */

#define FSZ rec_tp_frame_size(STACK)

/* TID: hits 0-3 written to its spool (chunk 1, done), hits 4-5 in a FULL chunk, 6 in the
 * FILLING one; TID2: closed, hits 0-2 in its spool, no ring */
static void image(int pid, int cut)
{
	struct unit_ring r;

	ring_create(&r, pid, TID);
	chunk_fill(&r, 0, REC_CHUNK_FREE, 1, 0, 4);
	chunk_fill(&r, 1, REC_CHUNK_FULL, 2, 4, 2);
	chunk_fill(&r, 2, REC_CHUNK_FILLING, 3, 6, 1);
	r.h->done_seq = r.h->write_seq = 1;
	r.h->done_len = 4 * FSZ;
	spool_append(pid, TID, 0, 4, 0);
	if (cut) {
		/* killed in the middle of chunk 2's write: one record and a half went out */
		r.h->write_pos = (int64_t)(4 * FSZ);
		r.h->write_seq = 2;
		spool_append(pid, TID, 4, 2, FSZ / 2);
	}
	unit_ring_close(&r);
	spool_append(pid, TID2, 0, 3, 0);
}

static void check_trace(const char *name, int pid)
{
	struct tfr_file f;
	struct seen s;

	read_tf(name, &f, &s);
	assert_int_equal(s.frames, 10); /* 7 + 3, each once */
	assert_int_equal(s.tid_frames[0], 7);
	assert_int_equal(s.tid_frames[1], 3);
	assert_int_equal(s.hits_sum, (1 + 2 + 3 + 4 + 5 + 6 + 7) + (1 + 2 + 3));
	assert_true(s.in_order);
	assert_int_equal(f.status.tframes, 10);
	assert_int_equal(f.status.tcreated, 10); /* 7 + 1 hits < 10 frames: the frames */
	assert_non_null(f.status.stop_desc);
	assert_non_null(strstr(f.status.stop_desc, "salvaged"));
	assert_int_equal(f.ntps, 2);
	assert_int_equal(tfr_find_tp(&f, 1)->hits, 7);
	assert_int_equal(tfr_find_tp(&f, 1)->addr, FN_A);
	assert_int_equal(tfr_find_tp(&f, 2)->hits, 1);
	assert_int_equal(tfr_find_tp(&f, 1)->frames, 10);
	/* stopped at the last frame: start + (last ns - session ns) */
	assert_int_equal(f.status.stop_us, (1700000000000000000ull + 1000 + 10 * 6) / 1000);
	tfr_close(&f);
	(void)pid;
}

static void test_whole_image(void **state)
{
	struct rec_salvage_report rep;
	char *script;

	(void)state;
	defs_write(PID, &(struct defs_opts){0});
	image(PID, 0);
	assert_int_equal(salvage(&rep), 0);
	assert_int_equal(rep.salvaged, 1);
	assert_int_equal(rep.events, 3); /* the ring's: hits 4-6 */
	check_trace("prog.tf", PID);
	script = slurp("prog.gdb");
	assert_non_null(strstr(script, "exec-file /opt/app/prog\n"));
	assert_non_null(strstr(script, "symbol-file -o 0x555555554000 /opt/app/prog\n"));
	assert_non_null(strstr(script, "add-symbol-file /lib/libx.so -o 0x7f0000000000\n"));
	assert_non_null(strstr(script, "/prog.tf\n"));
	/* the PIE's and the library's .rodata at their run-time addresses (tfile_encode.c) */
	assert_non_null(strstr(script, "\nset trust-readonly-sections on\n"));
	assert_false(exists(".flightrec/ring.%d.%d", PID, TID));
	assert_false(exists(".flightrec/tfile.%d.%llu.%d", PID, BASE_NS, TID));
	assert_false(exists(".flightrec/tfile.%d.%llu.%d", PID, BASE_NS, TID2));
	assert_false(exists(".flightrec/tp.%d.%llu", PID, BASE_NS));
	/* again: nothing left to do, nothing written twice */
	assert_int_equal(salvage(&rep), 0);
	assert_int_equal(rep.rings, 0);
	assert_false(exists("prog.%d.tf", PID));
}

static void test_cut_short_write(void **state)
{
	struct rec_salvage_report rep;

	(void)state;
	defs_write(PID, &(struct defs_opts){0});
	image(PID, 1);
	assert_int_equal(salvage(&rep), 0);
	check_trace("prog.tf", PID);
}

static void test_fork_child_name(void **state)
{
	struct rec_salvage_report rep;

	(void)state;
	defs_write(PID, &(struct defs_opts){.forked = 1});
	image(PID, 0);
	assert_int_equal(salvage(&rep), 0);
	check_trace("prog.4242.tf", PID);
	assert_true(exists("prog.4242.gdb"));
	assert_false(exists("prog.tf"));
}

/* no definitions: nothing can be rebuilt, and nothing is lost either */
static void test_no_defs(void **state)
{
	struct rec_salvage_report rep;

	(void)state;
	image(PID, 0);
	assert_int_equal(salvage(&rep), -1);
	assert_true(exists(".flightrec/ring.%d.%d", PID, TID));
	assert_true(exists(".flightrec/tfile.%d.%llu.%d", PID, BASE_NS, TID));
	assert_true(exists(".flightrec/tfile.%d.%llu.%d", PID, BASE_NS, TID2));
	assert_false(exists("prog.tf"));
	/* once the definitions are there (say, restored), a second salvage completes it: the
	 * ring's chunks were appended once, and are not appended again */
	defs_write(PID, &(struct defs_opts){0});
	assert_int_equal(salvage(&rep), 0);
	check_trace("prog.tf", PID);
}

static void test_bad_defs(void **state)
{
	static const struct defs_opts bad[] = {
		{.bad_num = 3},			      /* tracepoint 1 numbered 3 */
		{.exe = "/opt/app/prog\nshell rm -rf /"}, /* a gdb command in the script */
	};
	struct rec_salvage_report rep;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		defs_write(PID + (int)i, &bad[i]);
		image(PID + (int)i, 0);
		assert_int_equal(salvage(&rep), -1);
		assert_true(exists(".flightrec/ring.%d.%d", PID + (int)i, TID));
		assert_false(exists("prog.tf"));
		assert_false(exists("prog.%d.tf", PID + (int)i));
	}
}

/* a module path that would be two script lines: left out, the rest is written */
static void test_bad_module(void **state)
{
	struct rec_salvage_report rep;
	char *script;

	(void)state;
	defs_write(PID, &(struct defs_opts){.module = "/lib/liby.so -o 0\nshell id"});
	image(PID, 0);
	assert_int_equal(salvage(&rep), 0);
	check_trace("prog.tf", PID);
	script = slurp("prog.gdb");
	assert_null(strstr(script, "shell"));
	assert_null(strstr(script, "liby"));
	assert_non_null(strstr(script, "exec-file /opt/app/prog\n"));
}

/* a ring of the process a live fork child still holds: the trace waits for it, whole later */
static void test_busy_ring_waits(void **state)
{
	struct rec_salvage_report rep;
	struct tfr_file f;
	struct seen s;
	struct unit_ring r;
	char p[512];
	int hold;

	(void)state;
	defs_write(PID, &(struct defs_opts){0});
	image(PID, 0);
	ring_create(&r, PID, TID + 10);
	chunk_fill(&r, 0, REC_CHUNK_FILLING, 1, 50, 2);
	unit_ring_close(&r);
	snprintf(p, sizeof(p), "%s/.flightrec/ring.%d.%d", tmpdir, PID, TID + 10);
	hold = open(p, O_RDONLY);
	assert_true(hold >= 0);
	assert_int_equal(flock(hold, LOCK_EX), 0);
	assert_int_equal(salvage(&rep), 0);
	assert_int_equal(rep.busy, 1);
	assert_false(exists("prog.tf"));
	assert_false(exists(".flightrec/ring.%d.%d", PID, TID)); /* on its spool now */
	close(hold);
	assert_int_equal(salvage(&rep), 0);
	read_tf("prog.tf", &f, &s);
	assert_int_equal(s.frames, 12);
	assert_true(s.in_order);
	tfr_close(&f);
	assert_false(exists("prog.%d.tf", PID));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_whole_image, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cut_short_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork_child_name, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_defs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_defs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_module, setup, teardown),
		cmocka_unit_test_setup_teardown(test_busy_ring_waits, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
