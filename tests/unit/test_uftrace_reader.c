/*
 * test_uftrace_reader: the uftrace.data reader and linter (formats/uftrace/read_uftrace.h).
 *
 * The two golden samples of tests/samples are embedded below byte for byte, and
 * test_golden_copies_match compares them with those files (a missing one fails it). Each test
 * writes a sample into its own temporary directory, breaks one rule in it and asserts the
 * exact rule, file and byte offset the reader reports. Expected offsets are computed from the data (the position of a line, the
 * index of a record), never copied from the reader's output. A small deterministic mutation
 * fuzzer feeds every parser damaged buffers: run it under ASAN=1 to catch memory errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/common/rtstats.h"
#include "formats/uftrace/read_uftrace.h"
#include "unit_util.h"

struct gold_file {
	const char *name;
	const unsigned char *head; /* binary part (info header, .dat records) */
	size_t head_len;
	const char *text; /* text part */
	size_t text_len;
};

/* samples/minimal.uftrace.data (hand-crafted, replayed by uftrace 0.13) */
static const unsigned char minimal_info_hdr[] = {
	0x46, 0x74, 0x72, 0x61, 0x63, 0x65, 0x21, 0x00, 0x04, 0x00, 0x00, 0x00, 0x28, 0x00,
	0x01, 0x02, 0x62, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x81, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

static const char minimal_info[] = "exename:/opt/example/prog\n"
				   "taskinfo:lines=2\n"
				   "taskinfo:nr_tid=1\n"
				   "taskinfo:tids=4242\n";

static const char minimal_task[] =
	"SESS timestamp=999.999999000 pid=4242 sid=0123456789abcdef exename=\"/opt/example/prog\"\n"
	"TASK timestamp=999.999999500 tid=4242 pid=4242\n";

static const char minimal_map[] =
	"555555554000-555555559000 r-xp 00000000 00:00 0 /opt/example/prog\n"
	"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n";

static const char minimal_sym[] = "# symbols: 4\n"
				  "# path name: /opt/example/prog\n"
				  "0000000000001090 T main\n"
				  "0000000000001110 ? __func_end\n"
				  "0000000000001260 t leaf\n"
				  "0000000000001270 t mid\n"
				  "00000000000012a0 T fib\n"
				  "0000000000001300 ? __sym_end\n";

static const unsigned char minimal_dat4242[] = {
	0x00, 0x10, 0xa5, 0xd4, 0xe8, 0x00, 0x00, 0x00, 0x28, 0x00, 0xa3, 0x50, 0x55, 0x55, 0x55,
	0x55, 0x0a, 0x10, 0xa5, 0xd4, 0xe8, 0x00, 0x00, 0x00, 0x68, 0x00, 0x7d, 0x52, 0x55, 0x55,
	0x55, 0x55, 0x14, 0x10, 0xa5, 0xd4, 0xe8, 0x00, 0x00, 0x00, 0xa8, 0x00, 0x6a, 0x52, 0x55,
	0x55, 0x55, 0x55, 0x1e, 0x10, 0xa5, 0xd4, 0xe8, 0x00, 0x00, 0x00, 0xa9, 0x00, 0x6a, 0x52,
	0x55, 0x55, 0x55, 0x55, 0x28, 0x10, 0xa5, 0xd4, 0xe8, 0x00, 0x00, 0x00, 0x69, 0x00, 0x7d,
	0x52, 0x55, 0x55, 0x55, 0x55, 0x32, 0x10, 0xa5, 0xd4, 0xe8, 0x00, 0x00, 0x00, 0x68, 0x00,
	0xa5, 0x52, 0x55, 0x55, 0x55, 0x55, 0x3c, 0x10, 0xa5, 0xd4, 0xe8, 0x00, 0x00, 0x00, 0x69,
	0x00, 0xa5, 0x52, 0x55, 0x55, 0x55, 0x55, 0x64, 0x10, 0xa5, 0xd4, 0xe8, 0x00, 0x00, 0x00,
	0x29, 0x00, 0xa3, 0x50, 0x55, 0x55, 0x55, 0x55,
};

static const struct gold_file minimal_files[] = {
	{ "info", minimal_info_hdr, sizeof(minimal_info_hdr), minimal_info,
	  sizeof(minimal_info) - 1 },
	{ "task.txt", NULL, 0, minimal_task, sizeof(minimal_task) - 1 },
	{ "sid-0123456789abcdef.map", NULL, 0, minimal_map, sizeof(minimal_map) - 1 },
	{ "prog.sym", NULL, 0, minimal_sym, sizeof(minimal_sym) - 1 },
	{ "4242.dat", minimal_dat4242, sizeof(minimal_dat4242), "", 0 },
	{ NULL, NULL, 0, NULL, 0 },
};

/* samples/uftrace.data (recorded by uftrace 0.13: main thread, a pthread, a forked child) */
static const unsigned char sample_info_hdr[] = {
	0x46, 0x74, 0x72, 0x61, 0x63, 0x65, 0x21, 0x00, 0x04, 0x00, 0x00, 0x00, 0x28, 0x00,
	0x01, 0x02, 0x62, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0x3b, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

static const char sample_info[] =
	"exename:/tmp/sample/sample\n"
	"build_id:32a1ccf6770e9888c0d678ef2f23cfe8491e2618\n"
	"exit_status:0\n"
	"cmdline:uftrace record --no-libcall --no-event ./sample\n"
	"cpuinfo:lines=2\n"
	"cpuinfo:nr_cpus=2 / 2 (online/possible)\n"
	"cpuinfo:desc=AMD EPYC\n"
	"meminfo:22.5 / 23.5 GB (free / total)\n"
	"osinfo:lines=3\n"
	"osinfo:kernel=Linux 6.18.44-fc-v657\n"
	"osinfo:hostname=vm\n"
	"osinfo:distro=\"Debian GNU/Linux 12 (bookworm)\"\n"
	"taskinfo:lines=2\n"
	"taskinfo:nr_tid=3\n"
	"taskinfo:tids=7307,7309,7310\n"
	"usageinfo:lines=6\n"
	"usageinfo:systime=0.002779\n"
	"usageinfo:usrtime=0.006658\n"
	"usageinfo:ctxsw=6 / 0 (voluntary / involuntary)\n"
	"usageinfo:maxrss=7552\n"
	"usageinfo:pagefault=2 / 763 (major / minor)\n"
	"usageinfo:iops=2112 / 16 (read / write)\n"
	"loadinfo:0.73 / 0.57 / 0.72\n"
	"record_date:Sun Nov 22 08:24:07 2026\n"
	"elapsed_time:0.015313091 sec\n"
	"pattern_type:regex\n"
	"uftrace_version:v0.13 ( x86_64 dwarf python3 luajit tui perf sched dynamic )\n";

static const char sample_task[] =
	"SESS timestamp=1473.356340630 pid=7307 sid=546b5fdf25c1bdc4 exename=\"/tmp/sample/sample\"\n"
	"TASK timestamp=1473.356419187 tid=7307 pid=7307\n"
	"TASK timestamp=1473.356601106 tid=7309 pid=7307\n"
	"FORK timestamp=1473.357081569 pid=7310 ppid=7307\n";

static const char sample_map[] =
	"560e9b1f4000-560e9b1f9000 r-xp 00000000 00:00 0                          /tmp/sample/sample build-id:32a1ccf6770e9888c0d678ef2f23cfe8491e2618\n"
	"7f8f42800000-7f8f42e5c000 r-xp 00000000 00:00 0                          /usr/lib/x86_64-linux-gnu/libcapstone.so.4 build-id:24c571ef5a81a83b2b714edfb3b84ec8f098bd94\n"
	"7f8f42e9f000-7f8f42eb2000 r-xp 00000000 00:00 0                          /usr/lib/x86_64-linux-gnu/libbz2.so.1.0.4 build-id:462687d0e5080f8f8f3198430fbe3ca849aec026\n"
	"7f8f42eb2000-7f8f42ee1000 r-xp 00000000 00:00 0                          /usr/lib/x86_64-linux-gnu/liblzma.so.5.4.1 build-id:72a44fc3edc93188d045e65d92d28d50e373dbcb\n"
	"7f8f42ee1000-7f8f42f00000 r-xp 00000000 00:00 0                          /usr/lib/x86_64-linux-gnu/libz.so.1.2.13 build-id:1f95d5498d283b79505861523e20b3db2afdf518\n"
	"7f8f42f00000-7f8f42f20000 r-xp 00000000 00:00 0                          /usr/lib/x86_64-linux-gnu/libgcc_s.so.1 build-id:6f03384c2e3c38887dd3ba5a24b2e18c17e2f0e0\n"
	"7f8f42f20000-7f8f43000000 r-xp 00000000 00:00 0                          /usr/lib/x86_64-linux-gnu/libm.so.6 build-id:d6e6f9e3af1243eed9bf5efd366dd015a9f22c13\n"
	"7f8f43000000-7f8f43217000 r-xp 00000000 00:00 0                          /usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30 build-id:289ee39f8c07bd4fa48102dfeeb7e6f9c76158b4\n"
	"7f8f43223000-7f8f432cb000 r-xp 00000000 00:00 0                          /usr/lib/x86_64-linux-gnu/libdw-0.188.so build-id:e65f8b5b4f38b1f0e8bae9d6b85edfe12f17bb35\n"
	"7f8f432cb000-7f8f432e6000 r-xp 00000000 00:00 0                          /usr/lib/x86_64-linux-gnu/libelf-0.188.so build-id:5e9b61d4ea8b00ef26b01df81159ceae1a4b3ba4\n"
	"7f8f432e6000-7f8f434bb000 r-xp 00000000 00:00 0                          /usr/lib/x86_64-linux-gnu/libc.so.6 build-id:93ac61ec5a8eb1396f9fbd350e3169a558528a40\n"
	"7f8f434d3000-7f8f43515000 r-xp 00000000 00:00 0                          /usr/lib/x86_64-linux-gnu/uftrace/libmcount-fast.so build-id:966c45cd3149ae3cdfda2a6d3d6e800644fe14c1\n"
	"7f8f43520000-7f8f43555000 r-xp 00000000 00:00 0                          /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 build-id:7ebc65e52f2bbea498b4040fa92f7238377aaba9\n"
	"7fff2931f000-7fff29340000 rw-p 00000000 00:00 0                          [stack]\n";

static const char sample_sym[] = "# symbols: 22\n"
				 "# path name: /tmp/sample/sample\n"
				 "# build-id: 32a1ccf6770e9888c0d678ef2f23cfe8491e2618\n"
				 "000000000000037c d __abi_tag\n"
				 "000000000000039c ? __sym_end\n"
				 "0000000000001030 P __stack_chk_fail\n"
				 "0000000000001040 P printf\n"
				 "0000000000001050 P __monstartup\n"
				 "0000000000001060 P pthread_create\n"
				 "0000000000001070 P waitpid\n"
				 "0000000000001080 P __cxa_atexit\n"
				 "0000000000001090 P pthread_join\n"
				 "00000000000010a0 P fork\n"
				 "00000000000010b0 ? __dynsym_end\n"
				 "00000000000010c0 T _start\n"
				 "00000000000010f0 T __gmon_start__\n"
				 "0000000000001140 T _dl_relocate_static_pie\n"
				 "0000000000001209 T square\n"
				 "0000000000001222 T compute\n"
				 "0000000000001261 T worker\n"
				 "0000000000001282 T child_work\n"
				 "0000000000001298 T main\n"
				 "0000000000001350 t atexit\n"
				 "0000000000001360 T __stack_chk_fail_local\n"
				 "0000000000001369 ? __func_end\n"
				 "0000000000002000 D _IO_stdin_used\n"
				 "0000000000004050 d called.0\n"
				 "0000000000004054 d completed.0\n"
				 "0000000000004055 ? __sym_end\n";

static const char sample_opts[] = "";

static const unsigned char sample_dat7307[] = {
	0xa7, 0xd5, 0xe2, 0x0a, 0x57, 0x01, 0x00, 0x00, 0x28, 0x00, 0xa6, 0x52, 0x1f, 0x9b, 0x0e,
	0x56, 0xe7, 0xd6, 0xe2, 0x0a, 0x57, 0x01, 0x00, 0x00, 0x68, 0x00, 0x30, 0x52, 0x1f, 0x9b,
	0x0e, 0x56, 0x2d, 0xd7, 0xe2, 0x0a, 0x57, 0x01, 0x00, 0x00, 0xa8, 0x00, 0x17, 0x52, 0x1f,
	0x9b, 0x0e, 0x56, 0x7d, 0xd7, 0xe2, 0x0a, 0x57, 0x01, 0x00, 0x00, 0xa9, 0x00, 0x17, 0x52,
	0x1f, 0x9b, 0x0e, 0x56, 0x62, 0xda, 0xe2, 0x0a, 0x57, 0x01, 0x00, 0x00, 0xa8, 0x00, 0x17,
	0x52, 0x1f, 0x9b, 0x0e, 0x56, 0x80, 0xda, 0xe2, 0x0a, 0x57, 0x01, 0x00, 0x00, 0xa9, 0x00,
	0x17, 0x52, 0x1f, 0x9b, 0x0e, 0x56, 0xd1, 0xda, 0xe2, 0x0a, 0x57, 0x01, 0x00, 0x00, 0xa8,
	0x00, 0x17, 0x52, 0x1f, 0x9b, 0x0e, 0x56, 0xf9, 0xda, 0xe2, 0x0a, 0x57, 0x01, 0x00, 0x00,
	0xa9, 0x00, 0x17, 0x52, 0x1f, 0x9b, 0x0e, 0x56, 0x3f, 0xdb, 0xe2, 0x0a, 0x57, 0x01, 0x00,
	0x00, 0x69, 0x00, 0x30, 0x52, 0x1f, 0x9b, 0x0e, 0x56, 0x7a, 0xd3, 0xf6, 0x0a, 0x57, 0x01,
	0x00, 0x00, 0x29, 0x00, 0xa6, 0x52, 0x1f, 0x9b, 0x0e, 0x56,
};

static const unsigned char sample_dat7309[] = {
	0xb0, 0x9b, 0xe5, 0x0a, 0x57, 0x01, 0x00, 0x00, 0x28, 0x00, 0x6f, 0x52, 0x1f, 0x9b, 0x0e,
	0x56, 0x6e, 0x9c, 0xe5, 0x0a, 0x57, 0x01, 0x00, 0x00, 0x68, 0x00, 0x30, 0x52, 0x1f, 0x9b,
	0x0e, 0x56, 0x97, 0x9c, 0xe5, 0x0a, 0x57, 0x01, 0x00, 0x00, 0xa8, 0x00, 0x17, 0x52, 0x1f,
	0x9b, 0x0e, 0x56, 0xbf, 0x9c, 0xe5, 0x0a, 0x57, 0x01, 0x00, 0x00, 0xa9, 0x00, 0x17, 0x52,
	0x1f, 0x9b, 0x0e, 0x56, 0xa5, 0x9d, 0xe5, 0x0a, 0x57, 0x01, 0x00, 0x00, 0xa8, 0x00, 0x17,
	0x52, 0x1f, 0x9b, 0x0e, 0x56, 0xcd, 0x9d, 0xe5, 0x0a, 0x57, 0x01, 0x00, 0x00, 0xa9, 0x00,
	0x17, 0x52, 0x1f, 0x9b, 0x0e, 0x56, 0x27, 0x9e, 0xe5, 0x0a, 0x57, 0x01, 0x00, 0x00, 0x69,
	0x00, 0x30, 0x52, 0x1f, 0x9b, 0x0e, 0x56, 0x77, 0x9e, 0xe5, 0x0a, 0x57, 0x01, 0x00, 0x00,
	0x29, 0x00, 0x6f, 0x52, 0x1f, 0x9b, 0x0e, 0x56,
};

static const unsigned char sample_dat7310[] = {
	0xaf, 0xa6, 0xee, 0x0a, 0x57, 0x01, 0x00, 0x00, 0x68, 0x00, 0x8c, 0x52, 0x1f, 0x9b, 0x0e,
	0x56, 0x27, 0xa7, 0xee, 0x0a, 0x57, 0x01, 0x00, 0x00, 0xa8, 0x00, 0x30, 0x52, 0x1f, 0x9b,
	0x0e, 0x56, 0x59, 0xa7, 0xee, 0x0a, 0x57, 0x01, 0x00, 0x00, 0xe8, 0x00, 0x17, 0x52, 0x1f,
	0x9b, 0x0e, 0x56, 0x8b, 0xa7, 0xee, 0x0a, 0x57, 0x01, 0x00, 0x00, 0xe9, 0x00, 0x17, 0x52,
	0x1f, 0x9b, 0x0e, 0x56, 0x9a, 0xa8, 0xee, 0x0a, 0x57, 0x01, 0x00, 0x00, 0xe8, 0x00, 0x17,
	0x52, 0x1f, 0x9b, 0x0e, 0x56, 0xc2, 0xa8, 0xee, 0x0a, 0x57, 0x01, 0x00, 0x00, 0xe9, 0x00,
	0x17, 0x52, 0x1f, 0x9b, 0x0e, 0x56, 0x12, 0xa9, 0xee, 0x0a, 0x57, 0x01, 0x00, 0x00, 0xa9,
	0x00, 0x30, 0x52, 0x1f, 0x9b, 0x0e, 0x56, 0x6c, 0xa9, 0xee, 0x0a, 0x57, 0x01, 0x00, 0x00,
	0x69, 0x00, 0x8c, 0x52, 0x1f, 0x9b, 0x0e, 0x56, 0xa8, 0xa9, 0xee, 0x0a, 0x57, 0x01, 0x00,
	0x00, 0x29, 0x00, 0xa6, 0x52, 0x1f, 0x9b, 0x0e, 0x56,
};

static const struct gold_file sample_files[] = {
	{ "info", sample_info_hdr, sizeof(sample_info_hdr), sample_info, sizeof(sample_info) - 1 },
	{ "task.txt", NULL, 0, sample_task, sizeof(sample_task) - 1 },
	{ "sid-546b5fdf25c1bdc4.map", NULL, 0, sample_map, sizeof(sample_map) - 1 },
	{ "sample.sym", NULL, 0, sample_sym, sizeof(sample_sym) - 1 },
	{ "default.opts", NULL, 0, sample_opts, sizeof(sample_opts) - 1 },
	{ "7307.dat", sample_dat7307, sizeof(sample_dat7307), "", 0 },
	{ "7309.dat", sample_dat7309, sizeof(sample_dat7309), "", 0 },
	{ "7310.dat", sample_dat7310, sizeof(sample_dat7310), "", 0 },
	{ NULL, NULL, 0, NULL, 0 },
};

/* ---- temporary trace directories ---- */

static char tmp_root[256];
static unsigned dir_seq;

static int rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static int group_setup(void **state)
{
	const char *tmp = getenv("TMPDIR");

	(void)state;
	snprintf(tmp_root, sizeof(tmp_root), "%s/ufr-test.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	return mkdtemp(tmp_root) ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	return nftw(tmp_root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static char *path_of(const char *dir, const char *name)
{
	char *p = malloc(strlen(dir) + strlen(name) + 2);

	assert_non_null(p);
	sprintf(p, "%s/%s", dir, name);
	return p;
}

static void write_file(const char *dir, const char *name, const void *a, size_t alen, const void *b,
		       size_t blen)
{
	char *p = path_of(dir, name);
	FILE *fp = fopen(p, "wb");

	assert_non_null(fp);
	/* (a part may be NULL when empty) */
	assert_true(alen == 0 || fwrite(a, 1, alen, fp) == alen);
	assert_true(blen == 0 || fwrite(b, 1, blen, fp) == blen);
	assert_int_equal(fclose(fp), 0);
	free(p);
}

/* a fresh directory holding FILES; free() the result */
static char *make_trace(const struct gold_file *files)
{
	char name[32];
	char *dir;

	snprintf(name, sizeof(name), "t%u.data", ++dir_seq);
	dir = path_of(tmp_root, name);
	assert_int_equal(mkdir(dir, 0755), 0);
	for (const struct gold_file *f = files; f->name; f++)
		write_file(dir, f->name, f->head, f->head_len, f->text, f->text_len);
	return dir;
}

static unsigned char *read_all(const char *dir, const char *name, size_t *len)
{
	char *p = path_of(dir, name);
	FILE *fp = fopen(p, "rb");
	unsigned char *buf;
	long n;

	assert_non_null(fp);
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
	buf[n] = '\0';
	fclose(fp);
	free(p);
	*len = (size_t)n;
	return buf;
}

/* replace the first FROM by TO in DIR/NAME; returns the offset where it was */
static size_t replace_text(const char *dir, const char *name, const char *from, const char *to)
{
	size_t len, off;
	unsigned char *buf = read_all(dir, name, &len);
	unsigned char *hit = memmem(buf, len, from, strlen(from));

	assert_non_null(hit);
	off = (size_t)(hit - buf);
	write_file(dir, name, buf, off, to, strlen(to));
	{
		/* append the rest after TO */
		char *p = path_of(dir, name);
		FILE *fp = fopen(p, "ab");

		assert_non_null(fp);
		fwrite(hit + strlen(from), 1, len - off - strlen(from), fp);
		fclose(fp);
		free(p);
	}
	free(buf);
	return off;
}

static size_t find_text(const char *dir, const char *name, const char *needle)
{
	size_t len, off;
	unsigned char *buf = read_all(dir, name, &len);
	unsigned char *hit = memmem(buf, len, needle, strlen(needle));

	assert_non_null(hit);
	off = (size_t)(hit - buf);
	free(buf);
	return off;
}

static size_t file_size(const char *dir, const char *name)
{
	char *p = path_of(dir, name);
	struct stat st;

	assert_int_equal(stat(p, &st), 0);
	free(p);
	return (size_t)st.st_size;
}

static void patch(const char *dir, const char *name, size_t off, const void *bytes, size_t n)
{
	char *p = path_of(dir, name);
	int fd = open(p, O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, bytes, n, (off_t)off), (ssize_t)n);
	close(fd);
	free(p);
}

static void remove_file(const char *dir, const char *name)
{
	char *p = path_of(dir, name);

	assert_int_equal(unlink(p), 0);
	free(p);
}

/* ---- records, encoded here independently of both the runtime and the reader ---- */

struct raw_rec {
	uint64_t time;
	uint64_t word;
};

static uint64_t rec_word(unsigned type, unsigned more, unsigned magic, unsigned depth,
			 uint64_t addr)
{
	return (uint64_t)type | (uint64_t)more << 2 | (uint64_t)magic << 3 | (uint64_t)depth << 6 |
	       addr << 16;
}

static struct raw_rec get_rec(const char *dir, const char *name, size_t idx)
{
	size_t len;
	unsigned char *buf = read_all(dir, name, &len);
	struct raw_rec r;

	assert_true((idx + 1) * 16 <= len);
	memcpy(&r, buf + idx * 16, 16); /* little-endian host, little-endian trace */
	free(buf);
	return r;
}

static void put_rec(const char *dir, const char *name, size_t idx, struct raw_rec r)
{
	patch(dir, name, idx * 16, &r, 16);
}

static unsigned rec_depth(struct raw_rec r)
{
	return (unsigned)(r.word >> 6) & 0x3ff;
}

/* TASK/SESS timestamps from the text, parsed here with sscanf (not with the reader) */
static uint64_t task_time(const char *text, const char *prefix)
{
	const char *p = strstr(text, prefix);
	unsigned long long sec, nsec;

	assert_non_null(p);
	assert_int_equal(sscanf(p + 5, "timestamp=%llu.%llu", &sec, &nsec), 2);
	return sec * 1000000000ull + nsec;
}

/* ---- running the reader ---- */

static int verify(const char *dir, struct rd_error *err, struct ufr_counts *counts)
{
	struct ufr_data *d;
	int ret;

	rd_error_clear(err);
	if (ufr_open(dir, 0, &d, err) < 0) {
		assert_null(d);
		return -1;
	}
	ret = ufr_verify(d, counts, err);
	ufr_close(d);
	return ret;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* the one error line, as the CLI prints it */
static char *error_line(const struct rd_error *err)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	assert_non_null(fp);
	rd_error_print(fp, err);
	fclose(fp);
	return buf;
}

static void expect_error(const char *dir, int rule, const char *file, int64_t offset)
{
	struct rd_error err;
	struct ufr_counts c;

	assert_int_equal(verify(dir, &err, &c), -1);
	if (err.rule != rule || strcmp(base_name(err.file), file) != 0 || err.offset != offset) {
		char *line = error_line(&err);

		print_error("want rule %s, file %s, offset %" PRId64 "; got rule %s: %s",
			    ufr_rule_name(rule), file, offset, ufr_rule_name(err.rule), line);
		free(line);
	}
	assert_string_equal(ufr_rule_name(err.rule), ufr_rule_name(rule));
	assert_string_equal(base_name(err.file), file);
	assert_int_equal(err.offset, offset);
	/* the reported path is inside the directory verified */
	assert_memory_equal(err.file, dir, strlen(dir));
}

/* ---- the golden samples ---- */

static void test_golden_minimal(void **state)
{
	struct ufr_counts c;
	struct rd_error err;
	struct ufr_data *d;
	char *dir = make_trace(minimal_files);
	const char *names[8];
	struct ufr_dat_iter it;
	struct ufr_rec rec;
	int n = 0;

	(void)state;
	assert_int_equal(verify(dir, &err, &c), 0);
	assert_int_equal(c.records, 8);
	assert_int_equal(c.entries, 4);
	assert_int_equal(c.exits, 4);
	assert_int_equal(c.lost, 0);

	assert_int_equal(ufr_open(dir, 0, &d, &err), 0);
	assert_true(ufr_sniff(dir));
	assert_string_equal(d->info.exename, "/opt/example/prog");
	assert_int_equal(d->info.nr_tid, 1);
	assert_int_equal(d->info.tids[0], 4242);
	assert_int_equal(d->nr_threads, 1);
	assert_int_equal(d->nr_sess, 1);
	assert_true(d->sess[0].map.has_stack);
	assert_int_equal(ufr_thread_open(d, &d->threads[0], &it, &err), 0);
	while (ufr_dat_next(&it, &rec, &err) > 0 && n < 8) {
		const char *name = ufr_symbolize(d, &d->threads[0], rec.time, rec.addr);

		assert_non_null(name);
		names[n++] = name;
	}
	ufr_dat_iter_close(&it);
	assert_int_equal(n, 8);
	/* main -> mid -> leaf, then fib, as uftrace 0.13 replays it */
	assert_string_equal(names[0], "main");
	assert_string_equal(names[1], "mid");
	assert_string_equal(names[2], "leaf");
	assert_string_equal(names[5], "fib");
	assert_string_equal(names[7], "main");
	ufr_close(d);
	free(dir);
}

static void test_golden_sample(void **state)
{
	struct ufr_counts c;
	struct rd_error err;
	struct ufr_data *d;
	char *dir = make_trace(sample_files);
	struct ufr_task *child, *parent;

	(void)state;
	assert_int_equal(verify(dir, &err, &c), 0);
	assert_int_equal(
		c.records,
		(sizeof(sample_dat7307) + sizeof(sample_dat7309) + sizeof(sample_dat7310)) / 16);
	/* the forked child returns from main, entered in the parent: one exit more */
	assert_int_equal(c.exits, c.entries + 1);

	assert_int_equal(ufr_open(dir, 0, &d, &err), 0);
	assert_int_equal(d->nr_threads, 3);
	child = ufr_find_task(d, 7310);
	parent = ufr_find_task(d, 7307);
	assert_non_null(child);
	assert_non_null(parent);
	assert_true(child->forked);
	assert_int_equal(child->ppid, 7307);
	/* a forked child without a SESS of its own uses its parent's session */
	assert_ptr_equal(ufr_session_at(d, child, UINT64_MAX),
			 ufr_session_at(d, parent, UINT64_MAX));
	assert_null(ufr_session_at(d, parent, 0));
	{
		/* 7310's first record: child_work, depth 1 */
		struct raw_rec r = get_rec(dir, "7310.dat", 0);
		const char *name = ufr_symbolize(d, &d->threads[2], r.time, r.word >> 16);

		assert_int_equal(d->threads[2].tid, 7310);
		assert_non_null(name);
		assert_string_equal(name, "child_work");
		assert_int_equal(rec_depth(r), 1);
	}
	ufr_close(d);
	free(dir);
}

static void compare_copy(const char *dir, const struct gold_file *files)
{
	for (const struct gold_file *f = files; f->name; f++) {
		size_t len;
		unsigned char *buf = read_all(dir, f->name, &len);

		assert_int_equal(len, f->head_len + f->text_len);
		assert_memory_equal(buf, f->head, f->head_len);
		assert_memory_equal(buf + f->head_len, f->text, f->text_len);
		free(buf);
	}
}

static void test_golden_copies_match(void **state)
{
	char a[512], b[512];

	(void)state;
	unit_sample_path(a, sizeof(a), "minimal.uftrace.data");
	unit_sample_path(b, sizeof(b), "uftrace.data");
	compare_copy(a, minimal_files);
	compare_copy(b, sample_files);
}

/* ---- info ---- */

static void test_info_bad_magic(void **state)
{
	char *dir = make_trace(sample_files);
	struct rd_error err;
	char *line;

	(void)state;
	patch(dir, "info", 0, "Xtrace!", 7);
	expect_error(dir, UFR_E_HDR_MAGIC, "info", 0);
	assert_true(ufr_sniff(dir)); /* still a uftrace.data directory, for verify to report */
	verify(dir, &err, NULL);
	line = error_line(&err);
	assert_non_null(strstr(line, "/info: offset 0x0: magic is \"Xtrace!\\x00\""));
	free(line);
	free(dir);
}

static void test_info_header_fields(void **state)
{
	static const struct {
		size_t off;
		unsigned char byte;
		int rule;
	} cases[] = {
		{ 8, 5, UFR_E_HDR_VERSION }, /* version 5 */
		{ 8, 2, UFR_E_HDR_VERSION }, /* version 2 */
		{ 12, 41, UFR_E_HDR_SIZE }, /* header_size 41 */
		{ 14, 3, UFR_E_HDR_ENDIAN }, /* endian 3 */
		{ 15, 0, UFR_E_HDR_CLASS }, /* class 0 */
		{ 16, 0x60, UFR_E_FEAT_MASK }, /* TASK_SESSION cleared */
		{ 16, 0x42, UFR_E_FEAT_MASK }, /* SYM_REL_ADDR cleared */
		{ 24, 0x01, UFR_E_INFO_MASK }, /* info_mask low byte: TASKINFO (bit 7) cleared */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *dir = make_trace(minimal_files);
		/* the field starts at the patched byte, except feat/info masks (offset of field) */
		patch(dir, "info", cases[i].off, &cases[i].byte, 1);
		expect_error(dir, cases[i].rule, "info", (int64_t)cases[i].off);
		free(dir);
	}
}

static void test_info_short(void **state)
{
	char *dir = make_trace(minimal_files);
	char *info = path_of(dir, "info");

	(void)state;
	assert_int_equal(truncate(info, 30), 0);
	expect_error(dir, UFR_E_HDR_SHORT, "info", 30);
	free(info);
	free(dir);
}

static void test_info_taskinfo_count(void **state)
{
	char *dir = make_trace(sample_files);

	(void)state;
	replace_text(dir, "info", "taskinfo:nr_tid=3\n", "taskinfo:nr_tid=4\n");
	expect_error(dir, UFR_E_TASKINFO_COUNT, "info",
		     (int64_t)find_text(dir, "info", "taskinfo:tids="));
	free(dir);
}

static void test_info_sections(void **state)
{
	char *dir;

	(void)state;
	/* a section whose bit is set is missing: exit_status removed, cmdline comes instead */
	dir = make_trace(sample_files);
	replace_text(dir, "info", "exit_status:0\n", "");
	expect_error(dir, UFR_E_INFO_SECTION, "info", (int64_t)find_text(dir, "info", "cmdline:"));
	free(dir);

	/* more lines than 0.13 knows */
	dir = make_trace(sample_files);
	replace_text(dir, "info", "osinfo:lines=3", "osinfo:lines=4");
	expect_error(dir, UFR_E_INFO_LINES, "info",
		     (int64_t)find_text(dir, "info", "osinfo:lines="));
	free(dir);

	/* tids before nr_tid */
	dir = make_trace(sample_files);
	replace_text(dir, "info", "taskinfo:nr_tid=3\ntaskinfo:tids=7307,7309,7310\n",
		     "taskinfo:tids=7307,7309,7310\ntaskinfo:nr_tid=3\n");
	expect_error(dir, UFR_E_INFO_VALUE, "info",
		     (int64_t)find_text(dir, "info", "taskinfo:tids="));
	free(dir);

	/* a bad build id */
	dir = make_trace(sample_files);
	replace_text(dir, "info", "build_id:32a1", "build_id:zz");
	expect_error(dir, UFR_E_INFO_VALUE, "info", (int64_t)find_text(dir, "info", "build_id:"));
	free(dir);

	/* the text ends before the last announced section */
	dir = make_trace(sample_files);
	replace_text(
		dir, "info",
		"uftrace_version:v0.13 ( x86_64 dwarf python3 luajit tui perf sched dynamic )\n",
		"");
	expect_error(dir, UFR_E_INFO_SECTION, "info", (int64_t)file_size(dir, "info"));
	free(dir);

	/* a cmdline longer than uftrace's 4096-byte fgets buffer */
	dir = make_trace(sample_files);
	{
		char *longer = malloc(5000);

		memset(longer, 'x', 4999);
		longer[4999] = '\0';
		memcpy(longer, "cmdline:", 8);
		longer[4998] = '\n';
		replace_text(dir, "info",
			     "cmdline:uftrace record --no-libcall --no-event ./sample\n", longer);
		free(longer);
	}
	expect_error(dir, UFR_E_INFO_LONG, "info", (int64_t)find_text(dir, "info", "cmdline:"));
	free(dir);
}

/* ---- task.txt ---- */

static void test_task_lines(void **state)
{
	char *dir;

	(void)state;
	dir = make_trace(sample_files);
	replace_text(dir, "task.txt", "sid=546b5fdf25c1bdc4", "sid=546b5fdf25c1bdc");
	expect_error(dir, UFR_E_TASK_SID, "task.txt", 0);
	free(dir);

	/* nsec must have 9 digits */
	dir = make_trace(sample_files);
	replace_text(dir, "task.txt", "TASK timestamp=1473.356601106",
		     "TASK timestamp=1473.3566011");
	expect_error(dir, UFR_E_TASK_LINE, "task.txt",
		     (int64_t)find_text(dir, "task.txt", "TASK timestamp=1473.3566011"));
	free(dir);

	/* an unknown line */
	dir = make_trace(sample_files);
	replace_text(dir, "task.txt", "FORK ", "EXEC ");
	expect_error(dir, UFR_E_TASK_LINE, "task.txt",
		     (int64_t)find_text(dir, "task.txt", "EXEC "));
	free(dir);

	/* a DLOP naming an unknown session */
	dir = make_trace(sample_files);
	replace_text(
		dir, "task.txt", "FORK ",
		"DLOP timestamp=1473.356601200 tid=7307 sid=0000000000000000 base=7f0000000000 "
		"libname=\"/lib/x.so\"\nFORK ");
	expect_error(dir, UFR_E_TASK_REF, "task.txt", (int64_t)find_text(dir, "task.txt", "DLOP "));
	free(dir);

	/* no SESS at all */
	dir = make_trace(minimal_files);
	replace_text(dir, "task.txt",
		     "SESS timestamp=999.999999000 pid=4242 sid=0123456789abcdef "
		     "exename=\"/opt/example/prog\"\n",
		     "");
	expect_error(dir, UFR_E_TASK_NO_SESSION, "task.txt", -1);
	free(dir);
}

/* ---- maps and symbols ---- */

static void test_map_missing_stack(void **state)
{
	char *dir = make_trace(sample_files);
	const char *map = "sid-546b5fdf25c1bdc4.map";

	(void)state;
	replace_text(dir, map,
		     "7fff2931f000-7fff29340000 rw-p 00000000 00:00 0                          "
		     "[stack]\n",
		     "");
	expect_error(dir, UFR_E_MAP_NO_STACK, map, (int64_t)file_size(dir, map));
	free(dir);
}

static void test_map_missing_file(void **state)
{
	char *dir = make_trace(sample_files);

	(void)state;
	remove_file(dir, "sid-546b5fdf25c1bdc4.map");
	expect_error(dir, UFR_E_FILE_MISSING, "sid-546b5fdf25c1bdc4.map", -1);
	free(dir);
}

static void test_map_bad_line(void **state)
{
	char *dir = make_trace(minimal_files);
	const char *map = "sid-0123456789abcdef.map";

	(void)state;
	replace_text(dir, map, "555555554000-555555559000", "555555554000_555555559000");
	expect_error(dir, UFR_E_MAP_LINE, map, 0);
	free(dir);
}

static void test_sym_rules(void **state)
{
	char *dir;

	(void)state;
	/* unsorted: compute's line moved above square's */
	dir = make_trace(sample_files);
	replace_text(dir, "sample.sym", "0000000000001209 T square\n0000000000001222 T compute\n",
		     "0000000000001222 T compute\n0000000000001209 T square\n");
	expect_error(dir, UFR_E_SYM_UNSORTED, "sample.sym",
		     (int64_t)find_text(dir, "sample.sym", "0000000000001209 T square"));
	free(dir);

	/* the newer "<addr> <size> <type> <name>" format */
	dir = make_trace(minimal_files);
	replace_text(dir, "prog.sym", "0000000000001260 t leaf",
		     "0000000000001260 00000010 t leaf");
	expect_error(dir, UFR_E_SYM_NEW_FORMAT, "prog.sym",
		     (int64_t)find_text(dir, "prog.sym", "0000000000001260 "));
	free(dir);

	/* no end marker after the last symbol */
	dir = make_trace(minimal_files);
	replace_text(dir, "prog.sym", "0000000000001300 ? __sym_end\n", "");
	expect_error(dir, UFR_E_SYM_NO_END, "prog.sym",
		     (int64_t)find_text(dir, "prog.sym", "00000000000012a0 T fib"));
	free(dir);

	/* a weak function typed 'W' (nm's letter, our writer's once): 0.13 drops the line */
	dir = make_trace(minimal_files);
	replace_text(dir, "prog.sym", "0000000000001270 t mid", "0000000000001270 W mid");
	expect_error(dir, UFR_E_SYM_TYPE, "prog.sym",
		     (int64_t)find_text(dir, "prog.sym", "0000000000001270 W mid"));
	free(dir);
	/* ... and 'w', uftrace's own letter for it, is read */
	dir = make_trace(minimal_files);
	replace_text(dir, "prog.sym", "0000000000001270 t mid", "0000000000001270 w mid");
	{
		struct rd_error err;

		assert_int_equal(verify(dir, &err, NULL), 0);
	}
	free(dir);

	/* garbage */
	dir = make_trace(minimal_files);
	replace_text(dir, "prog.sym", "0000000000001270 t mid", "0000000000001270");
	expect_error(dir, UFR_E_SYM_LINE, "prog.sym",
		     (int64_t)find_text(dir, "prog.sym", "0000000000001270"));
	free(dir);
}

static void test_sym_lookup(void **state)
{
	static const char text[] = "0000000000001000 T a\n"
				   "0000000000001010 ? __func_end\n"
				   "0000000000001020 t b\n"
				   "0000000000001030 T c\n"
				   "0000000000001040 ? __sym_end\n";
	struct ufr_symtab tab;
	struct rd_error err;

	(void)state;
	rd_error_clear(&err);
	assert_int_equal(ufr_sym_parse(text, sizeof(text) - 1, "x.sym", false, &tab, &err), 0);
	assert_int_equal(tab.nr, 3);
	assert_string_equal(ufr_sym_find(&tab, 0x1000)->name, "a");
	assert_string_equal(ufr_sym_find(&tab, 0x100f)->name, "a");
	assert_null(ufr_sym_find(&tab, 0x1010)); /* the gap closed by __func_end */
	assert_string_equal(ufr_sym_find(&tab, 0x1025)->name, "b");
	assert_string_equal(ufr_sym_find(&tab, 0x103f)->name, "c");
	assert_null(ufr_sym_find(&tab, 0x1040));
	assert_null(ufr_sym_find(&tab, 0xfff));
	ufr_sym_free(&tab);
}

/* weak functions: 'w' is a function of its own; a 'W' line is dropped as uftrace 0.13 drops
 * it (lenient), so its addresses fall to the symbol before, which is what uftrace shows */
static void test_sym_weak(void **state)
{
	static const char text[] = "0000000000001000 T a\n"
				   "0000000000001010 w b\n"
				   "0000000000001020 W c\n"
				   "0000000000001030 ? __sym_end\n";
	struct ufr_symtab tab;
	struct rd_error err;

	(void)state;
	rd_error_clear(&err);
	/* lenient: the table is built all the same, the error remembered */
	ufr_sym_parse(text, sizeof(text) - 1, "x.sym", true, &tab, &err);
	assert_string_equal(ufr_rule_name(err.rule), "sym-type");
	assert_int_equal(tab.nr, 2);
	assert_string_equal(ufr_sym_find(&tab, 0x1000)->name, "a");
	assert_string_equal(ufr_sym_find(&tab, 0x1010)->name, "b");
	assert_string_equal(ufr_sym_find(&tab, 0x1025)->name, "b");
	ufr_sym_free(&tab);
	rd_error_clear(&err);
	assert_int_equal(ufr_sym_parse(text, sizeof(text) - 1, "x.sym", false, &tab, &err), -1);
	assert_string_equal(ufr_rule_name(err.rule), "sym-type");
	assert_int_equal(err.offset, (int64_t)(strstr(text, "0000000000001020") - text));
}

/* ---- data files ---- */

static void test_dat_truncated(void **state)
{
	char *dir = make_trace(sample_files);
	char *p = path_of(dir, "7307.dat");

	(void)state;
	assert_int_equal(truncate(p, 150), 0);
	expect_error(dir, UFR_E_DAT_TRUNCATED, "7307.dat", 150 / 16 * 16);
	free(p);
	free(dir);
}

static void test_dat_record_magic(void **state)
{
	char *dir = make_trace(sample_files);
	struct raw_rec r;
	struct rd_error err;
	char *line, want[64];
	size_t idx = sizeof(sample_dat7309) / 16 / 2;

	(void)state;
	/* the e2e corruption: magic 5 -> 2 in the middle record of a file */
	r = get_rec(dir, "7309.dat", idx);
	r.word ^= 7u << 3;
	put_rec(dir, "7309.dat", idx, r);
	expect_error(dir, UFR_E_REC_MAGIC, "7309.dat", (int64_t)(idx * 16));
	verify(dir, &err, NULL);
	line = error_line(&err);
	snprintf(want, sizeof(want), "7309.dat: offset 0x%zx: record magic is 2, expected 5\n",
		 idx * 16);
	assert_non_null(strstr(line, want));
	assert_int_equal(strncmp(line, "flightrec: ", 11), 0);
	free(line);
	free(dir);
}

static void test_dat_time_backwards(void **state)
{
	char *dir = make_trace(sample_files);
	struct raw_rec prev, r;

	(void)state;
	prev = get_rec(dir, "7307.dat", 4);
	r = get_rec(dir, "7307.dat", 5);
	r.time = prev.time - 1;
	put_rec(dir, "7307.dat", 5, r);
	expect_error(dir, UFR_E_REC_TIME, "7307.dat", 5 * 16);
	free(dir);
}

static void test_dat_before_task(void **state)
{
	char *dir = make_trace(sample_files);
	struct raw_rec r = get_rec(dir, "7309.dat", 0);

	(void)state;
	/* 7309's TASK line is after the session start: a record between them is still early */
	r.time = task_time(sample_task, "TASK timestamp=1473.3566") - 1;
	assert_true(r.time > task_time(sample_task, "SESS"));
	put_rec(dir, "7309.dat", 0, r);
	expect_error(dir, UFR_E_REC_EARLY, "7309.dat", 0);
	free(dir);
}

static void test_dat_fork_time(void **state)
{
	char *dir = make_trace(sample_files);
	struct raw_rec r = get_rec(dir, "7310.dat", 0);
	struct rd_error err;

	(void)state;
	/* a forked child may write frames entered before its FORK line (uftrace -e does) */
	r.time = task_time(sample_task, "FORK") - 1000;
	put_rec(dir, "7310.dat", 0, r);
	assert_int_equal(verify(dir, &err, NULL), 0);
	/* but not before its parent's session */
	r.time = task_time(sample_task, "SESS") - 1;
	put_rec(dir, "7310.dat", 0, r);
	expect_error(dir, UFR_E_REC_EARLY, "7310.dat", 0);
	free(dir);
}

static void test_dat_depth(void **state)
{
	char *dir;
	struct raw_rec r;

	(void)state;
	/* an EXIT deeper than any open frame */
	dir = make_trace(sample_files);
	r = get_rec(dir, "7307.dat", 3); /* square's exit, depth 2 */
	assert_int_equal(rec_depth(r), 2);
	r.word = (r.word & ~(0x3ffull << 6)) | 3ull << 6;
	put_rec(dir, "7307.dat", 3, r);
	expect_error(dir, UFR_E_REC_DEPTH, "7307.dat", 3 * 16);
	free(dir);

	/* a shallower EXIT is a non-local one (longjmp): the ENTRY after it then skips a level */
	dir = make_trace(sample_files);
	r = get_rec(dir, "7307.dat", 3);
	r.word = (r.word & ~(0x3ffull << 6)) | 1ull << 6;
	put_rec(dir, "7307.dat", 3, r);
	expect_error(dir, UFR_E_REC_DEPTH, "7307.dat", 4 * 16);
	free(dir);

	/* an EXIT whose address is not the open ENTRY's */
	dir = make_trace(sample_files);
	r = get_rec(dir, "7307.dat", 3);
	r.word += 1ull << 16;
	put_rec(dir, "7307.dat", 3, r);
	expect_error(dir, UFR_E_REC_DEPTH, "7307.dat", 3 * 16);
	free(dir);

	/* a thread (not a forked child) may not start inside frames: 7309 at depth 1 */
	dir = make_trace(sample_files);
	for (size_t i = 0; i < sizeof(sample_dat7309) / 16; i++) {
		r = get_rec(dir, "7309.dat", i);
		r.word += 1ull << 6;
		put_rec(dir, "7309.dat", i, r);
	}
	expect_error(dir, UFR_E_REC_DEPTH, "7309.dat", 0);
	free(dir);

	/* the same shift in the forked child is fine: it starts inside its parent's frames */
	dir = make_trace(sample_files);
	for (size_t i = 0; i < sizeof(sample_dat7310) / 16; i++) {
		r = get_rec(dir, "7310.dat", i);
		r.word += 1ull << 6;
		put_rec(dir, "7310.dat", i, r);
	}
	{
		struct rd_error err;

		assert_int_equal(verify(dir, &err, NULL), 0);
	}
	free(dir);
}

/* run the per-thread rules over records given as {type, depth, addr}; returns the failing index */
static int check_seq(const unsigned (*seq)[3], size_t n, bool forked)
{
	unsigned char buf[64 * 16];
	struct ufr_check *ck = malloc(sizeof(*ck));
	struct ufr_check_cfg cfg = { .forked = forked };
	struct ufr_dat_iter it;
	struct ufr_rec rec;
	struct rd_error err;
	int bad = -1;

	assert_non_null(ck);
	assert_true(n <= 64);
	for (size_t i = 0; i < n; i++) {
		uint64_t t = 1000 + i, w = rec_word(seq[i][0], 0, 5, seq[i][1], seq[i][2]);

		memcpy(buf + i * 16, &t, 8);
		memcpy(buf + i * 16 + 8, &w, 8);
	}
	rd_error_clear(&err);
	ufr_check_init(ck, &cfg);
	ufr_dat_iter_mem(&it, buf, n * 16, "seq.dat", false, 0);
	while (ufr_dat_next(&it, &rec, &err) > 0) {
		if (ufr_check_rec(ck, &rec, "seq.dat", &err) < 0) {
			assert_int_equal(err.rule, UFR_E_REC_DEPTH);
			bad = (int)(rec.offset / 16);
			break;
		}
	}
	ufr_check_fini(ck);
	free(ck);
	return bad;
}

static void test_dat_longjmp(void **state)
{
	/* a -> b -> c -> d, longjmp back into b: uftrace writes b's EXIT with no EXIT of c, d */
	static const unsigned ok[][3] = {
		{ 0, 0, 0xa }, { 0, 1, 0xb }, { 0, 2, 0xc }, { 0, 3, 0xd },
		{ 1, 1, 0xb }, { 0, 1, 0xe }, { 1, 1, 0xe }, { 1, 0, 0xa },
	};
	/* ... or the next ENTRY lands below the abandoned frames */
	static const unsigned ok2[][3] = {
		{ 0, 0, 0xa }, { 0, 1, 0xb }, { 0, 2, 0xc }, { 0, 1, 0xe }, { 1, 1, 0xe },
	};
	/* uftrace 0.13 with PLT hooks: longjmp lands in _setjmp's caller, recorded as a second
	 * EXIT of _setjmp (0x5) at its depth, under the abandoned frames */
	static const unsigned setjmp2[][3] = {
		{ 0, 0, 0xa }, { 0, 1, 0xb }, { 0, 2, 0x5 }, { 1, 2, 0x5 },
		{ 0, 2, 0xc }, { 0, 3, 0xd }, { 0, 4, 0x6 }, { 1, 2, 0x5 },
		{ 0, 2, 0xe }, { 1, 2, 0xe }, { 1, 1, 0xb }, { 1, 0, 0xa },
	};
	/* a return from the innermost frame must name it */
	static const unsigned bad_addr[][3] = {
		{ 0, 0, 0xa },
		{ 0, 1, 0xb },
		{ 0, 2, 0xc },
		{ 1, 2, 0xb },
	};
	/* an ENTRY may not skip a level, an EXIT may not close what is not open */
	static const unsigned bad_skip[][3] = { { 0, 0, 0xa }, { 0, 2, 0xb } };
	static const unsigned bad_exit[][3] = { { 0, 0, 0xa }, { 1, 0, 0xa }, { 1, 0, 0xa } };
	/* a forked child may start with EXITs of its parent's frames */
	static const unsigned child[][3] = {
		{ 1, 2, 0xc }, { 1, 1, 0xb }, { 0, 1, 0xe }, { 1, 1, 0xe }, { 1, 0, 0xa }
	};

	(void)state;
	assert_int_equal(check_seq(ok, 8, false), -1);
	assert_int_equal(check_seq(ok2, 5, false), -1);
	assert_int_equal(check_seq(setjmp2, 12, false), -1);
	assert_int_equal(check_seq(bad_addr, 4, false), 3);
	assert_int_equal(check_seq(bad_skip, 2, false), 1);
	assert_int_equal(check_seq(bad_exit, 3, false), 2);
	assert_int_equal(check_seq(child, 5, true), -1);
	assert_int_equal(check_seq(child, 5, false), 0);
}

static void test_dat_lost(void **state)
{
	char *dir = make_trace(sample_files);
	struct ufr_counts c;
	struct rd_error err;

	(void)state;
	/* square's entry at depth 2 becomes "7 records lost": its exit then closes an unknown
	 * frame, and the time of 0 is no step backwards */
	put_rec(dir, "7307.dat", 2, (struct raw_rec){ 0, rec_word(2, 0, 5, 0, 7) });
	assert_int_equal(verify(dir, &err, &c), 0);
	assert_int_equal(c.lost_records, 1);
	assert_int_equal(c.lost, 7);

	/* without the LOST record, the orphan exit is an error */
	put_rec(dir, "7307.dat", 2, get_rec(dir, "7307.dat", 3));
	expect_error(dir, UFR_E_REC_DEPTH, "7307.dat", 2 * 16);
	free(dir);
}

static void test_dat_taskinfo_cross(void **state)
{
	char *dir;

	(void)state;
	/* a listed tid without a file is skipped, as uftrace does; no file at all is no data */
	dir = make_trace(sample_files);
	remove_file(dir, "7309.dat");
	{
		struct ufr_counts c;
		struct rd_error err;

		assert_int_equal(verify(dir, &err, &c), 0);
		assert_int_equal(c.records, (sizeof(sample_dat7307) + sizeof(sample_dat7310)) / 16);
	}
	remove_file(dir, "7307.dat");
	remove_file(dir, "7310.dat");
	expect_error(dir, UFR_E_DAT_NONE, base_name(dir), -1);
	free(dir);

	dir = make_trace(sample_files);
	write_file(dir, "7311.dat", sample_dat7309, sizeof(sample_dat7309), "", 0);
	expect_error(dir, UFR_E_DAT_UNLISTED, "7311.dat", -1);
	/* an empty unlisted one (a fork child that exec'ed before any call): uftrace ignores it
	 * and nothing is in it, so verify accepts it and counts the same records */
	write_file(dir, "7311.dat", NULL, 0, "", 0);
	{
		struct ufr_counts c;
		struct rd_error err;

		assert_int_equal(verify(dir, &err, &c), 0);
		assert_int_equal(c.records, (sizeof(sample_dat7307) + sizeof(sample_dat7309) +
					     sizeof(sample_dat7310)) / 16);
	}
	free(dir);

	dir = make_trace(sample_files);
	replace_text(dir, "task.txt", "TASK timestamp=1473.356601106 tid=7309 pid=7307\n", "");
	expect_error(dir, UFR_E_DAT_NO_TASK, "7309.dat", -1);
	free(dir);
}

static void test_dat_payload_flags(void **state)
{
	char *dir = make_trace(minimal_files);
	struct raw_rec r = get_rec(dir, "4242.dat", 1);

	(void)state;
	/* the payload bit on an ENTRY of a trace without the ARGUMENT feature */
	r.word |= 1u << 2;
	put_rec(dir, "4242.dat", 1, r);
	expect_error(dir, UFR_E_REC_TYPE, "4242.dat", 16);
	free(dir);
}

/* minimal sample plus ARG_SPEC: main(arg1) = retval, mid(string) */
static void test_dat_arguments(void **state)
{
	static const char spec[] = "taskinfo:tids=4242\n"
				   "argspec:lines=2\n"
				   "argspec:main@arg1;mid@arg1/s\n"
				   "retspec:main@retval\n";
	unsigned char dat[sizeof(minimal_dat4242) + 64];
	size_t n = 0;
	unsigned char hdr[40];
	struct ufr_counts c;
	struct rd_error err;
	char *dir = make_trace(minimal_files);

	(void)state;
	memcpy(hdr, minimal_info_hdr, 40);
	hdr[16] |= 0x18; /* ARGUMENT | RETVAL */
	hdr[25] |= 0x04; /* info_mask bit 10: ARG_SPEC */
	patch(dir, "info", 0, hdr, 40);
	replace_text(dir, "info", "taskinfo:tids=4242\n", spec);

	/* records 0 (main entry), 1 (mid entry), 7 (main exit) get payloads */
	for (size_t i = 0; i < sizeof(minimal_dat4242) / 16; i++) {
		struct raw_rec r;

		memcpy(&r, minimal_dat4242 + i * 16, 16);
		if (i == 0 || i == 1 || i == 7)
			r.word |= 1u << 2;
		memcpy(dat + n, &r, 16);
		n += 16;
		if (i == 0 || i == 7) {
			uint64_t v = 42;

			memcpy(dat + n, &v, 8); /* one 8-byte integer */
			n += 8;
		} else if (i == 1) {
			/* u16 length + "hello": 7 bytes, 8 with padding to 4 and then to 8 */
			memcpy(dat + n, "\x05\x00hello\x00", 8);
			n += 8;
		}
	}
	write_file(dir, "4242.dat", dat, n, "", 0);
	assert_int_equal(verify(dir, &err, &c), 0);
	assert_int_equal(c.records, 8);

	/* a payload on leaf, which no spec covers */
	{
		struct raw_rec r;
		size_t leaf = 16 + 8 + 16 + 8; /* after main+payload, mid+payload */

		memcpy(&r, dat + leaf, 16);
		r.word |= 1u << 2;
		memcpy(dat + leaf, &r, 16);
		write_file(dir, "4242.dat", dat, n, "", 0);
		expect_error(dir, UFR_E_REC_PAYLOAD, "4242.dat", (int64_t)leaf);
	}
	free(dir);
}

/* minimal sample where leaf's ENTRY carries PAYLOAD; FEAT_HI is or'ed into feat_mask byte 17 */
static char *auto_args_trace(const char *spec, unsigned char feat_hi, const void *payload,
			     size_t plen)
{
	unsigned char dat[sizeof(minimal_dat4242) + 64];
	unsigned char hdr[40];
	size_t n = 0;
	char *dir = make_trace(minimal_files);

	memcpy(hdr, minimal_info_hdr, 40);
	hdr[16] |= 0x08; /* ARGUMENT */
	hdr[17] |= feat_hi;
	hdr[25] |= 0x04; /* ARG_SPEC */
	patch(dir, "info", 0, hdr, 40);
	replace_text(dir, "info", "taskinfo:tids=4242\n", spec);
	for (size_t i = 0; i < sizeof(minimal_dat4242) / 16; i++) {
		struct raw_rec r;

		memcpy(&r, minimal_dat4242 + i * 16, 16);
		if (i == 2)
			r.word |= 1u << 2;
		memcpy(dat + n, &r, 16);
		n += 16;
		if (i == 2) {
			memcpy(dat + n, payload, plen);
			n += plen;
		}
	}
	write_file(dir, "4242.dat", dat, n, "", 0);
	return dir;
}

static void test_dat_auto_arguments(void **state)
{
	/* "-A leaf" without a spec: leaf's entry of the auto table (a string) */
	static const char spec[] = "taskinfo:tids=4242\n"
				   "argspec:lines=2\n"
				   "argspec:leaf\n"
				   "argauto:mid@arg1;leaf@arg1/s\n";
	static const char dbg[] = "# path name: /opt/example/prog\n"
				  "F: 1260 leaf\n"
				  "L: 3 prog.c\n"
				  "A: @arg1,arg2\n"
				  "R: @retval\n";
	static const unsigned char two_longs[16] = { 1, 0, 0, 0, 0, 0, 0, 0, 2 };
	struct rd_error err;
	char *dir;

	(void)state;
	dir = auto_args_trace(spec, 0,
			      "\x03\x00"
			      "abc"
			      "\x00\x00\x00",
			      8);
	assert_int_equal(verify(dir, &err, NULL), 0);
	free(dir);

	/* with DEBUG_INFO the .dbg line comes first: two integers */
	dir = auto_args_trace(spec, 0x04, two_longs, 16);
	write_file(dir, "prog.dbg", dbg, sizeof(dbg) - 1, "", 0);
	assert_int_equal(verify(dir, &err, NULL), 0);
	/* the same payload read with the table's layout ends up misaligned */
	remove_file(dir, "prog.dbg");
	assert_int_equal(verify(dir, &err, NULL), -1);
	free(dir);

	/* no auto request, no explicit spec for leaf: uftrace cannot read the payload */
	dir = auto_args_trace("taskinfo:tids=4242\nargspec:lines=1\nargauto:leaf@arg1/s\n", 0,
			      "\x03\x00"
			      "abc"
			      "\x00\x00\x00",
			      8);
	expect_error(dir, UFR_E_REC_PAYLOAD, "4242.dat", 32);
	free(dir);
}

/* ---- in-memory API ---- */

static void test_mem_event_payload(void **state)
{
	unsigned char buf[16 + 8 + 16];
	struct ufr_dat_iter it;
	struct ufr_rec rec;
	struct rd_error err;
	uint64_t t = 100, w;

	(void)state;
	/* an EVENT with 3 bytes of data: u16 length + 3 bytes, padded to 8 */
	w = rec_word(3, 1, 5, 0, 100001);
	memcpy(buf, &t, 8);
	memcpy(buf + 8, &w, 8);
	memcpy(buf + 16,
	       "\x03\x00"
	       "abc"
	       "\x00\x00\x00",
	       8);
	t = 200;
	w = rec_word(0, 0, 5, 0, 0x1234);
	memcpy(buf + 24, &t, 8);
	memcpy(buf + 32, &w, 8);
	rd_error_clear(&err);
	ufr_dat_iter_mem(&it, buf, sizeof(buf), "mem", false, 0);
	assert_int_equal(ufr_dat_next(&it, &rec, &err), 1);
	assert_int_equal(rec.type, UFR_EVENT);
	assert_int_equal(rec.addr, 100001);
	assert_int_equal(rec.payload_len, 8);
	assert_int_equal(ufr_dat_next(&it, &rec, &err), 1);
	assert_int_equal(rec.offset, 24);
	assert_int_equal(rec.addr, 0x1234);
	assert_int_equal(ufr_dat_next(&it, &rec, &err), 0);

	/* the same event cut short */
	ufr_dat_iter_mem(&it, buf, 20, "mem", false, 0);
	assert_int_equal(ufr_dat_next(&it, &rec, &err), -1);
	assert_int_equal(err.rule, UFR_E_REC_PAYLOAD);
	assert_int_equal(err.offset, 0);
}

/* read=/diff: events named and their values shown as uftrace dump shows them (a diff's
 * signed); any other id, or a payload of another size, is not */
static void test_event_format(void **state)
{
	unsigned char buf[16 + 32];
	uint64_t t = 100, w, v[3] = { 20944, 5364, 4896 };
	struct ufr_dat_iter it;
	struct ufr_rec rec;
	struct rd_error err;
	char out[200];
	static const struct {
		uint64_t id;
		unsigned n;
		const char *want;
	} cases[] = {
		{ 100001, 3, "read:proc/statm vmsize=20944KB vmrss=5364KB shared=4896KB" },
		{ 100003, 3, "diff:proc/statm vmsize=+20944KB vmrss=-4KB shared=+4896KB" },
		{ 100002, 2, "read:page-fault major=20944 minor=5364" },
		{ 100004, 2, "diff:page-fault major=+20944 minor=-4" },
		{ 100005, 2, "read:pmu-cycle cycles=20944 instructions=5364" },
		{ 100008, 2, "diff:pmu-cache refers=+20944 misses=-4" },
		{ 100009, 2, "read:pmu-branch branch=20944 misses=5364" },
		{ 100011, 2, NULL }, /* EVENT_ID_WATCH_CPU: not a read= event */
		{ 100002, 3, NULL }, /* page-fault with statm's size */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint16_t size = (uint16_t)(cases[i].n * 8);

		v[1] = strncmp(cases[i].want ? cases[i].want : "", "diff", 4) ? 5364 : (uint64_t)-4;
		w = rec_word(3, 1, 5, 0, cases[i].id);
		memset(buf, 0, sizeof(buf));
		memcpy(buf, &t, 8);
		memcpy(buf + 8, &w, 8);
		memcpy(buf + 16, &size, 2);
		memcpy(buf + 18, v, size);
		rd_error_clear(&err);
		ufr_dat_iter_mem(&it, buf, 16 + ((size + 2 + 7) & ~7u), "mem", false, 0);
		assert_int_equal(ufr_dat_next(&it, &rec, &err), 1);
		if (cases[i].want) {
			assert_int_equal(ufr_event_format(&rec, false, out, sizeof(out)), 0);
			assert_string_equal(out, cases[i].want);
		} else {
			assert_int_equal(ufr_event_format(&rec, false, out, sizeof(out)), -1);
			assert_string_equal(out, "");
		}
	}
}

static void test_rtstats(void **state)
{
	static const char good[] = "pid=4024\nppid=4023\nexe=/tmp/x\nformat=uftrace\nthreads=2\n"
				   "events=18\nbytes=288\nlost_full=1\nlost_nested=2\nlost_dead=3\n"
				   "lost_depth=4\nfuture_counter=9\n";
	static const char bad[] = "pid=4024\nthreads=two\n";
	struct rts_proc p;
	struct rd_error err;

	(void)state;
	rd_error_clear(&err);
	assert_int_equal(rts_parse(good, sizeof(good) - 1, "stats.4024", &p, &err), 0);
	assert_int_equal(p.pid, 4024);
	assert_int_equal(p.ppid, 4023);
	assert_string_equal(p.exe, "/tmp/x");
	assert_int_equal(p.threads, 2);
	assert_int_equal(p.events, 18);
	assert_int_equal(rts_lost(&p), 10);
	assert_int_equal(rts_parse(bad, sizeof(bad) - 1, "stats.4024", &p, &err), -1);
	assert_int_equal(err.rule, RTS_E_LINE);
	assert_int_equal(err.offset, 9);
}

/* ---- a small deterministic fuzzer ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* $UFR_FUZZ_SCALE multiplies the fuzzing rounds (default 1) for longer runs under ASAN */
static int fuzz_rounds(int base)
{
	const char *s = getenv("UFR_FUZZ_SCALE");
	int k = s ? atoi(s) : 1;

	return base * (k > 0 ? k : 1);
}

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* damage BUF (LEN bytes, CAP available) in place; returns the new length */
static size_t mutate(unsigned char *buf, size_t len, size_t cap)
{
	switch (next_rand() % 5) {
	case 0: /* flip bytes */
		for (int k = 1 + (int)(next_rand() % 8); k > 0 && len; k--)
			buf[next_rand() % len] ^= (unsigned char)(1 + next_rand() % 255);
		return len;
	case 1: /* truncate */
		return len ? next_rand() % len : 0;
	case 2: /* interesting bytes */
		if (len)
			buf[next_rand() % len] = "\0\n\xff:=,-.9 "[next_rand() % 10];
		return len;
	case 3: { /* duplicate a chunk */
		size_t from = len ? next_rand() % len : 0, n = 1 + next_rand() % 64;

		if (from + n > len)
			n = len - from;
		if (len + n > cap)
			return len;
		memmove(buf + from + n, buf + from, len - from);
		return len + n;
	}
	default: /* 64-bit extremes */
		if (len >= 8) {
			uint64_t v = next_rand() & 1 ? UINT64_MAX : 0;

			memcpy(buf + (next_rand() % (len - 7)), &v, 8);
		}
		return len;
	}
}

static size_t gold_bytes(const struct gold_file *f, unsigned char *buf)
{
	if (f->head_len)
		memcpy(buf, f->head, f->head_len);
	memcpy(buf + f->head_len, f->text, f->text_len);
	return f->head_len + f->text_len;
}

static void test_fuzz_parsers(void **state)
{
	enum { CAP = 16384 };
	int rounds = fuzz_rounds(4000);
	unsigned char *buf = malloc(CAP);
	struct ufr_check *ck = malloc(sizeof(*ck));

	(void)state;
	assert_non_null(buf);
	assert_non_null(ck);
	for (int round = 0; round < rounds; round++) {
		const struct gold_file *f = &sample_files[next_rand() % 8];
		struct rd_error err;
		size_t len = gold_bytes(f, buf);
		int ret = 0;

		for (int k = 1 + (int)(next_rand() % 4); k > 0; k--)
			len = mutate(buf, len, CAP);
		rd_error_clear(&err);
		if (!strcmp(f->name, "info")) {
			struct ufr_info info;

			ret = ufr_info_parse((char *)buf, len, "info", &info, &err);
			ufr_info_free(&info);
		} else if (!strcmp(f->name, "task.txt")) {
			struct ufr_tasks tasks;

			ret = ufr_tasks_parse((char *)buf, len, "task.txt", round & 1, &tasks,
					      &err);
			ufr_tasks_free(&tasks);
		} else if (strstr(f->name, ".map")) {
			struct ufr_map map;

			ret = ufr_map_parse((char *)buf, len, "x.map", round & 1, &map, &err);
			ufr_map_free(&map);
		} else if (strstr(f->name, ".sym") || strstr(f->name, ".opts")) {
			struct ufr_symtab tab;

			ret = ufr_sym_parse((char *)buf, len, "x.sym", round & 1, &tab, &err);
			if (ret == 0 || (round & 1))
				for (int k = 0; k < 16; k++)
					ufr_sym_find(&tab, next_rand() % 0x5000);
			ufr_sym_free(&tab);
		} else if (round & 8) {
			struct ufr_check_cfg cfg = { .forked = round & 1 };
			struct ufr_counts c;

			ret = ufr_check_buffer(buf, len, round & 2, round & 4 ? ~0ull : 0, &cfg, &c,
					       &err);
			assert_true(c.records <= len / 16);
		} else {
			/* keep checking past errors, as dump does */
			struct ufr_dat_iter it;
			struct ufr_rec rec;
			struct ufr_check_cfg cfg = { .forked = round & 1 };

			ufr_check_init(ck, &cfg);
			ufr_dat_iter_mem(&it, buf, len, "x.dat", round & 2, round & 4 ? ~0ull : 0);
			while ((ret = ufr_dat_next(&it, &rec, &err)) > 0)
				if (ufr_check_rec(ck, &rec, "x.dat", &err) < 0)
					rd_error_clear(&err);
			ufr_check_fini(ck);
		}
		assert_true(ret == 0 || ret == -1);
		if (ret < 0)
			assert_true(err.rule > 0 && err.rule < UFR_RULE_MAX);
	}
	free(ck);
	free(buf);
}

/* whole directories with one damaged file: open, verify, symbolize never crash */
static void test_fuzz_directories(void **state)
{
	enum { CAP = 16384 };
	int rounds = fuzz_rounds(300);
	unsigned char *buf = malloc(CAP);

	(void)state;
	assert_non_null(buf);
	for (int round = 0; round < rounds; round++) {
		char *dir = make_trace(sample_files);
		const struct gold_file *f = &sample_files[next_rand() % 8];
		size_t len = gold_bytes(f, buf);
		struct ufr_data *d;
		struct rd_error err;

		for (int k = 1 + (int)(next_rand() % 3); k > 0; k--)
			len = mutate(buf, len, CAP);
		write_file(dir, f->name, buf, len, "", 0);
		verify(dir, &err, NULL);
		rd_error_clear(&err);
		if (ufr_open(dir, UFR_OPEN_LENIENT, &d, &err) == 0) {
			for (size_t t = 0; t < d->nr_threads; t++)
				for (int k = 0; k < 8; k++)
					ufr_symbolize(d, &d->threads[t], next_rand(),
						      0x560e9b1f5000 + next_rand() % 0x1000);
			ufr_close(d);
		}
		free(dir);
	}
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_minimal),
		cmocka_unit_test(test_event_format),
		cmocka_unit_test(test_golden_sample),
		cmocka_unit_test(test_golden_copies_match),
		cmocka_unit_test(test_info_bad_magic),
		cmocka_unit_test(test_info_header_fields),
		cmocka_unit_test(test_info_short),
		cmocka_unit_test(test_info_taskinfo_count),
		cmocka_unit_test(test_info_sections),
		cmocka_unit_test(test_task_lines),
		cmocka_unit_test(test_map_missing_stack),
		cmocka_unit_test(test_map_missing_file),
		cmocka_unit_test(test_map_bad_line),
		cmocka_unit_test(test_sym_rules),
		cmocka_unit_test(test_sym_lookup),
		cmocka_unit_test(test_sym_weak),
		cmocka_unit_test(test_dat_truncated),
		cmocka_unit_test(test_dat_record_magic),
		cmocka_unit_test(test_dat_time_backwards),
		cmocka_unit_test(test_dat_before_task),
		cmocka_unit_test(test_dat_fork_time),
		cmocka_unit_test(test_dat_depth),
		cmocka_unit_test(test_dat_longjmp),
		cmocka_unit_test(test_dat_lost),
		cmocka_unit_test(test_dat_taskinfo_cross),
		cmocka_unit_test(test_dat_payload_flags),
		cmocka_unit_test(test_dat_arguments),
		cmocka_unit_test(test_dat_auto_arguments),
		cmocka_unit_test(test_mem_event_payload),
		cmocka_unit_test(test_rtstats),
		cmocka_unit_test(test_fuzz_parsers),
		cmocka_unit_test(test_fuzz_directories),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
