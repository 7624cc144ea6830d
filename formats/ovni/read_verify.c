/*
 * read_verify: the event rules of the ovni trace linter (see read_ovni.h): models, the ovni
 * model's thread states, payloads and marks, threads dead at the end, and the clock gate.
 *
 * Each stream is walked on its own, in file order: every rule here depends only on the
 * thread's own events and on the metadata, so no global clock order is needed.
 */
#include "formats/ovni/read_ovni.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define OVR_HOUR_NS (3600LL * 1000000000LL)
#define OVR_MAX_STACK 512

enum ovr_th_state { TH_UNKNOWN, TH_RUNNING, TH_PAUSED, TH_COOLING, TH_WARMING, TH_DEAD };

struct ovr_mark_stack {
	int64_t v[OVR_MAX_STACK];
	size_t n;
};

struct ovr_thread_state {
	enum ovr_th_state st;
	bool has_cpu;
	struct ovr_mark_stack *stacks; /* per trace mark type */
};

static const struct ovr_cpu *ovr_cpu_index(const struct ovr_loom *l, int index)
{
	static const struct ovr_cpu vcpu = { -1, -1 };
	if (index == -1)
		return &vcpu;
	if (index < 0 || (size_t)index >= l->ncpus)
		return NULL;
	return &l->cpus[index];
}

static int ovr_check_O(struct ovr_trace *t, const struct ovr_stream *s, struct ovr_thread_state *th,
		       const struct ovr_event *ev, struct rd_error *err)
{
	const struct ovr_loom *l = &t->looms[t->procs[s->proc].loom];
	const char *f = s->obs;
	int64_t o = (int64_t)ev->off;
	int tid = s->tid;

#define EV_ERR(...) rd_error_set(err, OVR_RULE_EVENT, f, o, __VA_ARGS__)
#define TH_ERR(...) rd_error_set(err, OVR_RULE_THREAD, f, o, __VA_ARGS__)
	switch (ev->mcv[1]) {
	case 'H':
		switch (ev->mcv[2]) {
		case 'C': return 0;
		case 'x': {
			int32_t index;
			if (th->st == TH_RUNNING)
				return TH_ERR("cannot execute thread %d, is already running", tid);
			if (ev->payload_size < 4 || (ev->flags & 0x10))
				return EV_ERR("missing payload in thread %d execute event", tid);
			index = (int32_t)rd_get32(ev->payload, false);
			if (!ovr_cpu_index(l, index))
				return EV_ERR("cannot find CPU with index %d in loom %s", index,
					      l->name);
			th->st = TH_RUNNING;
			th->has_cpu = true;
			return 0;
		}
		case 'e':
			if (th->st != TH_RUNNING && th->st != TH_COOLING)
				return TH_ERR("cannot end thread %d: state not running or cooling",
					      tid);
			th->st = TH_DEAD;
			th->has_cpu = false;
			return 0;
		case 'p':
			if (th->st != TH_RUNNING && th->st != TH_COOLING)
				return TH_ERR(
					"cannot pause thread %d: state not running or cooling",
					tid);
			th->st = TH_PAUSED;
			return 0;
		case 'r':
			if (th->st != TH_PAUSED && th->st != TH_WARMING)
				return TH_ERR(
					"cannot resume thread %d: state not paused or warming",
					tid);
			th->st = TH_RUNNING;
			return 0;
		case 'c':
			if (th->st != TH_RUNNING)
				return TH_ERR("cannot cool thread %d: state not running", tid);
			th->st = TH_COOLING;
			return 0;
		case 'w':
			if (th->st != TH_PAUSED)
				return TH_ERR("cannot warm thread %d: state not paused", tid);
			th->st = TH_WARMING;
			return 0;
		default: return EV_ERR("unknown thread event value %c", ev->mcv[2]);
		}
	case 'A':
		if (ev->mcv[2] == 's') {
			if (!th->has_cpu)
				return TH_ERR("thread %d doesn't have CPU set", tid);
			if (th->st != TH_RUNNING && th->st != TH_COOLING && th->st != TH_WARMING)
				return TH_ERR("thread %d is not active", tid);
			if (ev->payload_size != 4 || (ev->flags & 0x10))
				return EV_ERR("unexpected payload size %zu", ev->payload_size);
			if (!ovr_cpu_index(l, (int32_t)rd_get32(ev->payload, false)))
				return EV_ERR("cannot find cpu with index %d",
					      (int32_t)rd_get32(ev->payload, false));
			return 0;
		}
		if (ev->mcv[2] == 'r') {
			int32_t rtid;
			bool found = false;
			if (ev->payload_size != 8 || (ev->flags & 0x10))
				return EV_ERR("unexpected payload size %zu", ev->payload_size);
			rtid = (int32_t)rd_get32(ev->payload + 4, false);
			for (size_t i = 0; i < t->nstreams && !found; i++)
				found = t->streams[i].tid == rtid &&
					t->procs[t->streams[i].proc].loom == t->procs[s->proc].loom;
			if (!found)
				return EV_ERR("thread %d not found", rtid);
			if (!ovr_cpu_index(l, (int32_t)rd_get32(ev->payload, false)))
				return EV_ERR("cannot find CPU with index %d",
					      (int32_t)rd_get32(ev->payload, false));
			return 0;
		}
		return EV_ERR("unknown affinity event value %c", ev->mcv[2]);
	case 'C':
		if (ev->mcv[2] == 'n') {
			ovr_warn(t, "ignoring old event OCn (%s, offset %" PRIu64 ")", s->relpath,
				 ev->off);
			return 0;
		}
		return EV_ERR("unknown cpu event value %c", ev->mcv[2]);
	case 'F':
		if (ev->mcv[2] != '[' && ev->mcv[2] != ']')
			return EV_ERR("unexpected value '%c' (expecting '[' or ']')", ev->mcv[2]);
		return 0;
	case 'U':
	case 'B': return 0;
	case 'M': {
		int64_t value;
		int32_t type;
		size_t k;
		struct ovr_mark_stack *st;

		if (ev->payload_size != 12 || (ev->flags & 0x10))
			return EV_ERR("unexpected payload size %zu", ev->payload_size);
		value = (int64_t)rd_get64(ev->payload, false);
		type = (int32_t)rd_get32(ev->payload + 8, false);
		for (k = 0; k < t->nmarks && t->marks[k].type != type; k++)
			;
		if (k == t->nmarks)
			return rd_error_set(err, OVR_RULE_MARK, f, o,
					    "cannot find mark with type %ld", (long)type);
		if (value == 0)
			return rd_error_set(err, OVR_RULE_MARK, f, o,
					    "mark value cannot be zero, type %ld", (long)type);
		st = &th->stacks[k];
		switch (ev->mcv[2]) {
		case '[':
			if (!t->marks[k].stack)
				return rd_error_set(
					err, OVR_RULE_MARK, f, o,
					"mark type %d: cannot push on non-stack channel", type);
			if (st->n >= OVR_MAX_STACK)
				return rd_error_set(err, OVR_RULE_MARK, f, o,
						    "mark type %d: channel stack full", type);
			st->v[st->n++] = value;
			return 0;
		case ']':
			if (!t->marks[k].stack)
				return rd_error_set(err, OVR_RULE_MARK, f, o,
						    "mark type %d: cannot pop on non-stack channel",
						    type);
			if (st->n == 0)
				return rd_error_set(err, OVR_RULE_MARK, f, o,
						    "mark type %d: channel stack empty", type);
			if (st->v[st->n - 1] != value)
				return rd_error_set(err, OVR_RULE_MARK, f, o,
						    "mark type %d: expected value %" PRId64
						    " different from top of stack %" PRId64,
						    type, value, st->v[st->n - 1]);
			st->n--;
			return 0;
		case '=':
			if (t->marks[k].stack)
				return rd_error_set(
					err, OVR_RULE_MARK, f, o,
					"mark type %d: cannot set on non-single channel", type);
			return 0;
		default: return EV_ERR("unknown mark event value %c", ev->mcv[2]);
		}
	}
	default: return EV_ERR("unknown ovni event category %c", ev->mcv[1]);
	}
#undef EV_ERR
#undef TH_ERR
}

int ovr_verify(struct ovr_trace *t, struct ovr_totals *tot, struct rd_error *err)
{
	struct ovr_thread_state th;
	int64_t t0 = 0;
	size_t t0_s = 0;
	bool any_first = false;

	memset(tot, 0, sizeof(*tot));
	th.stacks = calloc(t->nmarks ? t->nmarks : 1, sizeof(*th.stacks));
	if (!th.stacks)
		return rd_error_set(err, OVR_RULE_IO, t->dir, -1, "out of memory");
	for (size_t i = 0; i < t->nstreams; i++) {
		struct ovr_stream *s = &t->streams[i];
		struct ovr_cursor c;
		struct ovr_event ev;
		int r;

		th.st = TH_UNKNOWN;
		th.has_cpu = false;
		memset(th.stacks, 0, (t->nmarks ? t->nmarks : 1) * sizeof(*th.stacks));
		s->events = s->flush_markers = s->jumbo = 0;
		ovr_cursor_init(&c, t, s);
		while ((r = ovr_cursor_next(&c, &ev, err)) > 0) {
			unsigned char m = (unsigned char)ev.mcv[0];
			if (s->events == 0)
				s->first_clock = ev.clock;
			s->last_clock = ev.clock;
			s->events++;
			s->jumbo += (ev.flags & 0x10) != 0;
			s->flush_markers += ev.mcv[0] == 'O' && ev.mcv[1] == 'F';
			if (!ovr_model_of((char)m)) {
				r = rd_error_set(err, OVR_RULE_MODEL, s->obs, (int64_t)ev.off,
						 "model not registered for event %s", ev.mcv);
				break;
			}
			if (!t->enabled[m]) {
				r = rd_error_set(
					err, OVR_RULE_MODEL, s->obs, (int64_t)ev.off,
					"model %s not enabled for event %s (missing call to "
					"ovni_thread_require(\"%s\", ...)?)",
					ovr_model_of((char)m)->name, ev.mcv,
					ovr_model_of((char)m)->name);
				break;
			}
			if (m == 'O' && (r = ovr_check_O(t, s, &th, &ev, err)) < 0)
				break;
			r = 0;
		}
		if (r < 0) {
			free(th.stacks);
			return -1;
		}
		if (s->events == 0)
			ovr_warn(t, "stream '%s' has zero events", s->relpath);
		if (t->enabled['O'] && th.st != TH_DEAD) {
			free(th.stacks);
			return rd_error_set(err, OVR_RULE_THREAD, s->obs, -1,
					    "thread %d is not dead (%s): its stream does not end "
					    "with OHe",
					    s->tid, s->relpath);
		}
		/* ovniemu: every stream's first event within an hour of the first stream's */
		if (s->events && !any_first) {
			t0 = (int64_t)s->first_clock;
			t0_s = i;
			any_first = true;
		} else if (s->events && llabs((int64_t)s->first_clock - t0) > OVR_HOUR_NS) {
			free(th.stacks);
			return rd_error_set(
				err, OVR_RULE_CLOCK, s->obs, -1,
				"stream %s has starting clock too far from %s: delta=%.2f "
				"h (run 'ovnisync' to set the offsets)",
				s->relpath, t->streams[t0_s].relpath,
				(double)llabs((int64_t)s->first_clock - t0) / 3.6e12);
		}
		tot->events += s->events;
		tot->flush_markers += s->flush_markers;
		tot->jumbo += s->jumbo;
		tot->bytes += s->size;
	}
	free(th.stacks);
	return 0;
}
