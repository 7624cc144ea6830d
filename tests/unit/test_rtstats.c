/*
 * test_rtstats: the reader of the runtime's stats files (formats/common/rtstats.c): per-thread lines,
 * their sums against the totals, every rule with its offset and line, the caps, the files a
 * directory holds (a killed process's .part is not one), and random damage never crashing or
 * leaking (run it under ASan).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/common/rtstats.h"
#include "tests/unit/unit_util.h"

#define TOTALS(threads, events, bytes, full, nested, dead, depth)                              \
	"pid=4024\nppid=4023\nexe=/tmp/x\nformat=xray\nthreads=" #threads "\nevents=" #events      \
	"\nbytes=" #bytes "\nlost_full=" #full "\nlost_nested=" #nested "\nlost_dead=" #dead       \
	"\nlost_depth=" #depth "\n"

static const char good[] =
	"thread=4026 events=10 bytes=160 lost_full=1 lost_nested=0 lost_dead=0 lost_depth=2\n"
	"thread=4025 events=8 bytes=128 lost_full=0 lost_nested=3 lost_dead=0 lost_depth=0 "
	"lost_future=7\n" TOTALS(2, 18, 288, 1, 3, 5, 2);

static int parse(const char *text, struct rts_proc *p, struct rd_error *err)
{
	rd_error_clear(err);
	return rts_parse(text, strlen(text), "stats.4024.1", p, err);
}

static void test_thread_lines(void **state)
{
	struct rts_proc p;
	struct rd_error err;

	(void)state;
	assert_int_equal(parse(good, &p, &err), 0);
	assert_true(p.has_totals);
	assert_int_equal(p.nr_thr, 2);
	assert_int_equal(p.thr[0].tid, 4026);
	assert_int_equal(p.thr[0].events, 10);
	assert_int_equal(p.thr[0].lost_depth, 2);
	assert_int_equal(rts_thread_lost(&p.thr[0]), 3);
	assert_int_equal(p.thr[1].tid, 4025);
	assert_int_equal(p.thr[1].lost_nested, 3);
	/* 5 lost_dead in all, none of them a thread's: after their exit */
	assert_int_equal(rts_unowned_dead(&p), 5);
	assert_int_equal(rts_lost(&p), 11);
	rts_proc_free(&p);
	assert_null(p.thr);

	/* a runtime before thread lines: totals only */
	assert_int_equal(parse(TOTALS(2, 18, 288, 1, 3, 5, 2), &p, &err), 0);
	assert_int_equal(p.nr_thr, 0);
	assert_true(p.has_totals);
	rts_proc_free(&p);
	/* thread lines and no totals: taken as they are */
	assert_int_equal(parse("thread=7 events=1\n", &p, &err), 0);
	assert_false(p.has_totals);
	assert_int_equal(p.nr_thr, 1);
	assert_int_equal(p.thr[0].events, 1);
	rts_proc_free(&p);
	/* a tid alone, and a line without its newline */
	assert_int_equal(parse("thread=7", &p, &err), 0);
	assert_int_equal(p.nr_thr, 1);
	rts_proc_free(&p);
}

/* one broken line: the rule, the line's offset, its number in the message */
static void bad(const char *text, int rule, int64_t off, const char *says)
{
	struct rts_proc p;
	struct rd_error err;

	assert_int_equal(parse(text, &p, &err), -1);
	if (err.rule != rule || err.offset != off || !strstr(err.msg, says))
		fail_msg("%s: rule %d offset %lld: %s", text, err.rule, (long long)err.offset,
			 err.msg);
	assert_string_equal(err.file, "stats.4024.1");
	assert_null(p.thr); /* nothing to free after an error */
}

static void test_rules(void **state)
{
	(void)state;
	bad("thread=\n", RTS_E_THREAD, 0, "line 1: a thread line starts with its tid");
	bad("pid=1\nthread=0 events=1\n", RTS_E_THREAD, 6, "line 2");
	bad("thread=2147483648\n", RTS_E_THREAD, 0, "positive int");
	bad("thread=-3\n", RTS_E_THREAD, 0, "tid");
	bad("thread=12x events=1\n", RTS_E_THREAD, 0, "tid");
	bad("thread=12 events=1 events=2\n", RTS_E_DUP, 0, "thread 12: events given twice");
	bad("thread=12 events=x\n", RTS_E_LINE, 0, "events is not an unsigned decimal");
	bad("thread=12 events=99999999999999999999\n", RTS_E_LINE, 0, "unsigned decimal");
	bad("thread=12 events\n", RTS_E_LINE, 0, "not key=value");
	bad("thread=12 =4\n", RTS_E_LINE, 0, "not key=value");
	bad("thread=12  events=4\n", RTS_E_LINE, 0, "not key=value");
	bad("thread=12 events=4 \n", RTS_E_LINE, 0, "not key=value");
	bad("thread=12 ev ents=4\n", RTS_E_LINE, 0, "not key=value");
	bad("thread=12 events=4,bytes=3\n", RTS_E_LINE, 0, "unsigned decimal");
	bad("thread=12\njunk\n", RTS_E_LINE, 10, "line 2 is not key=value");
	bad("thread=12\nthreads=1\nthreads=1\n", RTS_E_DUP, 20, "line 3: threads given twice");
	/* the lines must add up to the totals */
	bad("thread=1 events=5\n" TOTALS(1, 6, 0, 0, 0, 0, 0), RTS_E_SUM, -1,
	    "events: the thread lines say 5, the total 6");
	bad("thread=1\nthread=2\n" TOTALS(3, 0, 0, 0, 0, 0, 0), RTS_E_SUM, -1,
	    "threads: the thread lines say 2, the total 3");
	bad("thread=1 lost_full=2\n" TOTALS(1, 0, 0, 1, 0, 0, 0), RTS_E_SUM, -1, "lost_full");
	bad("thread=1 lost_dead=2\n" TOTALS(1, 0, 0, 0, 0, 1, 0), RTS_E_SUM, -1,
	    "never more");
	bad("thread=1 bytes=1\n" TOTALS(1, 0, 0, 0, 0, 0, 0), RTS_E_SUM, -1, "bytes");
	bad("thread=1 lost_depth=1\n" TOTALS(1, 0, 0, 0, 0, 0, 0), RTS_E_SUM, -1, "lost_depth");
	bad("thread=1 lost_nested=1\n" TOTALS(1, 0, 0, 0, 0, 0, 0), RTS_E_SUM, -1,
	    "lost_nested");
}

static void test_cap(void **state)
{
	struct rts_proc p;
	struct rd_error err;
	char text[256] = "";

	(void)state;
	for (int i = 1; i <= 5; i++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "thread=%d\n", i);
	rd_error_clear(&err);
	assert_int_equal(rts_parse_max(text, strlen(text), "f", 5, &p, &err), 0);
	assert_int_equal(p.nr_thr, 5);
	rts_proc_free(&p);
	rd_error_clear(&err);
	assert_int_equal(rts_parse_max(text, strlen(text), "f", 4, &p, &err), -1);
	assert_int_equal(err.rule, RTS_E_THREAD);
	assert_int_equal(err.offset, 36); /* the fifth line */
	assert_non_null(strstr(err.msg, "line 5"));
	rd_error_clear(&err);
	assert_int_equal(rts_parse_max(text, strlen(text), "f", 0, &p, &err), -1);
	assert_int_equal(err.offset, 0);
}

static char tmpdir[256];

static void test_load_dir(void **state)
{
	struct rts_set set;
	struct rd_error err;
	char p[512];

	(void)state;
	unit_tmpdir_make(tmpdir, sizeof(tmpdir), "test_rtstats", false);
	rd_error_clear(&err);
	assert_int_equal(rts_load(tmpdir, &set, &err), 0); /* no .flightrec: nothing, no error */
	assert_false(set.present);
	snprintf(p, sizeof(p), "%s/.flightrec", tmpdir);
	assert_int_equal(mkdir(p, 0700), 0);
	unit_write_file(tmpdir, ".flightrec/stats.4024.100", good);
	unit_write_file(tmpdir, ".flightrec/stats.4024.50",
			"thread=9 events=3\n" TOTALS(1, 3, 0, 0, 0, 0, 0));
	/* a killed process's: not read */
	unit_write_file(tmpdir, ".flightrec/stats.4030.7.part", "thread=1 events=1\n");
	unit_write_file(tmpdir, ".flightrec/ring.4030.4030", "");
	assert_int_equal(rts_load(tmpdir, &set, &err), 0);
	assert_true(set.present);
	assert_int_equal(set.nr, 2);
	assert_int_equal(set.procs[0].start, 50); /* images of one pid in start order */
	assert_int_equal(set.procs[0].nr_thr, 1);
	assert_int_equal(set.procs[1].nr_thr, 2);
	rts_free(&set);
	/* a broken file: the error names it, nothing is kept */
	unit_write_file(tmpdir, ".flightrec/stats.4031",
			"thread=1 events=2\n" TOTALS(1, 3, 0, 0, 0, 0, 0));
	assert_int_equal(rts_load(tmpdir, &set, &err), -1);
	assert_int_equal(err.rule, RTS_E_SUM);
	assert_non_null(strstr(err.file, "/.flightrec/stats.4031"));
	assert_int_equal(set.nr, 0);
	rts_free(&set);
	unit_tmpdir_remove(tmpdir);
}

/* random damage to a good file: parsed or refused with a rule and an offset inside it */
static void test_random_damage(void **state)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	char text[sizeof(good)];

	(void)state;
	for (int round = 0; round < 20000; round++) {
		struct rts_proc p;
		struct rd_error err;
		size_t len = sizeof(good) - 1;

		memcpy(text, good, sizeof(good));
		for (int k = 0; k < 1 + round % 4 && len > 0; k++) {
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			static const char alphabet[] = "=\n 0123456789thread_ex\xff";
			size_t at = (seed >> 8) % len;
			if ((seed >> 40) % 5 == 0)
				len = at; /* cut short */
			else
				text[at] = alphabet[(seed >> 24) % (sizeof(alphabet) - 1)];
		}
		rd_error_clear(&err);
		if (rts_parse(text, len, "f", &p, &err) == 0) {
			assert_true(p.nr_thr <= 2 + 4);
			rts_proc_free(&p);
		} else {
			assert_true(err.rule >= RTS_E_IO && err.rule <= RTS_E_SUM);
			assert_true(err.offset >= -1 && err.offset < (int64_t)len);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_thread_lines),
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_load_dir),
		cmocka_unit_test(test_random_damage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
