/*
 * read_verify: the event rules of the ovni trace linter (see read_ovni.h): models, the ovni
 * model's thread states, payloads and marks, threads dead at the end, and the clock gate.
 *
 * Each stream is walked on its own, in file order: every rule here depends only on the
 * thread's own events and on the metadata, so no global clock order is needed. So with -j N
 * (ovr_verify_jobs) N workers walk the streams, each taking the next one; what a walk finds
 * (its warnings, its broken rule, whether the thread ended dead, its first clock) is kept by
 * the stream's index, and this thread then goes through the streams in order as one walker
 * would: the warnings, the first broken rule and the counts are the same. Streams after
 * the first whose walk broke a rule are not walked.
 */
#include "formats/ovni/read_ovni.h"

#include <inttypes.h>
#include <pthread.h>
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
	struct ovr_trace *warn;	       /* the walk's warnings go to its warnings list */
};

/* what walking one stream found, kept until the streams are gone through in order */
struct ovr_stream_res {
	bool walked, failed, dead;
	struct rd_error err;
	struct ovr_trace warn; /* only its warnings list */
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
			ovr_warn(th->warn, "ignoring old event OCn (%s, offset %" PRIu64 ")",
				 s->relpath, ev->off);
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

/* Walk stream I with TH (a worker's; its stacks sized for t's marks) into RES. */
static void ovr_walk_stream(struct ovr_trace *t, size_t i, struct ovr_thread_state *th,
			    struct ovr_stream_res *res)
{
	struct ovr_stream *s = &t->streams[i];
	struct ovr_cursor c;
	struct ovr_event ev;
	int r;

	th->st = TH_UNKNOWN;
	th->has_cpu = false;
	th->warn = &res->warn;
	memset(th->stacks, 0, (t->nmarks ? t->nmarks : 1) * sizeof(*th->stacks));
	rd_error_clear(&res->err);
	s->events = s->flush_markers = s->jumbo = 0;
	ovr_cursor_init(&c, t, s);
	while ((r = ovr_cursor_next(&c, &ev, &res->err)) > 0) {
		unsigned char m = (unsigned char)ev.mcv[0];
		if (s->events == 0)
			s->first_clock = ev.clock;
		s->last_clock = ev.clock;
		s->events++;
		s->jumbo += (ev.flags & 0x10) != 0;
		s->flush_markers += ev.mcv[0] == 'O' && ev.mcv[1] == 'F';
		if (!ovr_model_of((char)m)) {
			r = rd_error_set(&res->err, OVR_RULE_MODEL, s->obs, (int64_t)ev.off,
					 "model not registered for event %s", ev.mcv);
			break;
		}
		if (!t->enabled[m]) {
			r = rd_error_set(&res->err, OVR_RULE_MODEL, s->obs, (int64_t)ev.off,
					 "model %s not enabled for event %s (missing call to "
					 "ovni_thread_require(\"%s\", ...)?)",
					 ovr_model_of((char)m)->name, ev.mcv,
					 ovr_model_of((char)m)->name);
			break;
		}
		if (m == 'O' && (r = ovr_check_O(t, s, th, &ev, &res->err)) < 0)
			break;
		r = 0;
	}
	res->failed = r < 0;
	res->dead = th->st == TH_DEAD;
	res->walked = true;
}

/* the order of a lone walker: the rules that span streams, checked stream after stream */
struct ovr_replay {
	int64_t t0;
	size_t t0_s;
	bool any_first;
};

/* Stream I's walk, as one walker going through the streams in order takes it: its warnings,
 * its broken rule, then the rules on the whole stream and on the streams before it. */
static int ovr_replay_stream(struct ovr_trace *t, size_t i, struct ovr_stream_res *res,
			     struct ovr_replay *rp, struct ovr_totals *tot, struct rd_error *err)
{
	struct ovr_stream *s = &t->streams[i];

	for (size_t k = 0; k < res->warn.nwarnings; k++)
		ovr_warn(t, "%s", res->warn.warnings[k]);
	if (res->failed) {
		*err = res->err;
		return -1;
	}
	if (s->events == 0)
		ovr_warn(t, "stream '%s' has zero events", s->relpath);
	if (t->enabled['O'] && !res->dead)
		return rd_error_set(err, OVR_RULE_THREAD, s->obs, -1,
				    "thread %d is not dead (%s): its stream does not end with OHe",
				    s->tid, s->relpath);
	/* ovniemu: every stream's first event within an hour of the first stream's */
	if (s->events && !rp->any_first) {
		rp->t0 = (int64_t)s->first_clock;
		rp->t0_s = i;
		rp->any_first = true;
	} else if (s->events && llabs((int64_t)s->first_clock - rp->t0) > OVR_HOUR_NS) {
		return rd_error_set(err, OVR_RULE_CLOCK, s->obs, -1,
				    "stream %s has starting clock too far from %s: delta=%.2f h (run "
				    "'ovnisync' to set the offsets)",
				    s->relpath, t->streams[rp->t0_s].relpath,
				    (double)llabs((int64_t)s->first_clock - rp->t0) / 3.6e12);
	}
	tot->events += s->events;
	tot->flush_markers += s->flush_markers;
	tot->jumbo += s->jumbo;
	tot->bytes += s->size;
	return 0;
}

static void ovr_res_free(struct ovr_stream_res *res)
{
	for (size_t k = 0; k < res->warn.nwarnings; k++)
		free(res->warn.warnings[k]);
	free(res->warn.warnings);
	memset(&res->warn, 0, sizeof(res->warn));
}

struct ovr_verify_job {
	struct ovr_trace *t;
	struct ovr_stream_res *res;
	pthread_mutex_t lock;
	size_t next;	  /* the next stream to take */
	size_t first_bad; /* the lowest stream whose walk broke a rule, nstreams when none */
	bool oom;
};

static void *ovr_verify_worker(void *arg)
{
	struct ovr_verify_job *j = arg;
	struct ovr_thread_state th = { 0 };

	th.stacks = calloc(j->t->nmarks ? j->t->nmarks : 1, sizeof(*th.stacks));
	for (;;) {
		size_t i;

		pthread_mutex_lock(&j->lock);
		i = j->next++;
		if (!th.stacks)
			j->oom = true;
		if (!th.stacks || i >= j->t->nstreams || i > j->first_bad) {
			pthread_mutex_unlock(&j->lock);
			break;
		}
		pthread_mutex_unlock(&j->lock);
		ovr_walk_stream(j->t, i, &th, &j->res[i]);
		if (j->res[i].failed) {
			pthread_mutex_lock(&j->lock);
			if (i < j->first_bad)
				j->first_bad = i;
			pthread_mutex_unlock(&j->lock);
		}
	}
	free(th.stacks);
	return NULL;
}

int ovr_verify_jobs(struct ovr_trace *t, unsigned jobs, struct ovr_totals *tot,
		    struct rd_error *err)
{
	struct ovr_stream_res *res = calloc(t->nstreams ? t->nstreams : 1, sizeof(*res));
	struct ovr_replay rp = { 0, 0, false };
	int ret = 0;

	memset(tot, 0, sizeof(*tot));
	if (!res)
		return rd_error_set(err, OVR_RULE_IO, t->dir, -1, "out of memory");
	if (jobs > t->nstreams)
		jobs = (unsigned)t->nstreams;
	if (jobs > 1) {
		struct ovr_verify_job j = { t, res, PTHREAD_MUTEX_INITIALIZER, 0, t->nstreams,
					    false };
		pthread_t *tids = calloc(jobs, sizeof(*tids));

		rd_run_workers(tids, jobs, ovr_verify_worker, &j);
		free(tids);
		pthread_mutex_destroy(&j.lock);
		if (j.oom)
			ret = rd_error_set(err, OVR_RULE_IO, t->dir, -1, "out of memory");
		for (size_t i = 0; i < t->nstreams && ret == 0; i++)
			ret = ovr_replay_stream(t, i, &res[i], &rp, tot, err);
	} else {
		struct ovr_thread_state th = { 0 };

		th.stacks = calloc(t->nmarks ? t->nmarks : 1, sizeof(*th.stacks));
		if (!th.stacks)
			ret = rd_error_set(err, OVR_RULE_IO, t->dir, -1, "out of memory");
		for (size_t i = 0; i < t->nstreams && ret == 0; i++) {
			ovr_walk_stream(t, i, &th, &res[i]);
			ret = ovr_replay_stream(t, i, &res[i], &rp, tot, err);
			ovr_res_free(&res[i]);
		}
		free(th.stacks);
	}
	for (size_t i = 0; i < t->nstreams; i++)
		ovr_res_free(&res[i]);
	free(res);
	return ret < 0 ? -1 : 0;
}

int ovr_verify(struct ovr_trace *t, struct ovr_totals *tot, struct rd_error *err)
{
	return ovr_verify_jobs(t, 1, tot, err);
}
