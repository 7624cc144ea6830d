/*
 * ovni_emit: the event path of ovni-rt: building events, ovni_clock_now(), ovni_ev_emit(),
 * jumbo events, ovni_flush() and the mark events.
 *
 * The bytes a thread emits go, in the stream's own encoding, into the thread's librecord
 * ring (rec_reserve/rec_commit). The ring runs librecord's help policy by default: the
 * flusher writes full chunks to the stream file in the background, and when it has not
 * written the next one yet, the producer writes its own (under the drain policy, always).
 * Those stalls are not marked in the stream: its OF[ / OF] pairs are libovni's, at the
 * places where libovni 1.14 would write its full 2 MiB buffer (ovni_ob_add below), so that
 * for the same calls the stream has libovni's events in libovni's order. ovni_flush's own
 * pair goes before the thread's next event, if any: libovni puts it at the start of its
 * emptied buffer, which ovni_thread_free drops unwritten.
 * The stream header is the first record of a thread's ring (not counted as an event).
 *
 * The ring is a byte stream: chunks reach the sink in order and are written back to back, so
 * a jumbo event larger than what is left of a chunk is split across chunks (salvage cuts a
 * stream at its last whole event).
 *
 * Hot path of ovni_ev_emit (one event): TLS load, one 16-bit test (busy guard + front-end
 * hold), a bounds test, a fixed 28-byte copy, libovni's buffer count (an add and a compare),
 * the committed length (store-release), the guard cleared. No lock, no atomic
 * read-modify-write, no syscall, no allocation.
 */
#include "ovni-rt/internal.h"
#include "ovni-rt/ovni_clock.h"

#include <string.h>
#include <time.h>

#define barrier() __asm__ __volatile__("" ::: "memory")

#define OVNI_HDR_SIZE ((size_t)sizeof(struct ovni_ev_header))
#define OVNI_EV_MAX ((size_t)sizeof(struct ovni_ev))

/* Opaque to the optimiser: keeps a value chosen by a branch from being turned back into a
 * conditional move or a table load of the flags byte. */
#define ovni_opaque(x) __asm__("" : "+r"(x))

_Static_assert(sizeof(struct ovni_ev_header) == 12, "event header is 12 bytes");
_Static_assert(sizeof(struct ovni_ev) == 28, "struct ovni_ev is 28 bytes");
_Static_assert(sizeof(struct ovni_stream_header) == 8, "stream header is 8 bytes");

static inline size_t ovni_normal_psize(uint8_t flags)
{
	size_t n = flags & 0x0f;
	return n ? n + 1 : 0;
}

/* --- building events -------------------------------------------------------------------- */

uint64_t ovni_clock_now(void)
{
	return oclk_now();
}

void ovni_ev_set_clock(struct ovni_ev *ev, uint64_t clock)
{
	ev->header.clock = clock;
}

uint64_t ovni_ev_get_clock(const struct ovni_ev *ev)
{
	return ev->header.clock;
}

void ovni_ev_set_mcv(struct ovni_ev *ev, const char *mcv)
{
	ev->header.model = (uint8_t)mcv[0];
	ev->header.category = (uint8_t)mcv[1];
	ev->header.value = (uint8_t)mcv[2];
}

static int ovni_psize(const struct ovni_ev *ev)
{
	if (ev->header.flags & OVNI_EV_JUMBO)
		return (int)(sizeof(ev->payload.jumbo.size) + ev->payload.jumbo.size);
	return (int)ovni_normal_psize(ev->header.flags);
}

int ovni_payload_size(const struct ovni_ev *ev)
{
	return ovni_psize(ev);
}

int ovni_ev_size(const struct ovni_ev *ev)
{
	return (int)OVNI_HDR_SIZE + ovni_psize(ev);
}

static void ovni_payload_append(const char *func, struct ovni_ev *ev, const void *buf, int size)
{
	size_t have;

	if (ev->header.flags & OVNI_EV_JUMBO)
		ovni_die(func, "event is marked as jumbo: its payload cannot grow");
	if (size < 2)
		ovni_die(func,
			 "payload size %d too small (payloads of 1 byte cannot be encoded; "
			 "the smallest is 2)",
			 size);
	have = ovni_normal_psize(ev->header.flags);
	if (have + (size_t)size > sizeof(ev->payload))
		ovni_die(func, "no space left for %d bytes (payload has %zu of 16 bytes)", size,
			 have);
	/* the usual sizes as single moves: a memcpy call would cost as much as the rest */
	switch (size) {
	case 2: memcpy(&ev->payload.u8[have], buf, 2); break;
	case 4: memcpy(&ev->payload.u8[have], buf, 4); break;
	case 8: memcpy(&ev->payload.u8[have], buf, 8); break;
	case 16: memcpy(&ev->payload.u8[have], buf, 16); break;
	default:
		for (int i = 0; i < size; i++)
			ev->payload.u8[have + (size_t)i] = ((const uint8_t *)buf)[i];
	}
	have += (size_t)size;
	ev->header.flags = (uint8_t)((ev->header.flags & 0xf0) | ((have - 1) & 0x0f));
}

void ovni_payload_add(struct ovni_ev *ev, const uint8_t *buf, int size)
{
	uint8_t f = ev->header.flags;
	size_t have;

	/*
	 * The flags byte was stored an instant ago by the caller's previous ovni_payload_add:
	 * computing the offset from its value would put a store-to-load forwarding delay (~10
	 * cycles) on the path of every call. The usual payload sizes are recognised by
	 * branches instead, which the CPU predicts (calls follow the same pattern event after
	 * event), so the stores below need not wait for the load.
	 */
	if (f == 0) {
		have = 0;
	} else if (f == 3) {
		have = 4;
		ovni_opaque(have);
	} else if (f == 7) {
		have = 8;
		ovni_opaque(have);
	} else if (f == 11) {
		have = 12;
		ovni_opaque(have);
	} else {
		ovni_payload_append("ovni_payload_add", ev, buf, size);
		return;
	}
	if (size == 4 && have <= 12) {
		memcpy(&ev->payload.u8[have], buf, 4);
		ev->header.flags = (uint8_t)(have + 3);
	} else if (size == 8 && have <= 8) {
		memcpy(&ev->payload.u8[have], buf, 8);
		ev->header.flags = (uint8_t)(have + 7);
	} else {
		ovni_payload_append("ovni_payload_add", ev, buf, size);
	}
}

/* --- readiness -------------------------------------------------------------------------- */

static uint32_t ovni_fork_warned;

/* Why the calling thread may not record (t is rec_self, a sentinel or not READY): dies on
 * misuse, returns quietly when recording is off or the thread is going away. */
static void ovni_not_ready(const char *func, struct rec_thread *t)
{
	if (t == REC_THREAD_OFF) {
		/* recording is off: set-up failed (one warning said why); the slow path counts
		 * the event lost if it is this thread's ring that could not be had (disk full) */
		(void)rec_thread_get_slow();
		return;
	}
	if (t == REC_THREAD_DEAD) {
		if (ovni_tls_freed)
			ovni_die(func, "thread is not initialized (ovni_thread_free() was called)");
		rec_count_lost_dead(1); /* after the thread's TSD destructor, or finish */
		return;
	}
	if (t == NULL && ovni_proc.forked &&
	    __atomic_load_n(&ovni_proc.state, __ATOMIC_ACQUIRE) != OVNI_PROC_READY) {
		if (!__atomic_exchange_n(&ovni_fork_warned, 1, __ATOMIC_RELAXED))
			ovni_warn(
				"%s: called in a fork child before ovni_proc_init() and "
				"ovni_thread_init(): its events are dropped (the parent's streams "
				"are left untouched)",
				func);
		return;
	}
	if (t == NULL && __atomic_load_n(&ovni_proc.state, __ATOMIC_ACQUIRE) == OVNI_PROC_UNINIT)
		ovni_die(func, "thread is not initialized (call ovni_proc_init() and "
			       "ovni_thread_init() first)");
	if (t && (uintptr_t)t > REC_THREAD_SENTINEL_MAX &&
	    ovni_thread_of(t)->state == OVNI_THREAD_FINAL)
		return; /* finished by exit while it still runs: nothing more is written */
	ovni_die(func, "thread is not initialized (call ovni_thread_init() first)");
}

struct rec_thread *ovni_thread_ready(const char *func)
{
	struct rec_thread *t = rec_self;

	if (likely((uintptr_t)t > REC_THREAD_SENTINEL_MAX &&
		   ovni_thread_of(t)->state == OVNI_THREAD_READY))
		return t;
	ovni_not_ready(func, t);
	return NULL;
}

/* --- writing into the ring -------------------------------------------------------------- */

/* A stamp for the runtime's own events (flush markers): not before the last event of the
 * stream, and not after what either clock a program may use (ours or CLOCK_MONOTONIC) reads
 * now, so the program's next event cannot be earlier. */
static uint64_t ovni_marker_clock(uint64_t after)
{
	uint64_t ours = oclk_now(), mono = rec_clock_mono_ns();
	uint64_t now = ours < mono ? ours : mono;
	return now > after ? now : after;
}

static void ovni_put_marker(uint8_t *p, const char *mcv, uint64_t clock)
{
	struct ovni_ev_header h = { 0, (uint8_t)mcv[0], (uint8_t)mcv[1], (uint8_t)mcv[2], clock };
	memcpy(p, &h, OVNI_HDR_SIZE);
}

/* Hand the current chunk over and take the next one for n bytes (librecord's slow path:
 * the drain policy writes the full chunk here, the block policy waits for a free one). */
static uint8_t *ovni_switch(struct rec_thread *t, size_t n)
{
	uint8_t *p = rec_reserve_slow(t, n);
	/* the flusher writes the full chunk (block policy) and faults in the one after this */
	rec_flusher_wake();
	return p;
}

/*
 * libovni's buffer (libovni 1.14, ovni_ev_add): a thread's events go into a buffer of
 * OVNI_MAX_EV_BUF bytes, written out when an event of n bytes does not fit, that is when
 * len + n >= OVNI_MAX_EV_BUF (a buffer that would be exactly full is written too). The event
 * then starts the emptied buffer, and an OF[ and an OF] (stamped around the write) follow it
 * through the same rule: after a jumbo event of nearly 2 MiB the OF[ or the OF] does not fit
 * either, and a second pair comes inside the first. ovni_flush writes the buffer and starts
 * the emptied one with its own pair (24 bytes); ovni_thread_free writes nothing. The pairs
 * count in the buffer like any event. ovni_thread.ob_len is the length libovni's buffer
 * would have; the stream gets a pair wherever libovni's has one, stamped with
 * ovni_marker_clock (nothing is written there: the pair lasts an instant).
 */

/* Count an event of n bytes into libovni's buffer; 1 if libovni writes the buffer out for
 * it (a pair then follows the event). */
static inline int ovni_ob_add(struct ovni_thread *ot, size_t n)
{
	if (ot->ob_len + n >= (uint64_t)OVNI_MAX_EV_BUF) {
		ot->ob_len = n;
		return 1;
	}
	ot->ob_len += n;
	return 0;
}

static void ovni_ob_pair(struct rec_thread *t, struct ovni_thread *ot);

/* Append one flush marker (busy set), counted into libovni's buffer as libovni adds it. */
static void ovni_ob_marker(struct rec_thread *t, struct ovni_thread *ot, const char *mcv)
{
	int full = ovni_ob_add(ot, OVNI_HDR_SIZE);
	/* stamped now: after a nested pair, the outer OF] comes after its events */
	uint64_t clock = ovni_marker_clock(ot->last_clock);
	uint8_t *p = t->pos;

	if ((size_t)(t->end - p) >= OVNI_HDR_SIZE)
		t->pos = p + OVNI_HDR_SIZE;
	else if (!(p = ovni_switch(t, OVNI_HDR_SIZE)))
		return; /* dropped and counted (the session is finishing) */
	ovni_put_marker(p, mcv, clock);
	ot->last_clock = clock;
	rec_commit(t);
	if (full)
		ovni_ob_pair(t, ot); /* at most once more: the buffer is empty then */
}

/* The pair after an event for which libovni wrote its full buffer (busy set). */
static void __attribute__((noinline, cold)) ovni_ob_pair(struct rec_thread *t,
							 struct ovni_thread *ot)
{
	ot->flush_pairs++;
	ovni_ob_marker(t, ot, "OF[");
	ovni_ob_marker(t, ot, "OF]");
}

/* ovni_ev_emit's hot path counted n bytes to a buffer libovni writes out first: the event
 * starts the emptied buffer, the pair follows it (busy set). */
static void __attribute__((noinline, cold)) ovni_ob_full(struct rec_thread *t, size_t n)
{
	struct ovni_thread *ot = ovni_thread_of(t);

	ot->ob_len = n;
	ovni_ob_pair(t, ot);
}

/* Append a normal event of n bytes (busy is set by the caller), and libovni's pair after it
 * where libovni writes its full buffer. */
static void ovni_put(struct rec_thread *t, const void *ev, size_t n, uint64_t clock)
{
	struct ovni_thread *ot = ovni_thread_of(t);
	int full = ovni_ob_add(ot, n);
	uint8_t *p = t->pos;

	if (likely((size_t)(t->end - p) >= n))
		t->pos = p + n;
	else if (!(p = ovni_switch(t, n)))
		return; /* dropped and counted (the session is finishing) */
	memcpy(p, ev, n);
	ot->last_clock = clock;
	rec_commit(t);
	if (unlikely(full))
		ovni_ob_pair(t, ot);
}

/*
 * Metadata changed since it was last written: rewritten now, so that a crash loses as little
 * as possible, unless it was written less than OVNI_META_PERIOD_NS ago (then by a later emit
 * past that time, or by ovni_flush, ovni_attr_flush, the thread's end: whichever comes
 * first). A whole rewrite per change made a program that sets a mark label or an attribute
 * per event quadratic: 2000 labels took 6.4 s (libovni: 0.03 s).
 */
#define OVNI_META_PERIOD_NS 100000000ull

static void ovni_meta_pending(struct rec_thread *t, struct ovni_thread *ot, int now)
{
	uint64_t ns = oclk_now();

	if (!now && ns < ot->meta_due)
		return; /* the hold stays: emits take the slow path until then */
	t->fe_hold &= (uint8_t)~OVNI_HOLD_META;
	ot->meta_due = ns + OVNI_META_PERIOD_NS;
	ovni_sink_write_thread_meta(t);
}

/* The OF[ / OF] pair of the last ovni_flush, now that another event follows it (busy set). */
static void ovni_put_flush_pair(struct rec_thread *t, struct ovni_thread *ot)
{
	uint8_t *p = t->pos;

	t->fe_hold &= (uint8_t)~OVNI_HOLD_FLUSH;
	if ((size_t)(t->end - p) >= 2 * OVNI_HDR_SIZE)
		t->pos = p + 2 * OVNI_HDR_SIZE;
	else if (!(p = ovni_switch(t, 2 * OVNI_HDR_SIZE)))
		return; /* dropped and counted (the session is finishing) */
	ovni_put_marker(p, "OF[", ot->flush_t0);
	ovni_put_marker(p + OVNI_HDR_SIZE, "OF]", ot->flush_t1);
	ot->flush_pairs++;
	t->events++;
	rec_commit(t);
}

/* The slow part of an emit by the runtime or the program: guard, pending metadata (written
 * at once with `meta_now`), pending flush markers. Returns 0 when the caller may write (busy
 * is then set). */
static int ovni_enter(struct rec_thread *t, int meta_now)
{
	struct ovni_thread *ot = ovni_thread_of(t);

	if (t->busy) {
		/* an emit from a signal handler that interrupted an emit: the stream would be
		 * torn, so the event is dropped and counted */
		ot->nested++;
		rec_count_lost(t, REC_LOST_NESTED, 1);
		return -1;
	}
	t->busy = 1;
	barrier();
	if (t->fe_hold & OVNI_HOLD_META)
		ovni_meta_pending(t, ot, meta_now);
	if (t->fe_hold & OVNI_HOLD_FLUSH)
		ovni_put_flush_pair(t, ot);
	return 0;
}

static void ovni_leave(struct rec_thread *t)
{
	barrier();
	t->busy = 0;
}

void ovni_emit_internal(struct rec_thread *t, const struct ovni_ev *ev)
{
	if (ovni_enter(t, 0) < 0)
		return;
	ovni_put(t, ev, (size_t)ovni_ev_size(ev), ev->header.clock);
	ovni_leave(t);
}

static void __attribute__((noinline, cold)) ovni_emit_slow(struct rec_thread *t, struct ovni_ev *ev)
{
	if ((uintptr_t)t <= REC_THREAD_SENTINEL_MAX ||
	    ovni_thread_of(t)->state != OVNI_THREAD_READY) {
		ovni_not_ready("ovni_ev_emit", t);
		return;
	}
	/* the jumbo flag set by the program: libovni writes such an event as it is,
	 * ovni_ev_size() bytes from the struct; so do we while its data fits in the struct
	 * (libovni would read past it) */
	if ((ev->header.flags & OVNI_EV_JUMBO) &&
	    ev->payload.jumbo.size > sizeof(ev->payload) - sizeof(ev->payload.jumbo.size))
		ovni_die("ovni_ev_emit",
			 "event %c%c%c has the jumbo flag and %u bytes of data, more than the %zu "
			 "an event holds: emit it with ovni_ev_jumbo_emit()",
			 ev->header.model, ev->header.category, ev->header.value,
			 (unsigned)ev->payload.jumbo.size,
			 sizeof(ev->payload) - sizeof(ev->payload.jumbo.size));
	ovni_emit_internal(t, ev);
}

/*
 * Copy an event the program has just built into the ring, with no call and no stall: the
 * program wrote the fields a moment ago (one byte each for flags and MCV, 8 bytes for the
 * clock, 2 to 16 bytes per ovni_payload_add), so loads that each fall inside one of those
 * stores are served from the store buffer, while a wide load spanning several of them
 * (what memcpy does) must wait for all of them to reach the cache. The whole 16-byte payload
 * area is read in 4-byte words and written in two 8-byte stores (left alone, gcc packs the
 * four words into one vector store through three shuffles: more uops on the path of every
 * 28-byte event, ~0.5-1 ns with two threads); bytes past the event are scratch space beyond
 * the committed length, overwritten by the next event. Returns the event's clock.
 */
static inline uint64_t ovni_copy_event(uint8_t *p, const struct ovni_ev *ev, uint8_t flags)
{
	const uint8_t *s = (const uint8_t *)ev;
	uint32_t w =
		(uint32_t)flags | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 | (uint32_t)s[3] << 24;
	uint64_t clock;

	memcpy(&clock, s + 4, 8);
	memcpy(p, &w, 4);
	memcpy(p + 4, &clock, 8);
	if (flags & 0x0f) {
		uint32_t a, b, c, d;
		/* opaque: or the compiler merges them back into one 16-byte load */
		memcpy(&a, s + 12, 4);
		ovni_opaque(a);
		memcpy(&b, s + 16, 4);
		ovni_opaque(b);
		memcpy(&c, s + 20, 4);
		ovni_opaque(c);
		memcpy(&d, s + 24, 4);
		ovni_opaque(d);
		uint64_t lo = (uint64_t)a | (uint64_t)b << 32, hi = (uint64_t)c | (uint64_t)d << 32;
		memcpy(p + 12, &lo, 8);
		ovni_opaque(p); /* two stores, not one vector store */
		memcpy(p + 20, &hi, 8);
	}
	return clock;
}

void ovni_ev_emit(struct ovni_ev *ev)
{
	struct rec_thread *t = rec_self;
	struct ovni_thread *ot;
	uint8_t *p, flags;
	uint64_t clock, len;
	size_t n;

	if (unlikely((uintptr_t)t <= REC_THREAD_SENTINEL_MAX))
		return ovni_emit_slow(t, ev);
	flags = ev->header.flags;
	/* busy, a front-end hold (metadata to write, thread not READY), a jumbo or reserved
	 * flag: slow path */
	if (unlikely(*(volatile uint16_t *)&t->busy | (flags & 0xf0)))
		return ovni_emit_slow(t, ev);
	/* the guard before the write position is read: an emit from a signal handler between
	 * the test and this store leaves pos consistent again, one after it goes to the slow
	 * path (read before the guard, pos went stale: the handler's event was overwritten, or
	 * pos left in a chunk the handler had switched away from) */
	t->busy = 1;
	barrier();
	p = t->pos;
	/* less than a whole struct ovni_ev left in the chunk: slow path */
	if (unlikely((size_t)(t->end - p) < OVNI_EV_MAX)) {
		barrier();
		t->busy = 0;
		return ovni_emit_slow(t, ev);
	}
	clock = ovni_copy_event(p, ev, flags);
	/* the two usual sizes by branches (predicted), not computed from the flags byte the
	 * program stored an instant ago: the next event's position need not wait for it */
	if (flags == 0) {
		n = OVNI_HDR_SIZE;
	} else if (flags == 0x0f) {
		n = OVNI_EV_MAX;
		ovni_opaque(n);
	} else {
		n = OVNI_HDR_SIZE + ovni_normal_psize(flags);
	}
	t->pos = p + n;
	ot = ovni_thread_of(t);
	ot->last_clock = clock;
	rec_commit(t);
	/* stored after the commit: next to last_clock, gcc packs the two stores into one
	 * vector store through two moves and a shuffle */
	len = ot->ob_len + n;
	ot->ob_len = len;
	if (unlikely(len >= (uint64_t)OVNI_MAX_EV_BUF))
		ovni_ob_full(t, n);
	barrier();
	t->busy = 0;
}

/* Copy bytes [off, off + n) of the concatenation (a, alen) + (b, ...) to dst. */
static void ovni_copy2(uint8_t *dst, const uint8_t *a, size_t alen, const uint8_t *b, size_t off,
		       size_t n)
{
	if (off < alen) {
		size_t k = alen - off < n ? alen - off : n;
		memcpy(dst, a + off, k);
		dst += k;
		off += k;
		n -= k;
	}
	if (n)
		memcpy(dst, b + (off - alen), n);
}

static void ovni_put_jumbo(struct rec_thread *t, const struct ovni_ev *ev, const uint8_t *buf,
			   uint32_t bufsize)
{
	struct ovni_thread *ot = ovni_thread_of(t);
	const size_t hsize = OVNI_HDR_SIZE + sizeof(uint32_t);
	const size_t total = hsize + bufsize;
	const size_t room = rec_sess.cfg.chunk_size - sizeof(struct rec_chunk);
	const int full = ovni_ob_add(ot, total);
	size_t off = 0;
	uint8_t *p;

	while (off < total) {
		size_t space = (size_t)(t->end - t->pos), k;
		/* start in a fresh chunk rather than split an event that fits in one */
		if (space == 0 ||
		    (off == 0 && space < total && total <= room - 2 * OVNI_HDR_SIZE)) {
			k = total - off < room ? total - off : room;
			p = ovni_switch(t, k);
			if (!p)
				return; /* the session is finishing */
		} else {
			k = total - off < space ? total - off : space;
			p = t->pos;
			t->pos = p + k;
		}
		ovni_copy2(p, (const uint8_t *)ev, hsize, buf, off, k);
		off += k;
		/* publish what is there: bytes of a split event, not yet a whole event */
		__atomic_store_n(&t->chunk->committed,
				 (uint64_t)(t->pos - rec_chunk_data(t->chunk)), __ATOMIC_RELEASE);
	}
	ot->last_clock = ev->header.clock;
	rec_commit(t); /* counts the event */
	if (full)
		ovni_ob_pair(t, ot);
}

void ovni_ev_jumbo_emit(struct ovni_ev *ev, const uint8_t *buf, uint32_t bufsize)
{
	struct rec_thread *t = ovni_thread_ready("ovni_ev_jumbo_emit");

	if (ovni_psize(ev) != 0)
		ovni_die("ovni_ev_jumbo_emit", "the event payload must be empty (it has %d bytes)",
			 ovni_psize(ev));
	if ((uint64_t)OVNI_HDR_SIZE + sizeof(uint32_t) + bufsize >= (uint64_t)OVNI_MAX_EV_BUF)
		ovni_die("ovni_ev_jumbo_emit",
			 "event too large: %u bytes of jumbo data (the "
			 "event must stay below %lld bytes)",
			 bufsize, (long long)OVNI_MAX_EV_BUF);
	if (bufsize && !buf)
		ovni_die("ovni_ev_jumbo_emit", "buf is NULL with bufsize %u", bufsize);
	/* as libovni: the size becomes the payload, then the jumbo flag is set */
	ovni_payload_append("ovni_ev_jumbo_emit", ev, &bufsize, sizeof(bufsize));
	ev->header.flags |= OVNI_EV_JUMBO;
	if (!t || ovni_enter(t, 0) < 0)
		return;
	ovni_put_jumbo(t, ev, buf, bufsize);
	ovni_leave(t);
}

/* --- flush ------------------------------------------------------------------------------ */

/* Wait until chunk c of t (handed over) has been written and given back: under the help
 * policy the helper writes it for the thread (rec_thread_drain_own_try) unless the flusher is
 * at it; otherwise the flusher is asked to hurry. Gives up when the session ends (finish
 * writes it) or after a minute. */
static void ovni_wait_written(struct rec_thread *t, const struct rec_chunk *c)
{
	struct timespec ts = { 0, 20000 };

	for (int i = 0; i < 60000 && __atomic_load_n(&c->state, __ATOMIC_ACQUIRE) == REC_CHUNK_FULL;
	     i++) {
		if (__atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) != REC_SESSION_ACTIVE)
			return;
		if (rec_sess.cfg.policy == REC_POLICY_HELP && rec_thread_drain_own_try(t) == 0)
			continue;
		rec_flusher_wake();
		nanosleep(&ts, NULL);
		if (ts.tv_nsec < 1000000)
			ts.tv_nsec *= 2;
	}
}

void ovni_flush(void)
{
	struct rec_thread *t = ovni_thread_ready("ovni_flush");
	struct rec_chunk *c;
	struct ovni_thread *ot;
	uint64_t t0, t1;
	uint8_t *p;

	if (__atomic_load_n(&ovni_proc.state, __ATOMIC_ACQUIRE) != OVNI_PROC_READY && t)
		ovni_die("ovni_flush", "process not ready (ovni_proc_fini() was called)");
	if (!t || ovni_enter(t, 1) < 0)
		return;
	ot = ovni_thread_of(t);
	t0 = ovni_marker_clock(ot->last_clock);
	/* end the current chunk here: the slow path hands it over (the drain policy has us
	 * write it), then we wait until it is in the stream file, as libovni's flush returns
	 * once its buffer is written */
	c = t->chunk;
	if (c)
		t->end = t->pos;
	p = ovni_switch(t, 2 * OVNI_HDR_SIZE);
	if (c)
		ovni_wait_written(t, c);
	if (p) {
		/* the pair's room is given back: its bytes go before the thread's next event
		 * (ovni_enter), never if ovni_thread_free comes first, as in libovni's stream */
		t->pos = p;
		t1 = ovni_marker_clock(t0);
		ot->flush_t0 = t0;
		ot->flush_t1 = t1;
		ot->last_clock = t1;
		t->fe_hold |= OVNI_HOLD_FLUSH;
	}
	/* libovni's buffer is written and holds the pair (written or not, as libovni's) */
	ot->ob_len = 2 * OVNI_HDR_SIZE;
	ovni_leave(t);
}

/* --- marks ------------------------------------------------------------------------------ */

static void ovni_mark_emit(const char *func, const char *mcv, int32_t type, int64_t value)
{
	struct rec_thread *t;
	struct ovni_ev ev;
	uint64_t now;

	if (value == 0)
		ovni_die(func, "value cannot be 0, type %ld", (long)type);
	t = ovni_thread_ready(func);
	if (!t)
		return;
	memset(&ev, 0, sizeof(ev));
	ovni_ev_set_mcv(&ev, mcv);
	ovni_payload_append(func, &ev, &value, sizeof(value));
	ovni_payload_append(func, &ev, &type, sizeof(type));
	/* never before the previous event, whatever clock the program stamps its own with */
	now = oclk_now();
	ev.header.clock = now > ovni_thread_of(t)->last_clock ? now : ovni_thread_of(t)->last_clock;
	ovni_emit_internal(t, &ev);
}

void ovni_mark_push(int32_t type, int64_t value)
{
	ovni_mark_emit("ovni_mark_push", "OM[", type, value);
}

void ovni_mark_pop(int32_t type, int64_t value)
{
	ovni_mark_emit("ovni_mark_pop", "OM]", type, value);
}

void ovni_mark_set(int32_t type, int64_t value)
{
	ovni_mark_emit("ovni_mark_set", "OM=", type, value);
}
