/*
 * conv: the well-formed function-event stream between readers and viewer writers (conv.h).
 */
#include "formats/common/conv.h"

#include <stdlib.h>
#include <string.h>

const struct conv_writer *conv_writer_find(const char *name)
{
	static const struct conv_writer *const all[] = { &conv_chrome, &conv_speedscope,
							 &conv_folded, &conv_uftrace };

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!strcmp(all[i]->name, name))
			return all[i];
	return NULL;
}

int conv_open(struct conv_stream *cs, const struct conv_writer *wr, FILE *out,
	      const char *title)
{
	memset(cs, 0, sizeof(*cs));
	cs->wr = wr;
	cs->w = wr->open ? wr->open(out, title) : NULL; /* a directory writer: conv_open_dir */
	if (!cs->w) {
		cs->err = 1;
		return -1;
	}
	return 0;
}

int conv_open_dir(struct conv_stream *cs, const struct conv_writer *wr, const char *dir,
		  const char *title)
{
	memset(cs, 0, sizeof(*cs));
	cs->wr = wr;
	cs->w = wr->open_dir(dir, title);
	if (!cs->w) {
		cs->err = 1;
		return -1;
	}
	return 0;
}

static int conv_ret(struct conv_stream *cs, int r)
{
	if (r < 0)
		cs->err = 1;
	return r;
}

int conv_close_all(struct conv_stream *cs)
{
	if (cs->err)
		return -1;
	cs->skipped = 0;
	while (cs->depth) {
		cs->depth--;
		cs->closed_at_end++;
		if (conv_ret(cs, cs->wr->exit(cs->w, cs->last_ns)) < 0)
			return -1;
	}
	return 0;
}

int conv_track(struct conv_stream *cs, int pid, int tid, const char *pname, const char *tname)
{
	if (conv_close_all(cs) < 0)
		return -1;
	cs->in_thread = 1;
	cs->last_ns = 0;
	return conv_ret(cs, cs->wr->thread(cs->w, pid, tid, pname, tname));
}

int conv_thread(struct conv_stream *cs, int pid, int tid)
{
	return conv_track(cs, pid, tid, NULL, NULL);
}

/* NS no earlier than the track's last time, which it becomes */
static uint64_t conv_time(struct conv_stream *cs, uint64_t ns)
{
	if (ns < cs->last_ns)
		ns = cs->last_ns;
	cs->last_ns = ns;
	return ns;
}

int conv_instant(struct conv_stream *cs, uint64_t ns, const char *name, const char *args)
{
	if (cs->err || !cs->in_thread)
		return -1;
	ns = conv_time(cs, ns);
	if (!cs->wr->instant) {
		cs->left_out++;
		return 0;
	}
	cs->events++;
	return conv_ret(cs, cs->wr->instant(cs->w, ns, name, args));
}

int conv_counter(struct conv_stream *cs, uint64_t ns, const char *name, const char *series,
		 double value)
{
	if (cs->err || !cs->in_thread)
		return -1;
	ns = conv_time(cs, ns);
	if (!cs->wr->counter) {
		cs->left_out++;
		return 0;
	}
	cs->events++;
	return conv_ret(cs, cs->wr->counter(cs->w, ns, name, series, value));
}

int conv_holds_points(const struct conv_writer *wr)
{
	return wr->instant && wr->counter;
}

int conv_enter_args(struct conv_stream *cs, uint64_t ns, const char *name, const char *args)
{
	if (cs->err || !cs->in_thread)
		return -1;
	ns = conv_time(cs, ns);
	if (cs->depth >= CONV_MAX_DEPTH) {
		cs->skipped++;
		return 0;
	}
	cs->depth++;
	cs->events++;
	if (args && cs->wr->enter_args)
		return conv_ret(cs, cs->wr->enter_args(cs->w, ns, name, args));
	return conv_ret(cs, cs->wr->enter(cs->w, ns, name));
}

int conv_enter(struct conv_stream *cs, uint64_t ns, const char *name)
{
	return conv_enter_args(cs, ns, name, NULL);
}

int conv_exit(struct conv_stream *cs, uint64_t ns)
{
	return conv_exit_args(cs, ns, NULL);
}

int conv_exit_args(struct conv_stream *cs, uint64_t ns, const char *args)
{
	if (cs->err || !cs->in_thread)
		return -1;
	ns = conv_time(cs, ns);
	if (cs->skipped) {
		cs->skipped--;
		return 0;
	}
	if (!cs->depth) {
		cs->dropped_exits++;
		return 0;
	}
	cs->depth--;
	cs->events++;
	if (args && cs->wr->exit_args)
		return conv_ret(cs, cs->wr->exit_args(cs->w, ns, args));
	return conv_ret(cs, cs->wr->exit(cs->w, ns));
}

int conv_finish(struct conv_stream *cs)
{
	int r = conv_close_all(cs);

	if (!cs->w)
		return -1;
	if (cs->wr->finish(cs->w) < 0)
		r = -1;
	cs->w = NULL;
	return r;
}

void conv_json_str(FILE *out, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			putc(c, out);
	}
}

int conv_tids_add(struct conv_tids *t, int64_t pid, int64_t tid)
{
	for (size_t i = 0; i < t->nr; i++)
		if (t->v[i].pid == pid && t->v[i].tid == tid)
			return 0;
	if (t->nr == t->cap) {
		size_t n = t->cap ? 2 * t->cap : 64;
		void *v = realloc(t->v, n * sizeof(*t->v));
		if (!v)
			return -1;
		t->v = v;
		t->cap = n;
	}
	t->v[t->nr].pid = pid;
	t->v[t->nr].tid = tid;
	t->nr++;
	return 0;
}

void conv_tids_free(struct conv_tids *t)
{
	free(t->v);
	memset(t, 0, sizeof(*t));
}
