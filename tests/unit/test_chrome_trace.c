/*
 * test_chrome_trace: the Chrome trace event reader (formats/chrome/read_chrome.c) on small files
 * written here: what it counts in a good trace, and the rule and event index it names for
 * each broken one (no "ph", no numeric ts, a pid or tid no int64 holds, an E without its B, a
 * negative X duration, not JSON at all).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/chrome/read_chrome.h"

static char path[] = "/tmp/flightrec-test-chrome-XXXXXX";

/* PATH now holds TEXT */
static void put(const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static int walk(const char *text, struct ctr_counts *c, struct rd_error *err)
{
	put(text);
	memset(c, 0, sizeof(*c));
	rd_error_clear(err);
	return ctr_walk(path, c, NULL, NULL, err);
}

/* TEXT is refused under RULE with a message holding WANT */
static void refused(const char *text, int rule, const char *want)
{
	struct ctr_counts c;
	struct rd_error err;

	assert_int_equal(walk(text, &c, &err), -1);
	assert_int_equal(err.rule, rule);
	assert_string_equal(err.file, path);
	if (!strstr(err.msg, want))
		fail_msg("message %s, expected it to hold %s", err.msg, want);
}

static void test_good_trace(void **state)
{
	struct ctr_counts c;
	struct rd_error err;
	(void)state;
	assert_int_equal(walk("{\"traceEvents\":["
			      "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":7},"
			      "{\"ph\":\"B\",\"name\":\"main\",\"ts\":1.5,\"pid\":7,\"tid\":7},"
			      "{\"ph\":\"X\",\"name\":\"leaf\",\"ts\":2,\"dur\":0.5,\"pid\":7,\"tid\":8},"
			      "{\"ph\":\"B\",\"name\":\"open\",\"ts\":3,\"pid\":7,\"tid\":8},"
			      "{\"ph\":\"E\",\"ts\":4,\"pid\":7,\"tid\":7}]}",
			      &c, &err),
			 0);
	assert_int_equal(c.events, 5);
	assert_int_equal(c.metadata, 1);
	assert_int_equal(c.begins, 2);
	assert_int_equal(c.ends, 1);
	assert_int_equal(c.completes, 1);
	assert_int_equal(c.open, 1); /* counted, not an error */
	/* the JSON Array Format, uftrace's pid-only events */
	assert_int_equal(walk("[{\"ph\":\"B\",\"name\":\"f\",\"ts\":1,\"pid\":3},"
			      "{\"ph\":\"E\",\"ts\":2,\"pid\":3}]",
			      &c, &err),
			 0);
	assert_int_equal(c.events, 2);
	assert_int_equal(c.open, 0);
}

static void test_broken_traces(void **state)
{
	(void)state;
	refused("{\"traceEvents\":[{\"name\":\"f\",\"ts\":1}]}", CTR_RULE_EVENT,
		"event 0 has no one-letter \"ph\"");
	refused("{\"traceEvents\":[{\"ph\":\"M\"},{\"ph\":\"B\",\"ts\":\"x\"}]}", CTR_RULE_EVENT,
		"event 1 (ph B) has no numeric ts");
	refused("{\"traceEvents\":[{\"ph\":\"B\",\"ts\":1,\"pid\":\"p\"}]}", CTR_RULE_EVENT,
		"has a pid or tid that is not a number");
	/* converting these to int64 was undefined behaviour */
	refused("{\"traceEvents\":[{\"ph\":\"B\",\"ts\":1,\"pid\":1e300,\"tid\":1}]}",
		CTR_RULE_EVENT, "event 0 (ph B) has a pid or tid out of range");
	refused("{\"traceEvents\":[{\"ph\":\"B\",\"ts\":1,\"pid\":1,\"tid\":-9.3e18}]}",
		CTR_RULE_EVENT, "out of range");
	refused("{\"traceEvents\":[{\"ph\":\"B\",\"ts\":1,\"pid\":1,\"tid\":1},"
		"{\"ph\":\"E\",\"ts\":2,\"pid\":1,\"tid\":2}]}",
		CTR_RULE_NEST, "event 1");
	refused("{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1,\"dur\":-1,\"pid\":1}]}", CTR_RULE_NEST,
		"event 0");
	refused("{\"traceEvents\": 5}", CTR_RULE_JSON, "");
	refused("not json", CTR_RULE_JSON, "");
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

int main(void)
{
	int fd = mkstemp(path);
	if (fd < 0)
		return 1;
	close(fd);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_trace),
		cmocka_unit_test(test_broken_traces),
	};
	return cmocka_run_group_tests(tests, NULL, teardown);
}
