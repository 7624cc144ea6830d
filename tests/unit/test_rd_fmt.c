/*
 * test_rd_fmt: the readers' printf-free formatting (formats/common/rd_fmt.h) and byte-order
 * loads (rd_get16/32/64 in rd_common.h) give exactly what printf and a byte-by-byte decode
 * give, at the edges (0, the largest values, every hex width) and over a pseudo-random sweep:
 * `flightrec dump` lines must not change when their formatting does.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "formats/common/rd_common.h"
#include "formats/common/rd_fmt.h"

static uint64_t next_rand(uint64_t *s)
{
	/* xorshift64: a sweep over every magnitude, reproducible */
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void check_one(uint64_t v)
{
	char want[64], got[64], *end;
	char tbuf[RD_TIME_LEN];

	snprintf(want, sizeof(want), "%" PRIu64, v);
	end = rd_fmt_dec(got, v);
	*end = '\0';
	assert_string_equal(got, want);

	snprintf(want, sizeof(want), "%" PRIx64, v);
	end = rd_fmt_hex(got, v);
	*end = '\0';
	assert_string_equal(got, want);

	end = rd_fmt_time(got, v);
	*end = '\0';
	assert_string_equal(got, rd_time_str(v, tbuf));
}

static void test_fmt_edges(void **state)
{
	(void)state;
	check_one(0);
	check_one(1);
	check_one(9);
	check_one(10);
	check_one(999999999);
	check_one(1000000000);
	check_one(UINT64_MAX);
	for (int b = 0; b < 64; b++) {
		check_one(UINT64_C(1) << b);
		check_one((UINT64_C(1) << b) - 1);
	}
}

static void test_fmt_sweep(void **state)
{
	uint64_t s = 0x9e3779b97f4a7c15ull;

	(void)state;
	for (int i = 0; i < 100000; i++) {
		uint64_t v = next_rand(&s);

		check_one(v >> (i % 64)); /* small values as often as large ones */
	}
}

static void test_fmt_width(void **state)
{
	char got[16], *end;

	(void)state;
	end = rd_fmt_dec_width(got, 42, 9);
	*end = '\0';
	assert_string_equal(got, "000000042");
	end = rd_fmt_str(got, "entry");
	*end = '\0';
	assert_string_equal(got, "entry");
}

static void test_get_byte_order(void **state)
{
	const uint8_t b[9] = { 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09 };

	(void)state;
	/* odd addresses too: the loads take any alignment */
	assert_int_equal(rd_get16(b, false), 0x0201);
	assert_int_equal(rd_get16(b, true), 0x0102);
	assert_int_equal(rd_get16(b + 1, false), 0x0302);
	assert_int_equal(rd_get32(b, false), 0x04030201u);
	assert_int_equal(rd_get32(b, true), 0x01020304u);
	assert_int_equal(rd_get32(b + 1, true), 0x02030405u);
	assert_true(rd_get64(b, false) == 0x0807060504030201ull);
	assert_true(rd_get64(b, true) == 0x0102030405060708ull);
	assert_true(rd_get64(b + 1, false) == 0x0908070605040302ull);
	assert_true(rd_get64(b + 1, true) == 0x0203040506070809ull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fmt_edges),
		cmocka_unit_test(test_fmt_sweep),
		cmocka_unit_test(test_fmt_width),
		cmocka_unit_test(test_get_byte_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
