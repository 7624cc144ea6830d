/*
 * test_mcount_dynsel: what -P/-U select (libmcount/mcount_dynsel.c), with uftrace 0.13's rules
 * (its libmcount/dynamic.c parse_pattern_list / match_pattern_list and their unit test
 * dynamic_pattern_list): the last matching pattern of a function's module decides, a pattern
 * without @MODULE names the executable, a module name is a prefix of the file name, a list of
 * only -U patterns patches everything else in the executable; and which byte forms are patch
 * sites: gcc's -fpatchable-function-entry nops (after an endbr64 too), -mnop-mcount's 5-byte
 * nop at the entry (-mfentry) or after `push %rbp; mov %rsp,%rbp` (-pg, __mcount_loc), clang's
 * patchable nop; not a real call, not code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "libmcount/mcount_dynsel.h"

static struct mc_dyn_spec spec;

static void parse(const char *patch, const char *unpatch, int glob)
{
	char err[300];

	if (mc_dyn_parse(&spec, patch, unpatch, glob, err, sizeof(err)) < 0)
		fail_msg("'%s' / '%s' refused: %s", patch ? patch : "", unpatch ? unpatch : "",
			 err);
}

static void test_select(void **state)
{
	(void)state;
	/* uftrace's own unit test: "abc;!def" in the default module */
	parse("abc;!def", NULL, 0);
	assert_true(mc_dyn_selected(&spec, "main", 1, "abc"));
	assert_false(mc_dyn_selected(&spec, "main", 1, "def"));
	assert_false(mc_dyn_selected(&spec, "other", 0, "abc"));
	assert_false(mc_dyn_selected(&spec, "main", 1, "abcd")); /* a plain name: whole */
	assert_true(mc_dyn_names_module(&spec, "main", 1));
	assert_false(mc_dyn_names_module(&spec, "libc.so.6", 0));

	/* only negative: everything else of the executable */
	parse("!^a", NULL, 0);
	assert_false(mc_dyn_selected(&spec, "main", 1, "abc"));
	assert_true(mc_dyn_selected(&spec, "main", 1, "def"));
	assert_false(mc_dyn_selected(&spec, "other", 0, "xyz"));
	/* the same from FLIGHTREC_UNPATCH */
	parse(NULL, "^a", 0);
	assert_int_equal(spec.n, 2);
	assert_false(mc_dyn_selected(&spec, "main", 1, "abc"));
	assert_true(mc_dyn_selected(&spec, "main", 1, "def"));

	/* glob in another module, by prefix of its file name */
	parse("*@other", NULL, 1);
	assert_false(mc_dyn_selected(&spec, "main", 1, "abc"));
	assert_true(mc_dyn_selected(&spec, "other.so.1", 0, "xyz"));
	assert_true(mc_dyn_names_module(&spec, "other.so.1", 0));
	assert_false(mc_dyn_names_module(&spec, "main", 1));

	/* order: the last match decides (t232/t265: -P . -U a; t266's lib_b@lib) */
	parse(".;!a", NULL, 0);
	assert_false(mc_dyn_selected(&spec, "t", 1, "a"));
	assert_true(mc_dyn_selected(&spec, "t", 1, "main"));
	parse("!a;.", NULL, 0);
	assert_true(mc_dyn_selected(&spec, "t", 1, "a"));
	parse(".;.@libabc_test_lib.so;!lib_b@libabc_test_lib.so", NULL, 0);
	assert_true(mc_dyn_selected(&spec, "libabc_test_lib.so", 0, "lib_a"));
	assert_false(mc_dyn_selected(&spec, "libabc_test_lib.so", 0, "lib_b"));
	assert_true(mc_dyn_selected(&spec, "t-lib", 1, "lib_b")); /* -U names the library only */
	/* FLIGHTREC_UNPATCH comes after FLIGHTREC_PATCH */
	parse(".", "c", 0);
	assert_false(mc_dyn_selected(&spec, "t", 1, "c"));
	assert_true(mc_dyn_selected(&spec, "t", 1, "b"));

	/* regex searched anywhere (t136: "a.?" takes main and a, not b or c) */
	parse("a.?", NULL, 0);
	assert_true(mc_dyn_selected(&spec, "t", 1, "main"));
	assert_true(mc_dyn_selected(&spec, "t", 1, "a"));
	assert_false(mc_dyn_selected(&spec, "t", 1, "b"));
}

static void test_refused(void **state)
{
	static const char *const bad[] = {"a(", "x@", "!", "[z-a]"};
	char err[300];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(mc_dyn_parse(&spec, bad[i], NULL, 0, err, sizeof(err)), -1);
		assert_true(err[0] != '\0');
	}
	/* empty items are skipped, as in the filters' lists */
	parse(";a;;", NULL, 0);
	assert_int_equal(spec.n, 1);
}

static void test_sites(void **state)
{
	static const uint8_t gcc5[] = {0x90, 0x90, 0x90, 0x90, 0x90, 0x55, 0xc3};
	static const uint8_t cet[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x90, 0x90, 0x90, 0x90, 0x90, 0xc3};
	static const uint8_t fentry_nop[] = {0x0f, 0x1f, 0x44, 0x00, 0x00, 0x55, 0xc3};
	static const uint8_t clang[] = {0x0f, 0x1f, 0x44, 0x00, 0x08, 0xc3};
	static const uint8_t fentry_call[] = {0xe8, 0x12, 0x34, 0x56, 0x78, 0xc3};
	static const uint8_t four[] = {0x90, 0x90, 0x90, 0x90, 0x55, 0xc3};
	/* -pg -mnop-mcount: push %rbp; mov %rsp,%rbp; sub $8,%rsp; nopl 0(%rax,%rax,1) */
	static const uint8_t pg[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x08,
				     0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc9, 0xc3};
	static const uint8_t pg_noframe[] = {0x53, 0x48, 0x83, 0xec, 0x08, 0x0f,
					     0x1f, 0x44, 0x00, 0x00, 0xc3};
	size_t off = 99;
	const char *why = NULL;

	(void)state;
	assert_int_equal(mc_dyn_entry_site(gcc5, sizeof(gcc5), &off), MC_DYN_FENTRY);
	assert_int_equal(off, 0);
	assert_int_equal(mc_dyn_entry_site(cet, sizeof(cet), &off), MC_DYN_FENTRY);
	assert_int_equal(off, 4);
	assert_int_equal(mc_dyn_entry_site(fentry_nop, sizeof(fentry_nop), &off), MC_DYN_FENTRY);
	assert_int_equal(mc_dyn_entry_site(clang, sizeof(clang), &off), MC_DYN_FENTRY);
	assert_int_equal(mc_dyn_entry_site(fentry_call, sizeof(fentry_call), &off), MC_DYN_NONE);
	assert_int_equal(mc_dyn_entry_site(four, sizeof(four), &off), MC_DYN_NONE);
	assert_int_equal(mc_dyn_entry_site(gcc5, 4, &off), MC_DYN_NONE); /* too short */
	assert_int_equal(mc_dyn_entry_site(pg, sizeof(pg), &off), MC_DYN_NONE);

	assert_int_equal(mc_dyn_mcount_site(pg, sizeof(pg), 8, &why), MC_DYN_MCOUNT);
	assert_int_equal(mc_dyn_mcount_site(fentry_nop, sizeof(fentry_nop), 0, &why),
			 MC_DYN_FENTRY);
	why = NULL;
	assert_int_equal(mc_dyn_mcount_site(pg_noframe, sizeof(pg_noframe), 5, &why), MC_DYN_NONE);
	assert_non_null(why);
	why = NULL;
	assert_int_equal(mc_dyn_mcount_site(fentry_call, sizeof(fentry_call), 0, &why),
			 MC_DYN_NONE);
	assert_non_null(why);
	assert_int_equal(mc_dyn_mcount_site(pg, sizeof(pg), 40, &why), MC_DYN_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_select),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_sites),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
