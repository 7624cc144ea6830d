/*
 * test_conv: the function-event stream of `flightrec convert` (formats/common/conv.c) and its
 * three writers: what reaches a writer is balanced and ordered whatever the reader feeds
 * (exits with no entry, frames left open, time going backwards, depth beyond the cap); the
 * chrome and speedscope output parse back to the same events; folded weights are self times;
 * named tracks, instants and counters reach chrome and are counted as left out by the writers
 * that hold frames only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/common/conv.h"

/* a writer that logs what it is given: "T1 >a@5 <@7 " */
struct logw {
	char buf[1 << 18];
	size_t len;
	int depth, max_depth;
	int quiet; /* count only */
};

static struct logw logw_state;

static void *log_open(FILE *out, const char *title)
{
	(void)out;
	(void)title;
	memset(&logw_state, 0, sizeof(logw_state));
	return &logw_state;
}

static void log_put(struct logw *l, const char *fmt, ...)
{
	va_list ap;

	if (l->quiet)
		return;
	va_start(ap, fmt);
	l->len += (size_t)vsnprintf(l->buf + l->len, sizeof(l->buf) - l->len, fmt, ap);
	va_end(ap);
	assert_true(l->len < sizeof(l->buf)); /* the log is big enough for every test */
}

static int log_thread(void *w, int pid, int tid, const char *pname, const char *tname)
{
	(void)pname;
	(void)tname;
	log_put(w, "T%d.%d ", pid, tid);
	return 0;
}

static int log_enter(void *w, uint64_t ns, const char *name)
{
	struct logw *l = w;

	if (++l->depth > l->max_depth)
		l->max_depth = l->depth;
	log_put(l, ">%s@%llu ", name, (unsigned long long)ns);
	return 0;
}

static int log_exit(void *w, uint64_t ns)
{
	struct logw *l = w;

	assert_true(l->depth > 0); /* the stream never sends an unmatched exit */
	l->depth--;
	log_put(l, "<@%llu ", (unsigned long long)ns);
	return 0;
}

static int log_finish(void *w)
{
	(void)w;
	return 0;
}

static const struct conv_writer logwriter = {
	"log", "test", log_open, log_thread, log_enter, log_exit, log_finish, NULL, NULL, 0, NULL,
	NULL, NULL,
};

static void test_stream_repairs(void **state)
{
	struct conv_stream cs;

	(void)state;
	assert_int_equal(conv_open(&cs, &logwriter, NULL, "t"), 0);
	assert_int_equal(conv_thread(&cs, 1, 2), 0);
	assert_int_equal(conv_exit(&cs, 3), 0);       /* no entry: left out */
	assert_int_equal(conv_enter(&cs, 5, "a"), 0);
	assert_int_equal(conv_enter(&cs, 4, "b"), 0); /* earlier than a: clamped to 5 */
	assert_int_equal(conv_exit(&cs, 9), 0);
	assert_int_equal(conv_enter(&cs, 10, "c"), 0); /* left open: ends at 10 */
	assert_int_equal(conv_thread(&cs, 1, 3), 0);
	assert_int_equal(conv_enter(&cs, 1, "d"), 0);   /* a new thread's time starts over */
	assert_int_equal(conv_finish(&cs), 0);          /* d ends at 1 */
	assert_string_equal(logw_state.buf,
			    "T1.2 >a@5 >b@5 <@9 >c@10 <@10 <@10 T1.3 >d@1 <@1 ");
	assert_int_equal(cs.dropped_exits, 1);
	assert_int_equal(cs.closed_at_end, 3);
	assert_int_equal(logw_state.depth, 0);
}

static void test_stream_depth_cap(void **state)
{
	struct conv_stream cs;

	(void)state;
	conv_open(&cs, &logwriter, NULL, "t");
	logw_state.quiet = 1;
	conv_thread(&cs, 1, 1);
	for (int i = 0; i < CONV_MAX_DEPTH + 10; i++)
		assert_int_equal(conv_enter(&cs, (uint64_t)i, "f"), 0);
	for (int i = 0; i < CONV_MAX_DEPTH + 10; i++)
		assert_int_equal(conv_exit(&cs, 100000), 0);
	assert_int_equal(logw_state.max_depth, CONV_MAX_DEPTH);
	assert_int_equal(logw_state.depth, 0);
	assert_int_equal(cs.dropped_exits, 0); /* the frames beyond the cap lose both ends */
	conv_finish(&cs);
}

/* feed: thread 7.8: main [0..100] { f [10..30] { g [12..20] } f [40..50] }, and one name
 * that needs escaping */
static char *convert(const struct conv_writer *wr)
{
	struct conv_stream cs;
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(out);
	assert_int_equal(conv_open(&cs, wr, out, "t\"q"), 0);
	conv_thread(&cs, 7, 8);
	conv_enter(&cs, 0, "main");
	conv_enter(&cs, 10, "f");
	conv_enter(&cs, 12, "g");
	conv_exit(&cs, 20);
	conv_exit(&cs, 30);
	conv_enter(&cs, 40, "f");
	conv_exit(&cs, 50);
	conv_enter(&cs, 60, "op\"<\\>");
	conv_exit(&cs, 61);
	conv_exit(&cs, 100);
	assert_int_equal(conv_finish(&cs), 0);
	fclose(out);
	return buf;
}

static void test_folded(void **state)
{
	char *s = convert(&conv_folded);

	(void)state;
	/* main: 100 - 20 - 10 - 1 = 69; f: 20 + 10 - 8 = 22; g: 8; op: 1 */
	assert_string_equal(s, "main 69\nmain;f 22\nmain;f;g 8\nmain;op\"<\\> 1\n");
	free(s);
}

static void test_chrome(void **state)
{
	char *s = convert(&conv_chrome);

	(void)state;
	assert_non_null(strstr(s, "{\"name\":\"main\",\"ph\":\"B\",\"ts\":0.000,\"pid\":7,"
				  "\"tid\":8}"));
	/* each E repeats its B's name (speedscope's import ignores one that does not) */
	assert_non_null(strstr(s, "{\"name\":\"g\",\"ph\":\"E\",\"ts\":0.020,\"pid\":7,"
				  "\"tid\":8}"));
	assert_non_null(strstr(s, "{\"name\":\"f\",\"ph\":\"E\",\"ts\":0.030,"));
	assert_non_null(strstr(s, "{\"name\":\"f\",\"ph\":\"E\",\"ts\":0.050,"));
	assert_non_null(strstr(s, "{\"name\":\"op\\\"<\\\\>\",\"ph\":\"E\",\"ts\":0.061,"));
	assert_non_null(strstr(s, "{\"name\":\"main\",\"ph\":\"E\",\"ts\":0.100,\"pid\":7,"
				  "\"tid\":8}"));
	assert_non_null(strstr(s, "\"name\":\"op\\\"<\\\\>\""));
	assert_non_null(strstr(s, "\"source\":\"t\\\"q\""));
	free(s);
}

static void test_speedscope(void **state)
{
	char *s = convert(&conv_speedscope);

	(void)state;
	/* f is one frame for both calls */
	assert_non_null(strstr(s, "{\"type\":\"O\",\"at\":40,\"frame\":1}"));
	assert_non_null(strstr(s, "{\"type\":\"C\",\"at\":50,\"frame\":1}"));
	assert_non_null(strstr(s, "\"startValue\":0,\"endValue\":100"));
	assert_non_null(strstr(s, "\"frames\":[\n{\"name\":\"main\"},\n{\"name\":\"f\"},\n"
				  "{\"name\":\"g\"},\n{\"name\":\"op\\\"<\\\\>\"}\n]"));
	free(s);
}

/* a named track with frames, an instant and counter samples, as the ovni and Cacheray
 * converters feed them */
static char *convert_points(const struct conv_writer *wr, struct conv_stream *cs)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(out);
	assert_int_equal(conv_open(cs, wr, out, "p"), 0);
	assert_int_equal(conv_track(cs, 5, 6, "proc \"5\"", "thread 6"), 0);
	assert_int_equal(conv_enter(cs, 1000, "Running"), 0);
	assert_int_equal(conv_instant(cs, 1500, "OAs", "\"cpu\":2"), 0);
	assert_int_equal(conv_counter(cs, 900, "Phase (tid 6)", "Phase", 3), 0); /* clamped */
	assert_int_equal(conv_instant(cs, 2000, "OHC", NULL), 0);
	assert_int_equal(conv_exit(cs, 2500), 0);
	assert_int_equal(conv_finish(cs), 0);
	fclose(out);
	return buf;
}

static void test_points_chrome(void **state)
{
	struct conv_stream cs;
	char *s = convert_points(&conv_chrome, &cs);

	(void)state;
	assert_true(conv_holds_points(&conv_chrome));
	assert_int_equal(cs.left_out, 0);
	assert_non_null(strstr(s, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":5,\"tid\":6,"
				  "\"args\":{\"name\":\"proc \\\"5\\\"\"}}"));
	assert_non_null(strstr(s, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":5,\"tid\":6,"
				  "\"args\":{\"name\":\"thread 6\"}}"));
	assert_non_null(strstr(s, "{\"name\":\"OAs\",\"ph\":\"i\",\"s\":\"t\",\"ts\":1.500,"
				  "\"pid\":5,\"tid\":6,\"args\":{\"cpu\":2}}"));
	assert_non_null(strstr(s, "{\"name\":\"Phase (tid 6)\",\"ph\":\"C\",\"ts\":1.500,"
				  "\"pid\":5,\"tid\":6,\"args\":{\"Phase\":3}}"));
	assert_non_null(strstr(s, "{\"name\":\"OHC\",\"ph\":\"i\",\"s\":\"t\",\"ts\":2.000,"
				  "\"pid\":5,\"tid\":6}"));
	assert_non_null(strstr(s, "{\"name\":\"Running\",\"ph\":\"E\",\"ts\":2.500,"));
	free(s);
}

static void test_points_frames_only(void **state)
{
	struct conv_stream cs;
	char *s = convert_points(&conv_speedscope, &cs);

	(void)state;
	assert_false(conv_holds_points(&conv_speedscope));
	assert_false(conv_holds_points(&conv_folded));
	assert_int_equal(cs.left_out, 3); /* two instants and a counter sample */
	assert_non_null(strstr(s, "\"name\":\"thread 6\",\"unit\""));
	assert_non_null(strstr(s, "{\"type\":\"O\",\"at\":1000,\"frame\":0},\n"
				  "{\"type\":\"C\",\"at\":2500,\"frame\":0}"));
	free(s);
	s = convert_points(&conv_folded, &cs);
	assert_string_equal(s, "Running 1500\n");
	assert_int_equal(cs.left_out, 3);
	free(s);
}

/* a call with its values (uftrace's -A/-R): in the B's and E's args where the writer has a
 * place for them, the plain frames elsewhere; an exit with no frame stays dropped */
static char *convert_args(const struct conv_writer *wr, struct conv_stream *cs)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(out);
	assert_int_equal(conv_open(cs, wr, out, "a"), 0);
	assert_int_equal(conv_thread(cs, 3, 4), 0);
	assert_int_equal(conv_enter_args(cs, 1000, "f", "\"arguments\":\"(7, \\\"s\\\")\""), 0);
	assert_int_equal(conv_enter_args(cs, 1100, "g", NULL), 0);
	assert_int_equal(conv_exit_args(cs, 1200, NULL), 0);
	assert_int_equal(conv_exit_args(cs, 1300, "\"retval\":\"-35\""), 0);
	assert_int_equal(conv_exit_args(cs, 1400, "\"retval\":\"1\""), 0);
	assert_int_equal(conv_finish(cs), 0);
	fclose(out);
	return buf;
}

static void test_args(void **state)
{
	struct conv_stream cs;
	char *s = convert_args(&conv_chrome, &cs);

	(void)state;
	assert_non_null(strstr(s, "{\"name\":\"f\",\"ph\":\"B\",\"ts\":1.000,\"pid\":3,\"tid\":4,"
				  "\"args\":{\"arguments\":\"(7, \\\"s\\\")\"}}"));
	assert_non_null(strstr(s, "{\"name\":\"g\",\"ph\":\"B\",\"ts\":1.100,\"pid\":3,"
				  "\"tid\":4}"));
	assert_non_null(strstr(s, "{\"name\":\"g\",\"ph\":\"E\",\"ts\":1.200,\"pid\":3,"
				  "\"tid\":4}"));
	assert_non_null(strstr(s, "{\"name\":\"f\",\"ph\":\"E\",\"ts\":1.300,\"pid\":3,\"tid\":4,"
				  "\"args\":{\"retval\":\"-35\"}}"));
	assert_null(strstr(s, "\"retval\":\"1\""));
	assert_int_equal(cs.dropped_exits, 1);
	free(s);
	s = convert_args(&conv_folded, &cs);
	assert_string_equal(s, "f 200\nf;g 100\n");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_repairs), cmocka_unit_test(test_stream_depth_cap),
		cmocka_unit_test(test_folded),	       cmocka_unit_test(test_chrome),
		cmocka_unit_test(test_speedscope),     cmocka_unit_test(test_points_chrome),
		cmocka_unit_test(test_points_frames_only),
		cmocka_unit_test(test_args),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
