/*
 * test_ovni_inline: the event builders ovni.h defines inline for optimised builds
 * (ovni_ev_set_mcv, ovni_ev_set_clock, ovni_ev_get_clock, ovni_payload_add) give the same
 * bytes as the library's functions (build/lib/libovni.so.1, dlopen'ed as in
 * test_ovni_encode), for every way of filling the 16-byte payload with adds of 2 to 16
 * bytes; and what the inline payload_add does not take (a jumbo event, fewer than 2 bytes,
 * more than 16 in all) goes to the library's function, untouched, so misuse dies with its
 * message. This file is compiled with -O2, so the calls below are the inline ones.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "ovni-rt/ovni.h"
#include "tests/unit/unit_util.h"

#ifndef __OPTIMIZE__
#error "test_ovni_inline must be built with optimisation: it tests the inline definitions"
#endif

static struct {
	void (*set_mcv)(struct ovni_ev *, const char *);
	void (*set_clock)(struct ovni_ev *, uint64_t);
	uint64_t (*get_clock)(const struct ovni_ev *);
	void (*payload_add)(struct ovni_ev *, const uint8_t *, int);
} lib;

/* What the inline payload_add hands over: the symbol it calls, defined here instead of the
 * library's (this program is not linked with it), recording the call. */
static struct {
	int calls;
	struct ovni_ev ev;
	const uint8_t *buf;
	int size;
} fallback;

void test_fallback(struct ovni_ev *ev, const uint8_t *buf, int size) __asm__("ovni_payload_add");
void test_fallback(struct ovni_ev *ev, const uint8_t *buf, int size)
{
	fallback.calls++;
	memcpy(&fallback.ev, ev, sizeof(*ev));
	fallback.buf = buf;
	fallback.size = size;
}

static int setup(void **state)
{
	void *h = unit_open_libovni();

	(void)state;
	if (!h)
		return -1;
	lib.set_mcv = (void (*)(struct ovni_ev *, const char *))dlsym(h, "ovni_ev_set_mcv");
	lib.set_clock = (void (*)(struct ovni_ev *, uint64_t))dlsym(h, "ovni_ev_set_clock");
	lib.get_clock = (uint64_t(*)(const struct ovni_ev *))dlsym(h, "ovni_ev_get_clock");
	lib.payload_add =
		(void (*)(struct ovni_ev *, const uint8_t *, int))dlsym(h, "ovni_payload_add");
	return lib.set_mcv && lib.set_clock && lib.get_clock && lib.payload_add ? 0 : -1;
}

static void test_header_fields(void **state)
{
	struct ovni_ev a, b;

	(void)state;
	memset(&a, 0x5a, sizeof(a));
	memset(&b, 0x5a, sizeof(b));
	ovni_ev_set_mcv(&a, "OHx");
	lib.set_mcv(&b, "OHx");
	ovni_ev_set_clock(&a, 0x0102030405060708ull);
	lib.set_clock(&b, 0x0102030405060708ull);
	assert_memory_equal(&a, &b, sizeof(a));
	assert_int_equal(ovni_ev_get_clock(&a), lib.get_clock(&b));
	assert_int_equal(ovni_ev_get_clock(&a), 0x0102030405060708ull);
}

static const uint8_t src[16] = { 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
				 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xf0, 0x0f };
static int n_sequences;

/* every sequence of adds of 2..16 bytes that fits, up to `left` bytes more */
static void walk(struct ovni_ev *a, struct ovni_ev *b, int used, int depth)
{
	n_sequences++;
	assert_memory_equal(a, b, sizeof(*a));
	if (depth == 4)
		return;
	for (int size = 2; used + size <= 16; size++) {
		struct ovni_ev a2 = *a, b2 = *b;

		ovni_payload_add(&a2, src + used, size);
		lib.payload_add(&b2, src + used, size);
		walk(&a2, &b2, used + size, depth + 1);
	}
}

static void test_payload_sequences(void **state)
{
	struct ovni_ev a = { 0 }, b = { 0 };

	(void)state;
	fallback.calls = 0;
	n_sequences = 0;
	ovni_ev_set_mcv(&a, "OU[");
	lib.set_mcv(&b, "OU[");
	walk(&a, &b, 0, 0);
	assert_int_equal(fallback.calls, 0);
	/* 1 (empty) + every composition of at most 4 parts >= 2 with sum <= 16 */
	assert_true(n_sequences > 500);
}

static void expect_fallback(struct ovni_ev *ev, const uint8_t *buf, int size)
{
	struct ovni_ev before = *ev;

	fallback.calls = 0;
	ovni_payload_add(ev, buf, size);
	assert_int_equal(fallback.calls, 1);
	assert_ptr_equal(fallback.buf, buf);
	assert_int_equal(fallback.size, size);
	assert_memory_equal(&fallback.ev, &before, sizeof(before)); /* handed over untouched */
	assert_memory_equal(ev, &before, sizeof(before));
}

static void test_misuse_goes_to_the_library(void **state)
{
	struct ovni_ev ev = { 0 };

	(void)state;
	expect_fallback(&ev, src, 1);
	expect_fallback(&ev, src, 0);
	expect_fallback(&ev, src, -4);
	expect_fallback(&ev, src, 17);
	ovni_payload_add(&ev, src, 12);
	expect_fallback(&ev, src, 8); /* 12 + 8 > 16 */
	memset(&ev, 0, sizeof(ev));
	ev.header.flags = OVNI_EV_JUMBO;
	expect_fallback(&ev, src, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_fields),
		cmocka_unit_test(test_payload_sequences),
		cmocka_unit_test(test_misuse_goes_to_the_library),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
