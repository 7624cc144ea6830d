/*
 * bench/cacheray_ref.c - Cacheray's runtime design, for comparison in bench/run-cacheray
 * (written here from shared/anchors/cacheray.md section 1; no Cacheray code).
 *
 * What Cacheray's libcacheray.a does per recorded access: four fwrite() calls on one stdio
 * stream (type u8, address, size u8, thread id u64 - always 0), which takes the stream's lock
 * four times. The file is CACHERAY_OPTIONS' tracefile or ./cacheray.trace, opened with fopen
 * "w" in __tsan_init and closed at exit. Only the callbacks bench/cacheray_loop.c needs are
 * here (plain 1-16 byte reads and writes, function entry/exit, __tsan_init).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *ref_fp;

static void ref_close(void)
{
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
}

static void ref_log(uint8_t type, void *addr, uint8_t size)
{
	uint64_t tid = 0;

	if (!ref_fp)
		return;
	fwrite(&type, 1, 1, ref_fp);
	fwrite(&addr, sizeof(addr), 1, ref_fp);
	fwrite(&size, 1, 1, ref_fp);
	fwrite(&tid, sizeof(tid), 1, ref_fp);
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
