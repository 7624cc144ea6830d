/*
 * test_xray_repair: the sink's repair of a thread stream with gaps
 * (formats/xray/xray_repair.h, which the sink and salvage share). Exits whose entry is not before them in the stream are left out;
 * the next timestamped record's delta grows by theirs, so every kept record keeps its time; a
 * sum that does not fit in 31 bits becomes a TSCWrap; NewCPUId and TSCWrap reset the carry;
 * custom events carry a (signed) delta too and keep their payload.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/mman.h>
#include <unistd.h>

#include "formats/xray/fdr_encode.h"
#include "formats/xray/xray_repair.h"

struct stream {
	uint8_t b[512];
	size_t n;
};

static void s_fn(struct stream *s, unsigned type, uint32_t fid, uint32_t delta)
{
	fdr_put_fn(s->b + s->n, type, fid, delta);
	s->n += FDR_FN_SIZE;
}

static void s_cpu(struct stream *s, uint16_t cpu, uint64_t tsc)
{
	fdr_put_new_cpu(s->b + s->n, cpu, tsc);
	s->n += FDR_META_SIZE;
}

static void s_custom(struct stream *s, const char *text, int32_t delta)
{
	int32_t len = (int32_t)strlen(text);
	fdr_put_custom_v5(s->b + s->n, len, delta);
	memcpy(s->b + s->n + FDR_META_SIZE, text, (size_t)len);
	s->n += FDR_META_SIZE + (size_t)len;
}

/* repair `in` into a memfd; the output bytes in out; the exits left out (both passes agree) */
static uint64_t repair(const struct stream *in, struct stream *out)
{
	int fd = memfd_create("repair", 0);
	uint64_t left_counting = 0, left_writing = 0;
	int64_t counted = xr_repair(in->b, in->n, -1, &left_counting), written;

	assert_true(fd >= 0);
	written = xr_repair(in->b, in->n, fd, &left_writing);
	assert_int_equal(counted, written);
	assert_int_equal(left_counting, left_writing);
	assert_true(written >= 0 && (size_t)written <= sizeof(out->b));
	out->n = (size_t)written;
	assert_int_equal(pread(fd, out->b, out->n, 0), (ssize_t)out->n);
	close(fd);
	return left_writing;
}

static void test_balanced_unchanged(void **state)
{
	struct stream in = {.n = 0}, out;

	(void)state;
	s_cpu(&in, 1, 1000);
	s_fn(&in, FDR_ENTER, 1, 0);
	s_fn(&in, FDR_ENTER, 2, 5);
	s_fn(&in, FDR_TAIL_EXIT, 2, 1);
	s_custom(&in, "hi", 3);
	s_fn(&in, FDR_EXIT, 1, 9);
	assert_int_equal(repair(&in, &out), 0);
	assert_int_equal(out.n, in.n);
	assert_memory_equal(out.b, in.b, in.n);
}

static void test_orphan_exits_dropped(void **state)
{
	struct stream in = {.n = 0}, want = {.n = 0}, out;

	(void)state;
	/* a chunk after a gap: two exits of frames entered in the lost chunk */
	s_cpu(&in, 1, 1000);
	s_fn(&in, FDR_EXIT, 7, 5);
	s_fn(&in, FDR_TAIL_EXIT, 8, 7);
	s_fn(&in, FDR_ENTER, 1, 3);
	s_fn(&in, FDR_EXIT, 1, 2);
	s_fn(&in, FDR_EXIT, 9, 4); /* another orphan, before a custom event */
	s_custom(&in, "event", 6);
	s_cpu(&in, 0, 5000);
	s_fn(&in, FDR_EXIT, 9, 1); /* an orphan right before a new time base: nothing carried */
	s_cpu(&in, 1, 6000);
	s_fn(&in, FDR_ENTER, 2, 2);

	s_cpu(&want, 1, 1000);
	s_fn(&want, FDR_ENTER, 1, 15);
	s_fn(&want, FDR_EXIT, 1, 2);
	s_custom(&want, "event", 10);
	s_cpu(&want, 0, 5000);
	s_cpu(&want, 1, 6000);
	s_fn(&want, FDR_ENTER, 2, 2);
	assert_int_equal(repair(&in, &out), 4); /* the four orphan exits */
	assert_int_equal(out.n, want.n);
	assert_memory_equal(out.b, want.b, want.n);
}

static void test_carry_overflow_wraps(void **state)
{
	struct stream in = {.n = 0}, want = {.n = 0}, out;
	uint8_t wrap[FDR_META_SIZE];

	(void)state;
	s_cpu(&in, 1, 1000);
	s_fn(&in, FDR_EXIT, 7, 0x7fff0000);
	s_fn(&in, FDR_ENTER, 1, 0x00100000);

	s_cpu(&want, 1, 1000);
	fdr_put_tsc_wrap(wrap, 1000ull + 0x7fff0000 + 0x00100000);
	memcpy(want.b + want.n, wrap, sizeof(wrap));
	want.n += sizeof(wrap);
	s_fn(&want, FDR_ENTER, 1, 0);
	repair(&in, &out);
	assert_int_equal(out.n, want.n);
	assert_memory_equal(out.b, want.b, want.n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_balanced_unchanged),
		cmocka_unit_test(test_orphan_exits_dropped),
		cmocka_unit_test(test_carry_overflow_wraps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
