/*
 * test_rec_config: the environment as librecord reads it (librecord/rec_config.c). Each bad
 * value gets exactly one warning naming the variable and the value, and the documented
 * fallback (the default); good values are taken without a word. Covered: a size whose K/M/G
 * suffix would overflow 64 bits, FLIGHTREC_MAX_STACK above the front end's ceiling (libmcount:
 * 1024) or within it (xray-rt: 65536), FLIGHTREC_DEBUG's values ("0" is off), a bad
 * FLIGHTREC_WRITERS (the fallback is the unset value: writers as threads grow, not none).
 * Every test sets the variables it uses and clears them again (setenv/unsetenv).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "librecord/rec_config.h"
#include "librecord/rec_util.h"
#include "unit_util.h"

static const char *const vars[] = { "FLIGHTREC_BUFSIZE", "FLIGHTREC_BUFCOUNT",
				     "FLIGHTREC_MAX_STACK", "FLIGHTREC_DEBUG",
				     "FLIGHTREC_WRITERS" };

struct parse_call {
	struct rec_config cfg;
	struct rec_config_defaults def;
};

static void parse_cb(void *arg)
{
	struct parse_call *c = arg;

	rec_config_parse(&c->cfg, &c->def);
}

/* rec_config_parse with NAME=VALUE alone in the environment (VALUE NULL: none of ours set);
 * returns what it wrote on stderr */
static char *parse_with(struct parse_call *c, const char *name, const char *value)
{
	char *out;

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	if (value)
		assert_int_equal(setenv(name, value, 1), 0);
	out = unit_stderr_of(parse_cb, c);
	unsetenv(name);
	return out;
}

/* one warning line, and it names NAME=VALUE */
static void assert_one_warning(const char *out, const char *name, const char *value)
{
	char want[256];

	snprintf(want, sizeof(want), "%s=%s ", name, value);
	if (unit_lines(out) != 1 || !strstr(out, want))
		print_error("want one warning naming \"%s\", got: \"%s\"\n", want, out);
	assert_int_equal(unit_lines(out), 1);
	assert_non_null(strstr(out, want));
}

static void test_size_overflow(void **state)
{
	uint64_t v = 7;

	(void)state;
	/* (2^44 + 2) MiB = 2^64 + 2 MiB: shifted first, it wrapped to 2 MiB */
	assert_int_equal(rec_config_parse_size("17592186044418M", &v), -1);
	assert_int_equal(rec_config_parse_size("17592186044417K", &v), -1);
	assert_int_equal(rec_config_parse_size("17179869188G", &v), -1);
	assert_int_equal(rec_config_parse_size("18446744073709551615K", &v), -1);
	assert_int_equal(v, 7); /* untouched on error */
	/* the limit itself, 2^40, in every unit */
	assert_int_equal(rec_config_parse_size("1024G", &v), 0);
	assert_int_equal(v, 1ull << 40);
	assert_int_equal(rec_config_parse_size("1048576M", &v), 0);
	assert_int_equal(v, 1ull << 40);
	assert_int_equal(rec_config_parse_size("1073741824KB", &v), 0);
	assert_int_equal(v, 1ull << 40);
	assert_int_equal(rec_config_parse_size("1025G", &v), -1);
	assert_int_equal(rec_config_parse_size("1099511627777", &v), -1);
}

static void test_bufsize_env(void **state)
{
	struct parse_call c = { .def = { .dir = "." } };
	char *out;

	(void)state;
	out = parse_with(&c, "FLIGHTREC_BUFSIZE", "17592186044418M");
	assert_one_warning(out, "FLIGHTREC_BUFSIZE", "17592186044418M");
	assert_int_equal(c.cfg.chunk_size, 1u << 20); /* the default, not 2 MiB */
	free(out);
	out = parse_with(&c, "FLIGHTREC_BUFSIZE", "2M");
	assert_string_equal(out, "");
	assert_int_equal(c.cfg.chunk_size, 2u << 20);
	free(out);
}

static void test_max_stack(void **state)
{
	/* libmcount: 1024 is both its default and its ceiling */
	struct parse_call mc = { .def = { .dir = ".", .max_stack = 1024, .max_stack_max = 1024 } };
	/* xray-rt: default 16384, the general ceiling 65536 */
	struct parse_call xr = { .def = { .dir = ".", .max_stack = 16384 } };
	char *out;

	(void)state;
	out = parse_with(&mc, "FLIGHTREC_MAX_STACK", "65536");
	assert_one_warning(out, "FLIGHTREC_MAX_STACK", "65536");
	assert_non_null(strstr(out, "1024"));
	assert_int_equal(mc.cfg.max_stack, 1024);
	free(out);
	out = parse_with(&mc, "FLIGHTREC_MAX_STACK", "1025");
	assert_one_warning(out, "FLIGHTREC_MAX_STACK", "1025");
	free(out);
	out = parse_with(&mc, "FLIGHTREC_MAX_STACK", "300");
	assert_string_equal(out, "");
	assert_int_equal(mc.cfg.max_stack, 300);
	free(out);

	out = parse_with(&xr, "FLIGHTREC_MAX_STACK", "65536");
	assert_string_equal(out, "");
	assert_int_equal(xr.cfg.max_stack, 65536);
	free(out);
	out = parse_with(&xr, "FLIGHTREC_MAX_STACK", "65537");
	assert_one_warning(out, "FLIGHTREC_MAX_STACK", "65537");
	assert_int_equal(xr.cfg.max_stack, 16384);
	free(out);
	out = parse_with(&xr, "FLIGHTREC_MAX_STACK", NULL);
	assert_string_equal(out, "");
	assert_int_equal(xr.cfg.max_stack, 16384);
	free(out);
}

/* FLIGHTREC_WRITERS: a bad value falls back to the unset behaviour (-1: as threads grow),
 * as every variable falls back to its default; it used to force none */
static void test_writers_env(void **state)
{
	static const struct {
		const char *value; /* NULL: unset */
		int warns, want;
	} cases[] = { { NULL, 0, -1 }, { "16", 1, -1 }, { "auto", 1, -1 }, { "0", 0, 0 },
		      { "15", 0, 15 } };
	struct parse_call c = { .def = { .dir = "." } };

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out = parse_with(&c, "FLIGHTREC_WRITERS", cases[i].value);
		if (cases[i].warns)
			assert_one_warning(out, "FLIGHTREC_WRITERS", cases[i].value);
		else
			assert_string_equal(out, "");
		assert_int_equal(c.cfg.writers, cases[i].want);
		free(out);
	}
}

static void test_debug(void **state)
{
	static const struct {
		const char *value;
		int debug;
	} good[] = { { "1", 1 }, { "yes", 1 }, { "ON", 1 }, { "true", 1 },
		     { "0", 0 }, { "no", 0 }, { "off", 0 }, { "False", 0 } };
	struct parse_call c = { .def = { .dir = "." } };
	char *out;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		out = parse_with(&c, "FLIGHTREC_DEBUG", good[i].value);
		assert_string_equal(out, "");
		assert_int_equal(c.cfg.debug, good[i].debug);
		assert_int_equal(rec_debug_enabled, good[i].debug);
		free(out);
	}
	out = parse_with(&c, "FLIGHTREC_DEBUG", "maybe");
	assert_one_warning(out, "FLIGHTREC_DEBUG", "maybe");
	assert_int_equal(c.cfg.debug, 0);
	free(out);
	out = parse_with(&c, "FLIGHTREC_DEBUG", NULL);
	assert_string_equal(out, "");
	assert_int_equal(c.cfg.debug, 0);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size_overflow),
		cmocka_unit_test(test_bufsize_env),
		cmocka_unit_test(test_max_stack),
		cmocka_unit_test(test_debug),
		cmocka_unit_test(test_writers_env),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
