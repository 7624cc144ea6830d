/*
 * test_xray_instrmap: XRay function ids to names (formats/xray/read_instrmap.c): llvm-xray's
 * YAML map (quoted names with '' inside, names with spaces, lines without a name), an ELF file
 * with no xray_instr_map (a clear error, no crash), and an executable built here with
 * -fxray-instrument when clang can build one.
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

#include "formats/xray/read_instrmap.h"

static char *write_tmp(const char *text)
{
	char *path = strdup("/tmp/flightrec-test-xim-XXXXXX");
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void test_yaml(void **state)
{
	char *p = write_tmp(
		"---\n"
		"- { id: 1, address: 0x1000, function: 0x1000, kind: function-enter, "
		"always-instrument: false, function-name: main, version: 2 }\n"
		"- { id: 1, address: 0x1010, function: 0x1000, kind: function-exit, "
		"always-instrument: false, function-name: main, version: 2 }\n"
		"- { id: 2, address: 0x2000, function: 0x2000, kind: function-enter, "
		"always-instrument: false, function-name: 'operator''s (int)', version: 2 }\n"
		"- { id: 3, address: 0x3000, function: 0x3000, kind: function-enter }\n"
		"...\n");
	struct xim m;
	struct rd_error err;

	(void)state;
	rd_error_clear(&err);
	assert_int_equal(xim_load(p, &m, &err), 0);
	assert_string_equal(xim_name(&m, 1), "main");
	assert_string_equal(xim_name(&m, 2), "operator's (int)");
	assert_null(xim_name(&m, 3)); /* no function-name */
	assert_null(xim_name(&m, 4000));
	xim_free(&m);
	unlink(p);
	free(p);
}

/* xray-rt's map beside a log whose shared objects had sleds: ids with an object id in their
 * upper bits (1 << 24 and up), which name functions next to the executable's */
static void test_yaml_objects(void **state)
{
	char *p = write_tmp(
		"---\n"
		"- { id: 2, address: 0x1000, function: 0x1000, kind: function-enter, "
		"always-instrument: false, function-name: 'main', version: 2 }\n"
		"- { id: 16777217, address: 0x1110, function: 0x1110, kind: function-enter, "
		"always-instrument: false, function-name: 'a_leaf', version: 2 }\n"
		"- { id: 33554434, address: 0x1130, function: 0x1130, kind: function-enter, "
		"always-instrument: false, function-name: 'b_top', version: 2 }\n"
		"- { id: 251658241, address: 0x1130, function: 0x1130, kind: function-enter, "
		"always-instrument: false, function-name: 'last_object', version: 2 }\n"
		"...\n");
	struct xim m;
	struct rd_error err;

	(void)state;
	rd_error_clear(&err);
	assert_int_equal(xim_load(p, &m, &err), 0);
	assert_string_equal(xim_name(&m, 2), "main");
	assert_string_equal(xim_name(&m, (1u << 24) | 1), "a_leaf");
	assert_string_equal(xim_name(&m, (2u << 24) | 2), "b_top");
	assert_string_equal(xim_name(&m, (15u << 24) | 1), "last_object");
	assert_null(xim_name(&m, 1));
	assert_null(xim_name(&m, (1u << 24) | 2));
	assert_null(xim_name(&m, (2u << 24) | 1));
	assert_null(xim_name(&m, 16u << 24)); /* beyond the 28 bits of an FDR record */
	xim_free(&m);
	unlink(p);
	free(p);
}

static void test_elf_without_map(void **state)
{
	struct xim m;
	struct rd_error err;

	(void)state;
	rd_error_clear(&err);
	/* any ELF file without sleds: this test program itself */
	assert_int_equal(xim_load("/proc/self/exe", &m, &err), -1);
	assert_true(rd_error_isset(&err));
	assert_non_null(strstr(err.msg, "xray_instr_map"));
	xim_free(&m);
	assert_int_equal(xim_load("/nonexistent/map", &m, &err), -1);
}

static void test_elf_with_map(void **state)
{
	char dir[] = "/tmp/flightrec-test-xim-dXXXXXX", src[128], exe[128], cmd[512];
	struct xim m;
	struct rd_error err;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(src, sizeof(src), "%s/p.c", dir);
	snprintf(exe, sizeof(exe), "%s/p", dir);
	f = fopen(src, "w");
	assert_non_null(f);
	fputs("__attribute__((xray_always_instrument, noinline)) int alpha(int x) { return x + 1; }\n"
	      "__attribute__((xray_always_instrument, noinline)) int beta(int x) "
	      "{ return alpha(x) * 2; }\n"
	      "int main(void) { return beta(1) == 4 ? 0 : 1; }\n",
	      f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "clang -O1 -fxray-instrument -fxray-instruction-threshold=1 "
		 "-fnoxray-link-deps -o %s %s 2>/dev/null", exe, src);
	assert_int_equal(system(cmd), 0); /* CI installs clang: a missing one is a failure */
	rd_error_clear(&err);
	assert_int_equal(xim_load(exe, &m, &err), 0);
	int seen = 0;
	for (uint32_t id = 1; id < 10; id++) {
		const char *n = xim_name(&m, id);
		seen += n && (!strcmp(n, "alpha") || !strcmp(n, "beta") || !strcmp(n, "main"));
	}
	assert_int_equal(seen, 3);
	xim_free(&m);
	unlink(src);
	unlink(exe);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_yaml),
		cmocka_unit_test(test_yaml_objects),
		cmocka_unit_test(test_elf_without_map),
		cmocka_unit_test(test_elf_with_map),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
