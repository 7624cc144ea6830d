/*
 * api_ids.cc - compiler-rt's patching API, with a handler: run with
 * XRAY_OPTIONS=patch_premain=false. Checks __xray_max_function_id (the four functions below,
 * the only instrumented ones), __xray_function_address (each id names a distinct one of them,
 * 0 out of range), the return codes of __xray_patch_function and __xray_unpatch_function
 * (1 SUCCESS, 3 FAILED for ids out of range) and their effect: only patched functions reach
 * the handler, a function unpatched from inside the handler (coverage-style) stops calling
 * it, __xray_unpatch stops them all. Exit status 0 when every check held; the checks and the
 * handler calls are printed.
 */
#include <cstdio>
#include "xray/xray_interface.h"

static int calls[8];
static int unpatch_in_handler;

[[clang::xray_never_instrument]] static void api_handler(int32_t fid, XRayEntryType type)
{
	if (fid > 0 && fid < 8)
		calls[fid]++;
	if (unpatch_in_handler && type == XRayEntryType::ENTRY)
		__xray_unpatch_function(fid);
}

extern "C" [[clang::xray_always_instrument]] __attribute__((noinline)) void api_one()
{
	asm volatile("");
}

extern "C" [[clang::xray_always_instrument]] __attribute__((noinline)) void api_two()
{
	asm volatile("");
}

extern "C" [[clang::xray_always_instrument]] __attribute__((noinline)) void api_three()
{
	asm volatile("");
}

extern "C" [[clang::xray_always_instrument]] __attribute__((noinline)) void api_four()
{
	asm volatile("");
}

static int failed;

[[clang::xray_never_instrument]] static void check(const char *what, long got, long want)
{
	printf("%s: %ld%s\n", what, got, got == want ? "" : " (unexpected)");
	failed += got != want;
}

[[clang::xray_never_instrument]] static int32_t api_id(void (*fn)())
{
	for (size_t i = 1; i <= __xray_max_function_id(); i++)
		if (__xray_function_address((int32_t)i) == (uintptr_t)fn)
			return (int32_t)i;
	return 0;
}

[[clang::xray_never_instrument]] static void run_all()
{
	api_one();
	api_two();
	api_three();
	api_four();
}

[[clang::xray_never_instrument]] static int total()
{
	int n = 0;
	for (int i = 0; i < 8; i++) {
		n += calls[i];
		calls[i] = 0;
	}
	return n;
}

[[clang::xray_never_instrument]] int main()
{
	int32_t one = api_id(api_one), two = api_id(api_two), three = api_id(api_three),
		four = api_id(api_four);
	int32_t max = (int32_t)__xray_max_function_id();

	check("max id", max, 4);
	check("distinct ids", one && two && three && four && one != two && one != three &&
				      one != four && two != three && two != four && three != four,
	      1);
	check("address of 0", (long)__xray_function_address(0), 0);
	check("address of max + 1", (long)__xray_function_address(max + 1), 0);
	check("patch_function(0)", __xray_patch_function(0), 3);
	check("patch_function(max + 1)", __xray_patch_function(max + 1), 3);
	check("unpatch_function(-1)", __xray_unpatch_function(-1), 3);
	__xray_set_handler(api_handler);
	run_all();
	check("calls before any patch", total(), 0);
	check("patch_function(two)", __xray_patch_function(two), 1);
	check("patch_function(four)", __xray_patch_function(four), 1);
	run_all();
	check("two's calls", calls[two], 2);
	check("four's calls", calls[four], 2);
	check("calls, two and four patched", total(), 4);
	check("unpatch_function(two)", __xray_unpatch_function(two), 1);
	run_all();
	check("calls, four patched", calls[four] == 2 && total() == 2, 1);
	check("__xray_patch", __xray_patch(), 1);
	unpatch_in_handler = 1;
	run_all();
	run_all();
	check("calls, each unpatched by its first entry", total(), 4);
	unpatch_in_handler = 0;
	check("__xray_patch", __xray_patch(), 1);
	run_all();
	check("calls, all patched", total(), 8);
	check("__xray_unpatch", __xray_unpatch(), 1);
	run_all();
	check("calls, all unpatched", total(), 0);
	return failed ? 1 : 0;
}
