/*
 * conv_speedscope: `flightrec convert --to speedscope`, speedscope's own file format
 * (https://www.speedscope.app/file-format-schema.json): one evented profile per thread,
 * times in nanoseconds, frames shared by every profile:
 *   {"$schema":"...","exporter":"flightrec convert","name":TITLE,"activeProfileIndex":0,
 *    "profiles":[{"type":"evented","name":"pid P tid T","unit":"nanoseconds","events":[
 *       {"type":"O","at":NS,"frame":I}, {"type":"C","at":NS,"frame":I}, ...],
 *       "startValue":NS,"endValue":NS}, ...],
 *    "shared":{"frames":[{"name":"main"}, ...]}}
 * Streamed: a JSON object's keys may come in any order, so the profiles are written as the
 * events come and the frame table, which only the whole trace knows, last. Memory: the
 * distinct function names and one stack of frame indexes. A thread with no event gets no
 * profile (speedscope refuses an empty one). A named track's profile has its name. Instants
 * and counters have no place in an evented profile: conv_stream counts them as left out.
 */
#include "formats/common/conv.h"
#include "cli/namecount.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct cvs {
	FILE *out;
	struct nc_table index; /* name -> frame index + 1 */
	char **names;          /* by frame index */
	size_t nr, cap;
	int pid, tid;
	char *tname; /* the current track's name, or NULL */
	int in_profile, profiles;
	uint64_t start, end;
	uint32_t stack[CONV_MAX_DEPTH];
	size_t depth;
};

static void *cvs_open(FILE *out, const char *title)
{
	struct cvs *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->out = out;
	nc_init(&s->index);
	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
	      "\"exporter\":\"flightrec convert\",\"name\":\"",
	      out);
	conv_json_str(out, title ? title : "flightrec");
	fputs("\",\"activeProfileIndex\":0,\"profiles\":[", out);
	return s;
}

static void cvs_end_profile(struct cvs *s)
{
	if (!s->in_profile)
		return;
	fprintf(s->out, "\n],\"startValue\":%" PRIu64 ",\"endValue\":%" PRIu64 "}", s->start,
		s->end);
	s->in_profile = 0;
}

static int cvs_thread(void *w, int pid, int tid, const char *pname, const char *tname)
{
	struct cvs *s = w;

	(void)pname;
	cvs_end_profile(s);
	s->pid = pid;
	s->tid = tid;
	s->depth = 0;
	free(s->tname);
	s->tname = NULL;
	if (tname && !(s->tname = strdup(tname)))
		return -1;
	return ferror(s->out) ? -1 : 0;
}

/* the frame index of NAME, added to the table if new; -1: out of memory */
static long cvs_frame(struct cvs *s, const char *name)
{
	uint64_t *slot = nc_slot(&s->index, name);

	if (!slot)
		return -1;
	if (*slot)
		return (long)(*slot - 1);
	if (s->nr == s->cap) {
		size_t ncap = s->cap ? 2 * s->cap : 256;
		char **n = realloc(s->names, ncap * sizeof(*n));
		if (!n)
			return -1;
		s->names = n;
		s->cap = ncap;
	}
	if (!(s->names[s->nr] = strdup(name)))
		return -1;
	*slot = ++s->nr;
	return (long)(s->nr - 1);
}

static void cvs_event(struct cvs *s, char type, uint64_t ns, uint32_t frame)
{
	if (!s->in_profile) {
		fprintf(s->out, "%s\n{\"type\":\"evented\",\"name\":\"", s->profiles ? "," : "");
		if (s->tname)
			conv_json_str(s->out, s->tname);
		else
			fprintf(s->out, "pid %d tid %d", s->pid, s->tid);
		fputs("\",\"unit\":\"nanoseconds\",\"events\":[\n", s->out);
		s->in_profile = 1;
		s->profiles++;
		s->start = ns;
	} else {
		fputs(",\n", s->out);
	}
	s->end = ns;
	fprintf(s->out, "{\"type\":\"%c\",\"at\":%" PRIu64 ",\"frame\":%" PRIu32 "}", type, ns,
		frame);
}

static int cvs_enter(void *w, uint64_t ns, const char *name)
{
	struct cvs *s = w;
	long f = cvs_frame(s, name);

	if (f < 0 || s->depth >= CONV_MAX_DEPTH)
		return -1;
	s->stack[s->depth++] = (uint32_t)f;
	cvs_event(s, 'O', ns, (uint32_t)f);
	return ferror(s->out) ? -1 : 0;
}

static int cvs_exit(void *w, uint64_t ns)
{
	struct cvs *s = w;

	if (!s->depth)
		return -1; /* conv.c never lets this happen */
	cvs_event(s, 'C', ns, s->stack[--s->depth]);
	return ferror(s->out) ? -1 : 0;
}

static int cvs_finish(void *w)
{
	struct cvs *s = w;
	int r;

	cvs_end_profile(s);
	fputs("\n],\"shared\":{\"frames\":[", s->out);
	for (size_t i = 0; i < s->nr; i++) {
		fputs(i ? ",\n{\"name\":\"" : "\n{\"name\":\"", s->out);
		conv_json_str(s->out, s->names[i]);
		fputs("\"}", s->out);
		free(s->names[i]);
	}
	fputs("\n]}}\n", s->out);
	r = ferror(s->out) ? -1 : 0;
	free(s->names);
	free(s->tname);
	nc_free(&s->index);
	free(s);
	return r;
}

const struct conv_writer conv_speedscope = {
	.name = "speedscope",
	.what = "speedscope's JSON, one evented profile per thread",
	.open = cvs_open,
	.thread = cvs_thread,
	.enter = cvs_enter,
	.exit = cvs_exit,
	.finish = cvs_finish,
	.keeps_names = 1,
};
