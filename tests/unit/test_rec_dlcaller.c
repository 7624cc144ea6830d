/*
 * test_rec_dlcaller: rec_dlopen_as_caller (librecord/rec_dlcaller.c) hands the function it calls
 * a return address inside the caller's object, holding a ret, and still gets the result back;
 * a caller in no object gets the plain call. The loader-side effect (RUNPATH, $ORIGIN) is
 * tested end to end: tests/e2e record-cli/dlopen-caller, tests/e2e-xray dso/caller.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "librecord/rec_dlcaller.h"

static const void *seen_ret;
static const char *seen_file;
static int seen_mode;
static char result;

__attribute__((noinline)) static void *fake_dlopen(const char *file, int mode)
{
	seen_ret = __builtin_return_address(0);
	seen_file = file;
	seen_mode = mode;
	return &result;
}

/* the object holding ADDR, as the loader would find it */
static const char *object_of(const void *addr)
{
	Dl_info info;

	if (!dladdr(addr, &info) || !info.dli_fname)
		return NULL;
	return info.dli_fname;
}

static void test_gadget_in_caller_object(void **state)
{
	const void *via = rec_dl_ret_gadget((const void *)test_gadget_in_caller_object);
	const void *libc_caller = (const void *)strlen;
	const void *libc_via = rec_dl_ret_gadget(libc_caller);

	(void)state;
	assert_non_null(via);
	assert_int_equal(*(const unsigned char *)via, 0xc3);
	assert_string_equal(object_of(via), object_of((const void *)test_gadget_in_caller_object));
	assert_non_null(libc_via);
	assert_int_equal(*(const unsigned char *)libc_via, 0xc3);
	assert_string_equal(object_of(libc_via), object_of(libc_caller));
	assert_null(rec_dl_ret_gadget(NULL));
	assert_null(rec_dl_ret_gadget((const void *)16)); /* in no object */
}

static void test_call_through_gadget(void **state)
{
	const void *caller = (const void *)strlen; /* pretend libc called */
	void *h;

	(void)state;
	for (int i = 0; i < 3; i++) {
		seen_ret = NULL;
		h = rec_dlopen_as_caller(fake_dlopen, "libx.so", RTLD_NOW | i, caller);
		assert_ptr_equal(h, &result);
		assert_ptr_equal(seen_ret, rec_dl_ret_gadget(caller));
		assert_string_equal(object_of(seen_ret), object_of(caller));
		assert_string_equal(seen_file, "libx.so");
		assert_int_equal(seen_mode, RTLD_NOW | i);
	}
}

static void test_plain_call_without_object(void **state)
{
	void *h;

	(void)state;
	h = rec_dlopen_as_caller(fake_dlopen, "liby.so", RTLD_LAZY, (const void *)16);
	assert_ptr_equal(h, &result);
	assert_string_equal(seen_file, "liby.so");
	assert_string_equal(object_of(seen_ret),
			    object_of((const void *)test_plain_call_without_object));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gadget_in_caller_object),
		cmocka_unit_test(test_call_through_gadget),
		cmocka_unit_test(test_plain_call_without_object),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
