/*
 * api_fdr.cc - compiler-rt's FDR mode driven through the logging API: run with
 * XRAY_OPTIONS=patch_premain=false (no mode at start). Three rounds of select/init/finalize/
 * process_buffers/flushLog, each configured by its init string:
 *   1. buffer_size=4096, buffer_max=4, no threshold, no_file_flush: 65536 calls fill every
 *      buffer, so process_buffers gives the header and 4 buffers, and no file is written;
 *   2. the defaults' sizes, no threshold: 5 calls of api_work, api_arg(42) (an argument), then
 *      3 calls after finalize: the header and one buffer; the log holds api_work 5 times;
 *   3. a threshold of 1 s: 3 calls of api_work (unwritten: shorter than the threshold) and
 *      api_arg(7) (an entry with an argument is never unwritten): the log holds api_arg alone.
 * Every buffer is checked to be in compiler-rt's format: the first one the 32-byte file header
 * (version 5, type 1, the configured buffer size), each other a BufferExtents record whose
 * count is the bytes after it. Prints every result; exit status 0 when each was the expected
 * one. With xray-rt linked, its logs must be two, with those counts.
 */
#include <cstdint>
#include <cstdio>
#include <cstring>
#include "xray/xray_interface.h"
#include "xray/xray_log_interface.h"

static int failed, buffers, bad_format;
static uint64_t want_bsize;

[[clang::xray_never_instrument]] static void check(const char *what, long got, long want)
{
	printf("%s: %ld%s\n", what, got, got == want ? "" : " (unexpected)");
	failed += got != want;
}

[[clang::xray_never_instrument]] static void count_buffer(const char *mode, XRayBuffer b)
{
	const unsigned char *p = (const unsigned char *)b.Data;
	uint16_t version, type;
	uint64_t n;

	if (!mode || strcmp(mode, "xray-fdr") != 0)
		bad_format++;
	if (buffers++ == 0) {
		memcpy(&version, p, 2);
		memcpy(&type, p + 2, 2);
		memcpy(&n, p + 16, 8);
		bad_format += b.Size != 32 || version != 5 || type != 1 || n != want_bsize;
		return;
	}
	memcpy(&n, p + 1, 8);
	bad_format += b.Size < 16 || p[0] != ((7 << 1) | 1) || n != b.Size - 16;
}

extern "C" [[clang::xray_always_instrument]] __attribute__((noinline)) void api_work()
{
	asm volatile("");
}

extern "C" [[clang::xray_always_instrument, clang::xray_log_args(1)]] __attribute__((noinline))
void api_arg(int x)
{
	asm volatile("" ::"r"(x));
}

[[clang::xray_never_instrument]] static void round(const char *config, uint64_t bsize, int calls,
						   int arg, long want_buffers)
{
	check("select xray-fdr", __xray_log_select_mode("xray-fdr"), 0);
	check("init_mode", __xray_log_init_mode("xray-fdr", config), 2);
	check("__xray_patch", __xray_patch(), 1);
	for (int i = 0; i < calls; i++)
		api_work();
	if (arg)
		api_arg(arg);
	check("finalize", __xray_log_finalize(), 4);
	for (int i = 0; i < 3; i++)
		api_work();
	buffers = bad_format = 0;
	want_bsize = bsize;
	check("process_buffers", __xray_log_process_buffers(count_buffer), 2);
	check("buffers", buffers, want_buffers);
	check("buffers in compiler-rt's format", bad_format == 0, 1);
	check("flushLog", __xray_log_flushLog(), 2);
	check("flushLog again", __xray_log_flushLog(), 0);
	buffers = 0;
	check("process_buffers after flush", __xray_log_process_buffers(count_buffer), 2);
	check("buffers after flush", buffers, 0);
}

[[clang::xray_never_instrument]] int main()
{
	round("buffer_size=4096:buffer_max=4:func_duration_threshold_us=0:no_file_flush=true:"
	      "grace_period_ms=0",
	      4096, 1 << 16, 0, 5);
	round("func_duration_threshold_us=0 grace_period_ms=0", 16384, 5, 42, 2);
	round("func_duration_threshold_us=1000000,grace_period_ms=0", 16384, 3, 7, 2);
	return failed ? 1 : 0;
}
