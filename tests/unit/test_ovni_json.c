/*
 * test_ovni_json: ovni-rt's JSON writer (formats/ovni/ovni_json.c) against the
 * files libovni writes, and against the reader's own parser (formats/common/rd_json.c).
 *
 *  - the metadata of the reference trace's main thread (tests/samples/ovni/trace-v3, written
 *    by libovni 1.14), built key by key in libovni's order, serializes to the same text;
 *  - strings, numbers, nesting and dot paths survive writer -> reader;
 *  - dot paths through a non-object fail; both parsers refuse broken texts; the reader
 *    accepts the comments ovniemu accepts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/ovni/ovni_json.h"
#include "formats/common/rd_json.h"

/* tests/samples/ovni/trace-v3/loom.vm.sample/proc.21995/thread.21995/stream.json */
static const char reference[] = "{\n"
				"    \"version\": 3,\n"
				"    \"ovni\": {\n"
				"        \"lib\": {\n"
				"            \"version\": \"1.14.0\",\n"
				"            \"commit\": \"cf025e242f45\"\n"
				"        },\n"
				"        \"part\": \"thread\",\n"
				"        \"tid\": 21995,\n"
				"        \"pid\": 21995,\n"
				"        \"loom\": \"vm.sample\",\n"
				"        \"app_id\": 1,\n"
				"        \"require\": {\n"
				"            \"ovni\": \"1.1.0\"\n"
				"        },\n"
				"        \"mark\": {\n"
				"            \"0\": {\n"
				"                \"title\": \"Iteration\",\n"
				"                \"chan_type\": \"stack\"\n"
				"            },\n"
				"            \"1\": {\n"
				"                \"title\": \"Phase\",\n"
				"                \"chan_type\": \"single\",\n"
				"                \"labels\": {\n"
				"                    \"1\": \"main-phase\",\n"
				"                    \"2\": \"worker-phase\"\n"
				"                }\n"
				"            }\n"
				"        },\n"
				"        \"loom_cpus\": [\n"
				"            {\n"
				"                \"index\": 0,\n"
				"                \"phyid\": 0\n"
				"            },\n"
				"            {\n"
				"                \"index\": 1,\n"
				"                \"phyid\": 1\n"
				"            },\n"
				"            {\n"
				"                \"index\": 2,\n"
				"                \"phyid\": 2\n"
				"            }\n"
				"        ],\n"
				"        \"finished\": 1\n"
				"    },\n"
				"    \"sample\": {\n"
				"        \"note\": \"hello from sample_app\"\n"
				"    }\n"
				"}";

static void set(struct oj *m, const char *path, struct oj *v)
{
	assert_int_equal(oj_dotset(m, path, v), 0);
}

static void test_libovni_text(void **state)
{
	struct oj *m = oj_new(OJ_OBJECT), *cpus = oj_new(OJ_ARRAY);
	char *text;
	size_t len;

	(void)state;
	set(m, "version", oj_number(3));
	set(m, "ovni.lib.version", oj_string("1.14.0"));
	set(m, "ovni.lib.commit", oj_string("cf025e242f45"));
	set(m, "ovni.part", oj_string("thread"));
	set(m, "ovni.tid", oj_number(21995));
	set(m, "ovni.pid", oj_number(21995));
	set(m, "ovni.loom", oj_string("vm.sample"));
	set(m, "ovni.app_id", oj_number(1));
	set(m, "ovni.require.ovni", oj_string("1.1.0"));
	set(m, "ovni.mark.0.title", oj_string("Iteration"));
	set(m, "ovni.mark.0.chan_type", oj_string("stack"));
	set(m, "ovni.mark.1.title", oj_string("Phase"));
	set(m, "ovni.mark.1.chan_type", oj_string("single"));
	set(m, "sample.note", oj_string("hello from sample_app"));
	set(m, "ovni.mark.1.labels.1", oj_string("main-phase"));
	set(m, "ovni.mark.1.labels.2", oj_string("worker-phase"));
	for (int i = 0; i < 3; i++) {
		struct oj *c = oj_new(OJ_OBJECT);
		set(c, "index", oj_number(i));
		set(c, "phyid", oj_number(i));
		assert_int_equal(oj_append(cpus, c), 0);
	}
	set(m, "ovni.loom_cpus", cpus);
	set(m, "ovni.finished", oj_number(1));
	text = oj_serialize(m, 1, &len);
	assert_non_null(text);
	assert_string_equal(text, reference);
	assert_int_equal(len, strlen(reference));
	free(text);
	oj_free(m);
}

static void test_roundtrip(void **state)
{
	static const char *const strings[] = {
		"",
		"plain",
		"quote \" backslash \\ slash /",
		"tab\tnl\ncr\rff\fbs\b",
		"ctl \x01\x1f",
		"utf-8: caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
	};
	static const double numbers[] = {
		0,	   1, -1, 21995, 2.5, 0.1, -1e-300, 1e300, 4294967296.0, 9007199254740991.0,
		123456.789
	};
	struct oj *m = oj_new(OJ_OBJECT), *arr = oj_new(OJ_ARRAY);
	struct ovj *r;
	char *text, key[32];
	size_t len = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
		snprintf(key, sizeof(key), "s.%zu", i);
		set(m, key, oj_string(strings[i]));
	}
	for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++)
		assert_int_equal(oj_append(arr, oj_number(numbers[i])), 0);
	set(m, "n", arr);
	set(m, "b.t", oj_bool(1));
	set(m, "b.f", oj_bool(0));
	set(m, "z", oj_new(OJ_NULL));
	set(m, "empty.o", oj_new(OJ_OBJECT));
	set(m, "empty.a", oj_new(OJ_ARRAY));
	/* replacing keeps the key's place */
	set(m, "s.0", oj_string("again"));
	for (int pretty = 0; pretty < 2; pretty++) {
		text = oj_serialize(m, pretty, &len);
		assert_non_null(text);
		r = ovj_parse(text, len, NULL);
		assert_non_null(r);
		assert_string_equal(r->keys[0], "s");
		assert_string_equal(ovj_dotget_string(r, "s.0"), "again");
		for (size_t i = 1; i < sizeof(strings) / sizeof(strings[0]); i++) {
			snprintf(key, sizeof(key), "s.%zu", i);
			assert_string_equal(ovj_dotget_string(r, key), strings[i]);
		}
		{
			const struct ovj *n = ovj_get(r, "n");
			assert_non_null(n);
			assert_int_equal(n->n, sizeof(numbers) / sizeof(numbers[0]));
			for (size_t i = 0; i < n->n; i++)
				assert_true(n->items[i]->number == numbers[i]);
		}
		assert_true(ovj_dotget(r, "b.t")->boolean);
		assert_false(ovj_dotget(r, "b.f")->boolean);
		assert_int_equal(ovj_get(r, "z")->type, OVJ_NULL);
		assert_int_equal(ovj_dotget(r, "empty.o")->n, 0);
		assert_int_equal(ovj_dotget(r, "empty.a")->type, OVJ_ARRAY);
		ovj_free(r);
		free(text);
	}
	/* the shortest text that reads back the same */
	text = oj_serialize(oj_get(m, "n"), 0, NULL);
	assert_string_equal(text, "[0,1,-1,21995,2.5,0.1,-1e-300,1e+300,"
				  "4294967296,9007199254740991,123456.789]");
	free(text);
	oj_free(m);
}

static void test_paths_and_errors(void **state)
{
	struct oj *m = oj_new(OJ_OBJECT), *v;
	static const char *const bad[] = {
		"",	   "{",		  "{\"a\":}",	 "{\"a\":1,}", "[1 2]", "{\"a\":1} x",
		"\"\\x\"", "\"\\ud800\"", "\"a\x01\"",	 "tru",	       "01",	"1.",
		"-",	   "{'a':1}",	  "\"\\u0000\"", "\"\xff\"",
	};
	char deep[400];
	struct ovj *r;

	(void)state;
	set(m, "a.b", oj_number(1));
	assert_int_not_equal(oj_dotset(m, "a.b.c", oj_number(2)), 0); /* b is not an object */
	/* empty parts are keys "", as parson (libovni) makes them */
	assert_int_equal(oj_dotset(m, "a..c", oj_number(2)), 0);
	assert_non_null((v = oj_dotget(m, "a..c")));
	assert_true(v->u.number == 2);
	assert_null(oj_dotget(m, "a.x"));
	assert_null(oj_dotget(m, "a.b.c"));
	assert_non_null((v = oj_dotget(m, "a.b")));
	assert_true(v->u.number == 1);
	assert_null(oj_string("\xc3")); /* not UTF-8 */
	assert_null(oj_number(1.0 / 0.0));
	oj_free(m);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct oj *w = oj_parse(bad[i], strlen(bad[i]));
		if (w)
			fail_msg("the writer's parser accepted '%s'", bad[i]);
		if (strcmp(bad[i], "\"\xff\"") != 0) /* the reader keeps raw bytes as parson */
			assert_null(ovj_parse(bad[i], strlen(bad[i]), NULL));
	}
	memset(deep, '[', 300);
	memset(deep + 300, ']', 10);
	assert_null(oj_parse(deep, 310));
	assert_null(ovj_parse(deep, 310, NULL));
	/* what ovniemu reads with json_parse_file_with_comments */
	{
		static const char c[] = "/* c */ {\"a\": // x\n 1}";
		r = ovj_parse(c, strlen(c), NULL);
	}
	assert_non_null(r);
	assert_true(ovj_get(r, "a")->number == 1);
	ovj_free(r);
}

/* A copy serializes to the same text as its original, keys in their order, nested objects
 * and arrays included; a big object is copied in linear time (the sink copies the metadata
 * at every write: a lookup per key made 8000 mark labels take seconds). */
static void test_copy(void **state)
{
	struct oj *m = oj_new(OJ_OBJECT), *c, *arr = oj_new(OJ_ARRAY);
	char key[64], *t1, *t2;
	size_t n1, n2;
	clock_t t0;

	(void)state;
	set(m, "ovni.mark.1.title", oj_string("tasks"));
	for (int i = 0; i < 20000; i++) {
		snprintf(key, sizeof(key), "ovni.mark.1.labels.%d", i);
		set(m, key, oj_string("task"));
	}
	assert_int_equal(oj_append(arr, oj_number(1)), 0);
	assert_int_equal(oj_append(arr, oj_string("two")), 0);
	set(m, "z.array", arr);
	t0 = clock();
	for (int i = 0; i < 20; i++) {
		c = oj_copy(m);
		assert_non_null(c);
		if (i < 19)
			oj_free(c);
	}
	/* 20 copies of 20000 keys: about 10 ms here; with a lookup per key, about 20 s */
	assert_true(clock() - t0 < 2 * CLOCKS_PER_SEC);
	t1 = oj_serialize(m, 1, &n1);
	t2 = oj_serialize(c, 1, &n2);
	assert_non_null(t1);
	assert_non_null(t2);
	assert_int_equal(n1, n2);
	assert_memory_equal(t1, t2, n1);
	assert_non_null(oj_dotget(c, "ovni.mark.1.labels.19999"));
	free(t1);
	free(t2);
	oj_free(c);
	oj_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_libovni_text),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_paths_and_errors),
		cmocka_unit_test(test_copy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
