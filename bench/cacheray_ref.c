/*
 * bench/cacheray_ref.c - Cacheray's runtime design, for comparison in bench/run-cacheray
 * (written here from shared/anchors/cacheray.md section 1 and from reading Cacheray's
 * libcacheray sources; no Cacheray code).
 *
 * What Cacheray's libcacheray.a does per recorded access: the callback calls a log function,
 * which returns at once unless recording is enabled, then writes the four fields (type u8,
 * address, size u8, thread id u64 - always 0) each through its own small put function that
 * calls fwrite() on one stdio stream and checks its result; every fwrite() takes the stream's
 * lock. The file is CACHERAY_OPTIONS' tracefile or ./cacheray.trace, opened with fopen "w" in
 * __tsan_init and closed at exit. Only the callbacks bench/cacheray_loop.c needs are here
 * (plain 1-16 byte reads and writes, function entry/exit, __tsan_init).
 *
 * bench/run-cacheray compiles this file the way Cacheray's CMake build compiles its runtime:
 * no CMAKE_BUILD_TYPE, so no -O flag at all (-std=gnu11 only). Built that way it costs what
 * the real libcacheray.a costs on the same loop (66 ns per access in shared/anchors, measured
 * next to each other here: see bench/run-cacheray --libcacheray); built with -O2 it would be
 * about 40% cheaper than the runtime it stands for.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *ref_fp;
static int ref_enabled; /* 1 from __tsan_init to the exit handler */

static void ref_close(void)
{
	ref_enabled = 0;
	if (ref_fp)
		fclose(ref_fp);
	ref_fp = NULL;
}

void __tsan_init(void)
{
	const char *opt = getenv("CACHERAY_OPTIONS"), *path = "cacheray.trace";

	if (ref_fp)
		return;
	if (opt && !strncmp(opt, "tracefile=", 10))
		path = opt + 10;
	ref_fp = fopen(path, "w");
	if (!ref_fp) {
		perror(path);
		abort();
	}
	atexit(ref_close);
	ref_enabled = 1;
}

/* one put per field, as Cacheray's serialiser has: fwrite and check that it wrote */
static void ref_put(const void *v, size_t size)
{
	if (fwrite(v, size, 1, ref_fp) != 1) {
		perror("cacheray_ref: write");
		abort();
	}
}

static void ref_put_u8(uint8_t v)
{
	ref_put(&v, sizeof(v));
}

static void ref_put_ptr(const void *p)
{
	ref_put(&p, sizeof(p));
}

static void ref_put_u64(uint64_t v)
{
	ref_put(&v, sizeof(v));
}

static uint64_t ref_thread_id(void)
{
	return 0; /* Cacheray writes no thread id */
}

static void ref_log(uint8_t type, void *addr, uint8_t size)
{
	if (!ref_enabled)
		return;
	ref_put_u8(type);
	ref_put_ptr(addr);
	ref_put_u8(size);
	ref_put_u64(ref_thread_id());
}

#define REF(N)                                                                                     \
	void __tsan_read##N(void *a)                                                               \
	{                                                                                          \
		ref_log(0, a, N);                                                                  \
	}                                                                                          \
	void __tsan_write##N(void *a)                                                              \
	{                                                                                          \
		ref_log(1, a, N);                                                                  \
	}

REF(1)
REF(2)
REF(4)
REF(8)
REF(16)

void __tsan_func_entry(void *pc)
{
	(void)pc;
}

void __tsan_func_exit(void)
{
}
