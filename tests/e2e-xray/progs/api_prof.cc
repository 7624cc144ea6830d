/*
 * api_prof.cc - compiler-rt's profiling mode, "xray-profiling", driven through the logging
 * API: run with XRAY_OPTIONS=patch_premain=false. Three rounds:
 *   1. init (no configuration), f0 (f0 > f1 > f2) 3 times and f1 once in main, f0 once in each
 *      of 2 threads, finalize: process_buffers gives the profile file header (magic, version,
 *      this pid) and one block per thread (3), each {size, number, tid} then records {path,
 *      0, call count, local time}; the paths and counts are printed, by function name; flush
 *      writes the profile;
 *   2. init "no_flush=true": f2 once, finalize: 2 buffers; flush writes nothing;
 *   3. init, f0 once, and exit without finalizing: the profile is written at exit.
 * Prints every result; exit status 0 when each was the expected one. Two profile files come
 * out, each holding what compiler-rt's hold (the same blocks, paths and call counts).
 */
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>
#include "xray/xray_interface.h"
#include "xray/xray_log_interface.h"

static int failed, buffers, bad_format;
static std::vector<std::string> blocks;

[[clang::xray_never_instrument]] static void check(const char *what, long got, long want)
{
	printf("%s: %ld%s\n", what, got, got == want ? "" : " (unexpected)");
	failed += got != want;
}

extern "C" [[clang::xray_always_instrument]] __attribute__((noinline)) void f2()
{
	asm volatile("");
}

extern "C" [[clang::xray_always_instrument]] __attribute__((noinline)) void f1()
{
	f2();
}

extern "C" [[clang::xray_always_instrument]] __attribute__((noinline)) void f0()
{
	f1();
}

[[clang::xray_never_instrument]] static std::string name_of(int32_t fid)
{
	uintptr_t a = __xray_function_address(fid);
	if (a == (uintptr_t)&f0)
		return "f0";
	if (a == (uintptr_t)&f1)
		return "f1";
	if (a == (uintptr_t)&f2)
		return "f2";
	return "?";
}

[[clang::xray_never_instrument]] static void take_buffer(const char *mode, XRayBuffer b)
{
	const unsigned char *p = (const unsigned char *)b.Data, *end = p + b.Size;
	uint64_t h[4];
	uint32_t size, num;
	std::vector<std::string> recs;

	if (!mode || strcmp(mode, "xray-profiling") != 0)
		bad_format++;
	if (buffers++ == 0) {
		if (b.Size != sizeof(h))
			bad_format++;
		else
			memcpy(h, p, sizeof(h));
		bad_format += h[0] != 0x7872617970726f66ull || h[1] != 0x20180424ull ||
			      h[3] != (uint64_t)getpid();
		return;
	}
	memcpy(&size, p, 4);
	memcpy(&num, p + 4, 4);
	bad_format += size != b.Size || num != (uint32_t)buffers - 2;
	for (p += 16; p + 20 <= end;) {
		std::string path;
		int32_t fid;
		uint64_t count;
		for (memcpy(&fid, p, 4), p += 4; fid != 0 && p + 4 <= end;
		     memcpy(&fid, p, 4), p += 4)
			path += (path.empty() ? "" : "<") + name_of(fid);
		memcpy(&count, p, 8);
		p += 16;
		recs.push_back(path + " x" + std::to_string(count));
	}
	bad_format += p != end;
	std::sort(recs.begin(), recs.end());
	std::string s;
	for (auto &r : recs)
		s += (s.empty() ? "" : ", ") + r;
	blocks.push_back(s);
}

[[clang::xray_never_instrument]] static void process(long want)
{
	buffers = bad_format = 0;
	blocks.clear();
	check("process_buffers", __xray_log_process_buffers(take_buffer), 2);
	check("buffers", buffers, want);
	check("buffers in compiler-rt's format", bad_format == 0, 1);
	std::sort(blocks.begin(), blocks.end());
	for (auto &b : blocks)
		printf("block: %s\n", b.c_str());
}

[[clang::xray_never_instrument]] int main()
{
	check("select xray-profiling", __xray_log_select_mode("xray-profiling"), 0);
	const char *cur = __xray_log_get_current_mode();
	check("current is xray-profiling", cur && strcmp(cur, "xray-profiling") == 0, 1);
	check("__xray_patch", __xray_patch(), 1);
	check("init_mode", __xray_log_init_mode("xray-profiling", ""), 2);
	check("init_mode again", __xray_log_init_mode("xray-profiling", ""), 2);
	for (int i = 0; i < 3; i++)
		f0();
	f1();
	std::thread t0([] { f0(); });
	std::thread t1([] { f0(); });
	t0.join();
	t1.join();
	check("finalize", __xray_log_finalize(), 4);
	f0();
	process(4);
	check("flushLog", __xray_log_flushLog(), 2);
	check("flushLog again", __xray_log_flushLog(), 0);

	check("init_mode no_flush", __xray_log_init_mode("xray-profiling", "no_flush=true"), 2);
	f2();
	check("finalize", __xray_log_finalize(), 4);
	process(2);
	check("flushLog", __xray_log_flushLog(), 2);

	check("init_mode", __xray_log_init_mode("xray-profiling", ""), 2);
	f0();
	return failed ? 1 : 0;
}
