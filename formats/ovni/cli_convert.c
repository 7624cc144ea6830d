/*
 * cli_convert: `flightrec convert` for an ovni trace directory (formats/common/conv.h): one
 * track per thread with its events, then one track per loom CPU with the threads it ran.
 *
 * Times are the events' clocks less the earliest first clock of all streams, so every track
 * shares one time base. A thread track is its stream, read once, in file order:
 *   - the ovni thread states are frames at the bottom of the stack: OHx and OHr open
 *     "Running", OHp "Paused", OHc "Cooling", OHw "Warming", each ending the previous one;
 *     OHe ends the last;
 *   - every event whose value char is '[' opens a frame that the next ']' of the same model
 *     and category closes: OM[ (named "<mark title> <value>", or "<mark title>" for a
 *     writer that keeps every name: mark values are often ids), OF[ ("flush"), OU[
 *     ("unordered"), and the burst-like pairs of the other models ("<model> <MC>");
 *   - OM= (a "single" mark) is a counter sample, named "<title> (tid T)" as Chrome keys
 *     counters by process and name;
 *   - every other event (OHC, OAs, OAr, OB., any model's other events) is an instant named by
 *     its MCV, its payload in args (decoded for the ovni model's, hex for the rest).
 * Frames must nest; ovni's do not always (a mark pushed while Running stays open across OHp,
 * a ']' may close a frame below another): the frames above the one that changes are closed
 * and opened again at the same time, so each viewer sees what was open at every moment.
 * A frame with no match (a ']' with no open '[') is an instant instead.
 *
 * CPU tracks: the streams of a loom are merged by clock, as ovniemu plays them, following
 * each thread's state and CPU (OHx's CPU, OAs, OAr for a remote thread); a thread is on its
 * CPU while Running, Cooling or Warming. Each change is one 16-byte record in an unlinked
 * temporary file, replayed once per CPU, so memory is bounded by the streams and CPUs, not
 * the events. CPU tracks are in a process of their own per loom (pid OVC_CPU_PID + loom
 * index, tid pid + 1 + CPU index, above any Linux pid).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/format.h"
#include "formats/common/conv.h"
#include "formats/common/rd_common.h"
#include "formats/ovni/read_ovni.h"

#define OVC_DEPTH   256	       /* frames a thread track keeps; deeper '[' become instants */
#define OVC_NAME    96	       /* longest frame name kept, NUL included */
#define OVC_CPU_PID 1000000000 /* CPU tracks' pseudo-processes (Linux pids stay < 2^22) */

enum ovc_kind { OVC_STATE, OVC_MARK, OVC_PAIR };

struct ovc_frame {
	int kind;     /* enum ovc_kind */
	char mc[2];   /* OVC_PAIR: the model and category its ']' must have */
	int32_t type; /* OVC_MARK */
	char name[OVC_NAME];
};

struct ovc_thread {
	const struct ovr_trace *t;
	const struct ovr_stream *s;
	struct conv_stream *cs;
	uint64_t t0;
	struct ovc_frame st[OVC_DEPTH];
	size_t depth;
	uint64_t unmatched;
};

static uint64_t ovc_ns(uint64_t clock, uint64_t t0)
{
	return (int64_t)clock > (int64_t)t0 ? clock - t0 : 0;
}

static int32_t ovc_i32(const uint8_t *p)
{
	return (int32_t)rd_le32(p);
}

/* Replace the frame at I by NEW (NULL: remove it) or, with INSERT, put NEW below it: the
 * frames from I up are closed at NS and opened again over the change. */
static int ovc_change(struct ovc_thread *c, size_t i, const struct ovc_frame *nw, int insert,
		      uint64_t ns)
{
	if (insert && c->depth >= OVC_DEPTH)
		return 1;
	for (size_t k = c->depth; k > i; k--)
		if (conv_exit(c->cs, ns) < 0)
			return -1;
	if (insert) {
		memmove(&c->st[i + 1], &c->st[i], (c->depth - i) * sizeof(c->st[0]));
		c->st[i] = *nw;
		c->depth++;
	} else if (nw) {
		c->st[i] = *nw;
	} else {
		memmove(&c->st[i], &c->st[i + 1], (c->depth - i - 1) * sizeof(c->st[0]));
		c->depth--;
	}
	for (size_t k = i; k < c->depth; k++)
		if (conv_enter(c->cs, ns, c->st[k].name) < 0)
			return -1;
	return 0;
}

/* the thread state's frame becomes NAME (NULL: the thread ends) */
static int ovc_state(struct ovc_thread *c, const char *name, uint64_t ns)
{
	struct ovc_frame f = { .kind = OVC_STATE };
	int has = c->depth && c->st[0].kind == OVC_STATE;

	if (!name)
		return has ? ovc_change(c, 0, NULL, 0, ns) : 0;
	snprintf(f.name, sizeof(f.name), "%s", name);
	return ovc_change(c, 0, &f, !has, ns);
}

static int ovc_push(struct ovc_thread *c, const struct ovc_frame *f, uint64_t ns)
{
	return ovc_change(c, c->depth, f, 1, ns);
}

/* the innermost frame F matches, removed; 1 when none does */
static int ovc_pop(struct ovc_thread *c, int kind, const char *mc, int32_t type, uint64_t ns)
{
	for (size_t k = c->depth; k-- > 0;) {
		const struct ovc_frame *f = &c->st[k];
		if (f->kind != kind)
			continue;
		if (kind == OVC_MARK && f->type != type)
			continue;
		if (kind == OVC_PAIR && (f->mc[0] != mc[0] || f->mc[1] != mc[1]))
			continue;
		return ovc_change(c, k, NULL, 0, ns);
	}
	return 1;
}

static const struct ovr_mark_type *ovc_mark(const struct ovr_trace *t, int32_t type)
{
	for (size_t i = 0; i < t->nmarks; i++)
		if (t->marks[i].type == type)
			return &t->marks[i];
	return NULL;
}

/* ARGS for an instant: the ovni model's payloads decoded, any other as hex */
static void ovc_args(const struct ovr_event *ev, char *buf, size_t size)
{
	const uint8_t *p = ev->payload;
	size_t n = ev->payload_size, len;

	buf[0] = 0;
	if (ev->jumbo) {
		snprintf(buf, size, "\"jumbo_bytes\":%" PRIu32, ev->jumbo_size);
		return;
	}
	if (!n)
		return;
	if (!strcmp(ev->mcv, "OAs") && n == 4) {
		snprintf(buf, size, "\"cpu\":%" PRId32, ovc_i32(p));
		return;
	}
	if (!strcmp(ev->mcv, "OAr") && n == 8) {
		snprintf(buf, size, "\"cpu\":%" PRId32 ",\"tid\":%" PRId32, ovc_i32(p),
			 ovc_i32(p + 4));
		return;
	}
	if (!strcmp(ev->mcv, "OHC") && n == 12) {
		snprintf(buf, size, "\"cpu\":%" PRId32 ",\"tag\":%" PRIu64, ovc_i32(p),
			 rd_le64(p + 4));
		return;
	}
	len = (size_t)snprintf(buf, size, "\"payload\":\"");
	for (size_t i = 0; i < n && len + 4 < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%02x", p[i]);
	snprintf(buf + len, size - len, "\"");
}

static const char *ovc_state_of(char v)
{
	switch (v) {
	case 'x':
	case 'r':
		return "Running";
	case 'p':
		return "Paused";
	case 'c':
		return "Cooling";
	case 'w':
		return "Warming";
	}
	return NULL;
}

static int ovc_event(struct ovc_thread *c, const struct ovr_event *ev)
{
	uint64_t ns = ovc_ns(ev->clock, c->t0);
	const char *m = ev->mcv;
	struct ovc_frame f = { .kind = OVC_PAIR };
	char args[160], name[OVC_NAME];
	int r = 1;

	if (m[0] == 'O' && m[1] == 'H' && ovc_state_of(m[2]))
		return ovc_state(c, ovc_state_of(m[2]), ns) < 0 ? -1 : 0;
	if (m[0] == 'O' && m[1] == 'H' && m[2] == 'e')
		return ovc_state(c, NULL, ns) < 0 ? -1 : 0;
	if (m[0] == 'O' && m[1] == 'M' && ev->payload_size == 12) {
		int64_t value = (int64_t)rd_le64(ev->payload);
		int32_t type = ovc_i32(ev->payload + 8);
		const struct ovr_mark_type *mt = ovc_mark(c->t, type);
		char title[64];

		if (mt)
			snprintf(title, sizeof(title), "%s", mt->title);
		else
			snprintf(title, sizeof(title), "mark %" PRId32, type);
		if (m[2] == '=') {
			snprintf(name, sizeof(name), "%s (tid %d)", title, c->s->tid);
			return conv_counter(c->cs, ns, name, title, (double)value) < 0 ? -1 : 0;
		}
		if (m[2] == '[') {
			f.kind = OVC_MARK;
			f.type = type;
			if (c->cs->wr->keeps_names)
				snprintf(f.name, sizeof(f.name), "%s", title);
			else
				snprintf(f.name, sizeof(f.name), "%s %" PRId64, title, value);
			r = ovc_push(c, &f, ns);
		} else if (m[2] == ']') {
			r = ovc_pop(c, OVC_MARK, NULL, type, ns);
		}
	} else if (m[2] == '[') {
		const struct ovr_model *md = ovr_model_of(m[0]);

		f.mc[0] = m[0];
		f.mc[1] = m[1];
		if (!strcmp(m, "OF["))
			snprintf(f.name, sizeof(f.name), "flush");
		else if (!strcmp(m, "OU["))
			snprintf(f.name, sizeof(f.name), "unordered");
		else
			snprintf(f.name, sizeof(f.name), "%s %c%c", md ? md->name : "model", m[0],
				 m[1]);
		r = ovc_push(c, &f, ns);
	} else if (m[2] == ']') {
		r = ovc_pop(c, OVC_PAIR, m, 0, ns);
	}
	if (r < 0)
		return -1;
	if (r == 0)
		return 0;
	/* not a frame, or one with no match (or too deep): a point in time */
	if (m[2] == '[' || m[2] == ']')
		c->unmatched++;
	ovc_args(ev, args, sizeof(args));
	return conv_instant(c->cs, ns, m, args[0] ? args : NULL) < 0 ? -1 : 0;
}

static void ovc_pname(const struct ovr_trace *t, const struct ovr_proc *p, char *buf, size_t size)
{
	snprintf(buf, size, "proc %d (loom %s, app %d)", p->pid, t->looms[p->loom].name, p->app_id);
}

static int ovc_thread_track(const struct ovr_trace *t, const struct ovr_stream *s, uint64_t t0,
			    struct conv_stream *cs, uint64_t *unmatched, struct rd_error *err)
{
	static struct ovc_thread c;
	const struct ovr_proc *p = &t->procs[s->proc];
	struct ovr_cursor cur;
	struct ovr_event ev;
	char pname[600], tname[64];
	int r;

	memset(&c, 0, sizeof(c));
	c.t = t;
	c.s = s;
	c.cs = cs;
	c.t0 = t0;
	ovc_pname(t, p, pname, sizeof(pname));
	snprintf(tname, sizeof(tname), "thread %d", s->tid);
	if (conv_track(cs, p->pid, s->tid, pname, tname) < 0)
		return -1;
	ovr_cursor_init(&cur, t, s);
	while ((r = ovr_cursor_next(&cur, &ev, err)) > 0)
		if (ovc_event(&c, &ev) < 0)
			return -1;
	*unmatched += c.unmatched;
	if (conv_close_all(cs) < 0)
		return -1;
	return r < 0 ? 1 : 0;
}

/* --- CPU tracks ------------------------------------------------------------------------ */

struct ovc_rec {
	int32_t cpu;
	int32_t stream; /* arrives; -1: the CPU's thread leaves */
	uint64_t ns;
};

struct ovc_tstate {
	int active; /* Running, Cooling or Warming */
	int cpu;    /* logical index, -1 none or virtual */
};

struct ovc_cpus {
	FILE *tmp;
	int *shown; /* per CPU: the stream index on it, -1 none */
	size_t ncpus;
	struct ovc_tstate *ts; /* per stream */
};

static int ovc_put(struct ovc_cpus *k, int cpu, int stream, uint64_t ns)
{
	struct ovc_rec r = { .cpu = cpu, .stream = stream, .ns = ns };

	return fwrite(&r, sizeof(r), 1, k->tmp) == 1 ? 0 : -1;
}

/* stream S is on its CPU or not from NS on */
static int ovc_place(struct ovc_cpus *k, size_t s, int on, uint64_t ns)
{
	int cpu = k->ts[s].cpu;

	if (cpu < 0 || (size_t)cpu >= k->ncpus)
		return 0; /* a virtual CPU (-1) has no track */
	if (on) {
		if (k->shown[cpu] == (int)s)
			return 0;
		/* another thread on it is an error ovniemu reports; the newer one is shown */
		if (k->shown[cpu] >= 0 && ovc_put(k, cpu, -1, ns) < 0)
			return -1;
		k->shown[cpu] = (int)s;
		return ovc_put(k, cpu, (int)s, ns);
	}
	if (k->shown[cpu] != (int)s)
		return 0;
	k->shown[cpu] = -1;
	return ovc_put(k, cpu, -1, ns);
}

/* thread S moves to CPU from NS on */
static int ovc_move(struct ovc_cpus *k, size_t s, int cpu, uint64_t ns)
{
	int on = k->ts[s].active;

	if (on && ovc_place(k, s, 0, ns) < 0)
		return -1;
	k->ts[s].cpu = cpu;
	return on ? ovc_place(k, s, 1, ns) : 0;
}

static int ovc_cpu_event(const struct ovr_trace *t, size_t loom, struct ovc_cpus *k, size_t s,
			 const struct ovr_event *ev, uint64_t t0)
{
	const char *m = ev->mcv;
	uint64_t ns = ovc_ns(ev->clock, t0);

	if (m[0] != 'O')
		return 0;
	if (m[1] == 'H') {
		int active = k->ts[s].active;

		switch (m[2]) {
		case 'x':
			if (ev->payload_size >= 4)
				k->ts[s].cpu = ovc_i32(ev->payload);
			/* fall through */
		case 'r':
		case 'w':
		case 'c':
			active = 1;
			break;
		case 'p':
		case 'e':
			active = 0;
			break;
		default:
			return 0;
		}
		k->ts[s].active = active;
		return ovc_place(k, s, active, ns);
	}
	if (m[1] == 'A' && m[2] == 's' && ev->payload_size == 4)
		return ovc_move(k, s, ovc_i32(ev->payload), ns);
	if (m[1] == 'A' && m[2] == 'r' && ev->payload_size == 8) {
		int32_t tid = ovc_i32(ev->payload + 4);

		/* the remote thread is in the same process, else anywhere in the loom */
		for (int pass = 0; pass < 2; pass++)
			for (size_t i = 0; i < t->nstreams; i++) {
				const struct ovr_stream *o = &t->streams[i];
				if (o->tid != tid || t->procs[o->proc].loom != loom)
					continue;
				if (pass == 0 && o->proc != t->streams[s].proc)
					continue;
				return ovc_move(k, i, ovc_i32(ev->payload), ns);
			}
	}
	return 0;
}

/* the loom's streams merged by clock into K's records */
static int ovc_cpu_pass(const struct ovr_trace *t, size_t loom, struct ovc_cpus *k, uint64_t t0,
			struct rd_error *err)
{
	const struct ovr_event *ev;
	struct ovr_merge m;
	size_t si;
	int ret = -1, r;

	for (size_t i = 0; i < t->nstreams; i++) {
		k->ts[i].active = 0;
		k->ts[i].cpu = -1;
	}
	if (ovr_merge_init(&m, t, loom, err) < 0) {
		ret = rd_error_isset(err) ? 1 : -1;
		goto out;
	}
	while ((r = ovr_merge_next(&m, &ev, &si, err)) > 0)
		if (ovc_cpu_event(t, loom, k, si, ev, t0) < 0)
			goto out;
	ret = r < 0 ? 1 : 0; /* 1: what came before is kept, the thread tracks said why */
out:
	ovr_merge_close(&m);
	return ret;
}

static int ovc_cpu_tracks(const struct ovr_trace *t, size_t loom, uint64_t t0,
			  struct conv_stream *cs)
{
	const struct ovr_loom *l = &t->looms[loom];
	struct ovc_cpus k = { .ncpus = l->ncpus };
	struct rd_error err;
	char pname[600], tname[64], fname[64];
	int pid = OVC_CPU_PID + (int)loom * 100000;
	int ret = -1;

	if (!l->ncpus)
		return 0;
	rd_error_clear(&err);
	k.tmp = tmpfile();
	k.shown = malloc(l->ncpus * sizeof(*k.shown));
	k.ts = calloc(t->nstreams, sizeof(*k.ts));
	if (!k.tmp || !k.shown || !k.ts) {
		cli_err("convert: no room for the CPU tracks' temporary file:");
		goto out;
	}
	for (size_t i = 0; i < l->ncpus; i++)
		k.shown[i] = -1;
	if (ovc_cpu_pass(t, loom, &k, t0, &err) < 0 || fflush(k.tmp) != 0) {
		cli_err("convert: cannot write the CPU tracks' temporary file:");
		goto out;
	}
	snprintf(pname, sizeof(pname), "CPUs of loom %s", l->name);
	for (size_t c = 0; c < l->ncpus; c++) {
		struct ovc_rec r;

		snprintf(tname, sizeof(tname), "CPU %zu (phy %d)", c, l->cpus[c].phyid);
		if (conv_track(cs, pid, pid + 1 + (int)c, pname, tname) < 0)
			goto out;
		rewind(k.tmp);
		while (fread(&r, sizeof(r), 1, k.tmp) == 1) {
			const struct ovr_stream *s;

			if (r.cpu != (int32_t)c)
				continue;
			if (r.stream < 0) {
				if (conv_exit(cs, r.ns) < 0)
					goto out;
				continue;
			}
			s = &t->streams[r.stream];
			snprintf(fname, sizeof(fname), "thread %d (pid %d)", s->tid,
				 t->procs[s->proc].pid);
			if (conv_enter(cs, r.ns, fname) < 0)
				goto out;
		}
		if (ferror(k.tmp) || conv_close_all(cs) < 0)
			goto out;
	}
	ret = 0;
out:
	if (k.tmp)
		fclose(k.tmp);
	free(k.shown);
	free(k.ts);
	return ret;
}

int ovni_cli_convert(const char *path, const struct cli_convert_opts *o, struct conv_stream *cs)
{
	struct ovr_trace *t;
	struct rd_error err, first;
	uint64_t t0 = 0, unmatched = 0;
	int have_t0 = 0, ret = CLI_OK;

	(void)o;
	rd_error_clear(&err);
	rd_error_clear(&first);
	if (ovr_open(path, &t, &err) < 0) {
		rd_error_print(stderr, &err);
		return CLI_BAD_TRACE;
	}
	for (size_t i = 0; i < t->nstreams; i++) {
		struct ovr_cursor cur;
		struct ovr_event ev;

		ovr_cursor_init(&cur, t, &t->streams[i]);
		if (ovr_cursor_next(&cur, &ev, &err) > 0 &&
		    (!have_t0 || (int64_t)ev.clock < (int64_t)t0)) {
			t0 = ev.clock;
			have_t0 = 1;
		}
		rd_error_clear(&err);
	}
	for (size_t i = 0; i < t->nstreams; i++) {
		int r = ovc_thread_track(t, &t->streams[i], t0, cs, &unmatched, &err);

		if (r < 0)
			goto fail;
		if (r > 0 && !rd_error_isset(&first))
			first = err;
		rd_error_clear(&err);
	}
	for (size_t l = 0; l < t->nlooms; l++)
		if (ovc_cpu_tracks(t, l, t0, cs) < 0)
			goto fail;
	if (unmatched)
		fprintf(stderr,
			"flightrec: convert: %s: %" PRIu64 " '[' or ']' events with no match "
			"written as instants\n",
			path, unmatched);
	if (rd_error_isset(&first)) {
		rd_error_print(stderr, &first);
		ret = CLI_BAD_TRACE;
	}
	ovr_close(t);
	return ret;
fail:
	ovr_close(t);
	return CLI_BAD_TRACE;
}
