/*
 * ovni_test.h: the events every e2e-ovni test program emits, through the public API only:
 * a payload-less event, and OHx with the payload the emulator wants (CPU, creator tid, tag).
 */
#ifndef E2E_OVNI_TEST_H
#define E2E_OVNI_TEST_H

#include <ovni.h>
#include <stdint.h>

static inline void test_emit0(const char *mcv)
{
	struct ovni_ev ev = { 0 };
	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_emit(&ev);
}

/* OHx on a virtual CPU (-1), created by nobody (-1): threads need not be pinned */
static inline void test_emit_ohx(void)
{
	struct ovni_ev ev = { 0 };
	int32_t cpu = -1, ctid = -1;
	uint64_t tag = 0;

	ovni_ev_set_mcv(&ev, "OHx");
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_payload_add(&ev, (uint8_t *)&cpu, sizeof(cpu));
	ovni_payload_add(&ev, (uint8_t *)&ctid, sizeof(ctid));
	ovni_payload_add(&ev, (uint8_t *)&tag, sizeof(tag));
	ovni_ev_emit(&ev);
}

#endif
