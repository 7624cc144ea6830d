/*
 * api_basic.cc - compiler-rt's basic mode driven through the logging-mode API: run with
 * XRAY_OPTIONS=patch_premain=false (no mode at start). Selects "xray-basic", initializes it
 * with a configuration string (no duration filter), patches, makes 5 calls of api_work,
 * finalizes, makes 3 calls (not logged), flushes, initializes again, 2 calls, finalizes. Prints
 * every status; exit status 0 when each was the expected one. With xray-rt linked its log must
 * be a basic log holding api_work 7 times.
 */
#include <cstdio>
#include <cstring>
#include "xray/xray_interface.h"
#include "xray/xray_log_interface.h"

static int failed;

[[clang::xray_never_instrument]] static void check(const char *what, long got, long want)
{
	printf("%s: %ld%s\n", what, got, got == want ? "" : " (unexpected)");
	failed += got != want;
}

extern "C" [[clang::xray_always_instrument]] __attribute__((noinline)) void api_work()
{
	asm volatile("");
}

[[clang::xray_never_instrument]] int main()
{
	const char *cur;

	check("select xray-basic", __xray_log_select_mode("xray-basic"),
	      XRayLogRegisterStatus::XRAY_REGISTRATION_OK);
	cur = __xray_log_get_current_mode();
	check("current mode is xray-basic", cur && strcmp(cur, "xray-basic") == 0, 1);
	check("init_mode", __xray_log_init_mode("xray-basic", "func_duration_threshold_us=0"),
	      XRayLogInitStatus::XRAY_LOG_INITIALIZED);
	check("patch", __xray_patch(), XRayPatchingStatus::SUCCESS);
	for (int i = 0; i < 5; i++)
		api_work();
	check("finalize", __xray_log_finalize(), XRayLogInitStatus::XRAY_LOG_FINALIZED);
	for (int i = 0; i < 3; i++)
		api_work();
	check("flushLog", __xray_log_flushLog(), XRayLogFlushStatus::XRAY_LOG_FLUSHED);
	check("init_mode again", __xray_log_init_mode("xray-basic", "func_duration_threshold_us=0"),
	      XRayLogInitStatus::XRAY_LOG_INITIALIZED);
	for (int i = 0; i < 2; i++)
		api_work();
	check("finalize again", __xray_log_finalize(), XRayLogInitStatus::XRAY_LOG_FINALIZED);
	check("unpatch", __xray_unpatch(), XRayPatchingStatus::SUCCESS);
	return failed != 0;
}
