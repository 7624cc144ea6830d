/*
 * test_mcount_argspec: libmcount's -A/-R spec parser and per-function merge
 * (libmcount/mcount_argspec.c) against uftrace 0.13's rules (utils/argspec.c parse_argspec,
 * utils/filter.c add_arg_spec / setup_trigger_action): each item form (argN, fpargN, retval,
 * formats and sizes, argN/f, %reg, %stackN, /e:NAME), the defaults (8 bytes, 1 for /c), what
 * is refused; entries, modules and ignored actions; the merge (same slot replaced in place,
 * an exact name not replaced by a regex, return values counted apart).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "libmcount/mcount_argspec.h"

static struct mc_argspec_set set;

static struct mc_arg item(const char *s)
{
	struct mc_arg a;
	char err[200];

	if (mc_arg_parse(&a, s, strlen(s), err, sizeof(err)) < 0)
		fail_msg("'%s' refused: %s", s, err);
	return a;
}

static void refused(const char *s, const char *why)
{
	struct mc_arg a;
	char err[200] = "";

	assert_int_equal(mc_arg_parse(&a, s, strlen(s), err, sizeof(err)), -1);
	if (!strstr(err, why))
		fail_msg("'%s': '%s' does not say '%s'", s, err, why);
}

static void test_items(void **state)
{
	struct mc_arg a;

	(void)state;
	a = item("arg1");
	assert_int_equal(a.type, MC_AT_INDEX);
	assert_int_equal(a.idx, 1);
	assert_int_equal(a.fmt, 'd');
	assert_int_equal(a.size, 8);
	a = item("arg12/i16");
	assert_int_equal(a.idx, 12);
	assert_int_equal(a.fmt, 'i');
	assert_int_equal(a.size, 2);
	a = item("arg2/u8");
	assert_int_equal(a.fmt, 'u');
	assert_int_equal(a.size, 1);
	a = item("arg3/x32");
	assert_int_equal(a.fmt, 'x');
	assert_int_equal(a.size, 4);
	a = item("arg1/s");
	assert_int_equal(a.fmt, 's');
	assert_int_equal(a.size, 8);
	a = item("arg1/c");
	assert_int_equal(a.fmt, 'c');
	assert_int_equal(a.size, 1);
	a = item("retval");
	assert_int_equal(a.type, MC_AT_INDEX);
	assert_int_equal(a.idx, 0);
	a = item("retval/f80");
	assert_int_equal(a.fmt, 'f');
	assert_int_equal(a.size, 10);
	/* fpargN: a float register; /32 without a letter is its size */
	a = item("fparg2");
	assert_int_equal(a.type, MC_AT_FLOAT);
	assert_int_equal(a.idx, 2);
	assert_int_equal(a.size, 8);
	a = item("fparg1/32");
	assert_int_equal(a.size, 4);
	/* argN/f is a float argument too (uftrace sets its type) */
	a = item("arg2/f32");
	assert_int_equal(a.type, MC_AT_FLOAT);
	assert_int_equal(a.idx, 2);
	assert_int_equal(a.size, 4);
	/* locations */
	a = item("arg1%rsi");
	assert_int_equal(a.type, MC_AT_REG);
	assert_int_equal(a.reg, 2);
	assert_int_equal(a.idx, 1);
	a = item("fparg1/64%XMM3");
	assert_int_equal(a.type, MC_AT_REG);
	assert_int_equal(a.reg, MC_REG_XMM0 + 3);
	a = item("arg3/x%stack+2");
	assert_int_equal(a.type, MC_AT_STACK);
	assert_int_equal(a.stack_ofs, 2);
	assert_int_equal(a.fmt, 'x');
	a = item("arg1/e:my_enum%rdx");
	assert_int_equal(a.fmt, 'e');
	assert_int_equal(a.type, MC_AT_REG);
	assert_int_equal(a.reg, 3);
}

static void test_refused(void **state)
{
	(void)state;
	refused("argx", "not argN");
	refused("foo", "not argN");
	refused("arg1/q", "unsupported format 'q'");
	refused("arg1/i12", "unsupported size");
	refused("arg1/i80", "unsupported size");
	refused("arg1%rax", "unknown register");
	refused("fparg1%xmm1/64", "unknown register"); /* the size goes before the location */
	refused("arg1/e", "enum");
	refused("arg1/t16", "unsupported format 't'");
	refused("arg1-", "cannot parse");
}

static void parse(const char *list, int kind)
{
	char err[300];

	if (mc_argspec_parse(&set, list, kind, 0, err, sizeof(err)) < 0)
		fail_msg("'%s' refused: %s", list, err);
}

static void test_entries(void **state)
{
	char err[300];

	(void)state;
	set.n = 0;
	parse("main@arg1,arg2/s;ar_.*@fparg1,libfoo;x@arg1,depth=2,retval", MC_AR_ARG);
	assert_int_equal(set.n, 3);
	assert_int_equal(set.r[0].n, 2);
	assert_string_equal(set.r[0].module, "");
	assert_int_equal(set.r[1].n, 1);
	assert_string_equal(set.r[1].module, "libfoo");
	/* a trigger action and the other option's item are ignored, not modules */
	assert_int_equal(set.r[2].n, 1);
	assert_string_equal(set.r[2].module, "");
	parse("main@retval/i32,arg1", MC_AR_RET);
	assert_int_equal(set.n, 4);
	assert_int_equal(set.r[3].n, 1);
	assert_int_equal(set.r[3].a[0].idx, 0);
	assert_int_equal(set.r[3].kind, MC_AR_RET);
	/* refused: no item of this kind (uftrace's auto spec), a bad pattern, a bad item */
	assert_int_equal(mc_argspec_parse(&set, "malloc", MC_AR_ARG, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "no argN"));
	assert_int_equal(mc_argspec_parse(&set, "a(b@arg1", MC_AR_ARG, 0, err, sizeof(err)), -1);
	assert_int_equal(mc_argspec_parse(&set, "main@arg1/z", MC_AR_ARG, 0, err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "'arg1/z'"));
	/* "args" is taken for an argument, as uftrace's "arg" action takes it */
	assert_int_equal(mc_argspec_parse(&set, "main@args", MC_AR_ARG, 0, err, sizeof(err)), -1);
}

static void test_merge(void **state)
{
	struct mc_arglist l;

	(void)state;
	set.n = 0;
	parse("f@arg1/x,arg2;f.*@arg1/i32,arg3/s;f@arg2/u", MC_AR_ARG);
	parse("f@retval/s", MC_AR_RET);
	mc_argspec_for(&set, "/bin/prog", "f", NULL, &l);
	assert_int_equal(l.n, 4);
	assert_int_equal(l.nargs, 3);
	assert_int_equal(l.nret, 1);
	/* arg1 exact /x kept against the regex's /i32; arg2 replaced in place by exact /u */
	assert_int_equal(l.a[0].idx, 1);
	assert_int_equal(l.a[0].fmt, 'x');
	assert_int_equal(l.a[1].idx, 2);
	assert_int_equal(l.a[1].fmt, 'u');
	assert_int_equal(l.a[2].idx, 3);
	assert_int_equal(l.a[2].fmt, 's');
	assert_int_equal(l.a[3].idx, 0);
	/* a regex match alone */
	mc_argspec_for(&set, "/bin/prog", "fx", NULL, &l);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.a[0].fmt, 'i');
	assert_int_equal(l.a[0].size, 4);
	/* nothing */
	mc_argspec_for(&set, "/bin/prog", "g", NULL, &l);
	assert_int_equal(l.n, 0);
	/* a module: only where the caller says the module is the one named */
	set.n = 0;
	parse("f@libc,arg1", MC_AR_ARG);
	mc_argspec_for(&set, "/bin/prog", "f", (const uint8_t[]){ 0 }, &l);
	assert_int_equal(l.n, 0);
	mc_argspec_for(&set, "/lib/libc.so.6", "f", (const uint8_t[]){ 1 }, &l);
	assert_int_equal(l.n, 1);
	assert_true(mc_argspec_module_is("/lib/x86_64-linux-gnu/libc.so.6", "libc"));
	assert_false(mc_argspec_module_is("/lib/x86_64-linux-gnu/libm.so.6", "libc"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_items),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_entries),
		cmocka_unit_test(test_merge),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
