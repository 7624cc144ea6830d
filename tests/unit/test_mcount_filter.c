/*
 * test_mcount_filter: libmcount's record-time filter compilation (libmcount/mcount_filter.c):
 * uftrace's pattern kinds (a plain name compared whole, a POSIX extended regex searched, a
 * glob matched whole), our regex matcher checked against glibc's regexec (REG_EXTENDED |
 * REG_NOSUB, what uftrace calls) on a table of patterns and names, and against fnmatch for
 * globs; the patterns we refuse (with their reason); FLIGHTREC_FILTER's list ("a;!b", the
 * last matching pattern decides); the address-range table the hooks search (aliases,
 * overlaps, bounds, uftrace's filter mode); the -t time syntax; uftrace's trigger actions
 * (FUNC@ACTION,..., what each list kind takes, merged per symbol as uftrace's add_trigger,
 * PATTERN@MODULE), read=WHAT and --signal's SIG@ACTION.
 */
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fnmatch.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>

#include "libmcount/mcount_filter.h"

static struct mc_pattern patt;

static int match(const char *pattern, int glob, const char *name)
{
	char err[200];

	if (mc_pattern_compile(&patt, pattern, strlen(pattern), glob, err, sizeof(err)) < 0)
		fail_msg("'%s' refused: %s", pattern, err);
	return mc_pattern_match(&patt, name);
}

static void test_kinds(void **state)
{
	(void)state;
	/* no regex character: the whole name, not a part */
	assert_true(match("ft_mid", 0, "ft_mid"));
	assert_false(match("ft_mid", 0, "ft_middle"));
	assert_false(match("ft_mid", 0, "x_ft_mid"));
	assert_int_equal(patt.type, MC_PATT_SIMPLE);
	/* a regex is searched anywhere */
	assert_true(match("ft_m.d", 0, "x_ft_mid_y"));
	assert_int_equal(patt.type, MC_PATT_REGEX);
	assert_true(match("mid$", 0, "ft_mid"));
	assert_false(match("mid$", 0, "ft_middle"));
	/* a glob is matched whole */
	assert_true(match("ft_t*", 1, "ft_top"));
	assert_false(match("ft_t*", 1, "x_ft_top"));
	assert_int_equal(patt.type, MC_PATT_GLOB);
	/* --match=glob: a name without specials is still compared whole */
	assert_false(match("ft", 1, "ft_top"));
}

/* the matcher agrees with glibc's regexec on every pair */
static void test_regex_vs_glibc(void **state)
{
	static const char *const pats[] = {
		"^ft_(top|rec)$", "mid$", "^main$", "a*ab", "(ab)+c", "(a|b)*c", "^(a|ab)(c|bcd)$",
		"x{2,3}y", "x{2}", "x{2,}$", "[[:digit:]]+_", "[^a-z_]", "^[a-c-]+$", "[]x]", "a.c",
		"\\.", "f(o|)o", "(|x)y", "((a)*b)*c", "^$", "_Z[0-9]+", "\\w+\\s", "(a*)*b",
		"^.*$",
		"(fo+|ba?r){2}", "[.]", "ab?c", "^(x|y|z)+(x|y|z)$", "[[:upper:]][[:lower:]]+",
	};
	static const char *const names[] = {
		"ft_top", "ft_rec", "ft_top2", "ft_mid", "ft_middle", "main", "mainx", "aab", "ab",
		"ababc", "abx", "abacbc", "abcd", "ac", "abd", "xxy", "xy", "xxxxy", "xx", "12_",
		"abc", "ABC", "a-b", "x]", "a.c", "azc", "foo", "fo", "y", "zy", "aabbc", "",
		"_Z3foov",
		"foo bar", "b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaac", "fooobar", "barfoo", "Hello",
		"xyzzy",
	};
	char err[200];

	(void)state;
	for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
		regex_t re;

		assert_int_equal(regcomp(&re, pats[i], REG_EXTENDED | REG_NOSUB), 0);
		if (mc_pattern_compile(&patt, pats[i], strlen(pats[i]), 0, err, sizeof(err)) < 0)
			fail_msg("'%s' refused: %s", pats[i], err);
		for (size_t j = 0; j < sizeof(names) / sizeof(names[0]); j++) {
			int want = regexec(&re, names[j], 0, NULL, 0) == 0;
			int got = mc_pattern_match(&patt, names[j]);
			if (want != got)
				fail_msg("'%s' on \"%s\": %d, regexec %d", pats[i], names[j], got,
					 want);
		}
		regfree(&re);
	}
}

static void test_glob_vs_fnmatch(void **state)
{
	static const char *const pats[] = { "ft_t*", "*mid*", "ft_?op", "[!f]*", "[a-f]t_*",
					    "*_[[:digit:]]", "\\*x", "*", "a*b*c", "[^a]b" };
	static const char *const names[] = { "ft_top", "ft_tip", "ft_mid", "ft_middle",
					     "main", "et_x", "f_1", "*x", "axbyc", "abc", "bb",
					     "ab", "" };
	char err[200];

	(void)state;
	for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
		if (mc_pattern_compile(&patt, pats[i], strlen(pats[i]), 1, err, sizeof(err)) < 0)
			fail_msg("'%s' refused: %s", pats[i], err);
		for (size_t j = 0; j < sizeof(names) / sizeof(names[0]); j++) {
			int want = fnmatch(pats[i], names[j], 0) == 0;
			int got = mc_pattern_match(&patt, names[j]);
			if (want != got)
				fail_msg("glob '%s' on \"%s\": %d, fnmatch %d", pats[i], names[j],
					 got, want);
		}
	}
}

/* what we do not take is an error naming why, never a pattern that matches nothing */
static void test_refused(void **state)
{
	static const struct {
		const char *pattern, *why;
	} bad[] = { { "a(", "unmatched '('" },	 { "a)", "unmatched ')'" },
		    { "*a", "repeats nothing" }, { "[abc", "unmatched '['" },
		    { "(a)\\1", "not supported" }, { "x{3,1}", "invalid interval" },
		    { "[[:nope:]]", "character class" }, { "^*", "repeated anchor" },
		    { "[z-a]", "range" } };
	char err[200];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (mc_pattern_compile(&patt, bad[i].pattern, strlen(bad[i].pattern), 0, err,
				       sizeof(err)) == 0)
			fail_msg("'%s' taken", bad[i].pattern);
		if (!strstr(err, bad[i].why))
			fail_msg("'%s': \"%s\", want \"%s\"", bad[i].pattern, err, bad[i].why);
	}
}

static struct mc_filter_spec spec;

static void test_list(void **state)
{
	char err[300];

	(void)state;
	assert_int_equal(mc_filter_parse(&spec, "ft_.*;!ft_mid", 0, err, sizeof(err)), 0);
	assert_int_equal(spec.n, 2);
	assert_int_equal(mc_filter_mode_of(&spec, "ft_mid"), MC_FILTER_OUT);
	assert_int_equal(mc_filter_mode_of(&spec, "ft_top"), MC_FILTER_IN);
	assert_int_equal(mc_filter_mode_of(&spec, "main"), 0);
	/* the other order: the later -F takes ft_mid back */
	assert_int_equal(mc_filter_parse(&spec, "!ft_mid;ft_.*", 0, err, sizeof(err)), 0);
	assert_int_equal(mc_filter_mode_of(&spec, "ft_mid"), MC_FILTER_IN);
	/* empty items are skipped; a lone '!' and PATTERN@MODULE are refused */
	assert_int_equal(mc_filter_parse(&spec, ";a;;", 0, err, sizeof(err)), 0);
	assert_int_equal(spec.n, 1);
	assert_int_equal(mc_filter_parse(&spec, "a;!", 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'!'"));
	assert_int_equal(mc_filter_parse(&spec, "malloc@kernel", 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "kernel modules"));
	assert_int_equal(mc_filter_parse(&spec, "ok;bad(", 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'bad(': unmatched '('"));
}

static void test_table(void **state)
{
	struct mc_ftable t = { 0 };
	char err[300];

	(void)state;
	assert_int_equal(mc_filter_parse(&spec, "^f;!^g", 0, err, sizeof(err)), 0);
	/* added out of order; f2 overlaps g1 (a size too large); "falias" at g2's address
	 * comes after g2: the first added keeps the address */
	assert_int_equal(mc_ftable_add(&t, &spec, "f2", 0x2000, 0x2100), 0);
	assert_int_equal(mc_ftable_add(&t, &spec, "main", 0x1000, 0x1100), 0);
	assert_int_equal(mc_ftable_add(&t, &spec, "g1", 0x2080, 0x2200), 0);
	assert_int_equal(mc_ftable_add(&t, &spec, "g2", 0x3000, 0x3010), 0);
	assert_int_equal(mc_ftable_add(&t, &spec, "falias", 0x3000, 0x3010), 0);
	assert_int_equal(mc_ftable_add(&t, &spec, "f3", 0x4000, 0x4000), 0); /* empty */
	mc_ftable_finish(&t);
	assert_int_equal(t.n, 3);
	assert_true(t.has_in);
	assert_int_equal(mc_ftable_lookup(&t, 0x1000), 0);
	assert_int_equal(mc_ftable_lookup(&t, 0x1fff), 0);
	assert_int_equal(mc_ftable_lookup(&t, 0x2000), MC_FILTER_IN);
	assert_int_equal(mc_ftable_lookup(&t, 0x207f), MC_FILTER_IN);
	assert_int_equal(mc_ftable_lookup(&t, 0x2080), MC_FILTER_OUT);
	assert_int_equal(mc_ftable_lookup(&t, 0x21ff), MC_FILTER_OUT);
	assert_int_equal(mc_ftable_lookup(&t, 0x2200), 0);
	assert_int_equal(mc_ftable_lookup(&t, 0x3005), MC_FILTER_OUT);
	assert_int_equal(mc_ftable_lookup(&t, 0x3010), 0);
	assert_int_equal(mc_ftable_lookup(&t, 0x4000), 0);
	assert_int_equal(mc_ftable_lookup(&t, 0), 0);
	assert_int_equal(mc_ftable_lookup(&t, UINTPTR_MAX), 0);
	mc_ftable_free(&t);

	/* -N alone: uftrace's filter mode is not IN (the rest is recorded) */
	assert_int_equal(mc_filter_parse(&spec, "!^g", 0, err, sizeof(err)), 0);
	assert_int_equal(mc_ftable_add(&t, &spec, "g1", 0x10, 0x20), 0);
	mc_ftable_finish(&t);
	assert_false(t.has_in);
	mc_ftable_free(&t);
	/* an -F that matched a symbol a later -N took: IN all the same (uftrace's setup) */
	assert_int_equal(mc_filter_parse(&spec, "g1;!g1", 0, err, sizeof(err)), 0);
	assert_int_equal(mc_ftable_add(&t, &spec, "g1", 0x10, 0x20), 0);
	mc_ftable_finish(&t);
	assert_true(t.has_in);
	assert_int_equal(mc_ftable_lookup(&t, 0x10), MC_FILTER_OUT);
	mc_ftable_free(&t);

	/* many ranges: every one found by the binary search */
	assert_int_equal(mc_filter_parse(&spec, "^f", 0, err, sizeof(err)), 0);
	for (uintptr_t a = 1000; a-- > 0;) {
		uintptr_t lo = 0x10000 + a * 32;
		assert_int_equal(mc_ftable_add(&t, &spec, "f", lo, lo + 16), 0);
	}
	mc_ftable_finish(&t);
	assert_int_equal(t.n, 1000);
	for (uintptr_t a = 0; a < 1000; a++) {
		assert_int_equal(mc_ftable_lookup(&t, 0x10000 + a * 32 + 15), MC_FILTER_IN);
		assert_int_equal(mc_ftable_lookup(&t, 0x10000 + a * 32 + 16), 0);
	}
	mc_ftable_free(&t);
}

static void test_triggers(void **state)
{
	struct mc_trigger tr;
	char err[300];

	(void)state;
	/* -T: each action of uftrace 0.13, by prefix and case-insensitive */
	spec.n = 0;
	assert_int_equal(mc_filter_parse_more(&spec, "ft_a@depth=3,TIME=1.5us;ft_b@trace_off;"
					      "ft_b@traceon;ft_c@finish,recover,backtrace;"
					      "ft_d@notrace,size=40;ft_e@trace,color=red,hide;"
					      "ft_f@filter,caller", MC_LIST_TRIGGER, 0, err,
					      sizeof(err)), 0);
	assert_int_equal(spec.n, 7);
	assert_true(spec.has_in); /* ft_f@filter */
	assert_int_equal(mc_filter_trigger_of(&spec, "ft_a", -1, &tr), 1);
	assert_int_equal(tr.flags, MC_TR_DEPTH | MC_TR_TIME);
	assert_int_equal(tr.depth, 3);
	assert_int_equal(tr.time, 1500);
	/* trace_on after trace_off on one symbol: the later one only (add_trigger) */
	assert_int_equal(mc_filter_trigger_of(&spec, "ft_b", -1, &tr), 1);
	assert_int_equal(tr.flags, MC_TR_TRACE_ON);
	assert_int_equal(mc_filter_trigger_of(&spec, "ft_c", -1, &tr), 1);
	assert_int_equal(tr.flags, MC_TR_FINISH | MC_TR_RECOVER | MC_TR_REPLAY);
	assert_int_equal(mc_filter_trigger_of(&spec, "ft_d", -1, &tr), 1);
	assert_int_equal(tr.flags, MC_TR_FILTER | MC_TR_SIZE);
	assert_int_equal(tr.fmode, MC_FILTER_OUT);
	assert_int_equal(tr.size, 40);
	assert_int_equal(mc_filter_trigger_of(&spec, "ft_e", -1, &tr), 1);
	assert_int_equal(tr.flags, MC_TR_TRACE | MC_TR_REPLAY);
	assert_int_equal(mc_filter_trigger_of(&spec, "ft_f", -1, &tr), 1);
	assert_int_equal(tr.flags, MC_TR_FILTER | MC_TR_CALLER);
	assert_int_equal(tr.fmode, MC_FILTER_IN);
	assert_int_equal(mc_filter_trigger_of(&spec, "main", -1, &tr), 0);

	/* -F then -T then -C, merged in that order: the later filter mode and depth win */
	assert_int_equal(mc_filter_parse(&spec, "^ft_;!ft_x@depth=2", 0, err, sizeof(err)), 0);
	assert_int_equal(mc_filter_parse_more(&spec, "ft_x@filter,depth=5", MC_LIST_TRIGGER, 0,
					      err, sizeof(err)), 0);
	assert_int_equal(mc_filter_parse_more(&spec, "ft_x", MC_LIST_CALLER, 0, err,
					      sizeof(err)), 0);
	assert_int_equal(mc_filter_trigger_of(&spec, "ft_x", -1, &tr), 1);
	assert_int_equal(tr.flags, MC_TR_FILTER | MC_TR_DEPTH | MC_TR_CALLER);
	assert_int_equal(tr.fmode, MC_FILTER_IN);
	assert_int_equal(tr.depth, 5);
	assert_int_equal(mc_filter_mode_of(&spec, "ft_x"), MC_FILTER_IN);

	/* PATTERN@MODULE: only in the module of that index (mc_resolve sets modidx) */
	assert_int_equal(mc_filter_parse(&spec, "ft_m@libfoo,depth=1", 0, err, sizeof(err)), 0);
	assert_string_equal(spec.module[0], "libfoo");
	spec.modidx[0] = 2;
	assert_int_equal(mc_filter_trigger_of(&spec, "ft_m", 2, &tr), 1);
	assert_int_equal(tr.flags, MC_TR_FILTER | MC_TR_DEPTH);
	assert_int_equal(mc_filter_trigger_of(&spec, "ft_m", 0, &tr), 0);

	/* PATTERN@PLT (any case): the executable's library calls only (MC_MOD_EXE_PLT), which
	 * the executable's own name matches too */
	assert_int_equal(mc_filter_parse(&spec, "^get.?id$@plt;!malloc@PLT", 0, err, sizeof(err)),
			 0);
	assert_string_equal(spec.module[0], "plt");
	spec.modidx[0] = spec.modidx[1] = MC_MODIDX_PLT;
	assert_int_equal(mc_filter_trigger_of(&spec, "getpid", 0 | MC_MOD_EXE_PLT, &tr), 1);
	assert_int_equal(tr.fmode, MC_FILTER_IN);
	assert_int_equal(mc_filter_trigger_of(&spec, "malloc", 3 | MC_MOD_EXE_PLT, &tr), 1);
	assert_int_equal(tr.fmode, MC_FILTER_OUT);
	assert_int_equal(mc_filter_trigger_of(&spec, "getpid", 0, &tr), 0); /* a function */
	assert_int_equal(mc_filter_trigger_of(&spec, "getpid", 2, &tr), 0); /* a library's */
	assert_int_equal(mc_filter_parse(&spec, "getpid@exe", 0, err, sizeof(err)), 0);
	spec.modidx[0] = 0;
	assert_int_equal(mc_filter_trigger_of(&spec, "getpid", 0 | MC_MOD_EXE_PLT, &tr), 1);
	assert_int_equal(mc_filter_trigger_of(&spec, "getpid", 1, &tr), 0);

	/* refused: the argument actions, a trigger action in a filter list, a bare -T, bad
	 * values, two modules, 0.13's unknown "trace=on" */
	static const struct {
		const char *list;
		enum mc_list_kind kind;
		const char *why;
	} bad[] = { { "f@arg1", MC_LIST_TRIGGER, "argument" },
		    { "f@retval", MC_LIST_TRIGGER, "argument" },
		    { "f@fparg1", MC_LIST_TRIGGER, "argument" },
		    { "f@auto-args", MC_LIST_TRIGGER, "argument" },
		    { "f@read=proc/stat", MC_LIST_TRIGGER, "invalid value" },
		    { "f@read=", MC_LIST_TRIGGER, "invalid value" },
		    { "f@read=Page-Fault", MC_LIST_TRIGGER, "invalid value" },
		    { "f@read=proc/statm", MC_LIST_FILTER, "trigger action" },
		    { "f@trace_on", MC_LIST_FILTER, "trigger action" },
		    { "f@finish", MC_LIST_CALLER, "trigger action" },
		    { "f", MC_LIST_TRIGGER, "needs an action" },
		    { "f@depth=", MC_LIST_TRIGGER, "invalid value" },
		    { "f@depth=70000", MC_LIST_TRIGGER, "invalid value" },
		    { "f@time=1xs", MC_LIST_TRIGGER, "invalid value" },
		    { "f@trace=on", MC_LIST_TRIGGER, "invalid value" },
		    { "f@liba,libb", MC_LIST_FILTER, "second module" },
		    { "f@kernel", MC_LIST_FILTER, "kernel" } };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		spec.n = 0;
		err[0] = '\0';
		if (mc_filter_parse_more(&spec, bad[i].list, bad[i].kind, 0, err, sizeof(err)) == 0)
			fail_msg("'%s' taken", bad[i].list);
		if (!strstr(err, bad[i].why))
			fail_msg("'%s': \"%s\", want \"%s\"", bad[i].list, err, bad[i].why);
	}
}

/* read=WHAT: uftrace's five names, its TRIGGER_READ_* bits, ORed where patterns merge */
static void test_read_action(void **state)
{
	struct mc_trigger tr;
	char err[300];

	(void)state;
	assert_int_equal(mc_read_kind("proc/statm", 10), MC_READ_PROC_STATM);
	assert_int_equal(mc_read_kind("page-fault", 10), MC_READ_PAGE_FAULT);
	assert_int_equal(mc_read_kind("pmu-cycle", 9), MC_READ_PMU_CYCLE);
	assert_int_equal(mc_read_kind("pmu-cache", 9), MC_READ_PMU_CACHE);
	assert_int_equal(mc_read_kind("pmu-branch", 10), MC_READ_PMU_BRANCH);
	assert_int_equal(mc_read_kind("proc/statm", 9), 0);
	assert_int_equal(mc_read_kind("pmu", 3), 0);
	/* uftrace's TRIGGER_READ_* values (utils/filter.h) */
	assert_int_equal(MC_READ_PROC_STATM | MC_READ_PAGE_FAULT << 4 | MC_READ_PMU_CYCLE << 8 |
				 MC_READ_PMU_CACHE << 12 | MC_READ_PMU_BRANCH << 16,
			 0x1 | 0x2 << 4 | 0x4 << 8 | 0x8 << 12 | 0x10 << 16);

	spec.n = 0;
	if (mc_filter_parse_more(&spec, "b@read=proc/statm,depth=2;^(a|b)$@READ=page-fault;"
				 "c@read=pmu-cycle,read=pmu-branch",
				 MC_LIST_TRIGGER, 0, err, sizeof(err)) < 0)
		fail_msg("refused: %s", err);
	assert_int_equal(spec.n, 3);
	assert_int_equal(spec.tr[0].flags, MC_TR_READ | MC_TR_DEPTH);
	assert_int_equal(spec.tr[0].read, MC_READ_PROC_STATM);
	assert_int_equal(spec.tr[1].read, MC_READ_PAGE_FAULT);
	assert_int_equal(spec.tr[2].read, MC_READ_PMU_CYCLE | MC_READ_PMU_BRANCH);
	/* merged per symbol: b gets both reads and the depth */
	assert_int_equal(mc_filter_trigger_of(&spec, "b", -1, &tr), 1);
	assert_int_equal(tr.flags, MC_TR_READ | MC_TR_DEPTH);
	assert_int_equal(tr.read, MC_READ_PROC_STATM | MC_READ_PAGE_FAULT);
	assert_int_equal(tr.depth, 2);
	assert_int_equal(mc_filter_trigger_of(&spec, "a", -1, &tr), 1);
	assert_int_equal(tr.read, MC_READ_PAGE_FAULT);
	assert_int_equal(mc_filter_trigger_of(&spec, "main", -1, &tr), 0);
}

static void test_signals(void **state)
{
	int sigs[8];
	uint32_t acts[8];
	char err[300];

	(void)state;
	assert_int_equal(mc_signal_parse("SIGUSR1@trace_off;USR2@trace-on,finish;10@traceon;"
					  "SIGRTMIN+3@finish;RTMAX-1@traceoff", sigs, acts, 8, err,
					  sizeof(err)), 5);
	assert_int_equal(sigs[0], SIGUSR1);
	assert_int_equal(acts[0], MC_TR_TRACE_OFF);
	assert_int_equal(sigs[1], SIGUSR2);
	assert_int_equal(acts[1], MC_TR_TRACE_ON | MC_TR_FINISH);
	assert_int_equal(sigs[2], 10);
	assert_int_equal(acts[2], MC_TR_TRACE_ON);
	assert_int_equal(sigs[3], SIGRTMIN + 3);
	assert_int_equal(sigs[4], SIGRTMAX - 1);
	assert_int_equal(acts[4], MC_TR_TRACE_OFF);
	assert_int_equal(mc_signal_parse("SIGNOPE@finish", sigs, acts, 8, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a signal"));
	assert_int_equal(mc_signal_parse("SIGKILL@finish", sigs, acts, 8, err, sizeof(err)), -1);
	assert_int_equal(mc_signal_parse("SIGUSR1", sigs, acts, 8, err, sizeof(err)), -1);
	assert_int_equal(mc_signal_parse("SIGUSR1@depth=1", sigs, acts, 8, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "trace_on, trace_off or finish"));
}

/* what uftrace 0.13's "simple" demangler shows, from what __cxa_demangle gives (pairs read
 * off `uftrace replay` and c++filt for one program) */
static void test_demangle(void **state)
{
	static const char *const pairs[][2] = {
		{ "ns::ns1::foo::bar(int) const", "ns::ns1::foo::bar" },
		{ "ns::ns1::foo::foo()", "ns::ns1::foo::foo" },
		{ "(anonymous namespace)::anon(int)", "_GLOBAL__N_1::anon" },
		{ "int tmpl<int>(int)", "tmpl" },
		{ "unsigned long tmpl<unsigned long>(unsigned long)", "tmpl" },
		{ "box<int>::get()", "box::get" },
		{ "box<int>::operator+(box<int> const&)", "box::operator+" },
		{ "ns::ns1::foo::operator()(int)", "ns::ns1::foo::operator" },
		{ "ns::ns1::foo::operator<(ns::ns1::foo const&) const", "ns::ns1::foo::operator<" },
		{ "operator new(unsigned long)", "operator new" },
		/* a template operator: its arguments after the token, a return type before */
		{ "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > "
		  "std::operator+<char, std::char_traits<char>, std::allocator<char> >(std::__cxx11::"
		  "basic_string<char, std::char_traits<char>, std::allocator<char> > const&, char "
		  "const*)",
		  "std::operator+" },
		{ "bool std::operator!=<char, std::char_traits<char>, std::allocator<char> >(std::"
		  "__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, "
		  "char const*)",
		  "std::operator!=" },
		{ "std::ostream& operator<< <int>(std::ostream&, box<int> const&)", "operator<<" },
		{ "box<int>::operator<<=(int)", "box::operator<<=" },
		/* gcc's clones, named as the function */
		{ "std::vector<int, std::allocator<int> >::operator[](unsigned long) [clone .isra.0]",
		  "std::vector::operator[]" },
		{ "ns::ns1::foo::bar(int) const [clone .constprop.0] [clone .isra.0]",
		  "ns::ns1::foo::bar" },
		{ "std::vector<int, std::allocator<int> >::push_back(int&&)",
		  "std::vector::push_back" },
		{ "main", "main" },
	};
	char out[256];

	(void)state;
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		assert_int_equal(mc_demangle_simple(pairs[i][0], out, sizeof(out)), 0);
		if (strcmp(out, pairs[i][1]))
			fail_msg("'%s' -> '%s', want '%s'", pairs[i][0], out, pairs[i][1]);
	}
	/* cut, not overflowed */
	assert_int_equal(mc_demangle_simple("ns::ns1::foo::bar(int)", out, 6), 0);
	assert_string_equal(out, "ns::n");
}

static void test_time(void **state)
{
	uint64_t ns;

	(void)state;
	assert_int_equal(mc_parse_time("10us", &ns), 0);
	assert_int_equal(ns, 10000);
	assert_int_equal(mc_parse_time("1.5ms", &ns), 0);
	assert_int_equal(ns, 1500000);
	assert_int_equal(mc_parse_time("10", &ns), 0); /* no unit: ns */
	assert_int_equal(ns, 10);
	assert_int_equal(mc_parse_time("2S", &ns), 0);
	assert_int_equal(ns, 2000000000ull);
	assert_int_equal(mc_parse_time("1m", &ns), 0);
	assert_int_equal(ns, 60000000000ull);
	assert_int_equal(mc_parse_time("0.001us", &ns), 0);
	assert_int_equal(ns, 1);
	assert_int_equal(mc_parse_time("5xs", &ns), -1);
	assert_int_equal(mc_parse_time("", &ns), -1);
	assert_int_equal(mc_parse_time("1.ms", &ns), -1);
	assert_int_equal(mc_parse_time("-1us", &ns), -1);
	assert_int_equal(mc_parse_time("99999999999999999999s", &ns), -1);
}

/* -L: uftrace's init_locfilter_pattern: a plain path is whole components, anything else a
 * regex (or glob) on the path; '!' hides */
static void test_loc(void **state)
{
	static struct mc_pattern p[MC_LOC_MAX];
	const char *file = "/home/u/uftrace/cmds/record.c";
	char err[200], many[MC_LOC_MAX * 3 + 8] = "";

	(void)state;
	assert_int_equal(mc_loc_parse(p, MC_LOC_MAX, "cmds;/cmds;cmds/;/uftrace/cmds/;record.c", 0,
				      err, sizeof(err)),
			 5);
	for (int i = 0; i < 5; i++) {
		assert_true(mc_pattern_match(&p[i], file));
		assert_int_equal(p[i].out, 0);
	}
	/* not whole components: "ecord" is followed by ".c", "md" inside "cmds" */
	assert_int_equal(
		mc_loc_parse(p, MC_LOC_MAX, "ecord;md;youftrace;!record.c", 0, err, sizeof(err)),
		4);
	assert_false(mc_pattern_match(&p[0], file));
	assert_false(mc_pattern_match(&p[1], file));
	assert_false(mc_pattern_match(&p[2], "/home/u/uftrace/x.c"));
	assert_true(mc_pattern_match(&p[3], file));
	assert_int_equal(p[3].out, 1);
	/* a regex as it is; a glob with --match=glob */
	assert_int_equal(mc_loc_parse(p, MC_LOC_MAX, "record\\.c$;^cmds", 0, err, sizeof(err)), 2);
	assert_true(mc_pattern_match(&p[0], file));
	assert_false(mc_pattern_match(&p[1], file));
	assert_int_equal(mc_loc_parse(p, MC_LOC_MAX, "*/cmds/*.c;!cmds/*", 1, err, sizeof(err)), 2);
	assert_true(mc_pattern_match(&p[0], file));
	assert_false(mc_pattern_match(&p[1], file)); /* a glob matches the whole path */
	/* empty items are skipped; a bad regex and too many patterns are refused */
	assert_int_equal(mc_loc_parse(p, MC_LOC_MAX, ";a.c;;", 0, err, sizeof(err)), 1);
	assert_int_equal(mc_loc_parse(p, MC_LOC_MAX, "x(.c", 0, err, sizeof(err)), -1);
	for (int i = 0; i <= MC_LOC_MAX; i++)
		strcat(many, "f;");
	assert_int_equal(mc_loc_parse(p, MC_LOC_MAX, many, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "patterns"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_regex_vs_glibc),
		cmocka_unit_test(test_glob_vs_fnmatch),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_time),
		cmocka_unit_test(test_triggers),
		cmocka_unit_test(test_read_action),
		cmocka_unit_test(test_signals),
		cmocka_unit_test(test_demangle),
		cmocka_unit_test(test_loc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
