/*
 * test_ovni_encode: ovni-rt's event encoding, byte for byte against the examples of the
 * trace specification (shared/formats/ovni.md), through the library itself.
 *
 * build/lib/libovni.so.1 is dlopen'ed (FLIGHTREC_BUILD names another build directory), so
 * what is tested is exactly what programs get. Cases that write a trace run in a fork child
 * (a process initialises ovni once) and the parent reads the stream file back:
 *  - the helpers fill struct ovni_ev as the spec's 12-byte, 28-byte and jumbo examples;
 *  - every way of adding 2..16 payload bytes gives the spec's size nibble and bytes;
 *  - emitting the events of the spec's stream dump (with its clocks) writes that dump
 *    exactly, header included, in both layouts, without any ovni_flush;
 *  - with tiny ring chunks, every event is there, in order, with monotonic clocks, and under
 *    every policy (drain, block, help) the only OF[ / OF] pairs are libovni's: right after
 *    each event for which libovni 1.14 writes its full 2 MiB buffer, none where the ring
 *    switches chunks or the producer waits for or does the flusher's work;
 *  - ovni_clock_now() never goes backwards and stays within a millisecond of CLOCK_MONOTONIC.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ovni-rt/ovni.h"
#include "tests/unit/unit_util.h"

static struct {
	typeof(&ovni_proc_init) proc_init;
	typeof(&ovni_proc_fini) proc_fini;
	typeof(&ovni_thread_init) thread_init;
	typeof(&ovni_thread_free) thread_free;
	typeof(&ovni_add_cpu) add_cpu;
	typeof(&ovni_ev_set_mcv) set_mcv;
	typeof(&ovni_ev_set_clock) set_clock;
	typeof(&ovni_ev_get_clock) get_clock;
	typeof(&ovni_payload_add) payload_add;
	typeof(&ovni_payload_size) payload_size;
	typeof(&ovni_ev_size) ev_size;
	typeof(&ovni_ev_emit) emit;
	typeof(&ovni_ev_jumbo_emit) jumbo_emit;
	typeof(&ovni_clock_now) clock_now;
} o;

static char tmpdir[256];

static int setup(void **state)
{
	void *h = unit_open_libovni();

	(void)state;
	if (!h)
		return -1;
#define SYM(f, name) (o.f = (typeof(o.f))dlsym(h, name))
	if (!SYM(proc_init, "ovni_proc_init") || !SYM(proc_fini, "ovni_proc_fini") ||
	    !SYM(thread_init, "ovni_thread_init") || !SYM(thread_free, "ovni_thread_free") ||
	    !SYM(add_cpu, "ovni_add_cpu") || !SYM(set_mcv, "ovni_ev_set_mcv") ||
	    !SYM(set_clock, "ovni_ev_set_clock") || !SYM(get_clock, "ovni_ev_get_clock") ||
	    !SYM(payload_add, "ovni_payload_add") || !SYM(payload_size, "ovni_payload_size") ||
	    !SYM(ev_size, "ovni_ev_size") || !SYM(emit, "ovni_ev_emit") ||
	    !SYM(jumbo_emit, "ovni_ev_jumbo_emit") || !SYM(clock_now, "ovni_clock_now"))
		return -1;
#undef SYM
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_ovni_encode.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[300];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* --- the spec's examples ---------------------------------------------------------------- */

/* "a normal event without payload, a total of 12 bytes" */
static const uint8_t spec_ohe[] = { 0x00, 0x4f, 0x48, 0x65, 0x01, 0xc5,
				    0xcf, 0x1d, 0x96, 0xd0, 0x12, 0x00 };
/* "a normal event with 16 bytes of payload, a total of 28 bytes" */
static const uint8_t spec_ohx[] = { 0x0f, 0x4f, 0x48, 0x78, 0x58, 0xc1, 0xb0, 0xb5, 0x95, 0x43,
				    0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff,
				    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00 };
/* "a jumbo event of 30 bytes in total, with 14 bytes of jumbo data" */
static const uint8_t spec_jumbo[] = { 0x13, 0x56, 0x59, 0x63, 0xeb, 0xc1, 0x4b, 0x1a, 0x96, 0xd0,
				      0x12, 0x00, 0x0e, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
				      0x74, 0x65, 0x73, 0x74, 0x74, 0x79, 0x70, 0x65, 0x31, 0x00 };
/* the stream dump of "Design considerations": header and eight events */
static const uint8_t spec_stream[] = {
	0x6f, 0x76, 0x6e, 0x69, 0x01, 0x00, 0x00, 0x00, 0x0f, 0x4f, 0x48, 0x78, 0x08, 0xba, 0x2e,
	0x5c, 0xb5, 0xb0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x13, 0x56, 0x59, 0x63, 0x3c, 0xc2, 0x2e, 0x5c, 0xb5,
	0xb0, 0x00, 0x00, 0x0e, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x74, 0x65, 0x73, 0x74,
	0x74, 0x79, 0x70, 0x65, 0x31, 0x00, 0x07, 0x56, 0x54, 0x63, 0x43, 0xcc, 0x2e, 0x5c, 0xb5,
	0xb0, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03, 0x56, 0x54, 0x78,
	0x03, 0xcd, 0x2e, 0x5c, 0xb5, 0xb0, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03, 0x56, 0x54,
	0x70, 0x2b, 0x7d, 0x37, 0x5c, 0xb5, 0xb0, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03, 0x56,
	0x54, 0x72, 0xc3, 0x4d, 0x40, 0x5c, 0xb5, 0xb0, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03,
	0x56, 0x54, 0x65, 0x03, 0x36, 0x49, 0x5c, 0xb5, 0xb0, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
	0x00, 0x4f, 0x48, 0x65, 0xf5, 0x36, 0x49, 0x5c, 0xb5, 0xb0, 0x00, 0x00,
};

static const uint8_t testtype1[14] = { 0x01, 0x00, 0x00, 0x00, 't', 'e', 's',
				       't',  't',  'y',	 'p',  'e', '1', 0 };

static void build_ohx(struct ovni_ev *ev, uint64_t clock)
{
	int32_t cpu = 0, tid = -1;
	uint64_t tag = 0;
	memset(ev, 0, sizeof(*ev));
	o.set_mcv(ev, "OHx");
	o.set_clock(ev, clock);
	o.payload_add(ev, (uint8_t *)&cpu, sizeof(cpu));
	o.payload_add(ev, (uint8_t *)&tid, sizeof(tid));
	o.payload_add(ev, (uint8_t *)&tag, sizeof(tag));
}

static void test_struct_examples(void **state)
{
	struct ovni_ev ev;

	(void)state;
	memset(&ev, 0, sizeof(ev));
	o.set_mcv(&ev, "OHe");
	o.set_clock(&ev, 0x0012d0961dcfc501ull);
	assert_int_equal(o.ev_size(&ev), 12);
	assert_int_equal(o.payload_size(&ev), 0);
	assert_memory_equal(&ev, spec_ohe, 12);
	assert_true(o.get_clock(&ev) == 0x0012d0961dcfc501ull);

	build_ohx(&ev, 0x00114395b5b0c158ull);
	assert_int_equal(o.ev_size(&ev), 28);
	assert_int_equal(o.payload_size(&ev), 16);
	assert_memory_equal(&ev, spec_ohx, 28);

	/* a jumbo event as ovni_ev_jumbo_emit leaves it: the size as payload, the jumbo flag */
	memset(&ev, 0, sizeof(ev));
	o.set_mcv(&ev, "VYc");
	o.set_clock(&ev, 0x0012d0961a4bc1ebull);
	{
		uint32_t n = sizeof(testtype1);
		o.payload_add(&ev, (uint8_t *)&n, sizeof(n));
	}
	ev.header.flags |= OVNI_EV_JUMBO;
	assert_int_equal(o.payload_size(&ev), 4 + 14);
	assert_int_equal(o.ev_size(&ev), 30);
	assert_memory_equal(&ev, spec_jumbo, 16);
}

/* every composition of 2..16 bytes into adds of at least 2 bytes */
static void compose(int left, int *parts, int n, int *count)
{
	if (left == 0) {
		struct ovni_ev ev;
		uint8_t want[16], src[16];
		int off = 0;

		memset(&ev, 0, sizeof(ev));
		for (int i = 0; i < n; i++) {
			for (int k = 0; k < parts[i]; k++)
				src[k] = want[off + k] = (uint8_t)(0x40 + off + k + n);
			o.payload_add(&ev, src, parts[i]);
			off += parts[i];
			assert_int_equal(o.payload_size(&ev), off);
			assert_int_equal(ev.header.flags, off - 1);
			assert_int_equal(o.ev_size(&ev), 12 + off);
		}
		if (off)
			assert_memory_equal(ev.payload.u8, want, (size_t)off);
		(*count)++;
		return;
	}
	for (int p = 2; p <= left; p++) {
		parts[n] = p;
		compose(left - p, parts, n + 1, count);
	}
}

static void test_payload_sizes(void **state)
{
	int parts[8], count = 0;

	(void)state;
	for (int total = 2; total <= 16; total++)
		compose(total, parts, 0, &count);
	assert_true(count > 500);
}

/* --- written streams -------------------------------------------------------------------- */

/* Run fn in a fork child with the environment set; the child must exit 0. */
static const char *child_policy; /* FLIGHTREC_POLICY for the next child, NULL: default */

static void in_child(void (*fn)(void), const char *layout, const char *dir, const char *bufsize)
{
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("OVNI_TRACEDIR", dir, 1);
		setenv("FLIGHTREC_OVNI_FORMAT", layout, 1);
		if (bufsize)
			setenv("FLIGHTREC_BUFSIZE", bufsize, 1);
		else
			unsetenv("FLIGHTREC_BUFSIZE");
		if (child_policy)
			setenv("FLIGHTREC_POLICY", child_policy, 1);
		else
			unsetenv("FLIGHTREC_POLICY");
		fn();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static uint8_t *read_all(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	uint8_t *buf;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	assert_non_null(buf);
	assert_int_equal(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

#define TID 4242
#define PID 777

static void emit_n(const char *mcv, uint64_t clock, const uint8_t *payload, int n)
{
	struct ovni_ev ev;
	memset(&ev, 0, sizeof(ev));
	o.set_mcv(&ev, mcv);
	o.set_clock(&ev, clock);
	for (int i = 0; i < n; i += 4)
		o.payload_add(&ev, payload + i, 4);
	o.emit(&ev);
}

static void write_spec_stream(void)
{
	static const uint8_t one[8] = { 1, 0, 0, 0, 1, 0, 0, 0 };
	struct ovni_ev ev;

	o.proc_init(1, "unit.test", PID);
	o.thread_init(TID);
	o.add_cpu(0, 0);
	build_ohx(&ev, 0x0000b0b55c2eba08ull);
	o.emit(&ev);
	memset(&ev, 0, sizeof(ev));
	o.set_mcv(&ev, "VYc");
	o.set_clock(&ev, 0x0000b0b55c2ec23cull);
	o.jumbo_emit(&ev, testtype1, sizeof(testtype1));
	emit_n("VTc", 0x0000b0b55c2ecc43ull, one, 8);
	emit_n("VTx", 0x0000b0b55c2ecd03ull, one, 4);
	emit_n("VTp", 0x0000b0b55c377d2bull, one, 4);
	emit_n("VTr", 0x0000b0b55c404dc3ull, one, 4);
	emit_n("VTe", 0x0000b0b55c493603ull, one, 4);
	emit_n("OHe", 0x0000b0b55c4936f5ull, NULL, 0);
	o.thread_free(); /* no ovni_flush: the events must be there anyway */
	o.proc_fini();
}

static void check_spec_stream(const char *layout)
{
	char dir[400], path[600];
	size_t len;
	uint8_t *buf;

	snprintf(dir, sizeof(dir), "%s/spec-%s", tmpdir, layout);
	in_child(write_spec_stream, layout, dir, NULL);
	if (!strcmp(layout, "v3"))
		snprintf(path, sizeof(path), "%s/loom.unit.test/proc.%d/thread.%d/stream.obs", dir,
			 PID, TID);
	else
		snprintf(path, sizeof(path), "%s/loom.unit.test/proc.%d/thread.%d.obs", dir, PID,
			 TID);
	buf = read_all(path, &len);
	assert_int_equal(len, sizeof(spec_stream));
	assert_memory_equal(buf, spec_stream, sizeof(spec_stream));
	free(buf);
}

static void test_spec_stream_v2(void **state)
{
	(void)state;
	check_spec_stream("v2");
}

static void test_spec_stream_v3(void **state)
{
	(void)state;
	check_spec_stream("v3");
}

/* 4 KiB chunks hold 4032 bytes: 28-byte events fill one every 144 events, libovni's 2 MiB
 * buffer about every 74900: two pairs */
#define FLUSH_EVENTS 160000

static void write_many(void)
{
	struct ovni_ev ev;

	o.proc_init(1, "unit.test", PID);
	o.thread_init(TID);
	o.add_cpu(0, 0);
	for (uint64_t i = 0; i < FLUSH_EVENTS; i++) {
		build_ohx(&ev, o.clock_now());
		ev.header.value = 'U'; /* any MCV will do here */
		memcpy(&ev.payload.u8[8], &i, sizeof(i));
		o.emit(&ev);
	}
	o.thread_free();
}

static void check_flush_markers(const char *policy)
{
	char dir[400], path[600];
	size_t len, off = 8;
	uint64_t next = 0, last_clock = 0, pairs = 0;
	uint64_t ob = 0; /* bytes in libovni's buffer */
	int want_pair = 0;
	uint8_t *buf;

	snprintf(dir, sizeof(dir), "%s/many-%s", tmpdir, policy);
	child_policy = policy;
	in_child(write_many, "v3", dir, "4K");
	child_policy = NULL;
	snprintf(path, sizeof(path), "%s/loom.unit.test/proc.%d/thread.%d/stream.obs", dir, PID,
		 TID);
	buf = read_all(path, &len);
	assert_memory_equal(buf, "ovni\x01\0\0\0", 8);
	while (off < len) {
		uint64_t clock, seq;
		assert_true(len - off >= 12);
		memcpy(&clock, buf + off + 4, 8);
		assert_true(clock >= last_clock);
		last_clock = clock;
		if (buf[off] == 0 && !memcmp(buf + off + 1, "OF[", 3)) {
			/* the pair follows the event libovni wrote its buffer for, complete */
			assert_true(want_pair);
			want_pair = 0;
			assert_true(len - off >= 24);
			assert_memory_equal(buf + off + 13, "OF]", 3);
			ob += 24;
			pairs++;
			off += 12;
			memcpy(&clock, buf + off + 4, 8);
			assert_true(clock >= last_clock);
			last_clock = clock;
			off += 12;
			continue;
		}
		assert_false(want_pair); /* libovni's pair is missing */
		assert_int_equal(buf[off], 0x0f);
		assert_memory_equal(buf + off + 1, "OHU", 3);
		memcpy(&seq, buf + off + 20, 8);
		assert_true(seq == next); /* every event, in order */
		next++;
		off += 28;
		/* libovni 1.14's ovni_ev_add: a buffer that would be full (or exactly full) is
		 * written first, and the event is followed by an OF[ / OF] pair */
		if (ob + 28 >= OVNI_MAX_EV_BUF) {
			ob = 0;
			want_pair = 1;
		}
		ob += 28;
	}
	assert_int_equal(off, len);
	assert_true(next == FLUSH_EVENTS);
	assert_false(want_pair);
	assert_int_equal(pairs, 2);
	free(buf);
}

static void test_flush_markers_drain(void **state)
{
	(void)state;
	check_flush_markers("drain");
}

static void test_flush_markers_block(void **state)
{
	(void)state;
	check_flush_markers("block");
}

static void test_flush_markers_help(void **state)
{
	(void)state;
	check_flush_markers("help");
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void clock_child(void)
{
	uint64_t prev = 0, worst = 0, end;

	o.proc_init(1, "unit.test", PID); /* calibrates and starts the TSC clock */
	end = mono_ns() + 300000000ull;	  /* through several resyncs */
	while (mono_ns() < end) {
		uint64_t a = mono_ns(), c = o.clock_now(), b = mono_ns();
		uint64_t d = c < a ? a - c : c > b ? c - b : 0;
		if (c < prev)
			_exit(10); /* backwards */
		prev = c;
		if (d > worst && b - a < 20000)
			worst = d;
	}
	if (worst > 1000000)
		_exit(11); /* more than 1 ms away from CLOCK_MONOTONIC */
}

static void test_clock(void **state)
{
	char dir[400];
	(void)state;
	snprintf(dir, sizeof(dir), "%s/clock", tmpdir);
	in_child(clock_child, "v3", dir, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_struct_examples),
		cmocka_unit_test(test_payload_sizes),
		cmocka_unit_test(test_spec_stream_v2),
		cmocka_unit_test(test_spec_stream_v3),
		cmocka_unit_test(test_flush_markers_drain),
		cmocka_unit_test(test_flush_markers_block),
		cmocka_unit_test(test_flush_markers_help),
		cmocka_unit_test(test_clock),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
