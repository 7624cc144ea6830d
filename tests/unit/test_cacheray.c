/*
 * test_cacheray: the Cacheray side of flightrec without a traced program.
 *
 *  - cacheray-rt's record encoders (cacheray-rt/internal.h) against the independent reader
 *    (formats/cacheray/read_cacheray): every field at its extremes survives the round trip;
 *  - the reader's rules, one broken rule per buffer, each reported with the offending record's
 *    offset (unknown types, flags on RTTA tags, every truncation point, empty accesses, NUL in a
 *    type name), and the legal corner cases (empty trace, ATOMIC|UNALIGNED together);
 *  - the first records of tests/samples/cacheray/sample.trace, decoded as sample.dump.txt says;
 *  - mutation fuzzing: no crash, no read out of bounds (run it under ASAN=1), every error at an
 *    offset inside the buffer, every accepted buffer framed exactly;
 *  - sniffing (*.trace by name, or by content);
 *  - CACHERAY_OPTIONS parsing (cacheray-rt/cr_options.c, compiled in here), how ranges are cut
 *    into records and how RTTA sizes beyond 32 bits are folded.
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

#include "cacheray-rt/internal.h"
#include "formats/cacheray/read_cacheray.h"
#include "unit_util.h"

/* the parser (cacheray-rt/cr_options.c) is plain C with no runtime state: the test links the
 * same source, compiled for the host */

struct collected {
	struct crt_rec r[64];
	char names[64][64];
	size_t n;
};

static int collect(void *ctx, const struct crt_rec *r)
{
	struct collected *c = ctx;

	if (c->n < 64) {
		c->r[c->n] = *r;
		if (r->name) {
			size_t k = r->name_len < 63 ? r->name_len : 63;
			memcpy(c->names[c->n], r->name, k);
			c->names[c->n][k] = '\0';
		}
		c->n++;
	}
	return 0;
}

/* walk buf; expect an error of `rule` at `off` (rule 0: success) */
static void expect_walk(const uint8_t *buf, size_t len, int rule, int64_t off)
{
	struct rd_error err;
	struct crt_counts c;
	int r;

	rd_error_clear(&err);
	r = crt_walk_buf(buf, len, "t", &c, NULL, NULL, &err);
	if (rule == 0) {
		if (r != 0)
			print_error("unexpected error: %s at %lld\n", err.msg,
				    (long long)err.offset);
		assert_int_equal(r, 0);
		return;
	}
	assert_int_equal(r, -1);
	if (err.rule != rule || err.offset != off)
		print_error("got rule %d at %lld (%s), wanted rule %d at %lld\n", err.rule,
			    (long long)err.offset, err.msg, rule, (long long)off);
	assert_int_equal(err.rule, rule);
	assert_int_equal(err.offset, off);
}

/* a small valid trace: access, add, remove, access; returns its length */
static size_t build_trace(uint8_t *buf)
{
	size_t o = 0;

	cr_put_access(buf + o, CR_READ, 0x1000, 8, 42);
	o += CR_ACCESS_BYTES;
	cr_put_add(buf + o, 0x2000, 42, 16, 4, "struct.point", 12);
	o += CR_ADD_FIXED_BYTES + 12;
	cr_put_remove(buf + o, 0x2000, 42);
	o += CR_REMOVE_BYTES;
	cr_put_access(buf + o, CR_WRITE | CR_ATOMIC, 0x3000, 4, 43);
	o += CR_ACCESS_BYTES;
	return o;
}

static void test_encode_roundtrip(void **state)
{
	uint8_t buf[512];
	struct collected c = {0};
	struct rd_error err;
	struct crt_counts cnt;
	size_t o = 0;

	(void)state;
	cr_put_access(buf + o, CR_READ, UINTPTR_MAX, 255, UINT64_MAX);
	o += CR_ACCESS_BYTES;
	cr_put_access(buf + o, CR_WRITE | CR_UNALIGNED | CR_ATOMIC, 0x0102030405060708ull, 1,
		      0x1112131415161718ull);
	o += CR_ACCESS_BYTES;
	cr_put_add(buf + o, 0x8000000000000000ull, 7, UINT32_MAX, 0, "", 0);
	o += CR_ADD_FIXED_BYTES;
	cr_put_add(buf + o, 1, 0, 8, UINT32_MAX, "i64*", 4);
	o += CR_ADD_FIXED_BYTES + 4;
	cr_put_remove(buf + o, 0, 5);
	o += CR_REMOVE_BYTES;
	rd_error_clear(&err);
	assert_int_equal(crt_walk_buf(buf, o, "t", &cnt, collect, &c, &err), 0);
	assert_int_equal(c.n, 5);
	assert_int_equal(cnt.records, 5);
	assert_int_equal(cnt.bytes, o);

	assert_int_equal(c.r[0].tag, 0x00);
	assert_true(c.r[0].addr == UINT64_MAX);
	assert_int_equal(c.r[0].size, 255);
	assert_true(c.r[0].tid == UINT64_MAX);

	assert_int_equal(c.r[1].tag, 0xc1);
	assert_int_equal(c.r[1].kind, CRT_WRITE);
	assert_true(c.r[1].atomic && c.r[1].unaligned);
	assert_true(c.r[1].addr == 0x0102030405060708ull);
	assert_int_equal(c.r[1].size, 1);
	assert_true(c.r[1].tid == 0x1112131415161718ull);
	assert_int_equal(c.r[1].off, 18);

	assert_int_equal(c.r[2].kind, CRT_RTTA_ADD);
	assert_true(c.r[2].addr == 0x8000000000000000ull);
	assert_int_equal(c.r[2].tid, 7);
	assert_true(c.r[2].elem_size == UINT32_MAX);
	assert_int_equal(c.r[2].elem_count, 0);
	assert_int_equal(c.r[2].name_len, 0);

	assert_int_equal(c.r[3].elem_size, 8);
	assert_true(c.r[3].elem_count == UINT32_MAX);
	assert_string_equal(c.names[3], "i64*");
	assert_int_equal(c.r[3].len, 33);

	assert_int_equal(c.r[4].kind, CRT_RTTA_REMOVE);
	assert_int_equal(c.r[4].addr, 0);
	assert_int_equal(c.r[4].tid, 5);
	assert_int_equal(c.r[4].off, 18 + 18 + 29 + 33);
}

static void test_empty_and_legal_flags(void **state)
{
	uint8_t buf[64] = {0};

	(void)state;
	expect_walk(buf, 0, 0, 0);
	cr_put_access(buf, 0xc0, 0x10, 2, 1);
	cr_put_access(buf + 18, 0x81, 0x11, 4, 1);
	expect_walk(buf, 36, 0, 0);
}

static void test_unknown_types(void **state)
{
	static const uint8_t bad[] = {0x04, 0x05, 0x10, 0x20, 0x3f, 0x44, 0x7f, 0x85, 0xff};
	uint8_t buf[256];
	size_t len;

	(void)state;
	for (size_t i = 0; i < sizeof(bad); i++) {
		len = build_trace(buf);
		buf[18] = bad[i]; /* the RTTA_ADD */
		expect_walk(buf, len, CRT_RULE_TYPE, 18);
		len = build_trace(buf);
		buf[0] = bad[i];
		expect_walk(buf, len, CRT_RULE_TYPE, 0);
	}
}

static void test_flags_on_rtta(void **state)
{
	static const uint8_t bad_add[] = {0x42, 0x82, 0xc2}, bad_rm[] = {0x43, 0x83, 0xc3};
	uint8_t buf[256];
	size_t len;

	(void)state;
	for (size_t i = 0; i < 3; i++) {
		len = build_trace(buf);
		buf[18] = bad_add[i];
		expect_walk(buf, len, CRT_RULE_FLAGS, 18);
		len = build_trace(buf);
		buf[18 + 41] = bad_rm[i];
		expect_walk(buf, len, CRT_RULE_FLAGS, 59);
	}
}

static void test_truncated(void **state)
{
	uint8_t buf[256];
	size_t len = build_trace(buf);

	(void)state;
	/* every cut inside each record is reported at that record's offset */
	for (size_t cut = 1; cut < len; cut++) {
		size_t end = len - cut, start;
		if (end == 0 || end == 18 || end == 59 || end == 76) {
			expect_walk(buf, end, 0, 0);
			continue;
		}
		start = end < 18 ? 0 : end < 59 ? 18 : end < 76 ? 59 : 76;
		expect_walk(buf, end, CRT_RULE_TRUNCATED, (int64_t)start);
	}
	/* a name length that runs past the end (and one near 2^32) */
	len = build_trace(buf);
	uint32_t big = 13;
	memcpy(buf + 18 + 25, &big, 4);
	expect_walk(buf, 59, CRT_RULE_TRUNCATED, 18);
	big = UINT32_MAX;
	memcpy(buf + 18 + 25, &big, 4);
	expect_walk(buf, len, CRT_RULE_TRUNCATED, 18);
}

static void test_size_zero_and_nul(void **state)
{
	uint8_t buf[256];
	size_t len = build_trace(buf);

	(void)state;
	buf[76 + 9] = 0; /* the last access */
	expect_walk(buf, len, CRT_RULE_SIZE, 76);
	len = build_trace(buf);
	buf[18 + 29 + 6] = '\0'; /* "struct\0point" */
	expect_walk(buf, len, CRT_RULE_NAME, 18);
}

/* the first 77 bytes of tests/samples/cacheray/sample.trace, and what sample.dump.txt says */
static const uint8_t sample_head[] = {
	0x02, 0xe0, 0x44, 0x43, 0xb0, 0xfa, 0x55, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x0c,
	0x00, 0x00, 0x00, 0x73, 0x74, 0x72, 0x75, 0x63, 0x74, 0x2e, 0x70, 0x6f, 0x69,
	0x6e, 0x74, 0x01, 0xe0, 0x44, 0x43, 0xb0, 0xfa, 0x55, 0x00, 0x00, 0x04, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xe4, 0x44, 0x43, 0xb0, 0xfa,
	0x55, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

static void test_sample_head(void **state)
{
	struct collected c = {0};
	struct rd_error err;

	(void)state;
	rd_error_clear(&err);
	assert_int_equal(
		crt_walk_buf(sample_head, sizeof(sample_head), "sample", NULL, collect, &c, &err),
		0);
	assert_int_equal(c.n, 3);
	/* 0  RTTA_ADD addr=0x55fab04344e0 tid=0 elemsize=64 elemcount=1 type='struct.point' */
	assert_int_equal(c.r[0].off, 0);
	assert_int_equal(c.r[0].kind, CRT_RTTA_ADD);
	assert_true(c.r[0].addr == 0x55fab04344e0ull);
	assert_int_equal(c.r[0].tid, 0);
	assert_int_equal(c.r[0].elem_size, 64);
	assert_int_equal(c.r[0].elem_count, 1);
	assert_string_equal(c.names[0], "struct.point");
	/* 41  WRITE addr=0x55fab04344e0 size=4 tid=0 */
	assert_int_equal(c.r[1].off, 41);
	assert_int_equal(c.r[1].tag, CRT_WRITE);
	assert_true(c.r[1].addr == 0x55fab04344e0ull);
	assert_int_equal(c.r[1].size, 4);
	/* 59  WRITE addr=0x55fab04344e4 size=4 tid=0 */
	assert_int_equal(c.r[2].off, 59);
	assert_true(c.r[2].addr == 0x55fab04344e4ull);
}

/* xorshift64*, reproducible */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static int sum_len(void *ctx, const struct crt_rec *r)
{
	*(uint64_t *)ctx += r->len;
	return 0;
}

static void test_fuzz(void **state)
{
	uint8_t base[256], *buf;
	size_t blen = build_trace(base);

	(void)state;
	for (int iter = 0; iter < 50000; iter++) {
		size_t len = blen;
		struct rd_error err;
		uint64_t total = 0;
		int r;

		/* an exact-size heap copy, so that ASan sees any read past the end */
		buf = malloc(blen);
		assert_non_null(buf);
		memcpy(buf, base, blen);
		for (int k = (int)(rng() % 4); k >= 0; k--)
			buf[rng() % blen] = (uint8_t)rng();
		if (rng() % 3 == 0)
			len = (size_t)(rng() % (blen + 1));
		rd_error_clear(&err);
		r = crt_walk_buf(buf, len, "fuzz", NULL, sum_len, &total, &err);
		if (r == 0) {
			assert_int_equal(total, len);
		} else {
			assert_int_equal(r, -1);
			assert_true(err.rule >= CRT_RULE_TYPE && err.rule <= CRT_RULE_NAME);
			assert_true(err.offset >= 0 && (size_t)err.offset < len);
		}
		free(buf);
	}
}

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	if (n)
		assert_int_equal(fwrite(p, 1, n, f), n);
	fclose(f);
}

static void test_sniff(void **state)
{
	char dir[] = "/tmp/test_cacheray.XXXXXX", path[256];
	uint8_t buf[256];
	size_t len = build_trace(buf);
	static const char text[] = "hello, this is not a trace\n";

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/any.trace", dir);
	write_file(path, "", 0);
	assert_true(crt_sniff_file(path)); /* by name, even empty */
	unlink(path);
	snprintf(path, sizeof(path), "%s/noname", dir);
	write_file(path, buf, len);
	assert_true(crt_sniff_file(path));
	write_file(path, text, sizeof(text) - 1);
	assert_false(crt_sniff_file(path));
	write_file(path, "", 0);
	assert_false(crt_sniff_file(path));
	unlink(path);
	assert_false(crt_sniff_file(dir));
	rmdir(dir);
}

static void test_options(void **state)
{
	struct cr_options o;
	char longv[REC_PATH_MAX + 32];

	(void)state;
	cr_options_parse(NULL, &o);
	assert_string_equal(o.tracefile, "cacheray.trace");
	assert_int_equal(o.enabled, 1);
	assert_int_equal(o.malloc_mode, CR_MALLOC_AUTO);
	assert_int_equal(o.memfuncs, 1);
	assert_int_equal(o.tracefile_set, 0);

	cr_options_parse("tracefile=a.trace:enabled=0", &o);
	assert_string_equal(o.tracefile, "a.trace");
	assert_int_equal(o.tracefile_set, 1);
	assert_int_equal(o.enabled, 0);

	/* as Cacheray: anything but "0" enables, empty pairs are skipped, '=' may be in a value */
	cr_options_parse("::enabled=no::tracefile=x=y:", &o);
	assert_int_equal(o.enabled, 1);
	assert_string_equal(o.tracefile, "x=y");
	cr_options_parse("enabled=", &o);
	assert_int_equal(o.enabled, 1);
	cr_options_parse("enabled", &o);
	assert_int_equal(o.enabled, 1);

	cr_options_parse("malloc=1:memfuncs=0", &o);
	assert_int_equal(o.malloc_mode, CR_MALLOC_ON);
	assert_int_equal(o.memfuncs, 0);
	cr_options_parse("malloc=0", &o);
	assert_int_equal(o.malloc_mode, CR_MALLOC_OFF);
	cr_options_parse("malloc=auto", &o);
	assert_int_equal(o.malloc_mode, CR_MALLOC_AUTO);

	/* bad values and unknown keys: a warning, the default */
	cr_options_parse("malloc=2:memfuncs=yes:colour=blue:tracefile=", &o);
	assert_int_equal(o.malloc_mode, CR_MALLOC_AUTO);
	assert_int_equal(o.memfuncs, 1);
	assert_string_equal(o.tracefile, "cacheray.trace");
	memset(longv, 'x', sizeof(longv) - 1);
	longv[sizeof(longv) - 1] = '\0';
	memcpy(longv, "tracefile=", 10);
	cr_options_parse(longv, &o);
	assert_string_equal(o.tracefile, "cacheray.trace");
}

struct options_call {
	const char *s;
	struct cr_options o;
};

static void options_cb(void *arg)
{
	struct options_call *c = arg;

	cr_options_parse(c->s, &c->o);
}

/* enabled=VALUE other than 0 or 1: on, as Cacheray reads it, but never without a warning */
static void test_options_enabled_warns(void **state)
{
	static const struct {
		const char *s;
		int enabled;
		const char *warning; /* NULL: none */
	} cases[] = {
		{ "enabled=maybe", 1, "CACHERAY_OPTIONS: enabled=maybe is not 0 or 1" },
		{ "enabled=no", 1, "CACHERAY_OPTIONS: enabled=no is not 0 or 1" },
		{ "tracefile=t:enabled=", 1, "CACHERAY_OPTIONS: enabled= is not 0 or 1" },
		{ "enabled=0", 0, NULL },
		{ "enabled=1", 1, NULL },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct options_call c = { .s = cases[i].s };
		char *out = unit_stderr_of(options_cb, &c);

		assert_int_equal(c.o.enabled, cases[i].enabled);
		if (cases[i].warning == NULL) {
			assert_string_equal(out, "");
		} else {
			if (unit_lines(out) != 1 || !strstr(out, cases[i].warning))
				print_error("%s: want one warning \"%s\", got \"%s\"\n",
					    cases[i].s, cases[i].warning, out);
			assert_int_equal(unit_lines(out), 1);
			assert_non_null(strstr(out, cases[i].warning));
		}
		free(out);
	}
}

static void test_range_pieces(void **state)
{
	(void)state;
	for (uintptr_t start = 0x1000; start < 0x1000 + 130; start++) {
		for (size_t n = 1; n < 2000; n += (n < 300 ? 1 : 37)) {
			uintptr_t a = start;
			size_t left = n, pieces = 0;
			while (left) {
				size_t p = cr_range_piece(a, left);
				assert_true(p >= 1 && p <= CR_SIZE_MAX && p <= left);
				if (n <= CR_SIZE_MAX)
					assert_int_equal(p, n); /* one record */
				else if (p < left) {
					assert_int_equal((a + p) % 64, 0); /* cut at a line */
					assert_true(p >= 192);
				}
				a += p;
				left -= p;
				pieces++;
			}
			assert_true(pieces <= 1 + n / 192);
		}
	}
}

static void test_rtta_dims(void **state)
{
	uint32_t es, ec;

	(void)state;
	cr_rtta_dims(64, 1, &es, &ec);
	assert_int_equal(es, 64);
	assert_int_equal(ec, 1);
	cr_rtta_dims(1ull << 33, 1, &es, &ec); /* 8 GiB */
	assert_true((uint64_t)es * ec == 1ull << 33);
	cr_rtta_dims(8, 1ull << 33, &es, &ec);
	assert_true((uint64_t)es * ec == 1ull << 36);
	cr_rtta_dims((1ull << 33) + 1, 1, &es, &ec); /* odd: no exact split, saturated */
	assert_true(es == UINT32_MAX && ec == 1);
	cr_rtta_dims(UINT32_MAX, UINT32_MAX, &es, &ec);
	assert_true(es == UINT32_MAX && ec == UINT32_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode_roundtrip),
		cmocka_unit_test(test_empty_and_legal_flags),
		cmocka_unit_test(test_unknown_types),
		cmocka_unit_test(test_flags_on_rtta),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_size_zero_and_nul),
		cmocka_unit_test(test_sample_head),
		cmocka_unit_test(test_fuzz),
		cmocka_unit_test(test_sniff),
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_options_enabled_warns),
		cmocka_unit_test(test_range_pieces),
		cmocka_unit_test(test_rtta_dims),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
