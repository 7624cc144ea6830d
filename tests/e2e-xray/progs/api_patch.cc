/*
 * api_patch.cc - a program that drives compiler-rt's patching itself: run with
 * XRAY_OPTIONS=patch_premain=true, it installs an entry/exit handler (the sleds are patched
 * already), then __xray_unpatch (the handler must not be called), then __xray_patch (called
 * again). Exit status 0 when the handler saw exactly the entries and exits of the two calls
 * made while patched.
 */
#include <cstdio>
#include "xray/xray_interface.h"

static int handler_calls;

[[clang::xray_never_instrument]] static void api_handler(int32_t fid, XRayEntryType type)
{
	handler_calls++;
}

[[clang::xray_always_instrument]] void api_work()
{
	printf("api_work\n");
}

int main()
{
	__xray_set_handler(api_handler);
	api_work();
	printf("patched: %d handler calls\n", handler_calls);
	printf("__xray_unpatch: %d\n", (int)__xray_unpatch());
	api_work();
	printf("unpatched: %d handler calls\n", handler_calls);
	printf("__xray_patch: %d\n", (int)__xray_patch());
	api_work();
	printf("patched again: %d handler calls\n", handler_calls);
	__xray_remove_handler();
	return handler_calls == 4 ? 0 : 1;
}
