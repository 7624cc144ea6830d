/*
 * ovni_stream_end: how a stream whose thread never said goodbye is ended the way ovniemu
 * wants every stream to end, with the thread dead. Shared by ovni-rt's sink (a thread that
 * exits, or a process that exits or dies by a signal, without ovni_thread_free) and by
 * salvage (formats/ovni/salvage_ovni.c: a killed process's streams).
 *
 * The thread's state is the last of its OHx/OHe/OHp/OHr/OHc/OHw events; the end is OHe after
 * a running or cooling thread, OHr OHe after a paused or warming one, at the clock of the
 * last event (the clock stays monotonic); a thread with none of them (no OHx: it never ran)
 * or already dead gets nothing. Walks a stream as written (header, then whole events; a
 * partial last event is where the walk stops, and ends the stream).
 */
#ifndef OVNI_RT_OVNI_STREAM_END_H
#define OVNI_RT_OVNI_STREAM_END_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define OVNI_SE_HDR 12 /* event header: flags, model, category, value, clock */

enum ovni_se_state { OVNI_SE_UNKNOWN, OVNI_SE_RUNNING, OVNI_SE_PAUSED, OVNI_SE_COOLING,
		     OVNI_SE_WARMING, OVNI_SE_DEAD };

/* Walk the stream p[0..n): returns the end of its last whole event (0 without the stream
 * header); the thread's state, the last clock and the events from offset `from` on. */
static inline size_t ovni_se_walk(const uint8_t *p, size_t n, size_t from,
				  enum ovni_se_state *st, uint64_t *last_clock, uint64_t *events)
{
	size_t pos = 8, end = 8;

	*st = OVNI_SE_UNKNOWN;
	*last_clock = 0;
	*events = 0;
	if (n < 8 || memcmp(p, "ovni", 4) != 0)
		return 0;
	while (pos + OVNI_SE_HDR <= n) {
		uint8_t flags = p[pos];
		size_t size = OVNI_SE_HDR;
		if (flags & 0x10) {
			uint32_t js;
			if (pos + OVNI_SE_HDR + 4 > n)
				break;
			memcpy(&js, p + pos + OVNI_SE_HDR, 4);
			size += 4 + (size_t)js;
		} else if (flags & 0x0f) {
			size += (size_t)(flags & 0x0f) + 1;
		}
		if (size > n - pos)
			break;
		memcpy(last_clock, p + pos + 4, 8);
		if (p[pos + 1] == 'O' && p[pos + 2] == 'H') {
			switch (p[pos + 3]) {
			case 'x': *st = OVNI_SE_RUNNING; break;
			case 'e': *st = OVNI_SE_DEAD; break;
			case 'p': *st = OVNI_SE_PAUSED; break;
			case 'r': *st = OVNI_SE_RUNNING; break;
			case 'c': *st = OVNI_SE_COOLING; break;
			case 'w': *st = OVNI_SE_WARMING; break;
			default: break;
			}
		}
		if (pos >= from)
			(*events)++;
		pos += size;
		end = pos;
	}
	return end;
}

/* The events that end a thread in state `st` at `clock`, into out (room for 2): their byte
 * count (0: nothing to add). */
static inline size_t ovni_se_ending(enum ovni_se_state st, uint64_t clock,
				    uint8_t out[2 * OVNI_SE_HDR])
{
	size_t n = 0;
	const char *values;

	if (st == OVNI_SE_PAUSED || st == OVNI_SE_WARMING)
		values = "re";
	else if (st == OVNI_SE_RUNNING || st == OVNI_SE_COOLING)
		values = "e";
	else
		return 0;
	for (; *values; values++, n += OVNI_SE_HDR) {
		uint8_t ev[OVNI_SE_HDR] = { 0, 'O', 'H', (uint8_t)*values };
		memcpy(ev + 4, &clock, 8);
		memcpy(out + n, ev, OVNI_SE_HDR);
	}
	return n;
}

#endif
