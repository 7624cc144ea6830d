/*
 * api_arg1.cc - a program that uses compiler-rt's XRay API itself (after compiler-rt's
 * arg1-logger and arg1-arg0-logging tests): run with XRAY_OPTIONS=patch_premain=true, it
 * installs an entry/exit handler and an arg1 handler, removes and re-installs the arg1 one,
 * and checks that its handlers saw the calls and the arguments. Exit status 0 when they did;
 * the handlers print what they see, so a run can be compared with one under compiler-rt alone.
 */
#include <cinttypes>
#include <cstdio>
#include "xray/xray_interface.h"

static int arg0_calls, arg1_calls, saw_cafe, saw_beef;

[[clang::xray_never_instrument]] static void arg0_handler(int32_t fid, XRayEntryType type)
{
	arg0_calls++;
	printf("arg0 handler: type %u\n", (unsigned)type);
}

[[clang::xray_never_instrument]] static void arg1_handler(int32_t fid, XRayEntryType type,
							   uint64_t arg)
{
	arg1_calls++;
	saw_cafe += arg == 0xcafef00d;
	saw_beef += arg == 0xdeadbeefcafe;
	printf("arg1 handler: %" PRIx64 ", type %u\n", arg, (unsigned)type);
}

[[clang::xray_always_instrument]] void api_plain()
{
	printf("api_plain\n");
}

[[clang::xray_always_instrument, clang::xray_log_args(1)]] void api_witharg(uint64_t arg)
{
	printf("api_witharg\n");
}

int main()
{
	__xray_set_handler(arg0_handler);
	__xray_set_handler_arg1(arg1_handler);
	api_plain();
	api_witharg(0xcafef00d);
	__xray_remove_handler_arg1();
	api_witharg(0xbadc0de);
	__xray_set_handler_arg1(arg1_handler);
	api_witharg(0xdeadbeefcafe);
	__xray_remove_handler_arg1();
	__xray_remove_handler();
	api_plain();
	printf("arg0 handler %d calls, arg1 handler %d calls\n", arg0_calls, arg1_calls);
	return arg0_calls >= 2 && arg1_calls == 2 && saw_cafe == 1 && saw_beef == 1 ? 0 : 1;
}
