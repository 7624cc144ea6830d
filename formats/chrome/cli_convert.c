/*
 * cli_convert: `flightrec convert` for Chrome trace-event JSON (a file, or a directory of
 * them as `flightrec record --format chrome` leaves them): the B and E events, thread by
 * thread (formats/common/conv.h).
 *
 * Events of all threads interleave in the file, so it is walked once to list the threads
 * (pid, tid, in order of appearance) and once more per thread. An E closes the innermost
 * open B of its thread, as the format says. X (complete) events carry no order against the
 * B/E around them and instant or counter events are no calls: they are left out, and counted
 * in one line on standard error.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/format.h"
#include "formats/chrome/read_chrome.h"
#include "formats/common/conv.h"

struct ccv {
	struct conv_tids threads;
	int64_t pid, tid; /* the thread of this pass */
	struct conv_stream *cs;
	uint64_t skipped;
	int oom;
};

static uint64_t ccv_ns(double us)
{
	return us > 0 ? (uint64_t)(us * 1000.0 + 0.5) : 0; /* to the nearest ns, no libm */
}

static int ccv_list(void *arg, const struct ctr_event *ev)
{
	struct ccv *c = arg;

	if (ev->ph != 'B' && ev->ph != 'E') {
		c->skipped += ev->ph != 'M';
		return 0;
	}
	if (conv_tids_add(&c->threads, ev->pid, ev->tid) < 0)
		return c->oom = 1;
	return 0;
}

static int ccv_feed(void *arg, const struct ctr_event *ev)
{
	struct ccv *c = arg;

	if (ev->pid != c->pid || ev->tid != c->tid)
		return 0;
	if (ev->ph == 'B')
		return conv_enter(c->cs, ccv_ns(ev->ts), ev->name ? ev->name : "?") < 0;
	if (ev->ph == 'E')
		return conv_exit(c->cs, ccv_ns(ev->ts)) < 0;
	return 0;
}

static int ccv_file(const char *path, struct conv_stream *cs)
{
	struct ctr_counts counts;
	struct rd_error err;
	struct ccv c = { 0 };
	int ret = CLI_OK;

	rd_error_clear(&err);
	c.cs = cs;
	if (ctr_walk(path, &counts, ccv_list, &c, &err) != 0 || c.oom) {
		if (c.oom)
			cli_err("convert: out of memory");
		else
			rd_error_print(stderr, &err);
		conv_tids_free(&c.threads);
		return CLI_BAD_TRACE;
	}
	for (size_t i = 0; i < c.threads.nr && ret == CLI_OK; i++) {
		c.pid = c.threads.v[i].pid;
		c.tid = c.threads.v[i].tid;
		if (conv_thread(cs, (int)c.pid, (int)c.tid) < 0 ||
		    ctr_walk(path, &counts, ccv_feed, &c, &err) != 0 || conv_close_all(cs) < 0)
			ret = CLI_BAD_TRACE;
	}
	if (c.skipped)
		fprintf(stderr, "flightrec: convert: %s: %" PRIu64 " events other than B, E and "
			"metadata left out\n", path, c.skipped);
	conv_tids_free(&c.threads);
	return ret;
}

int chrome_cli_convert(const char *path, const struct cli_convert_opts *o,
		       struct conv_stream *cs)
{
	size_t n;
	char **v = cli_trace_paths(path, cli_json_name, ctr_sniff_file, "Chrome trace JSON file",
				   &n);
	int ret = CLI_OK;

	(void)o;
	if (!v)
		return CLI_BAD_TRACE;
	for (size_t i = 0; i < n && ret == CLI_OK; i++)
		ret = ccv_file(v[i], cs);
	cli_free_paths(v, n);
	return ret;
}
