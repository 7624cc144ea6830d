/*
 * fill_app: one thread writes several times libovni's 2 MiB per-thread buffer
 * (OVNI_MAX_EV_BUF) of events of every size, so that libovni would flush its full buffer
 * many times: 12-, 20- and 28-byte events, marks, small jumbo events, ovni_flush calls (one
 * right after another), and three jumbo events sized to land on the edges of libovni's rule
 * (a buffer holding exactly OVNI_MAX_EV_BUF bytes is flushed; a jumbo event so large that
 * the OF[ or the OF] that follows it does not fit either).
 *
 * usage: fill_app PID TID
 * prints "FLUSH <k>" for each ovni_flush call (k: events the program emitted before it) and
 * "EMITTED <PID> <TID> <events>" at the end: the test rebuilds libovni's stream from the
 * events found in the trace and these lines, and compares.
 */
#define _GNU_SOURCE
#include <ovni.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ovni_test.h"

static long n_emitted;

static void ev_payload(const char *mcv, uint64_t a, int size)
{
	struct ovni_ev ev = { 0 };

	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_set_clock(&ev, ovni_clock_now());
	if (size >= 8)
		ovni_payload_add(&ev, (uint8_t *)&a, 8);
	if (size >= 16)
		ovni_payload_add(&ev, (uint8_t *)&a, 8);
	ovni_ev_emit(&ev);
	n_emitted++;
}

static void jumbo(const char *mcv, const uint8_t *data, uint32_t n)
{
	struct ovni_ev ev = { 0 };

	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_jumbo_emit(&ev, data, n);
	n_emitted++;
}

/* a jumbo event of `total` bytes in libovni's buffer: header, size word and data */
static void jumbo_total(const uint8_t *data, size_t total)
{
	jumbo("OU[", data, (uint32_t)(total - sizeof(struct ovni_ev_header) - 4));
}

static void flush(void)
{
	printf("FLUSH %ld\n", n_emitted);
	ovni_flush();
}

static void mix(long from, long to, const uint8_t *data)
{
	for (long i = from; i < to; i++) {
		switch (i % 4) {
		case 0: ev_payload("OU[", (uint64_t)i, 0); break;
		case 1: ev_payload("OU]", (uint64_t)i, 16); break;
		case 2:
			ovni_mark_set(1, i + 1);
			n_emitted++;
			break;
		default: ev_payload("OU[", (uint64_t)i, 8); break;
		}
		if (i % 100 == 99)
			jumbo("OU]", data, (uint32_t)((i * 37) % 3001));
	}
}

int main(int argc, char **argv)
{
	size_t max = (size_t)OVNI_MAX_EV_BUF, hdr = sizeof(struct ovni_ev_header);
	uint8_t *data;
	int pid, tid;

	if (argc < 3) {
		fprintf(stderr, "usage: fill_app PID TID\n");
		return 2;
	}
	pid = atoi(argv[1]);
	tid = atoi(argv[2]);
	data = calloc(1, max);
	if (!data)
		return 1;
	for (size_t i = 0; i < max; i++)
		data[i] = (uint8_t)(i * 7);
	ovni_version_check();
	ovni_proc_init(1, "fill-loom", pid);
	ovni_thread_init(tid);
	ovni_add_cpu(0, 0);
	test_emit_ohx();
	n_emitted++;
	ovni_mark_type(1, 0, "steps");

	/* ~2.7 MiB of small events: libovni's buffer fills on its own; then flushes */
	mix(0, 70000, data);
	flush();
	mix(70000, 90000, data);
	flush();
	flush();
	/* the buffer holds the last flush's pair (24 bytes): fill it up to 12 bytes short of
	 * OVNI_MAX_EV_BUF; the next 12-byte event makes it exactly full, which libovni flushes */
	jumbo_total(data, max - 2 * hdr - hdr);
	ev_payload("OU]", 0, 0);
	mix(90000, 90100, data);
	/* so large that the OF[ after it does not fit its emptied buffer either */
	jumbo_total(data, max - 5);
	mix(90100, 90200, data);
	/* the OF[ after it fits, the OF] does not */
	jumbo_total(data, max - 20);
	mix(90200, 100000, data);
	test_emit0("OHe");
	n_emitted++;
	flush();
	ovni_thread_free();
	ovni_proc_fini();
	printf("EMITTED %d %d %ld\n", pid, tid, n_emitted);
	free(data);
	return 0;
}
