/*
 * api_ours.cc - a program that patches with compiler-rt's API but sets no handler, so that
 * the runtime's own recording is what its patched sleds call (run with no XRAY_OPTIONS:
 * compiler-rt would have nothing patched before __xray_patch). It patches everything, takes
 * api_skip out with __xray_unpatch_function, calls api_kept and api_skip 10 times each, then
 * installs a handler (5 more calls of api_kept: 10 handler calls, not recorded), removes it
 * (3 more: nothing). With xray-rt linked, its log must hold api_kept 10 times and nothing
 * else. Exit status 0 when the return codes and the handler calls were as expected.
 */
#include <cstdio>
#include "xray/xray_interface.h"

static int handler_calls;

[[clang::xray_never_instrument]] static void api_handler(int32_t fid, XRayEntryType t)
{
	(void)fid;
	(void)t;
	handler_calls++;
}

extern "C" [[clang::xray_always_instrument]] __attribute__((noinline)) void api_kept()
{
	__asm__ volatile("");
}

extern "C" [[clang::xray_always_instrument]] __attribute__((noinline)) void api_skip()
{
	__asm__ volatile("");
}

[[clang::xray_never_instrument]] int main()
{
	int32_t skip = 0;
	int ok;

	for (size_t i = 1; i <= __xray_max_function_id(); i++)
		if (__xray_function_address((int32_t)i) == (uintptr_t)&api_skip)
			skip = (int32_t)i;
	ok = __xray_patch() == XRayPatchingStatus::SUCCESS &&
	     __xray_unpatch_function(skip) == XRayPatchingStatus::SUCCESS;
	for (int i = 0; i < 10; i++) {
		api_kept();
		api_skip();
	}
	ok &= __xray_set_handler(api_handler) == 1;
	for (int i = 0; i < 5; i++)
		api_kept();
	ok &= __xray_remove_handler() == 1;
	for (int i = 0; i < 3; i++)
		api_kept();
	printf("return codes as expected: %d, handler calls: %d\n", ok, handler_calls);
	return ok && handler_calls == 10 ? 0 : 1;
}
