/*
 * test_salvage: librecord's salvage core (rec_salvage.c) and its uftrace salvager, on ring
 * files built by hand the way the runtime leaves them.
 *
 * Core: which chunks are still to be written (done_seq/done_len, a write cut short, FULL
 * chunks not yet freed, the overwrite policy's reused chunks and the one being reused, gaps),
 * every header rule with its offset, malformed chunks skipped and counted, a live process's
 * ring (flock held) left alone, a second salvage writing nothing. uftrace: a trace whose
 * writer was killed in the middle of a chunk (a cut .dat, a half-written task.txt line, no
 * info) comes out whole: every record exactly once, in order, accepted by the reader
 * (formats/uftrace/read_uftrace), LOST records where the ring says events were lost (before a
 * chunk, after the last one, the overwrite policy's reused chunks), once. Last, random
 * damage to a ring never makes salvage crash or write outside the trace (run it under ASan).
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
#include "formats/uftrace/uftrace_format.h"
#include "formats/uftrace/read_uftrace.h"
#include "formats/uftrace/uftrace_info.h"
#include "formats/xray/read_xray.h"
#include "formats/xray/fdr_encode.h"
#include "tests/unit/unit_util.h"

#include <dirent.h>

#define CHUNK 4096
#define NCHUNK 4
#define CAP (CHUNK - 64)
#define RECS (CAP / 16) /* records per chunk */
#define PID 4242
#define TID 4243
#define BASE_NS 1000000000000ull
#define FN 0x555555555260ull

static char tmpdir[256];

static int setup(void **state)
{
	(void)state;
	unit_tmpdir_make(tmpdir, sizeof(tmpdir), "test_salvage", true);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unit_tmpdir_remove(tmpdir);
	return 0;
}

/* this file's geometry: NCHUNK chunks of CHUNK bytes, session BASE_NS */
static void ring_create(struct unit_ring *r, int pid, int tid, const char *format)
{
	unit_ring_create(r, tmpdir, pid, tid, format, CHUNK, NCHUNK, BASE_NS);
}

static struct rec_chunk *chunk_at(struct unit_ring *r, int i)
{
	return (struct rec_chunk *)(r->map + REC_RING_HDR_SIZE + (size_t)i * CHUNK);
}

/* chunk i := STATE, SEQ, holding the N bytes at P (committed N; N 0: nothing copied) */
static void chunk_put(struct unit_ring *r, int i, uint32_t state, uint64_t seq, const void *p,
		      size_t n)
{
	struct rec_chunk *c = chunk_at(r, i);

	if (n)
		memcpy(c + 1, p, n);
	c->state = state;
	c->seq = seq;
	c->committed = n;
}

/* record k of the thread's stream: entry/exit pairs of FN at depth 0, time BASE + 1000 + k */
static struct uftrace_record rec_k(uint64_t k)
{
	struct uftrace_record r = { BASE_NS + 1000 + k,
				    uftrace_record_word(k & 1 ? UFTRACE_EXIT : UFTRACE_ENTRY, 0, FN) };
	return r;
}

/* chunk i holds records [first, first + n) of the stream */
static void chunk_fill(struct unit_ring *r, int i, uint32_t state, uint64_t seq, uint64_t first,
		       uint64_t n, uint64_t lost_before)
{
	struct rec_chunk *c = chunk_at(r, i);
	for (uint64_t k = 0; k < n; k++) {
		struct uftrace_record rec = rec_k(first + k);
		memcpy((uint8_t *)(c + 1) + k * 16, &rec, 16);
	}
	c->state = state;
	c->seq = seq;
	c->committed = n * 16;
	c->events = state == REC_CHUNK_FULL ? n : 0;
	c->lost_before = lost_before;
}

/* write records [first, first + n) into the thread's .dat as the flusher would have */
static void dat_append(int tid, uint64_t first, uint64_t n, size_t cut_bytes)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%d.dat", tmpdir, tid);
	int fd = open(p, O_WRONLY | O_CREAT | O_APPEND, 0644);
	assert_true(fd >= 0);
	for (uint64_t k = 0; k < n; k++) {
		struct uftrace_record rec = rec_k(first + k);
		size_t len = k + 1 == n && cut_bytes ? 16 - cut_bytes : 16;
		assert_int_equal(write(fd, &rec, len), (ssize_t)len);
	}
	close(fd);
}

static int64_t file_size(const char *name)
{
	char p[512];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", tmpdir, name);
	return stat(p, &st) == 0 ? st.st_size : -1;
}

/* a uftrace.data skeleton as open_session/open_thread leave it */
static void uftrace_skeleton(int with_task_line)
{
	char task[512];
	snprintf(task, sizeof(task),
		 "SESS timestamp=1000.000000000 pid=%d sid=0123456789abcdef exename=\"/opt/p\"\n"
		 "%s",
		 PID, with_task_line ? "TASK timestamp=1000.000000500 tid=4243 pid=4242\n" : "");
	unit_write_file(tmpdir, "task.txt", task);
	unit_write_file(tmpdir, "sid-0123456789abcdef.map",
		   "555555554000-555555559000 r-xp 00000000 00:00 0 /opt/p\n"
		   "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n");
}

/* FD, this file's ring (ring.PID.TID), loaded read-only into OUT: rec_salvage_ring_load's
 * answer (WHY: 256 bytes). OUT holds FD: close it after rec_salvage_ring_free. */
static int ring_load(int fd, struct rec_salvage_ring *out, char *why)
{
	char name[64];
	snprintf(name, sizeof(name), "ring.%d.%d", PID, TID);
	return rec_salvage_ring_load(fd, name, false, out, why, 256);
}

/* R loaded through a new fd and let go at once: the load's answer (WHY set on -1) */
static int load(struct unit_ring *r, struct rec_salvage_ring *out, char *why)
{
	int fd = dup(r->fd);
	int ret = ring_load(fd, out, why);
	if (ret == 0)
		rec_salvage_ring_free(out);
	close(fd);
	return ret;
}

/* --- the core ------------------------------------------------------------------------- */

static void test_select_unwritten(void **state)
{
	struct unit_ring r;
	struct rec_salvage_ring sr;
	char why[256];
	(void)state;
	ring_create(&r, PID, TID, "uftrace");
	/* seq 1, 2 written and freed; 3 FULL (not written yet); 4 FILLING */
	chunk_fill(&r, 0, REC_CHUNK_FREE, 1, 0, RECS, 0);
	chunk_fill(&r, 1, REC_CHUNK_FREE, 2, RECS, RECS, 0);
	chunk_fill(&r, 2, REC_CHUNK_FULL, 3, 2 * RECS, RECS, 5);
	chunk_fill(&r, 3, REC_CHUNK_FILLING, 4, 3 * RECS, 10, 0);
	r.h->write_seq = r.h->done_seq = 2;
	r.h->done_len = RECS * 16;
	int fd = dup(r.fd);
	assert_int_equal(ring_load(fd, &sr, why), 0);
	assert_int_equal(sr.nr_chunks, 2);
	assert_int_equal(sr.chunks[0].seq, 3);
	assert_int_equal(sr.chunks[0].off, 0);
	assert_int_equal(sr.chunks[0].len, RECS * 16);
	assert_int_equal(sr.chunks[0].lost_before, 5);
	assert_int_equal(sr.chunks[0].events, RECS);
	assert_int_equal(sr.chunks[1].seq, 4);
	assert_int_equal(sr.chunks[1].len, 160);
	assert_false(sr.cut);
	assert_int_equal(sr.gaps, 0);
	rec_salvage_ring_free(&sr);
	close(fd);

	/* killed after the sink returned, before FREE: chunk 3 is FULL but done */
	r.h->write_seq = r.h->done_seq = 3;
	r.h->done_len = RECS * 16;
	fd = dup(r.fd);
	assert_int_equal(ring_load(fd, &sr, why), 0);
	assert_int_equal(sr.nr_chunks, 1);
	assert_int_equal(sr.chunks[0].seq, 4);
	rec_salvage_ring_free(&sr);
	close(fd);

	/* killed in the middle of the write of chunk 3: cut back to write_pos, write it again */
	r.h->write_seq = 3;
	r.h->done_seq = 2;
	r.h->write_pos = 12345;
	fd = dup(r.fd);
	assert_int_equal(ring_load(fd, &sr, why), 0);
	assert_true(sr.cut);
	assert_int_equal(sr.cut_pos, 12345);
	assert_int_equal(sr.nr_chunks, 2);
	assert_int_equal(sr.chunks[0].seq, 3);
	assert_int_equal(sr.chunks[0].off, 0);
	rec_salvage_ring_free(&sr);
	close(fd);

	/* finish wrote the FILLING chunk in part (32 bytes), the thread went on to 160 */
	r.h->write_seq = r.h->done_seq = 4;
	r.h->done_len = 32;
	fd = dup(r.fd);
	assert_int_equal(ring_load(fd, &sr, why), 0);
	assert_int_equal(sr.nr_chunks, 1);
	assert_int_equal(sr.chunks[0].seq, 4);
	assert_int_equal(sr.chunks[0].off, 32);
	assert_int_equal(sr.chunks[0].lost_before, 0);
	rec_salvage_ring_free(&sr);
	close(fd);
	unit_ring_close(&r);
}

static void test_overwrite_and_gaps(void **state)
{
	struct unit_ring r;
	struct rec_salvage_ring sr;
	char why[256];
	(void)state;
	ring_create(&r, PID, TID, "uftrace");
	/* overwrite policy: seqs 1..4 reused (400 events), 5 was being reused as the kill came
	 * (still FULL, its events already in `overwritten`), 6, 7 FULL, 8 FILLING */
	chunk_fill(&r, 0, REC_CHUNK_FULL, 5, 0, RECS, 0);
	chunk_fill(&r, 1, REC_CHUNK_FULL, 6, RECS, RECS, 0);
	chunk_fill(&r, 2, REC_CHUNK_FULL, 7, 2 * RECS, RECS, 0);
	chunk_fill(&r, 3, REC_CHUNK_FILLING, 8, 3 * RECS, 3, 2);
	r.h->overwritten = 400 + RECS;
	r.h->overwritten_seq = 5;
	int fd = dup(r.fd);
	assert_int_equal(ring_load(fd, &sr, why), 0);
	assert_int_equal(sr.nr_chunks, 3);
	assert_int_equal(sr.chunks[0].seq, 6);
	assert_int_equal(sr.chunks[0].lost_before, 400 + RECS);
	assert_int_equal(sr.chunks[2].lost_before, 2);
	assert_int_equal(sr.gaps, 0);
	rec_salvage_ring_free(&sr);
	close(fd);

	/* the same without an account: the 5 missing chunks are a gap of unknown size */
	r.h->overwritten = 0;
	r.h->overwritten_seq = 0;
	chunk_at(&r, 0)->state = REC_CHUNK_FREE;
	fd = dup(r.fd);
	assert_int_equal(ring_load(fd, &sr, why), 0);
	assert_int_equal(sr.nr_chunks, 3);
	assert_int_equal(sr.gaps, 5);
	rec_salvage_ring_free(&sr);
	close(fd);
	unit_ring_close(&r);
}

static void test_header_rules(void **state)
{
	struct unit_ring r;
	struct rec_salvage_ring sr;
	char why[256];
	struct rec_ring_hdr good;
	(void)state;
	ring_create(&r, PID, TID, "uftrace");
	good = *r.h;
	if (load(&r, &sr, why) != 0)
		fail_msg("a good ring: %s", why);

	static const struct {
		size_t off;
		uint8_t val;
		const char *msg;
	} cases[] = {
		{ 0, 'X', "bad ring magic" },
		{ offsetof(struct rec_ring_hdr, version), 9, "ring version 9" },
		{ offsetof(struct rec_ring_hdr, hdr_size), 1, "header size" },
		{ offsetof(struct rec_ring_hdr, chunk_size), 7, "chunk size" },
		{ offsetof(struct rec_ring_hdr, chunk_count) + 3, 0x80, "chunk count" },
		{ offsetof(struct rec_ring_hdr, pid), 1, "pid/tid" },
		{ offsetof(struct rec_ring_hdr, format), 0, "format name" },
		{ offsetof(struct rec_ring_hdr, write_seq) + 7, 0, NULL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		*r.h = good;
		if (!cases[i].msg)
			continue;
		((uint8_t *)r.h)[cases[i].off] = cases[i].val;
		if (cases[i].off == offsetof(struct rec_ring_hdr, format))
			memset(r.h->format, 'a', sizeof(r.h->format)); /* not terminated */
		assert_int_equal(load(&r, &sr, why), -1);
		if (!strstr(why, cases[i].msg))
			fail_msg("case %zu: '%s' does not say '%s'", i, why, cases[i].msg);
	}
	/* two chunks of 4096 in the header, the file is 4 chunks long */
	*r.h = good;
	r.h->chunk_count = 2;
	assert_int_equal(load(&r, &sr, why), -1);
	assert_non_null(strstr(why, "file size"));
	*r.h = good;
	r.h->done_seq = 5;
	r.h->write_seq = 4;
	assert_int_equal(load(&r, &sr, why), -1);
	assert_non_null(strstr(why, "below done_seq"));
	*r.h = good;
	unit_ring_close(&r);
}

static void test_bad_chunks_skipped(void **state)
{
	struct unit_ring r;
	struct rec_salvage_ring sr;
	char why[256];
	(void)state;
	ring_create(&r, PID, TID, "uftrace");
	chunk_fill(&r, 0, REC_CHUNK_FULL, 1, 0, RECS, 0);
	chunk_fill(&r, 1, REC_CHUNK_FULL, 2, RECS, RECS, 0);
	chunk_fill(&r, 2, REC_CHUNK_FULL, 2, RECS, RECS, 0); /* duplicate seq */
	chunk_fill(&r, 3, REC_CHUNK_FILLING, 3, 0, 1, 0);
	chunk_at(&r, 3)->committed = CAP + 16; /* longer than a chunk */
	int fd = dup(r.fd);
	assert_int_equal(ring_load(fd, &sr, why), 0);
	assert_int_equal(sr.nr_chunks, 2);
	assert_int_equal(sr.bad_chunks, 2);
	rec_salvage_ring_free(&sr);
	chunk_at(&r, 1)->magic = 0;
	chunk_at(&r, 2)->state = 77;
	assert_int_equal(ring_load(fd, &sr, why), 0);
	assert_int_equal(sr.nr_chunks, 1);
	assert_int_equal(sr.bad_chunks, 3);
	rec_salvage_ring_free(&sr);
	/* a header of zeroes is a chunk never taken (the runtime writes a chunk's header when
	 * it first takes it), not a bad one: chunk 3, bad above, zeroed */
	memset(chunk_at(&r, 3), 0, sizeof(struct rec_chunk));
	assert_int_equal(ring_load(fd, &sr, why), 0);
	assert_int_equal(sr.nr_chunks, 1);
	assert_int_equal(sr.bad_chunks, 2);
	rec_salvage_ring_free(&sr);
	close(fd);
	unit_ring_close(&r);
}

/* --- uftrace, a whole directory ------------------------------------------------------------ */

static void verify_trace(uint64_t records, uint64_t lost)
{
	struct ufr_data *d;
	struct ufr_counts total;
	struct rd_error err;

	rd_error_clear(&err);
	if (ufr_open(tmpdir, 0, &d, &err) < 0)
		fail_msg("ufr_open: %s: %s", err.file, err.msg);
	if (ufr_verify(d, &total, &err) < 0)
		fail_msg("ufr_verify: %s: offset %lld: %s", err.file, (long long)err.offset,
			 err.msg);
	assert_int_equal(total.entries + total.exits, records);
	assert_int_equal(total.lost, lost);
	ufr_close(d);
}

/* every record k of the stream in order, exactly once (LOST records aside) */
static void check_stream(int tid, uint64_t n)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%d.dat", tmpdir, tid);
	FILE *f = fopen(p, "r");
	struct uftrace_record rec;
	uint64_t k = 0;
	assert_non_null(f);
	while (fread(&rec, 16, 1, f) == 1) {
		if ((rec.word & 3) == UFTRACE_LOST)
			continue;
		struct uftrace_record want = rec_k(k++);
		assert_memory_equal(&rec, &want, 16);
	}
	fclose(f);
	assert_int_equal(k, n);
}

static void test_uftrace_cut_write(void **state)
{
	struct rec_salvage_opts o = { .log = stderr };
	struct rec_salvage_report rep;
	struct unit_ring r;
	(void)state;
	uftrace_skeleton(1);
	/* a half-written line the kill left at the end of task.txt */
	char p[512];
	snprintf(p, sizeof(p), "%s/task.txt", tmpdir);
	FILE *f = fopen(p, "a");
	fputs("TASK timestamp=1000.0000", f);
	fclose(f);
	ring_create(&r, PID, TID, "uftrace");
	/* chunks 1 and 2 written; the write of 3 was cut after 5 records and a half */
	dat_append(TID, 0, 2 * RECS, 0);
	int64_t pos = file_size("4243.dat");
	dat_append(TID, 2 * RECS, 6, 8);
	chunk_fill(&r, 0, REC_CHUNK_FILLING, 5, 4 * RECS, 7, 0);
	chunk_fill(&r, 1, REC_CHUNK_FREE, 2, RECS, RECS, 0);
	chunk_fill(&r, 2, REC_CHUNK_FULL, 3, 2 * RECS, RECS, 0);
	chunk_fill(&r, 3, REC_CHUNK_FULL, 4, 3 * RECS, RECS, 0);
	r.h->done_seq = 2;
	r.h->done_len = RECS * 16;
	r.h->write_seq = 3;
	r.h->write_pos = pos;
	unit_ring_close(&r);

	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(rep.rings, 1);
	assert_int_equal(rep.salvaged, 1);
	assert_int_equal(rep.chunks, 3);
	assert_int_equal(rep.events, 2 * RECS + 7);
	assert_int_equal(rep.processes, 1);
	check_stream(TID, 4 * RECS + 7);
	verify_trace(4 * RECS + 7, 0);
	/* the ring is gone; a second salvage finds nothing and changes nothing */
	assert_false(rec_salvage_needed(tmpdir));
	int64_t size = file_size("4243.dat");
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(rep.rings, 0);
	assert_int_equal(file_size("4243.dat"), size);
}

static void test_uftrace_rerun_and_lost(void **state)
{
	struct rec_salvage_opts o = { .log = stderr, .keep_rings = true };
	struct rec_salvage_report rep;
	struct unit_ring r, r2;
	(void)state;
	uftrace_skeleton(1);
	ring_create(&r, PID, TID, "uftrace");
	/* nothing written yet; 9 events lost before chunk 2 */
	chunk_fill(&r, 0, REC_CHUNK_FULL, 1, 0, RECS, 0);
	chunk_fill(&r, 1, REC_CHUNK_FILLING, 2, RECS, 4, 9);
	/* a second thread with no TASK line (killed while writing it) */
	ring_create(&r2, PID, TID + 1, "uftrace");
	chunk_fill(&r2, 0, REC_CHUNK_FILLING, 1, 0, 2, 0);

	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(rep.salvaged, 2);
	assert_int_equal(rep.lost, 9);
	check_stream(TID, RECS + 4);
	check_stream(TID + 1, 2);
	verify_trace(RECS + 4 + 2, 9);
	/* kept rings: a second salvage writes nothing again */
	int64_t size = file_size("4243.dat");
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(rep.salvaged, 2);
	assert_int_equal(rep.bytes, 0);
	assert_int_equal(file_size("4243.dat"), size);
	/* the thread went on in its chunk after finish wrote part of it: only the rest */
	chunk_fill(&r, 1, REC_CHUNK_FILLING, 2, RECS, 6, 9);
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(rep.bytes, 2 * 16);
	assert_int_equal(rep.lost, 0);
	check_stream(TID, RECS + 6);
	verify_trace(RECS + 6 + 2, 9);
	unit_ring_close(&r);
	unit_ring_close(&r2);
}

/* events dropped after the last chunk was taken: told by a LOST record at the end, once */
static void test_uftrace_lost_pending(void **state)
{
	struct rec_salvage_opts o = { .keep_rings = true };
	struct rec_salvage_report rep;
	struct rec_salvage_ring sr;
	struct unit_ring r;
	char why[256];
	(void)state;
	uftrace_skeleton(1);
	ring_create(&r, PID, TID, "uftrace");
	chunk_fill(&r, 0, REC_CHUNK_FULL, 1, 0, RECS, 0);
	chunk_fill(&r, 1, REC_CHUNK_FULL, 2, RECS, RECS, 0);
	r.h->lost_pending = 7;
	r.h->lost_for_seq = 3; /* no chunk 3: the thread was waiting for one */
	int fd = dup(r.fd);
	assert_int_equal(ring_load(fd, &sr, why), 0);
	assert_int_equal(sr.lost_tail, 7);
	rec_salvage_ring_free(&sr);
	/* once chunk 3 is taken its lost_before carries them */
	chunk_fill(&r, 2, REC_CHUNK_FILLING, 3, 2 * RECS, 0, 7);
	assert_int_equal(ring_load(fd, &sr, why), 0);
	assert_int_equal(sr.lost_tail, 0);
	assert_int_equal(sr.chunks[2].lost_before, 7);
	rec_salvage_ring_free(&sr);
	chunk_at(&r, 2)->state = REC_CHUNK_FREE;
	close(fd);

	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(rep.lost, 7);
	check_stream(TID, 2 * RECS);
	verify_trace(2 * RECS, 7);
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(rep.lost, 0);
	verify_trace(2 * RECS, 7);
	unit_ring_close(&r);
}

/* overwrite policy, whole directory: the reused events told before the oldest chunk, once */
static void test_uftrace_overwrite(void **state)
{
	struct rec_salvage_opts o = { .keep_rings = true };
	struct rec_salvage_report rep;
	struct unit_ring r;
	(void)state;
	uftrace_skeleton(1);
	ring_create(&r, PID, TID, "uftrace");
	chunk_fill(&r, 0, REC_CHUNK_FILLING, 5, 0, 6, 0);
	chunk_fill(&r, 1, REC_CHUNK_FULL, 2, 0, RECS, 0); /* being reused, counted */
	chunk_fill(&r, 2, REC_CHUNK_FULL, 3, 0, RECS, 0);
	chunk_fill(&r, 3, REC_CHUNK_FULL, 4, RECS, RECS, 0);
	/* chunk 3's records continue chunk 2's stream: rewrite 3 and 5 so k runs on */
	chunk_fill(&r, 0, REC_CHUNK_FILLING, 5, 2 * RECS, 6, 0);
	r.h->overwritten = 2 * RECS;
	r.h->overwritten_seq = 2;
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(rep.lost, 2 * RECS);
	assert_int_equal(rep.chunks, 3);
	check_stream(TID, 2 * RECS + 6);
	verify_trace(2 * RECS + 6, 2 * RECS);
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(rep.lost, 0);
	assert_int_equal(rep.bytes, 0);
	unit_ring_close(&r);
}

static void test_live_ring_left_alone(void **state)
{
	struct rec_salvage_opts o = { 0 };
	struct rec_salvage_report rep;
	struct unit_ring r;
	(void)state;
	uftrace_skeleton(1);
	ring_create(&r, PID, TID, "uftrace");
	chunk_fill(&r, 0, REC_CHUNK_FILLING, 1, 0, 4, 0);
	assert_int_equal(flock(r.fd, LOCK_EX | LOCK_NB), 0); /* as the runtime holds it */
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(rep.rings, 1);
	assert_int_equal(rep.busy, 1);
	assert_int_equal(rep.salvaged, 0);
	assert_int_equal(file_size("4243.dat"), -1);
	assert_true(rec_salvage_needed(tmpdir));
	/* the process dies: its lock goes */
	unit_ring_close(&r);
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(rep.salvaged, 1);
	assert_int_equal(file_size("4243.dat"), 4 * 16);
}

/* A dead process's ring of a thread whose number is now a live process's pid: a vfork child
 * that exec'ed a traced program (this test stands for it, holding live.<its pid> as the
 * runtime does). That process writes <tid>.dat now: salvage leaves the ring and the file
 * alone, and salvages it once that process is gone. */
static void test_ring_of_live_vfork_child(void **state)
{
	struct rec_salvage_opts o = { 0 };
	struct rec_salvage_report rep;
	struct unit_ring r;
	char live[600], dat[32];
	int lfd;
	pid_t me = getpid();
	(void)state;
	uftrace_skeleton(1);
	ring_create(&r, PID, me, "uftrace");
	chunk_fill(&r, 0, REC_CHUNK_FULL, 1, 0, 4, 0);
	unit_ring_close(&r);
	snprintf(live, sizeof(live), "%s/.flightrec/live.%d", tmpdir, (int)me);
	lfd = open(live, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(lfd >= 0);
	assert_int_equal(flock(lfd, LOCK_EX | LOCK_NB), 0);
	snprintf(dat, sizeof(dat), "%d.dat", (int)me);
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(rep.busy, 1);
	assert_int_equal(rep.salvaged, 0);
	assert_int_equal(file_size(dat), -1);
	/* that process ends */
	close(lfd);
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(rep.salvaged, 1);
	assert_int_equal(file_size(dat), 4 * 16);
}

static ssize_t read_small(const char *name, char *buf, size_t size);

/* <tid>.dat of TID holding N records of the stream (rec_k) */
static void dat_put(int tid, uint64_t n)
{
	char p[600];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%d.dat", tmpdir, tid);
	f = fopen(p, "wb");
	assert_non_null(f);
	for (uint64_t k = 0; k < n; k++) {
		struct uftrace_record r = rec_k(k);
		assert_int_equal(fwrite(&r, sizeof(r), 1, f), 1);
	}
	assert_int_equal(fclose(f), 0);
}

/* A process killed while it wrote info at its finish (its rings already closed and removed):
 * info missing its own thread (a fork sibling's, written earlier), empty, or cut before its
 * last line; no ring left to make salvage write it. Salvage checks info against the .dat
 * files and writes it again; a whole one is left as it is. */
static void test_uftrace_info_repaired(void **state)
{
	struct rec_salvage_opts o = { 0 };
	struct rec_salvage_report rep;
	int one[] = { PID }, both[] = { PID, TID };
	struct uftrace_info_desc d = { .exename = "/opt/p", .tids = one, .ntids = 1,
				       .max_stack = 1024 };
	char info[4096], p[600];
	struct stat st1, st2;
	ssize_t n;
	(void)state;

	uftrace_skeleton(1);
	unit_write_file(tmpdir, "task.txt",
			"SESS timestamp=1000.000000000 pid=4242 sid=0123456789abcdef "
			"exename=\"/opt/p\"\nTASK timestamp=1000.000000500 tid=4242 pid=4242\n"
			"TASK timestamp=1000.000000600 tid=4243 pid=4242\n");
	dat_put(PID, 2);
	dat_put(TID, 4);
	snprintf(p, sizeof(p), "%s/.flightrec", tmpdir);
	mkdir(p, 0755);
	for (int how = 0; how < 3; how++) {
		int dirfd = open(tmpdir, O_RDONLY | O_DIRECTORY);

		assert_true(dirfd >= 0);
		assert_int_equal(uftrace_info_write(dirfd, ".t", &d), 0);
		close(dirfd);
		snprintf(p, sizeof(p), "%s/info", tmpdir);
		if (how == 1)
			assert_int_equal(truncate(p, 0), 0);
		if (how == 2)
			assert_int_equal(truncate(p, file_size("info") - 10), 0);
		assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
		n = read_small("info", info, sizeof(info));
		assert_true(n > 40);
		assert_non_null(memmem(info, (size_t)n, "taskinfo:nr_tid=2\ntaskinfo:tids=4242,4243\n",
				       39));
		verify_trace(6, 0);
	}
	/* whole: not touched */
	d.tids = both;
	d.ntids = 2;
	{
		int dirfd = open(tmpdir, O_RDONLY | O_DIRECTORY);
		assert_int_equal(uftrace_info_write(dirfd, ".t", &d), 0);
		close(dirfd);
	}
	assert_int_equal(stat(p, &st1), 0);
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(stat(p, &st2), 0);
	assert_int_equal(st1.st_ino, st2.st_ino);
	assert_int_equal(st1.st_mtim.tv_nsec, st2.st_mtim.tv_nsec);
}

static void test_unknown_format_kept(void **state)
{
	struct rec_salvage_opts o = { 0 };
	struct rec_salvage_report rep;
	struct unit_ring r;
	(void)state;
	ring_create(&r, PID, TID, "nosuch");
	unit_ring_close(&r);
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), -1);
	assert_int_equal(rep.bad, 1);
	assert_true(rec_salvage_needed(tmpdir));
}

/* --- XRay: spools and the log ------------------------------------------------------------- */

/* an FDR stream piece as xray-rt's chunks hold it: a NewCPUId, then n entry/exit pairs of
 * function 1 (16 records' bytes = 16 + 16 * n) */
static size_t fdr_piece(uint8_t *p, uint64_t tsc, unsigned pairs)
{
	size_t n = 0;
	fdr_put_new_cpu(p, 0, tsc);
	n += FDR_META_SIZE;
	for (unsigned i = 0; i < pairs; i++) {
		fdr_put_fn(p + n, FDR_ENTER, 1, 10);
		n += FDR_FN_SIZE;
		fdr_put_fn(p + n, FDR_EXIT, 1, 10);
		n += FDR_FN_SIZE;
	}
	return n;
}

static void xray_chunk(struct unit_ring *r, int i, uint32_t state, uint64_t seq, uint64_t tsc,
		       unsigned pairs, uint64_t lost_before)
{
	struct rec_chunk *c = chunk_at(r, i);
	c->committed = fdr_piece((uint8_t *)(c + 1), tsc, pairs);
	c->state = state;
	c->seq = seq;
	c->events = 2 * pairs;
	c->lost_before = lost_before;
}

static void test_xray_log(void **state)
{
	struct rec_salvage_opts o = { .log = stderr };
	struct rec_salvage_report rep;
	struct unit_ring r, r2;
	uint8_t buf[4096];
	char p[512], log[512] = "";
	(void)state;
	ring_create(&r, PID, TID, "xray");
	r.h->clock.tsc_hz = 1000000000;
	/* the spool holds chunk 1 and half of chunk 2 (the kill came while it was written) */
	snprintf(p, sizeof(p), "%s/.flightrec/xray.%d.%llu.%d", tmpdir, PID, BASE_NS, TID);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	size_t n1 = fdr_piece(buf, 1000, 10);
	assert_int_equal(write(fd, buf, n1), (ssize_t)n1);
	r.h->write_pos = (int64_t)n1;
	size_t n2 = fdr_piece(buf, 2000, 20);
	assert_int_equal(write(fd, buf, n2 / 2), (ssize_t)(n2 / 2));
	close(fd);
	r.h->done_seq = 1;
	r.h->write_seq = 2;
	r.h->done_len = n1;
	xray_chunk(&r, 0, REC_CHUNK_FREE, 1, 1000, 10, 0);
	xray_chunk(&r, 1, REC_CHUNK_FULL, 2, 2000, 20, 0);
	xray_chunk(&r, 2, REC_CHUNK_FILLING, 3, 3000, 5, 0);
	/* a second thread that started later, nothing written yet */
	ring_create(&r2, PID, TID + 1, "xray");
	r2.h->clock.tsc_hz = 1000000000;
	xray_chunk(&r2, 0, REC_CHUNK_FILLING, 1, 1500, 7, 0);
	unit_ring_close(&r);
	unit_ring_close(&r2);

	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(rep.salvaged, 2);
	assert_int_equal(rep.events, 2 * (20 + 5 + 7));
	/* one log, no spool left */
	DIR *d = opendir(tmpdir);
	struct dirent *de;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "xray-log.salvaged-4242.", 23))
			snprintf(log, sizeof(log), "%s/%s", tmpdir, de->d_name);
	closedir(d);
	assert_true(log[0]);
	snprintf(p, sizeof(p), "%s/.flightrec", tmpdir);
	d = opendir(p);
	while ((de = readdir(d)))
		assert_true(strncmp(de->d_name, "xray.", 5) != 0);
	closedir(d);
	struct xfr_header h;
	struct xfr_counts c;
	struct rd_error err;
	rd_error_clear(&err);
	if (xfr_walk(log, &h, &c, NULL, NULL, &err) < 0)
		fail_msg("%s: offset %lld: %s", err.file, (long long)err.offset, err.msg);
	assert_int_equal(c.threads, 2);
	assert_int_equal(c.entries, 10 + 20 + 5 + 7);
	assert_int_equal(c.exits, 10 + 20 + 5 + 7);
	assert_int_equal(h.cycle_frequency, 1000000000);
}

/* --- ovni: a forged side file refused; a stream cut inside a jumbo event, the thread ended,
 * metadata finished, moved from the temporary directory ---------------------------------- */

static size_t ovni_ev(uint8_t *p, uint8_t flags, const char *mcv, uint64_t clock)
{
	p[0] = flags;
	memcpy(p + 1, mcv, 3);
	memcpy(p + 4, &clock, 8);
	return 12;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	static char buf[65536];
	if (!f)
		return NULL;
	*len = fread(buf, 1, sizeof(buf) - 1, f);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

static void test_ovni_stream(void **state)
{
	struct rec_salvage_opts o = { .log = stderr };
	struct rec_salvage_report rep;
	struct unit_ring r;
	char tmpd[512], fin[512], p[1024], side[4096];
	uint8_t buf[256];
	size_t n = 0, len;
	(void)state;
	/* OVNI_TMPDIR-like place for the live stream, the trace directory for the final one */
	static const char *const dirs[] = { "tmp", "tmp/loom.x", "tmp/loom.x/proc.4242",
					    "tmp/loom.x/proc.4242/thread.4243", "trace",
					    "trace/loom.x", "trace/loom.x/proc.4242",
					    "trace/loom.x/proc.4242/thread.4243" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", tmpdir, dirs[i]);
		mkdir(p, 0755);
	}
	snprintf(tmpd, sizeof(tmpd), "%s/tmp/loom.x/proc.%d/thread.%d", tmpdir, PID, TID);
	snprintf(fin, sizeof(fin), "%s/trace/loom.x/proc.%d/thread.%d", tmpdir, PID, TID);
	/* written so far: the header and OHx (chunk 1) */
	memcpy(buf, "ovni", 4);
	uint32_t ver = 1;
	memcpy(buf + 4, &ver, 4);
	n = 8;
	n += ovni_ev(buf + n, 0x03, "OHx", 100); /* 4-byte payload */
	memset(buf + n, 0, 4);
	n += 4;
	snprintf(p, sizeof(p), "%s/stream.obs", tmpd);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_int_equal(write(fd, buf, n), (ssize_t)n);
	close(fd);
	snprintf(p, sizeof(p), "%s/stream.json", tmpd);
	unit_write_file(tmpdir, "tmp/loom.x/proc.4242/thread.4243/stream.json",
		   "{\"version\": 3, \"ovni\": {\"tid\": 4243, \"require\": {\"ovni\": \"1.1.0\"}}}");
	snprintf(side, sizeof(side),
		 "{\"format\": \"ovni\", \"layout\": 3, \"stream\": \"%s/stream.obs\", "
		 "\"metadata\": \"%s/stream.json\", \"final_stream\": \"%s/stream.obs\", "
		 "\"final_metadata\": \"%s/stream.json\"}",
		 tmpd, tmpd, fin, fin);
	/* a forged side file first: a final place elsewhere is refused, nothing is written */
	char forged[4096];
	snprintf(forged, sizeof(forged),
		 "{\"format\": \"ovni\", \"layout\": 3, \"stream\": \"%s/stream.obs\", "
		 "\"metadata\": \"%s/stream.json\", \"final_stream\": \"%s/x/stream.obs\", "
		 "\"final_metadata\": \"%s/x/stream.json\"}",
		 tmpd, tmpd, tmpdir, tmpdir);
	snprintf(p, sizeof(p), ".flightrec/ring.%d.%d.ovni", PID, TID);
	unit_write_file(tmpdir, p, forged);
	ring_create(&r, PID, TID, "ovni");
	r.h->done_seq = r.h->write_seq = 1;
	r.h->done_len = n;
	chunk_at(&r, 0)->state = REC_CHUNK_FREE;
	chunk_at(&r, 0)->seq = 1;
	/* chunk 2: OU[ OU] and the start of a jumbo event of 1000 bytes (its rest never came) */
	struct rec_chunk *c = chunk_at(&r, 1);
	uint8_t *d = (uint8_t *)(c + 1);
	size_t m = 0;
	m += ovni_ev(d + m, 0, "OU[", 200);
	m += ovni_ev(d + m, 0, "OU]", 300);
	m += ovni_ev(d + m, 0x10, "OU[", 400);
	uint32_t js = 1000;
	memcpy(d + m, &js, 4);
	m += 4 + 100;
	c->state = REC_CHUNK_FILLING;
	c->seq = 2;
	c->committed = m;
	unit_ring_close(&r);

	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), -1);
	assert_int_equal(rep.salvaged, 0);
	assert_int_equal(file_size("tmp/loom.x/proc.4242/thread.4243/stream.obs"), (int64_t)n);
	assert_true(rec_salvage_needed(tmpdir));
	/* the real side file */
	snprintf(p, sizeof(p), ".flightrec/ring.%d.%d.ovni", PID, TID);
	unit_write_file(tmpdir, p, side);
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(rep.salvaged, 1);
	/* moved to its final place; the header, OHx, OU[, OU], then the OHe salvage adds */
	snprintf(p, sizeof(p), "%s/stream.obs", tmpd);
	assert_int_equal(access(p, F_OK), -1);
	snprintf(p, sizeof(p), "%s/stream.obs", fin);
	char *got = slurp(p, &len);
	assert_non_null(got);
	assert_int_equal(len, n + 12 + 12 + 12);
	assert_memory_equal(got + n + 24 + 1, "OHe", 3);
	uint64_t clock;
	memcpy(&clock, got + n + 24 + 4, 8);
	assert_int_equal(clock, 300); /* the last whole event's */
	snprintf(p, sizeof(p), "%s/stream.json", fin);
	got = slurp(p, &len);
	assert_non_null(got);
	assert_non_null(strstr(got, "\"finished\": 1"));
	assert_non_null(strstr(got, "\"finished_by\": \"salvage\""));
	snprintf(p, sizeof(p), "%s/.flightrec/ring.%d.%d.ovni", tmpdir, PID, TID);
	assert_int_equal(access(p, F_OK), -1);
	assert_false(rec_salvage_needed(tmpdir));
}

/* A thread killed while ovni-rt wrote its side file: the side file is empty (or a leftover of
 * its temporary name is there). The ring holds no event, so nothing is lost: salvage ends the
 * ring and leaves neither file behind (e2e-salvage ovni/v3/block/tmpdir-fork saw
 * "rings left after salvage: ring.P.T.ovni" now and then). */
static void test_ovni_empty_side(void **state)
{
	struct rec_salvage_opts o = { .log = stderr };
	struct rec_salvage_report rep;
	struct unit_ring r;
	char p[1024];
	(void)state;
	snprintf(p, sizeof(p), ".flightrec/ring.%d.%d.ovni", PID, TID);
	unit_write_file(tmpdir, p, "");
	snprintf(p, sizeof(p), ".flightrec/ring.%d.%d.ovni.tmp", PID, TID);
	unit_write_file(tmpdir, p, "{\"format\": ");
	ring_create(&r, PID, TID, "ovni");
	unit_ring_close(&r);
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	snprintf(p, sizeof(p), "%s/.flightrec/ring.%d.%d.ovni", tmpdir, PID, TID);
	assert_int_equal(access(p, F_OK), -1);
	snprintf(p, sizeof(p), "%s/.flightrec/ring.%d.%d.ovni.tmp", tmpdir, PID, TID);
	assert_int_equal(access(p, F_OK), -1);
	assert_false(rec_salvage_needed(tmpdir));
}

/* --- Cacheray: one trace for all threads; a write cut short is not written twice ------------ */

/* n WRITE records of thread tid, addresses from a0 */
static size_t cr_records(uint8_t *p, unsigned n, uint64_t a0, uint64_t tid)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t a = a0 + 8 * i;
		p[18 * i] = 1;
		memcpy(p + 18 * i + 1, &a, 8);
		p[18 * i + 9] = 8;
		memcpy(p + 18 * i + 10, &tid, 8);
	}
	return 18 * n;
}

static void test_cacheray_trace(void **state)
{
	struct rec_salvage_opts o = { .log = stderr };
	struct rec_salvage_report rep;
	struct unit_ring r;
	uint8_t want[4096], c1[1024], c2[1024], c3[1024];
	char trace[512];
	(void)state;
	size_t n1 = cr_records(c1, 10, 0x1000, TID);
	size_t n2 = cr_records(c2, 10, 0x2000, TID);
	size_t n3 = cr_records(c3, 3, 0x3000, TID);
	snprintf(trace, sizeof(trace), "%s/cacheray.trace", tmpdir);
	/* chunk 1 written, chunk 2 cut short after 5 records and a half */
	int fd = open(trace, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_int_equal(write(fd, c1, n1), (ssize_t)n1);
	assert_int_equal(write(fd, c2, 5 * 18 + 9), 5 * 18 + 9);
	close(fd);
	ring_create(&r, PID, TID, "cacheray");
	snprintf(r.h->out_path, sizeof(r.h->out_path), "%s", trace);
	chunk_put(&r, 0, REC_CHUNK_FREE, 1, NULL, 0);
	chunk_put(&r, 1, REC_CHUNK_FULL, 2, c2, n2);
	chunk_put(&r, 2, REC_CHUNK_FILLING, 3, c3, n3);
	r.h->done_seq = 1;
	r.h->done_len = n1;
	r.h->write_seq = 2;
	r.h->write_pos = (int64_t)n1; /* where the append lock said chunk 2 goes */
	r.h->write_len = n2;
	unit_ring_close(&r);

	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(rep.salvaged, 1);
	assert_int_equal(rep.events, 10 + 3); /* chunk 2 again, whole, and chunk 3 */
	memcpy(want, c1, n1);
	memcpy(want + n1, c2, n2);
	memcpy(want + n1 + n2, c3, n3);
	size_t len;
	char *got = slurp(trace, &len);
	assert_int_equal(len, n1 + n2 + n3);
	assert_memory_equal(got, want, len);

	/* a trace a live process still appends to (it holds LOCK_SH) is left for later */
	ring_create(&r, PID, TID, "cacheray");
	snprintf(r.h->out_path, sizeof(r.h->out_path), "%s", trace);
	chunk_put(&r, 0, REC_CHUNK_FILLING, 1, c3, n3);
	unit_ring_close(&r);
	int live = open(trace, O_RDONLY);
	assert_int_equal(flock(live, LOCK_SH), 0);
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), -1);
	assert_int_equal(file_size("cacheray.trace"), (int64_t)(n1 + n2 + n3));
	close(live);
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(file_size("cacheray.trace"), (int64_t)(n1 + n2 + 2 * n3));
}

/*
 * Where a cut-short write went is the ring's claim (write_pos, write_len, under the append
 * lock): what salvage finds there decides, at that offset only. Thread A (TID) was writing
 * its chunk 2 (10 records) when the process died; thread B's and another process's records
 * (other tids) are around it.
 */
enum cr_case { CR_TAIL, CR_WHOLE_THEN_OTHERS, CR_OTHERS_THERE, CR_TORN_MIDDLE, CR_NO_PLACE,
	       CR_PAST_END, CR_LEN_TOO_BIG, CR_CASES };

static void test_cacheray_claims(void **state)
{
	struct rec_salvage_opts o = { .log = stderr };
	struct rec_salvage_report rep;
	uint8_t a1[256], a2[256], b1[256], x1[256], want[2048];
	(void)state;
	size_t na1 = cr_records(a1, 4, 0x1000, TID);
	size_t na2 = cr_records(a2, 10, 0x2000, TID);
	size_t nb1 = cr_records(b1, 6, 0x1000, TID + 1);   /* same addresses, another tid */
	size_t nx1 = cr_records(x1, 7, 0x2000, 777777);    /* A's addresses, another process */
	for (int k = 0; k < CR_CASES; k++) {
		char trace[512];
		struct unit_ring r;
		size_t pre = na1 + nb1, w = 0, len;
		teardown(NULL);
		setup(NULL);
		snprintf(trace, sizeof(trace), "%s/cacheray.trace", tmpdir);
		int fd = open(trace, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		assert_int_equal(write(fd, a1, na1), (ssize_t)na1); /* A's chunk 1, done */
		assert_int_equal(write(fd, b1, nb1), (ssize_t)nb1); /* B's, done */
		switch (k) {
		case CR_TAIL: /* 3 records and a half of chunk 2: the trace's end */
			assert_int_equal(write(fd, a2, 3 * 18 + 7), 3 * 18 + 7);
			break;
		case CR_WHOLE_THEN_OTHERS: /* chunk 2 whole, then a live process appended */
			assert_int_equal(write(fd, a2, na2), (ssize_t)na2);
			assert_int_equal(write(fd, x1, nx1), (ssize_t)nx1);
			break;
		case CR_OTHERS_THERE: /* killed before its write; a live process appended there */
		case CR_TORN_MIDDLE:  /* 2 records of it, then a live process's (no lock then) */
			if (k == CR_TORN_MIDDLE)
				assert_int_equal(write(fd, a2, 2 * 18), 2 * 18);
			assert_int_equal(write(fd, x1, nx1), (ssize_t)nx1);
			break;
		case CR_NO_PLACE: /* killed before the lock: write_pos -1; an unclaimed torn end */
			assert_int_equal(write(fd, x1, 9), 9);
			break;
		default:
			break;
		}
		close(fd);
		ring_create(&r, PID, TID, "cacheray");
		snprintf(r.h->out_path, sizeof(r.h->out_path), "%s", trace);
		chunk_put(&r, 0, REC_CHUNK_FREE, 1, NULL, 0);
		chunk_put(&r, 1, REC_CHUNK_FULL, 2, a2, na2);
		r.h->done_seq = 1;
		r.h->done_len = na1;
		r.h->write_seq = 2;
		r.h->write_pos = k == CR_NO_PLACE ? -1 : k == CR_PAST_END ? 100000 : (int64_t)pre;
		r.h->write_len = k == CR_LEN_TOO_BIG ? na2 + 18 : na2;
		unit_ring_close(&r);

		int ret = fmt_salvage_dir(tmpdir, &o, &rep);
		char *got = slurp(trace, &len);
		memcpy(want, a1, na1);
		memcpy(want + na1, b1, nb1);
		w = pre;
		switch (k) {
		case CR_TAIL:
		case CR_NO_PLACE:
		case CR_PAST_END: /* the torn end cut, chunk 2 whole after B's */
			assert_int_equal(ret, 0);
			memcpy(want + w, a2, na2);
			w += na2;
			assert_int_equal(rep.events, 10);
			break;
		case CR_WHOLE_THEN_OTHERS: /* nothing written, the chunk is done */
			assert_int_equal(ret, 0);
			memcpy(want + w, a2, na2);
			memcpy(want + w + na2, x1, nx1);
			w += na2 + nx1;
			assert_int_equal(rep.events, 0);
			break;
		case CR_OTHERS_THERE: /* the other process's records stay, chunk 2 after them */
			assert_int_equal(ret, 0);
			memcpy(want + w, x1, nx1);
			memcpy(want + w + nx1, a2, na2);
			w += nx1 + na2;
			assert_int_equal(rep.events, 10);
			break;
		case CR_TORN_MIDDLE: /* cannot be mended: left as it is, and the ring */
		case CR_LEN_TOO_BIG:
			assert_int_equal(ret, -1);
			if (k == CR_TORN_MIDDLE) {
				memcpy(want + w, a2, 2 * 18);
				memcpy(want + w + 2 * 18, x1, nx1);
				w += 2 * 18 + nx1;
			}
			assert_true(rec_salvage_needed(tmpdir));
			break;
		}
		assert_int_equal(len, w);
		assert_memory_equal(got, want, len);
		if (ret == 0) { /* nothing more the second time */
			assert_false(rec_salvage_needed(tmpdir));
			assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
			assert_int_equal(file_size("cacheray.trace"), (int64_t)w);
		}
	}
}

/* Salvage killed in the middle of its own append: the ring header has its claim, a second
 * salvage cuts back there and writes the chunk once */
static void test_cacheray_salvage_rerun(void **state)
{
	struct rec_salvage_opts o = { .log = stderr };
	struct rec_salvage_report rep;
	struct rec_salvage_ring sr;
	uint8_t a1[256], a2[256], want[1024];
	char trace[512], why[256], name[64];
	struct unit_ring r;
	size_t len;
	(void)state;
	size_t na1 = cr_records(a1, 4, 0x1000, TID);
	size_t na2 = cr_records(a2, 10, 0x2000, TID);
	snprintf(trace, sizeof(trace), "%s/cacheray.trace", tmpdir);
	int fd = open(trace, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_int_equal(write(fd, a1, na1), (ssize_t)na1);
	close(fd);
	ring_create(&r, PID, TID, "cacheray");
	snprintf(r.h->out_path, sizeof(r.h->out_path), "%s", trace);
	chunk_put(&r, 1, REC_CHUNK_FULL, 2, a2, na2);
	chunk_at(&r, 0)->seq = 1;
	r.h->done_seq = r.h->write_seq = 1;
	r.h->done_len = na1;
	/* the first salvage: its claim, then 5 records and a byte, then it died */
	snprintf(name, sizeof(name), "ring.%d.%d", PID, TID);
	assert_int_equal(rec_salvage_ring_load(dup(r.fd), name, true, &sr, why, sizeof(why)), 0);
	assert_int_equal(sr.nr_chunks, 1);
	rec_salvage_chunk_begin(&sr, &sr.chunks[0], (int64_t)na1);
	close(sr.fd);
	rec_salvage_ring_free(&sr);
	fd = open(trace, O_WRONLY | O_APPEND);
	assert_int_equal(write(fd, a2, 5 * 18 + 1), 5 * 18 + 1);
	close(fd);
	assert_int_equal(r.h->write_len, na2);
	unit_ring_close(&r);

	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	memcpy(want, a1, na1);
	memcpy(want + na1, a2, na2);
	char *got = slurp(trace, &len);
	assert_int_equal(len, na1 + na2);
	assert_memory_equal(got, want, len);
}

/* killed while creating the ring: an empty file, or a header of zeros; nothing recorded */
static void test_unborn_ring(void **state)
{
	struct rec_salvage_opts o = { 0 };
	struct rec_salvage_report rep;
	struct unit_ring r;
	char p[512];
	(void)state;
	uftrace_skeleton(1);
	snprintf(p, sizeof(p), "%s/.flightrec/ring.%d.%d", tmpdir, PID, TID + 5);
	close(open(p, O_WRONLY | O_CREAT, 0600));
	ring_create(&r, PID, TID + 6, "uftrace");
	memset(r.h, 0, sizeof(*r.h));
	unit_ring_close(&r);
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(rep.rings, 2);
	assert_int_equal(rep.unborn, 2);
	assert_int_equal(rep.bad, 0);
	assert_false(rec_salvage_needed(tmpdir));
}

/* DIR/NAME's bytes into BUF (at most SIZE - 1, NUL-terminated); their count, -1: none */
static ssize_t read_small(const char *name, char *buf, size_t size)
{
	char p[512];
	ssize_t n;
	int fd;

	snprintf(p, sizeof(p), "%s/%s", tmpdir, name);
	fd = open(p, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n;
}

/* an unborn ring of the session's process (killed while its first thread made it) */
static void unborn_ring(void)
{
	struct unit_ring r;

	ring_create(&r, PID, PID, "uftrace");
	memset(r.h, 0, sizeof(*r.h));
	unit_ring_close(&r);
}

/* A process killed before any thread recorded anything (every ring unborn, or none): task.txt
 * with its SESS line alone, the map, no .dat, no info. Salvage writes the info a finish would
 * have, listing the session's process, whose TASK line (stamped as the SESS line) and .dat
 * holding one LOST record of 0 events it adds: uftrace opens no trace without a non-empty
 * <tid>.dat. The reader accepts it: 1 record, 0 entries, 0 lost. Again: nothing changes. */
static void test_uftrace_no_record(void **state)
{
	struct rec_salvage_opts o = { .log = stderr };
	struct rec_salvage_report rep;
	struct uftrace_record rec, want = { 0, uftrace_record_word(UFTRACE_LOST, 0, 0) };
	char buf[4096], name[32], info[4096];
	ssize_t n;
	(void)state;
	uftrace_skeleton(0);
	unborn_ring();
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(rep.unborn, 1);
	assert_int_equal(rep.salvaged, 0);
	snprintf(name, sizeof(name), "%d.dat", PID);
	/* read_small ends the bytes with a NUL: room for one more than the record */
	assert_int_equal(read_small(name, buf, sizeof(rec) + 1), 16);
	memcpy(&rec, buf, sizeof(rec));
	assert_memory_equal(&rec, &want, 16);
	assert_true(read_small("task.txt", buf, sizeof(buf)) > 0);
	assert_non_null(strstr(buf, "\nTASK timestamp=1000.000000000 tid=4242 pid=4242\n"));
	n = read_small("info", info, sizeof(info));
	assert_true(n > 40);
	assert_non_null(memmem(info, (size_t)n, "exename:/opt/p\n", 15));
	assert_non_null(memmem(info, (size_t)n, "taskinfo:nr_tid=1\ntaskinfo:tids=4242\n", 37));
	verify_trace(0, 0);
	/* a second salvage: the same trace */
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(file_size(name), 16);
	assert_int_equal(read_small("task.txt", info, sizeof(info)), (ssize_t)strlen(buf));
}

/* The same trace while a process of it lives (holds its live.<pid>): its finish writes info,
 * salvage writes nothing; once it is dead, salvage does */
static void test_uftrace_no_record_live(void **state)
{
	struct rec_salvage_opts o = { .log = stderr };
	struct rec_salvage_report rep;
	char p[512];
	int fd;
	(void)state;
	uftrace_skeleton(0);
	unborn_ring();
	snprintf(p, sizeof(p), "%s/.flightrec/live.%d", tmpdir, PID + 7);
	fd = open(p, O_RDWR | O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
	/* flock is per open file: salvage's own open of live.<pid> finds it taken */
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(file_size("info"), -1);
	assert_int_equal(file_size("4242.dat"), -1);
	close(fd);
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_true(file_size("info") > 40);
	verify_trace(0, 0);
}

/* Directories that are no trace of a process salvage could complete: info is never made up.
 * task.txt without a SESS line; a SESS line whose map is missing; no task.txt; no .flightrec */
static void test_uftrace_no_record_not_ours(void **state)
{
	struct rec_salvage_opts o = { .log = stderr };
	struct rec_salvage_report rep;
	char p[512];
	(void)state;
	unit_write_file(tmpdir, "task.txt", "TASK timestamp=1000.000000500 tid=4243 pid=4242\n");
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(file_size("info"), -1);
	assert_int_equal(file_size("4243.dat"), -1);
	uftrace_skeleton(0);
	snprintf(p, sizeof(p), "%s/sid-0123456789abcdef.map", tmpdir);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(file_size("info"), -1);
	assert_int_equal(file_size("4242.dat"), -1);
	snprintf(p, sizeof(p), "%s/task.txt", tmpdir);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(file_size("info"), -1);
	/* the metadata of a whole trace, but not a directory flightrec recorded into */
	uftrace_skeleton(0);
	snprintf(p, sizeof(p), "%s/.flightrec", tmpdir);
	assert_int_equal(rmdir(p), 0);
	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(file_size("info"), -1);
	assert_int_equal(file_size("4242.dat"), -1);
	assert_int_equal(mkdir(p, 0755), 0); /* for teardown's walk, as setup made it */
}

/* A thread that took a spare ring on its own (rec_ringpool_claim) and was killed before a
 * drainer renamed it and opened its <tid>.dat: pool.<pid>.<n> with the thread's header is
 * its ring, salvaged whole (the .dat and the TASK line made); a spare whose header names no
 * thread (tid 0: made, or back from an ended thread) is only removed. */
static void test_uftrace_claimed_spare(void **state)
{
	struct rec_salvage_opts o = { .log = stderr };
	struct rec_salvage_report rep;
	struct unit_ring r;
	char from[512], to[512];
	(void)state;
	uftrace_skeleton(0);
	ring_create(&r, PID, TID, "uftrace");
	chunk_fill(&r, 0, REC_CHUNK_FULL, 1, 0, RECS, 0);
	chunk_fill(&r, 1, REC_CHUNK_FILLING, 2, RECS, 5, 0);
	unit_ring_close(&r);
	snprintf(from, sizeof(from), "%s/.flightrec/ring.%d.%d", tmpdir, PID, TID);
	snprintf(to, sizeof(to), "%s/.flightrec/pool.%d.7", tmpdir, PID);
	assert_int_equal(rename(from, to), 0);
	ring_create(&r, PID, TID + 1, "uftrace");
	r.h->tid = 0; /* back in the pool */
	unit_ring_close(&r);
	snprintf(from, sizeof(from), "%s/.flightrec/ring.%d.%d", tmpdir, PID, TID + 1);
	snprintf(to, sizeof(to), "%s/.flightrec/pool.%d.8", tmpdir, PID);
	assert_int_equal(rename(from, to), 0);
	assert_true(rec_salvage_needed(tmpdir));

	assert_int_equal(fmt_salvage_dir(tmpdir, &o, &rep), 0);
	assert_int_equal(rep.rings, 1);
	assert_int_equal(rep.salvaged, 1);
	assert_int_equal(rep.events, RECS + 5);
	check_stream(TID, RECS + 5);
	verify_trace(RECS + 5, 0);
	size_t len;
	snprintf(from, sizeof(from), "%s/task.txt", tmpdir);
	char *task = slurp(from, &len);
	assert_non_null(strstr(task, " tid=4243 pid=4242\n"));
	assert_int_equal(file_size(".flightrec/pool.4242.7"), -1);
	assert_int_equal(file_size(".flightrec/pool.4242.8"), -1);
	assert_false(rec_salvage_needed(tmpdir));
}

/* random damage: salvage says no or writes something, never crashes (ASan build) */
static void test_random_damage(void **state)
{
	struct rec_salvage_opts o = { 0 };
	struct rec_salvage_report rep;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	(void)state;
	for (int round = 0; round < 300; round++) {
		struct unit_ring r;
		teardown(NULL);
		setup(NULL);
		uftrace_skeleton(round & 1);
		ring_create(&r, PID, TID, "uftrace");
		chunk_fill(&r, 0, REC_CHUNK_FREE, 1, 0, RECS, 0);
		chunk_fill(&r, 1, REC_CHUNK_FULL, 2, RECS, RECS, 3);
		chunk_fill(&r, 2, REC_CHUNK_FILLING, 3, 2 * RECS, 5, 0);
		r.h->done_seq = r.h->write_seq = 1;
		r.h->done_len = RECS * 16;
		for (int k = 0; k < 1 + round % 8; k++) {
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			/* the header and the chunk headers, where the numbers are */
			size_t where = (seed >> 16) % 4;
			size_t off = where == 0 ? (seed >> 24) % sizeof(struct rec_ring_hdr)
						: REC_RING_HDR_SIZE + (where - 1) * CHUNK + (seed >> 24) % 64;
			r.map[off] ^= (uint8_t)(1u << ((seed >> 40) & 7));
		}
		unit_ring_close(&r);
		(void)fmt_salvage_dir(tmpdir, &o, &rep);
		assert_true(rep.rings == 1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_select_unwritten, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overwrite_and_gaps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_header_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_chunks_skipped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uftrace_cut_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uftrace_rerun_and_lost, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uftrace_lost_pending, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uftrace_overwrite, setup, teardown),
		cmocka_unit_test_setup_teardown(test_live_ring_left_alone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ring_of_live_vfork_child, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uftrace_info_repaired, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_format_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unborn_ring, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uftrace_no_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uftrace_no_record_live, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uftrace_no_record_not_ours, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uftrace_claimed_spare, setup, teardown),
		cmocka_unit_test_setup_teardown(test_xray_log, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ovni_stream, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ovni_empty_side, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cacheray_trace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cacheray_claims, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cacheray_salvage_rerun, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random_damage, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
