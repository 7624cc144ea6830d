/*
 * test_mcount_dwarf: the DWARF-to-argspec translation (libmcount/mcount_dwarf.c) against what
 * uftrace 0.13 writes for the same program: a C file built here with `cc -g -O0` (skipped
 * without a compiler or libdw) is read with mc_dwarf_read, and each function's argument and
 * return specs, the enum definitions and the .dbg text are compared with the `<exe>.dbg`
 * `uftrace record -A . -R .` wrote for that source (integers of several sizes, char, strings,
 * pointers, function pointers, named and anonymous enums, float/double/long double, structs
 * in registers, in SSE registers, on the stack, returned through the hidden pointer, empty).
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

#include "libmcount/mcount_dwarf.h"

static const char src[] =
	"enum color { RED, GREEN = 5, BLUE };\n"
	"typedef enum { T_ONE = 1, T_TWO } tenum;\n"
	"struct pt { int x, y; };\n"
	"struct dd { double a, b; };\n"
	"struct big { long a[5]; };\n"
	"struct empty { };\n"
	"int f_int(int a, long b, short c, unsigned char d) { return a + b + c + d; }\n"
	"char f_char(char c, const char *s, void *p) { return c + (s != p); }\n"
	"double f_float(float a, double b, long double c, int d) { return a + b + c + d; }\n"
	"enum color f_enum(enum color c, tenum t) { return c + t; }\n"
	"int f_struct(struct pt p, struct dd d, int after) { return p.x + d.a + after; }\n"
	"struct pt f_retstruct(int a) { struct pt p = { a, a }; return p; }\n"
	"struct big f_retbig(int a) { struct big b = { { a } }; return b; }\n"
	"int f_bigarg(struct big b, int after) { return b.a[0] + after; }\n"
	"int f_empty(struct empty e, int x) { (void)e; return x; }\n"
	"void f_void(void) { }\n"
	"int f_fnptr(int (*cb)(int), char **pp) { return cb ? cb(**pp) : 0; }\n"
	"int main(int argc, char **argv) { return argc > 5 && argv; }\n";

/* uftrace 0.13's dw.dbg for this source (gcc 12, -pg -g -O0), function by function */
static const struct {
	const char *name, *arg, *ret;
	int line;
} want[] = {
	{ "f_int", "arg1,arg2,arg3,arg4", "retval", 7 },
	{ "f_char", "arg1/c,arg2/s,arg3/p", "retval/c", 8 },
	{ "f_float", "fparg1/32,fparg2/64,fparg3/80%stack+1,arg1", "retval/f64", 9 },
	{ "f_enum", "arg1/e:color,arg2/e:_dw_c_5a", "retval/e:color", 10 },
	{ "f_struct", "arg1/t8:pt%RDI,arg2/t16:dd%XMM0+XMM1,arg3%RSI", "retval", 11 },
	{ "f_retstruct", "arg1%RDI", "retval/t8:pt", 12 },
	{ "f_retbig", "arg1%RSI", "retval/t40:big", 13 },
	{ "f_bigarg", "arg1/t40:big%stack+1,arg2%RDI", "retval", 14 },
	{ "f_empty", "arg1/t0:empty%stack+1,arg2%RDI", "retval", 15 },
	{ "f_void", NULL, NULL, 16 },
	{ "f_fnptr", "arg1/p,arg2/p", "retval", 17 },
	{ "main", "arg1,arg2/p", "retval", 18 },
};

static char dir[64], exe[128];
static struct mc_dwarf dw;

static int setup(void **state)
{
	char path[128], cmd[512], why[256];
	FILE *f;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_mcount_dwarf.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/dw.c", dir);
	snprintf(exe, sizeof(exe), "%s/dw", dir);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(src, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cd %s && cc -g -O0 -o dw dw.c 2>/dev/null", dir);
	if (system(cmd) != 0) {
		exe[0] = '\0';
		return 0;
	}
	if (mc_dwarf_read(&dw, exe, NULL, NULL, why, sizeof(why)) < 0) {
		fprintf(stderr, "mc_dwarf_read: %s\n", why);
		exe[0] = '\0';
	}
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	mc_dwarf_free(&dw);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static const struct mc_dwfn *by_name(const char *name)
{
	for (size_t i = 0; i < dw.nfn; i++)
		if (!strcmp(dw.fn[i].name, name))
			return &dw.fn[i];
	return NULL;
}

/* equal, but for the DIE offset in an anonymous enum's name (_dw_c_<offset>: gcc's layout) */
static int spec_eq(const char *got, const char *exp)
{
	const char *g = strstr(got, "_dw_c_"), *e = strstr(exp, "_dw_c_");

	if (!g || !e)
		return !strcmp(got, exp);
	return g - got == e - exp && !strncmp(got, exp, (size_t)(g - got)) &&
	       strspn(g + 6, "0123456789abcdef") > 0 &&
	       !strcmp(g + 6 + strspn(g + 6, "0123456789abcdef"),
		       e + 6 + strspn(e + 6, "0123456789abcdef"));
}

static void same(const char *what, const char *fn, const char *got, const char *exp)
{
	if ((got == NULL) != (exp == NULL) || (got && !spec_eq(got, exp)))
		fail_msg("%s: %s spec '%s', uftrace's '%s'", fn, what, got ? got : "(none)",
			 exp ? exp : "(none)");
}

static void test_specs(void **state)
{
	(void)state;
	if (!exe[0])
		skip();
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct mc_dwfn *f = by_name(want[i].name);

		if (!f)
			fail_msg("no DWARF entry for %s", want[i].name);
		same("argument", want[i].name, f->arg, want[i].arg);
		same("return", want[i].name, f->ret, want[i].ret);
		assert_int_equal(f->line, want[i].line);
		assert_ptr_equal(mc_dwarf_find(&dw, f->addr), f);
	}
	assert_null(mc_dwarf_find(&dw, 1));
}

static void test_dbg_text(void **state)
{
	char *t, *e1, *e2, *fi, *fm;

	(void)state;
	if (!exe[0])
		skip();
	t = mc_dwarf_dbg_text(&dw);
	assert_non_null(t);
	assert_true(!strncmp(t, "# path name: ", 13));
	assert_true(!strncmp(t + 13, exe, strlen(exe)));
	/* enums by name, descending as uftrace's tree; values ascending, "=N" only where one
	 * does not follow the previous */
	e1 = strstr(t, "\nE: enum color {RED,GREEN=5,BLUE}\n");
	e2 = strstr(t, "\nE: enum _dw_c_");
	assert_non_null(e2);
	assert_non_null(strstr(e2, " {T_ONE=1,T_TWO}\n"));
	assert_non_null(e1);
	assert_non_null(e2);
	assert_true(e1 < e2);
	/* functions in address order, file names past the compilation directory */
	fi = strstr(t, "f_int\nL: 7 dw.c\nA: @arg1,arg2,arg3,arg4\nR: @retval\n");
	fm = strstr(t, "main\nL: 18 dw.c\nA: @arg1,arg2/p\nR: @retval\n");
	assert_non_null(fi);
	assert_non_null(fm);
	assert_true(fi < fm);
	assert_non_null(strstr(t, "f_void\nL: 16 dw.c\nF: "));
	free(t);
}

/* Under ASan: LeakSanitizer's walk of the dynamic TLS of the libdw this test dlopens (glibc
 * 2.36) reads a bogus range ("DTLS 8 at 0x1e-0x1000001120") and its tracer dies of SIGSEGV at
 * exit; without the TLS roots its check of the other roots still runs. Ignored otherwise. */
__attribute__((used, visibility("default"))) const char *__lsan_default_options(void)
{
	return "use_tls=0";
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_specs),
		cmocka_unit_test(test_dbg_text),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
