/*
 * test_xray_map: decoding of the XRay instrumentation map (xray-rt/xray_map.c, compiled into
 * this test): absolute (version 0/1) and PC-relative (version 2) entries, entries at unaligned
 * addresses, function ids assigned as llvm-xray assigns them (a new id whenever an entry's
 * function differs from the previous entry's, so a function whose sleds are split gets two),
 * the map lookup of an executable that has none (this test), and the map of a shared object
 * clang 14 builds with -fxray-instrument -fPIC -shared, dlopen'ed (xr_map_load_dso).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xray-rt/xray_map.h"

struct ent {
	uint64_t sled, func; /* absolute addresses */
	uint8_t kind;
};

/* Write n entries of `version` at map (whose run-time address is addr). */
static void put_map(uint8_t *map, uintptr_t addr, const struct ent *e, size_t n, uint8_t version)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t *p = map + i * XR_MAP_ENTRY_SIZE;
		uint64_t a = e[i].sled, f = e[i].func;
		if (version >= 2) {
			a -= addr + i * XR_MAP_ENTRY_SIZE;
			f -= addr + i * XR_MAP_ENTRY_SIZE + 8;
		}
		memset(p, 0xee, XR_MAP_ENTRY_SIZE); /* padding is not read */
		memcpy(p, &a, 8);
		memcpy(p + 8, &f, 8);
		p[16] = e[i].kind;
		p[17] = 0;
		p[18] = version;
	}
}

static const struct ent sample[] = {
	{0x401000, 0x401000, XR_SLED_ENTRY},
	{0x401020, 0x401000, XR_SLED_EXIT},
	{0x401040, 0x401040, XR_SLED_ENTRY},
	{0x401050, 0x401040, XR_SLED_TAIL},
	{0x401070, 0x401040, XR_SLED_EXIT},
	{0x401080, 0x401080, XR_SLED_LOG_ARGS},
	{0x401090, 0x401080, XR_SLED_CUSTOM},
	{0x4010a0, 0x401080, XR_SLED_EXIT},
	/* the first function again, not next to its other sleds: a new id, as in llvm-xray */
	{0x401030, 0x401000, XR_SLED_EXIT},
};
static const uint32_t sample_ids[] = {1, 1, 2, 2, 2, 3, 3, 3, 4};
#define NSAMPLE (sizeof(sample) / sizeof(sample[0]))

static void check_sample(const struct xr_sled *s, uint8_t version)
{
	for (size_t i = 0; i < NSAMPLE; i++) {
		assert_int_equal(s[i].addr, sample[i].sled);
		assert_int_equal(s[i].func, sample[i].func);
		assert_int_equal(s[i].kind, sample[i].kind);
		assert_int_equal(s[i].version, version);
		assert_int_equal(s[i].id, sample_ids[i]);
	}
}

static void test_absolute(void **state)
{
	uint8_t map[NSAMPLE * XR_MAP_ENTRY_SIZE];
	struct xr_sled s[NSAMPLE];

	(void)state;
	for (uint8_t v = 0; v < 2; v++) {
		put_map(map, 0x500000, sample, NSAMPLE, v);
		assert_int_equal(xr_map_decode(map, sizeof(map), 0x500000, s), NSAMPLE);
		check_sample(s, v);
	}
}

static void test_relative(void **state)
{
	uint8_t map[NSAMPLE * XR_MAP_ENTRY_SIZE];
	struct xr_sled s[NSAMPLE];

	(void)state;
	/* the map after the text (negative offsets) and before it (positive ones) */
	put_map(map, 0x7f0000, sample, NSAMPLE, 2);
	assert_int_equal(xr_map_decode(map, sizeof(map), 0x7f0000, s), NSAMPLE);
	check_sample(s, 2);
	put_map(map, 0x1000, sample, NSAMPLE, 2);
	assert_int_equal(xr_map_decode(map, sizeof(map), 0x1000, s), NSAMPLE);
	check_sample(s, 2);
}

/* the section's alignment is 1: an entry may start at any address */
static void test_unaligned(void **state)
{
	uint8_t *buf = malloc(NSAMPLE * XR_MAP_ENTRY_SIZE + 8);
	struct xr_sled s[NSAMPLE];

	(void)state;
	assert_non_null(buf);
	for (int shift = 1; shift < 8; shift += 2) {
		uint8_t *map = buf + shift;
		put_map(map, (uintptr_t)map, sample, NSAMPLE, 2);
		assert_int_equal(xr_map_decode(map, NSAMPLE * XR_MAP_ENTRY_SIZE, (uintptr_t)map, s),
				 NSAMPLE);
		check_sample(s, 2);
	}
	free(buf);
}

static void test_bad_size(void **state)
{
	uint8_t map[XR_MAP_ENTRY_SIZE * 2];
	struct xr_sled s[2];

	(void)state;
	memset(map, 0, sizeof(map));
	assert_int_equal(xr_map_decode(map, sizeof(map) - 1, 0, s), -1);
	assert_int_equal(xr_map_decode(map, 0, 0, s), 0);
}

/* this test program has no xray_instr_map: not an XRay program, nothing to patch */
static void test_no_map(void **state)
{
	struct xr_map m;

	(void)state;
	assert_int_equal(xr_map_load(&m), 0);
	assert_null(m.sleds);
	assert_int_equal(m.has_runtime, 0);
	assert_true(m.text_hi > m.text_lo);
}

/* a shared object with sleds: its own map, read from its file's section headers and decoded
 * where it is mapped; ids local to it (1, 2), functions at their run-time addresses */
static void test_dso_map(void **state)
{
	char dir[] = "/tmp/flightrec-test-xmap-XXXXXX", src[128], so[128], cmd[512];
	struct link_map *lm = NULL;
	struct xr_map m;
	void *h, *libc, *alpha, *beta;
	int entries = 0, exits = 0;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(src, sizeof(src), "%s/l.c", dir);
	snprintf(so, sizeof(so), "%s/libl.so", dir);
	f = fopen(src, "w");
	assert_non_null(f);
	fputs("__attribute__((noinline)) int alpha(int x) { return x + 1; }\n"
	      "__attribute__((noinline)) int beta(int x) { return alpha(x) * 2; }\n",
	      f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "clang -O1 -fxray-instrument -fxray-instruction-threshold=1 "
		 "-fPIC -shared -o %s %s 2>/dev/null", so, src);
	assert_int_equal(system(cmd), 0); /* CI installs clang: a missing one is a failure */
	h = dlopen(so, RTLD_NOW);
	assert_non_null(h);
	assert_int_equal(dlinfo(h, RTLD_DI_LINKMAP, &lm), 0);
	alpha = dlsym(h, "alpha");
	beta = dlsym(h, "beta");
	assert_int_equal(xr_map_load_dso(lm->l_name, lm->l_addr, &m), 1);
	assert_int_equal(m.count, 4);
	assert_int_equal(m.max_id, 2);
	assert_int_equal(m.bias, lm->l_addr);
	for (size_t i = 0; i < m.count; i++) {
		const struct xr_sled *sl = &m.sleds[i];
		assert_ptr_equal((void *)sl->func, sl->id == 1 ? alpha : beta);
		assert_true(sl->addr >= sl->func && sl->addr < sl->func + 64);
		assert_int_equal(sl->version, 2);
		entries += sl->kind == XR_SLED_ENTRY;
		exits += sl->kind == XR_SLED_EXIT;
		/* the sled's bytes, unpatched: the entry's 2-byte jump, the exit's ret */
		if (sl->kind == XR_SLED_ENTRY)
			assert_int_equal(((const uint8_t *)sl->addr)[0], 0xeb);
		else
			assert_int_equal(((const uint8_t *)sl->addr)[0], 0xc3);
	}
	assert_int_equal(entries, 2);
	assert_int_equal(exits, 2);
	free(m.sleds);
	/* a library without a map, and a file that cannot be read */
	libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(libc);
	assert_int_equal(dlinfo(libc, RTLD_DI_LINKMAP, &lm), 0);
	assert_int_equal(xr_map_load_dso(lm->l_name, lm->l_addr, &m), 0);
	assert_null(m.sleds);
	dlclose(libc);
	assert_int_equal(xr_map_load_dso("/nonexistent/libx.so", 0, &m), -1);
	dlclose(h);
	unlink(src);
	unlink(so);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_absolute),  cmocka_unit_test(test_relative),
		cmocka_unit_test(test_unaligned), cmocka_unit_test(test_bad_size),
		cmocka_unit_test(test_no_map),	  cmocka_unit_test(test_dso_map),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
