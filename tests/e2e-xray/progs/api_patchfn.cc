/*
 * api_patchfn.cc - a program that takes one function of its own with compiler-rt's API: run
 * with XRAY_OPTIONS=patch_premain=false, it finds the id of api_mine by its address, installs
 * its handler and patches that function alone (__xray_patch_function); api_other stays
 * unpatched as far as compiler-rt knows. Exit status 0 when the handler saw exactly
 * api_mine's 10 entries and 10 exits.
 */
#include <cstdint>
#include <cstdio>
#include "xray/xray_interface.h"

static int handler_calls;

[[clang::xray_never_instrument]] static void api_handler(int32_t, XRayEntryType)
{
	handler_calls++;
}

[[clang::xray_always_instrument]] __attribute__((noinline)) void api_mine()
{
	asm volatile("");
}

[[clang::xray_always_instrument]] __attribute__((noinline)) void api_other()
{
	asm volatile("");
}

int main()
{
	int32_t id = 0;

	for (size_t i = 1; i <= __xray_max_function_id(); i++)
		if (__xray_function_address((int32_t)i) == (uintptr_t)&api_mine)
			id = (int32_t)i;
	printf("api_mine has an id: %s\n", id ? "yes" : "no");
	__xray_set_handler(api_handler);
	printf("__xray_patch_function: %d\n", (int)__xray_patch_function(id));
	for (int i = 0; i < 10; i++) {
		api_mine();
		api_other();
	}
	printf("handler calls: %d\n", handler_calls);
	return handler_calls == 20 ? 0 : 1;
}
