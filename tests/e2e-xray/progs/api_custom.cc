/*
 * api_custom.cc - a program that installs its own custom-event handler (after compiler-rt's
 * custom-event-logging test): run with XRAY_OPTIONS=patch_premain=false, it emits a custom
 * event before anything is patched, then installs its handler and calls __xray_patch (the
 * handler must print the next event), then removes the handler (no more output). Exit status
 * 0 when the handler saw exactly the one event.
 */
#include <cstdio>
#include "xray/xray_interface.h"

static int handler_calls;

[[clang::xray_always_instrument]] void api_emit()
{
	static constexpr char msg[] = "hello custom logging!";
	printf("before the custom event\n");
	__xray_customevent(msg, sizeof(msg));
	printf("after the custom event\n");
}

[[clang::xray_never_instrument]] static void api_printer(void *ptr, size_t size)
{
	handler_calls++;
	printf("handler: %.*s\n", (int)size, (const char *)ptr);
}

int main()
{
	api_emit();
	printf("setting up the handler\n");
	__xray_set_customevent_handler(api_printer);
	printf("__xray_patch: %d\n", (int)__xray_patch());
	api_emit();
	printf("removing the handler\n");
	__xray_remove_customevent_handler();
	api_emit();
	return handler_calls == 1 ? 0 : 1;
}
