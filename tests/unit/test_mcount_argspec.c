/*
 * test_mcount_argspec: libmcount's -A/-R spec parser and per-function merge
 * (libmcount/mcount_argspec.c) against uftrace 0.13's rules (utils/argspec.c parse_argspec,
 * utils/filter.c add_arg_spec / setup_trigger_action): each item form (argN, fpargN, retval,
 * formats and sizes, argN/f, %reg, %stackN, /e:NAME), the defaults (8 bytes, 1 for /c), what
 * is refused; entries, modules and ignored actions; the merge (same slot replaced in place,
 * an exact name not replaced by a regex, return values counted apart); the table of
 * prototypes (formats/uftrace/uftrace_autoargs.c: sorted, every item parses, the lookup) and
 * how "-A FUNC", "-R FUNC" and -a take it (uftrace's add_filter with TRIGGER_FL_AUTO_ARGS).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "libmcount/mcount_argspec.h"
#include "formats/uftrace/uftrace_autoargs.h"

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
	/* uftrace's int from strtol: an index past every function's arguments, never wrapped
	 * into a small one (arg4294967295 is -1, arg9999999 stays) */
	a = item("arg9999999");
	assert_int_equal(a.idx, 9999999);
	a = item("arg4294967295");
	assert_int_equal(a.idx, -1);
	a = item("fparg0x10");
	assert_int_equal(a.idx, 16);
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
	/* structs by value, as uftrace's DWARF specs write them: size, name, the registers
	 * (upper case there) joined with '+', or the stack; no location keeps the index */
	a = item("arg2/t16:dd%XMM0+XMM1");
	assert_int_equal(a.fmt, 't');
	assert_int_equal(a.tsize, 16);
	assert_int_equal(a.type, MC_AT_REG);
	assert_int_equal(a.nregs, 2);
	assert_int_equal(a.regs[0], MC_REG_XMM0);
	assert_int_equal(a.regs[1], MC_REG_XMM0 + 1);
	a = item("arg1/t8:pt%RDI");
	assert_int_equal(a.nregs, 1);
	assert_int_equal(a.regs[0], 1);
	a = item("arg1/t40:big%stack+1");
	assert_int_equal(a.type, MC_AT_STACK);
	assert_int_equal(a.stack_ofs, 1);
	assert_int_equal(a.tsize, 40);
	a = item("arg1/t0:empty%stack+1");
	assert_int_equal(a.tsize, 0);
	a = item("retval/t8:pt");
	assert_int_equal(a.type, MC_AT_INDEX);
	assert_int_equal(a.idx, 0);
	assert_int_equal(a.nregs, 0);
	assert_int_equal(a.tsize, 8);
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
	refused("arg1/t200:huge", "a struct of more than"); /* past the payload we keep */
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
	/* no item of this kind: an entry of its own, for the table's prototype */
	parse("malloc;calloc@retval", MC_AR_ARG);
	assert_int_equal(set.n, 6);
	assert_int_equal(set.r[4].n, 0);
	assert_int_equal(set.r[5].n, 0);
	/* refused: a bad pattern, a bad item */
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

/* one item of L: its index, format and size as a string ("1s8") */
static void expect_item(const struct mc_arglist *l, unsigned i, int idx, char fmt, int size)
{
	assert_true(i < l->n);
	if (l->a[i].idx != idx || l->a[i].fmt != fmt || l->a[i].size != size)
		fail_msg("item %u: arg%d/%c%d, want arg%d/%c%d", i, l->a[i].idx, l->a[i].fmt,
			 l->a[i].size * 8, idx, fmt, size * 8);
}

static void test_autoargs_table(void **state)
{
	const struct uftrace_autoarg *e, *prev = NULL;
	size_t n = uftrace_autoarg_count();

	(void)state;
	assert_true(n > 50);
	for (size_t i = 0; i < n; i++, prev = e) {
		const char *lists[2];

		e = uftrace_autoarg_at(i);
		assert_non_null(e);
		/* sorted, no duplicates: the lookup is a binary search */
		if (prev && strcmp(prev->name, e->name) >= 0)
			fail_msg("'%s' after '%s'", e->name, prev->name);
		assert_true(e->args || e->ret);
		lists[0] = e->args;
		lists[1] = e->ret;
		/* every item parses, and is of its list's kind; every enum is declared */
		for (int k = 0; k < 2; k++) {
			for (const char *p = lists[k]; p && *p;) {
				const char *c = strchr(p, ',');
				size_t len = c ? (size_t)(c - p) : strlen(p);
				char err[200], decl[80];
				struct mc_arg a;

				if (mc_arg_parse(&a, p, len, err, sizeof(err)) < 0)
					fail_msg("%s: %s", e->name, err);
				assert_int_equal(a.idx == 0, k == 1);
				if (a.fmt == 'e') {
					const char *nm = memchr(p, ':', len) + 1;
					snprintf(decl, sizeof(decl), "enum %.*s {",
						 (int)(len - (size_t)(nm - p)), nm);
					if (!strstr(uftrace_autoarg_enums, decl))
						fail_msg("%s: no '%s' in the enums", e->name, decl);
				}
				p += len + (c != NULL);
			}
		}
		assert_ptr_equal(uftrace_autoarg_find(e->name), e);
	}
	assert_null(uftrace_autoarg_at(n));
	assert_null(uftrace_autoarg_find("main"));
	assert_null(uftrace_autoarg_find(""));
	assert_null(uftrace_autoarg_find("strlenx"));
	e = uftrace_autoarg_find("mmap");
	assert_non_null(e);
	assert_string_equal(e->args, "arg1/p,arg2/u,arg3/e:uft_mmap_prot,arg4/e:uft_mmap_flag,"
			    "arg5/d32,arg6");
	assert_string_equal(e->ret, "retval/p");
	e = uftrace_autoarg_find("free");
	assert_non_null(e);
	assert_null(e->ret);
	assert_non_null(strstr(uftrace_autoarg_enums, "O_RDONLY = 0,"));
	assert_non_null(strstr(uftrace_autoarg_enums, "MAP_ANON = 0x20,"));
}

static void test_auto_merge(void **state)
{
	struct mc_arglist l;

	(void)state;
	/* "-A ^str -R ^str": the table's items of each kind, for the names it knows */
	set.n = 0;
	parse("^str", MC_AR_ARG);
	parse("^str", MC_AR_RET);
	mc_argspec_for(&set, "/bin/prog", "strlen", NULL, &l);
	assert_int_equal(l.n, 2);
	expect_item(&l, 0, 1, 's', 8);
	expect_item(&l, 1, 0, 'u', 8);
	mc_argspec_for(&set, "/bin/prog", "strncmp", NULL, &l);
	assert_int_equal(l.nargs, 3);
	assert_int_equal(l.nret, 1);
	expect_item(&l, 3, 0, 'd', 4);
	mc_argspec_for(&set, "/bin/prog", "strange", NULL, &l); /* not in the table */
	assert_int_equal(l.n, 0);
	/* "-A FUNC" then "-A FUNC@arg2": the table's items, arg2 replaced in place (uftrace
	 * merges them in order) */
	set.n = 0;
	parse("calloc;calloc@arg2/x", MC_AR_ARG);
	mc_argspec_for(&set, "/bin/prog", "calloc", NULL, &l);
	assert_int_equal(l.n, 2);
	expect_item(&l, 0, 1, 'u', 8);
	expect_item(&l, 1, 2, 'x', 8);
	/* -a: every function of the table, but a kind an entry gave items keeps those only */
	set.n = 0;
	set.auto_all = 1;
	parse("calloc@arg2", MC_AR_ARG);
	mc_argspec_for(&set, "/bin/prog", "calloc", NULL, &l);
	assert_int_equal(l.n, 2); /* uftrace's t180: calloc(14) = 0x... */
	expect_item(&l, 0, 2, 'd', 8);
	expect_item(&l, 1, 0, 'p', 8);
	mc_argspec_for(&set, "/bin/prog", "open", NULL, &l);
	assert_int_equal(l.n, 3);
	expect_item(&l, 0, 1, 's', 8);
	expect_item(&l, 1, 2, 'e', 8);
	expect_item(&l, 2, 0, 'd', 4);
	mc_argspec_for(&set, "/bin/prog", "main", NULL, &l);
	assert_int_equal(l.n, 0);
	/* an entry naming a function the table does not know gives nothing, and -a nothing */
	parse("ar_int2", MC_AR_ARG);
	mc_argspec_for(&set, "/bin/prog", "ar_int2", NULL, &l);
	assert_int_equal(l.n, 0);
	set.auto_all = 0;
	mc_argspec_for(&set, "/bin/prog", "open", NULL, &l);
	assert_int_equal(l.n, 0);
}

/* -T's argument actions into -A/-R, as flightrec record's split and uftrace's
 * extract_trigger_args put them */
static void test_trigger_split(void **state)
{
	char rest[256], args[256], rets[256], small[16];

	(void)state;
	assert_int_equal(mc_trigger_split("atoi@arg1/s,retval/i32;mprotect@arg2,arg3/x,depth=1;"
					  "main@trace-on;strcmp@trace-on,auto-args;f@FPARG1,RETVAL;"
					  "g@read=pmu-cycle;h@depth=2",
					  rest, args, rets, sizeof(rest)),
			 0);
	assert_string_equal(args, "atoi@arg1/s;mprotect@arg2,arg3/x;strcmp;f@FPARG1");
	assert_string_equal(rets, "atoi@retval;strcmp;f@retval");
	/* read= stays a trigger (refused there); an entry without '@' stays as it is */
	assert_string_equal(rest, "mprotect@depth=1;main@trace-on;strcmp@trace-on;"
				  "g@read=pmu-cycle;h@depth=2");
	assert_int_equal(mc_trigger_split("main;;x@arg1", rest, args, rets, sizeof(rest)), 0);
	assert_string_equal(rest, "main");
	assert_string_equal(args, "x@arg1");
	assert_string_equal(rets, "");
	assert_int_equal(mc_trigger_split("", rest, args, rets, sizeof(rest)), 0);
	assert_string_equal(rest, "");
	assert_string_equal(args, "");
	/* an output past its room: refused, never cut */
	assert_int_equal(mc_trigger_split("a_long_function_name@arg1", small, small, small,
					  sizeof(small)),
			 -1);
}

/* DWARF's specs (mcount_dwarf.h) for "-A FUNC" and -a: before the table's, a kind with an
 * item we cannot record gives none of that kind, an explicit item still wins */
static void test_dwarf_merge(void **state)
{
	struct mc_arglist l;

	(void)state;
	set.n = 0;
	set.auto_all = 0;
	parse("main;strlen", MC_AR_ARG);
	mc_argspec_for_dwarf(&set, "/bin/prog", "main", NULL, "arg1,arg2/p", "retval", &l);
	assert_int_equal(l.nargs, 2);
	assert_int_equal(l.nret, 0); /* no -R: DWARF's return spec is not taken */
	expect_item(&l, 0, 1, 'd', 8);
	expect_item(&l, 1, 2, 'p', 8);
	/* DWARF first, the table only without it (uftrace's find_auto_argspec) */
	mc_argspec_for_dwarf(&set, "/bin/prog", "strlen", NULL, "arg1/x", NULL, &l);
	assert_int_equal(l.n, 1);
	expect_item(&l, 0, 1, 'x', 8);
	mc_argspec_for_dwarf(&set, "/bin/prog", "strlen", NULL, NULL, NULL, &l);
	expect_item(&l, 0, 1, 's', 8);
	/* -a: both kinds from DWARF; a struct too big to keep drops the arguments only */
	set.n = 0;
	set.auto_all = 1;
	mc_argspec_for_dwarf(&set, "/bin/prog", "f_bigarg", NULL, "arg1/t200:huge%stack+1,arg2",
			     "retval/e:color", &l);
	assert_int_equal(l.nargs, 0);
	assert_int_equal(l.nret, 1);
	expect_item(&l, 0, 0, 'e', 8);
	mc_argspec_for_dwarf(&set, "/bin/prog", "f_struct", NULL,
			     "arg1/t8:pt%RDI,arg2/t16:dd%XMM0+XMM1,arg3%RSI", NULL, &l);
	assert_int_equal(l.nargs, 3);
	assert_int_equal(l.a[1].fmt, 't');
	assert_int_equal(l.a[1].nregs, 2);
	assert_int_equal(l.a[2].type, MC_AT_REG);
	/* an explicit spec of a kind wins over DWARF's, as over the table's */
	parse("main@arg1/x", MC_AR_ARG);
	mc_argspec_for_dwarf(&set, "/bin/prog", "main", NULL, "arg1,arg2/p", "retval", &l);
	assert_int_equal(l.nargs, 1);
	expect_item(&l, 0, 1, 'x', 8);
	assert_int_equal(l.nret, 1);
	set.auto_all = 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_items),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_entries),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_autoargs_table),
		cmocka_unit_test(test_auto_merge),
		cmocka_unit_test(test_trigger_split),
		cmocka_unit_test(test_dwarf_merge),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
