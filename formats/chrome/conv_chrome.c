/*
 * conv_chrome: `flightrec convert --to chrome`, Chrome trace-event JSON (what Perfetto and
 * chrome://tracing open; the same shape sink_chrome writes while recording):
 *   {"traceEvents":[
 *   {"name":"thread_name","ph":"M","pid":P,"tid":T,"args":{"name":"pid P tid T"}},
 *   {"name":"f","ph":"B","ts":12.345,"pid":P,"tid":T},
 *   {"name":"f","ph":"E","ts":12.400,"pid":P,"tid":T},
 *   ],"displayTimeUnit":"ns","otherData":{...}}
 * ts in microseconds with nanosecond digits. One line per event, written as it comes. A
 * named track gets its thread_name (and its process's process_name) from the reader; an
 * instant is {"ph":"i","s":"t"} (thread-scoped), a counter sample {"ph":"C"} with one series
 * in args (Chrome keys counters by process and name: readers put the track in the name).
 * A call's recorded values (uftrace's -A/-R) go in its B's and E's args, under the keys
 * `uftrace dump --chrome` uses: {"arguments":"(7, -42)"} and {"retval":"-35"}.
 * An E repeats its B's name: Perfetto closes the innermost B without it, but speedscope's
 * import ignores an E whose name is not its B's, leaving every frame open to the end. So
 * the names of the open frames are kept, innermost last, in one buffer (bounded by
 * CONV_MAX_DEPTH frames: conv_stream never nests deeper and calls exit only on an open one).
 */
#include "formats/common/conv.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct cvc {
	FILE *out;
	int pid, tid;
	int first;
	char *title;
	char *names;		   /* the open frames' names, each NUL-ended, innermost last */
	size_t len, cap;	   /* of names */
	size_t at[CONV_MAX_DEPTH]; /* each open frame's name's offset in names */
	size_t depth;
};

static void cvc_sep(struct cvc *c)
{
	fputs(c->first ? "\n" : ",\n", c->out);
	c->first = 0;
}

static void *cvc_open(FILE *out, const char *title)
{
	struct cvc *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->out = out;
	c->first = 1;
	c->title = title ? strdup(title) : NULL;
	fputs("{\"traceEvents\":[", out);
	return c;
}

static int cvc_thread(void *w, int pid, int tid, const char *pname, const char *tname)
{
	struct cvc *c = w;

	c->pid = pid;
	c->tid = tid;
	c->depth = 0;
	c->len = 0;
	if (pname) {
		cvc_sep(c);
		fprintf(c->out,
			"{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
			"\"args\":{\"name\":\"",
			pid, tid);
		conv_json_str(c->out, pname);
		fputs("\"}}", c->out);
	}
	cvc_sep(c);
	fprintf(c->out,
		"{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"",
		pid, tid);
	if (tname)
		conv_json_str(c->out, tname);
	else
		fprintf(c->out, "pid %d tid %d", pid, tid);
	fputs("\"}}", c->out);
	return ferror(c->out) ? -1 : 0;
}

/* NAME kept as the innermost open frame's; -1: out of memory or deeper than the cap */
static int cvc_push(struct cvc *c, const char *name)
{
	size_t n = strlen(name) + 1;

	if (c->depth >= CONV_MAX_DEPTH)
		return -1;
	if (c->len + n > c->cap) {
		size_t ncap = c->cap ? c->cap : 4096;
		char *p;

		while (ncap < c->len + n)
			ncap *= 2;
		if (!(p = realloc(c->names, ncap)))
			return -1;
		c->names = p;
		c->cap = ncap;
	}
	memcpy(c->names + c->len, name, n);
	c->at[c->depth++] = c->len;
	c->len += n;
	return 0;
}

static int cvc_enter_args(void *w, uint64_t ns, const char *name, const char *args)
{
	struct cvc *c = w;

	if (cvc_push(c, name) < 0)
		return -1;
	cvc_sep(c);
	fputs("{\"name\":\"", c->out);
	conv_json_str(c->out, name);
	fprintf(c->out, "\",\"ph\":\"B\",\"ts\":%" PRIu64 ".%03u,\"pid\":%d,\"tid\":%d", ns / 1000,
		(unsigned)(ns % 1000), c->pid, c->tid);
	if (args)
		fprintf(c->out, ",\"args\":{%s}", args);
	fputc('}', c->out);
	return ferror(c->out) ? -1 : 0;
}

static int cvc_enter(void *w, uint64_t ns, const char *name)
{
	return cvc_enter_args(w, ns, name, NULL);
}

static int cvc_exit_args(void *w, uint64_t ns, const char *args)
{
	struct cvc *c = w;

	cvc_sep(c);
	if (c->depth) {
		c->len = c->at[--c->depth];
		fputs("{\"name\":\"", c->out);
		conv_json_str(c->out, c->names + c->len);
		fputs("\",", c->out);
	} else {
		fputc('{', c->out);
	}
	fprintf(c->out, "\"ph\":\"E\",\"ts\":%" PRIu64 ".%03u,\"pid\":%d,\"tid\":%d", ns / 1000,
		(unsigned)(ns % 1000), c->pid, c->tid);
	if (args)
		fprintf(c->out, ",\"args\":{%s}", args);
	fputc('}', c->out);
	return ferror(c->out) ? -1 : 0;
}

static int cvc_exit(void *w, uint64_t ns)
{
	return cvc_exit_args(w, ns, NULL);
}

static int cvc_instant(void *w, uint64_t ns, const char *name, const char *args)
{
	struct cvc *c = w;

	cvc_sep(c);
	fputs("{\"name\":\"", c->out);
	conv_json_str(c->out, name);
	fprintf(c->out,
		"\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%" PRIu64 ".%03u,\"pid\":%d,\"tid\":%d",
		ns / 1000, (unsigned)(ns % 1000), c->pid, c->tid);
	if (args)
		fprintf(c->out, ",\"args\":{%s}", args);
	fputc('}', c->out);
	return ferror(c->out) ? -1 : 0;
}

static int cvc_counter(void *w, uint64_t ns, const char *name, const char *series,
		       double value)
{
	struct cvc *c = w;

	cvc_sep(c);
	fputs("{\"name\":\"", c->out);
	conv_json_str(c->out, name);
	fprintf(c->out, "\",\"ph\":\"C\",\"ts\":%" PRIu64 ".%03u,\"pid\":%d,\"tid\":%d,"
		"\"args\":{\"",
		ns / 1000, (unsigned)(ns % 1000), c->pid, c->tid);
	conv_json_str(c->out, series);
	fprintf(c->out, "\":%.17g}}", value);
	return ferror(c->out) ? -1 : 0;
}

static int cvc_finish(void *w)
{
	struct cvc *c = w;
	int r;

	fputs("\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"converter\":\"flightrec convert\"",
	      c->out);
	if (c->title) {
		fputs(",\"source\":\"", c->out);
		conv_json_str(c->out, c->title);
		fputc('"', c->out);
	}
	fputs("}}\n", c->out);
	r = ferror(c->out) ? -1 : 0;
	free(c->title);
	free(c->names);
	free(c);
	return r;
}

const struct conv_writer conv_chrome = {
	.name = "chrome",
	.what = "Chrome trace-event JSON (Perfetto, chrome://tracing)",
	.open = cvc_open,
	.thread = cvc_thread,
	.enter = cvc_enter,
	.exit = cvc_exit,
	.instant = cvc_instant,
	.counter = cvc_counter,
	.finish = cvc_finish,
	.enter_args = cvc_enter_args,
	.exit_args = cvc_exit_args,
};
