/*
 * api_modes.cc - compiler-rt's logging-mode API: run with XRAY_OPTIONS=patch_premain=false (no
 * xray_mode: no mode is current at start). The program registers a mode of its own and checks
 * every status code of the registry and of the lifecycle calls (register: incomplete,
 * duplicate; select: not found; init_mode[_bin]: no implementation, another mode's name, no
 * configuration; finalize, flushLog, process_buffers before and after), that its init gets the
 * configuration and its size, that its handler is called once patched, and that
 * __xray_log_process_buffers walks its buffer iterator. Then it drives "xray-fdr" (compiler-rt's
 * FDR mode, no duration threshold): init, 5 calls of api_work, finalize, 3 calls, flush, init
 * again, 2 calls, finalize, flush; one log per flush, holding api_work 5 then 2 times. Prints
 * every result; exit status 0 when each was the expected one.
 */
#include <cstdio>
#include <cstring>
#include "xray/xray_interface.h"
#include "xray/xray_log_interface.h"

static int failed, buffers;
/* every call recorded (compiler-rt drops calls under 5 us by default), no wait at flush */
static const char FDR_CONFIG[] = "func_duration_threshold_us=0:grace_period_ms=0";
static char got_config[32];
static size_t got_size = 99;

[[clang::xray_never_instrument]] static void check(const char *what, long got, long want)
{
	printf("%s: %ld%s\n", what, got, got == want ? "" : " (unexpected)");
	failed += got != want;
}

[[clang::xray_never_instrument]] static void mine_handler(int32_t, XRayEntryType type)
{
	printf("mine handler: type %d\n", (int)type);
}

[[clang::xray_never_instrument]] static XRayBuffer mine_iterator(XRayBuffer b)
{
	static const char data[2][8] = {};
	if (b.Data == nullptr)
		return XRayBuffer{data[0], 8};
	if (b.Data == data[0])
		return XRayBuffer{data[1], 4};
	return XRayBuffer{nullptr, 0};
}

[[clang::xray_never_instrument]] static XRayLogInitStatus mine_init(size_t, size_t, void *config,
								     size_t size)
{
	snprintf(got_config, sizeof(got_config), "%s", (const char *)config);
	got_size = size;
	__xray_log_set_buffer_iterator(mine_iterator);
	return XRayLogInitStatus::XRAY_LOG_INITIALIZED;
}

[[clang::xray_never_instrument]] static XRayLogInitStatus mine_finalize()
{
	return XRayLogInitStatus::XRAY_LOG_FINALIZED;
}

[[clang::xray_never_instrument]] static XRayLogFlushStatus mine_flush()
{
	__xray_log_remove_buffer_iterator();
	return XRayLogFlushStatus::XRAY_LOG_FLUSHED;
}

[[clang::xray_never_instrument]] static void count_buffer(const char *mode, XRayBuffer b)
{
	printf("buffer of %s: %zu bytes\n", mode ? mode : "(none)", b.Size);
	buffers++;
}

extern "C" [[clang::xray_always_instrument]] __attribute__((noinline)) void api_work()
{
	asm volatile("");
}

[[clang::xray_never_instrument]] int main()
{
	const char *cur = __xray_log_get_current_mode();
	XRayLogImpl mine = {mine_init, mine_finalize, mine_handler, mine_flush};
	XRayLogImpl incomplete = {mine_init, nullptr, mine_handler, mine_flush};

	check("no current mode at start", cur == nullptr, 1);
	check("register incomplete", __xray_log_register_mode("bad", incomplete), 3);
	check("register mine", __xray_log_register_mode("mine", mine), 0);
	check("register mine again", __xray_log_register_mode("mine", mine), 1);
	check("select nope", __xray_log_select_mode("nope"), 2);
	check("init_mode, none selected", __xray_log_init_mode("mine", "a=1"), 0);
	check("finalize, none selected", __xray_log_finalize(), 0);
	check("flushLog, none selected", __xray_log_flushLog(), 0);
	check("process_buffers, none selected", __xray_log_process_buffers(count_buffer), 0);
	check("select mine", __xray_log_select_mode("mine"), 0);
	cur = __xray_log_get_current_mode();
	check("current is mine", cur && strcmp(cur, "mine") == 0, 1);
	check("init_mode of another name", __xray_log_init_mode("xray-fdr", "a=1"), 0);
	check("init_mode without config", __xray_log_init_mode("mine", nullptr), 0);
	check("init_mode", __xray_log_init_mode("mine", "a=1"), 2);
	check("config given", strcmp(got_config, "a=1") == 0 && got_size == 0, 1);
	check("init_mode_bin", __xray_log_init_mode_bin("mine", "b=22", 5), 2);
	check("config given, with its size", strcmp(got_config, "b=22") == 0 && got_size == 5, 1);
	check("__xray_patch", __xray_patch(), 1);
	api_work();
	check("finalize", __xray_log_finalize(), 4);
	check("process_buffers", __xray_log_process_buffers(count_buffer), 2);
	check("buffers", buffers, 2);
	check("flushLog", __xray_log_flushLog(), 2);
	buffers = 0;
	check("process_buffers, iterator removed", __xray_log_process_buffers(count_buffer), 2);
	check("buffers", buffers, 0);

	check("select xray-fdr", __xray_log_select_mode("xray-fdr"), 0);
	check("init_mode xray-fdr", __xray_log_init_mode("xray-fdr", FDR_CONFIG), 2);
	for (int i = 0; i < 5; i++)
		api_work();
	check("init_mode xray-fdr again", __xray_log_init_mode("xray-fdr", ""), 2);
	check("finalize xray-fdr", __xray_log_finalize(), 4);
	for (int i = 0; i < 3; i++)
		api_work();
	check("finalize xray-fdr again", __xray_log_finalize(), 4);
	check("flushLog xray-fdr", __xray_log_flushLog(), 2);
	check("flushLog xray-fdr again", __xray_log_flushLog(), 0);
	check("init_mode xray-fdr after flush", __xray_log_init_mode("xray-fdr", FDR_CONFIG), 2);
	for (int i = 0; i < 2; i++)
		api_work();
	check("finalize xray-fdr", __xray_log_finalize(), 4);
	check("flushLog xray-fdr", __xray_log_flushLog(), 2);
	__xray_set_log_impl(incomplete);
	check("no current mode after an incomplete impl", __xray_log_get_current_mode() == nullptr,
	      1);
	check("init_mode, no implementation", __xray_log_init_mode("xray-fdr", ""), 0);
	return failed ? 1 : 0;
}
