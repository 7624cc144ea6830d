/*
 * misuse: one libovni API misuse per mode; each must abort with a message naming the call
 * (checked by the runner), as libovni does. Mode "api" instead exercises the calls that
 * return values (attributes, readiness, versions) and prints "API OK".
 */
#define _GNU_SOURCE
#include <ovni.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ovni_test.h"

static void init(void)
{
	ovni_proc_init(1, "e2e.misuse", getpid());
	ovni_thread_init(gettid());
	ovni_add_cpu(0, 0);
}

static void emit0(const char *mcv)
{
	struct ovni_ev ev = { 0 };
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_emit(&ev);
}

#define CHECK(c)                                                            \
	do {                                                                \
		if (!(c)) {                                                 \
			printf("API FAILED: %s (line %d)\n", #c, __LINE__); \
			exit(1);                                            \
		}                                                           \
	} while (0)

static int api(void)
{
	const char *v = NULL, *c = NULL;
	char *j;
	struct ovni_ev ev = { 0 };
	uint8_t buf[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

	ovni_version_check();
	ovni_version_check_str("1.0.0");
	ovni_version_check_str("1.14.99");
	/* libovni's reading: strtol tokens, empty tokens skipped, anything after patch ignored */
	ovni_version_check_str(" 1.2.3");
	ovni_version_check_str("+1.2.3");
	ovni_version_check_str("1..2.3");
	ovni_version_check_str("1.2.-3");
	ovni_version_check_str("1.2.3.4");
	ovni_version_get(&v, &c);
	CHECK(v && !strcmp(v, "1.14.0") && c);
	CHECK(!ovni_thread_isready());
	init();
	CHECK(ovni_thread_isready());
	CHECK(ovni_attr_has("ovni.require.ovni"));
	CHECK(!strcmp(ovni_attr_get_str("ovni.require.ovni"), "1.1.0"));
	ovni_attr_set_double("e2e.d", 2.5);
	ovni_attr_set_boolean("e2e.b", 1);
	ovni_attr_set_str("e2e.s", "caf\xc3\xa9 \"quoted\"\n");
	ovni_attr_set_json("e2e.j", "{\"a\": [1, 2.5, true, null, \"x\"], \"b\": {}}");
	CHECK(ovni_attr_get_double("e2e.d") == 2.5);
	CHECK(ovni_attr_get_boolean("e2e.b") == 1);
	CHECK(!strcmp(ovni_attr_get_str("e2e.s"), "caf\xc3\xa9 \"quoted\"\n"));
	j = ovni_attr_get_json("e2e.j");
	CHECK(j && !strcmp(j, "{\"a\":[1,2.5,true,null,\"x\"],\"b\":{}}"));
	free(j);
	CHECK(!ovni_attr_has("e2e.j.c"));
	/* an empty part of a path is a key "" (libovni's parson): e2e -> "" -> empty */
	ovni_attr_set_str("e2e..empty", "x");
	CHECK(ovni_attr_has("e2e..empty") && !strcmp(ovni_attr_get_str("e2e..empty"), "x"));
	ovni_attr_flush();
	ovni_thread_require("nosv", "2.0.0");
	/* payload helpers */
	ovni_ev_set_mcv(&ev, "OHx");
	ovni_ev_set_clock(&ev, 42);
	CHECK(ovni_ev_get_clock(&ev) == 42 && ovni_ev_size(&ev) == 12 &&
	      ovni_payload_size(&ev) == 0);
	ovni_payload_add(&ev, buf, 2);
	CHECK(ev.header.flags == 0x01 && ovni_payload_size(&ev) == 2);
	ovni_payload_add(&ev, buf + 2, 3);
	CHECK(ev.header.flags == 0x04 && ovni_payload_size(&ev) == 5 && ovni_ev_size(&ev) == 17);
	ovni_payload_add(&ev, buf, 11);
	CHECK(ev.header.flags == 0x0f && ovni_payload_size(&ev) == 16);
	CHECK(!memcmp(ev.payload.u8,
		      "\x01\x02\x03\x04\x05\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b", 16));
	test_emit_ohx();
	/* an event the program gave the jumbo flag itself: written as it is, as libovni does
	 * (12 + 4 + 4 bytes; the runner counts one jumbo event) */
	{
		struct ovni_ev jev = { 0 };
		uint32_t size = 4;
		ovni_ev_set_mcv(&jev, "OU[");
		ovni_ev_set_clock(&jev, ovni_clock_now());
		jev.header.flags = OVNI_EV_JUMBO;
		memcpy(jev.payload.u8, &size, 4);
		memcpy(jev.payload.u8 + 4, "abcd", 4);
		CHECK(ovni_ev_size(&jev) == 20);
		ovni_ev_emit(&jev);
	}
	emit0("OHe");
	ovni_thread_free();
	CHECK(!ovni_thread_isready());
	ovni_proc_fini();
	printf("API OK\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	struct ovni_ev ev = { 0 };
	uint8_t buf[32] = { 0 };

	if (!strcmp(m, "api"))
		return api();
	if (!strcmp(m, "emit_noinit")) {
		emit0("OHx");
	} else if (!strcmp(m, "emit_nothread")) {
		ovni_proc_init(1, "e2e.misuse", getpid());
		emit0("OHx");
	} else if (!strcmp(m, "proc_init_twice")) {
		init();
		ovni_proc_init(1, "e2e.misuse", getpid());
	} else if (!strcmp(m, "thread_init_noproc")) {
		ovni_thread_init(gettid());
	} else if (!strcmp(m, "thread_free_twice")) {
		init();
		ovni_thread_free();
		ovni_thread_free();
	} else if (!strcmp(m, "emit_after_free")) {
		init();
		ovni_thread_free();
		emit0("OHx");
	} else if (!strcmp(m, "payload_full")) {
		ovni_payload_add(&ev, buf, 16);
		ovni_payload_add(&ev, buf, 2);
	} else if (!strcmp(m, "payload_one")) {
		ovni_payload_add(&ev, buf, 1);
	} else if (!strcmp(m, "jumbo_payload")) {
		init();
		ovni_payload_add(&ev, buf, 4);
		ovni_ev_jumbo_emit(&ev, buf, 8);
	} else if (!strcmp(m, "emit_jumbo_flag")) {
		/* the jumbo flag and more data than the struct holds: libovni reads past it */
		uint32_t size = 100;
		init();
		ev.header.flags = OVNI_EV_JUMBO;
		memcpy(ev.payload.u8, &size, 4);
		ovni_ev_emit(&ev);
	} else if (!strcmp(m, "version_major")) {
		ovni_version_check_str("2.0.0");
	} else if (!strcmp(m, "attr_replace_ovni")) {
		init();
		ovni_attr_set_str("ovni", "x");
	} else if (!strcmp(m, "version_long")) {
		/* 64 characters or more: refused, as libovni refuses them */
		ovni_version_check_str("1.2.3-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	} else if (!strcmp(m, "version_minor")) {
		ovni_version_check_str("1.15.0");
	} else if (!strcmp(m, "mark_label_undefined")) {
		init();
		ovni_mark_label(5, 1, "x");
	} else if (!strcmp(m, "mark_type_twice")) {
		init();
		ovni_mark_type(5, 0, "x");
		ovni_mark_type(5, 0, "x");
	} else if (!strcmp(m, "mark_zero")) {
		init();
		ovni_mark_push(1, 0);
	} else if (!strcmp(m, "add_cpu_negative")) {
		init();
		ovni_add_cpu(-1, 0);
	} else if (!strcmp(m, "attr_missing")) {
		init();
		ovni_attr_get_str("no.such.key");
	} else if (!strcmp(m, "attr_bad_json")) {
		init();
		ovni_attr_set_json("k", "{nope");
	} else if (!strcmp(m, "flush_after_fini")) {
		init();
		ovni_proc_fini();
		ovni_flush();
	} else if (!strcmp(m, "require_bad_version")) {
		init();
		ovni_thread_require("nosv", "two");
	} else if (!strcmp(m, "thread_init_after_free")) {
		init();
		ovni_thread_free();
		ovni_thread_init(gettid());
	} else {
		fprintf(stderr, "misuse: unknown mode '%s'\n", m);
		return 2;
	}
	printf("misuse: %s did not abort\n", m);
	return 0;
}
