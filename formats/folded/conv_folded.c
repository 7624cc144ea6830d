/*
 * conv_folded: `flightrec convert --to folded`, folded stacks for flame graphs
 * (flamegraph.pl, inferno, speedscope's import):
 *   main;parse;read_token 1234
 * one line per distinct call stack, its weight the nanoseconds spent in the innermost
 * function itself (its duration less its callees'), every thread merged, lines sorted. A
 * stack with no time of its own has no line. Memory: the distinct stacks, not the events.
 * Tracks are not named in the stacks; instants and counters have no weight to give and are
 * counted as left out by conv_stream.
 */
#include "formats/common/conv.h"
#include "cli/namecount.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct cvf_frame {
	uint64_t start, child_ns;
	size_t path_len; /* of the stack string before this frame's name was added */
};

struct cvf {
	FILE *out;
	struct nc_table stacks; /* "a;b;c" -> self ns */
	char *path;             /* the current stack, ';'-separated */
	size_t len, cap;
	struct cvf_frame frames[CONV_MAX_DEPTH];
	size_t depth;
};

static void *cvf_open(FILE *out, const char *title)
{
	struct cvf *f = calloc(1, sizeof(*f));

	(void)title;
	if (!f)
		return NULL;
	f->out = out;
	nc_init(&f->stacks);
	return f;
}

static int cvf_thread(void *w, int pid, int tid, const char *pname, const char *tname)
{
	struct cvf *f = w;

	(void)pid;
	(void)tid;
	(void)pname;
	(void)tname;
	f->depth = 0;
	f->len = 0;
	return 0;
}

static int cvf_enter(void *w, uint64_t ns, const char *name)
{
	struct cvf *f = w;
	size_t n = strlen(name), need = f->len + n + 2;

	if (f->depth >= CONV_MAX_DEPTH)
		return -1;
	if (need > f->cap) {
		size_t ncap = need * 2 < 4096 ? 4096 : need * 2;
		char *p = realloc(f->path, ncap);
		if (!p)
			return -1;
		f->path = p;
		f->cap = ncap;
	}
	f->frames[f->depth++] = (struct cvf_frame){ ns, 0, f->len };
	if (f->len)
		f->path[f->len++] = ';';
	/* a ';' in a name would split the frame: flame graph tools take it as a separator */
	for (size_t i = 0; i < n; i++)
		f->path[f->len++] = name[i] == ';' ? ':' : name[i];
	f->path[f->len] = '\0';
	return 0;
}

static int cvf_exit(void *w, uint64_t ns)
{
	struct cvf *f = w;
	struct cvf_frame *fr;
	uint64_t dur, self;

	if (!f->depth)
		return -1;
	fr = &f->frames[--f->depth];
	dur = ns - fr->start;
	self = dur > fr->child_ns ? dur - fr->child_ns : 0;
	if (self && nc_add(&f->stacks, f->path, self) < 0)
		return -1;
	if (f->depth)
		f->frames[f->depth - 1].child_ns += dur;
	f->len = fr->path_len;
	f->path[f->len] = '\0';
	return 0;
}

static int cvf_finish(void *w)
{
	struct cvf *f = w;
	struct nc_entry *e = nc_sorted(&f->stacks, 0);
	int r = e || !f->stacks.nr ? 0 : -1;

	for (size_t i = 0; e && i < f->stacks.nr; i++)
		fprintf(f->out, "%s %" PRIu64 "\n", e[i].name, e[i].count);
	if (ferror(f->out))
		r = -1;
	free(e);
	nc_free(&f->stacks);
	free(f->path);
	free(f);
	return r;
}

const struct conv_writer conv_folded = {
	.name = "folded",
	.what = "folded stacks for flame graphs, weighted by self time in ns",
	.open = cvf_open,
	.thread = cvf_thread,
	.enter = cvf_enter,
	.exit = cvf_exit,
	.finish = cvf_finish,
	.keeps_names = 1,
};
