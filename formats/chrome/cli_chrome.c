/*
 * cli_chrome: the Chrome trace event JSON entry of the format table (formats/chrome/read_chrome):
 * what `flightrec record --format=chrome` writes (<program>.json per process), and any
 * trace in the Trace Event Format.
 *
 * PATH is one JSON file, or a directory: then every *.json file in it that looks like a trace,
 * in name order.
 *   verify  "<FILE>: ok (Chrome trace JSON, N events: N B, N E, N X, N instant, N metadata,
 *           N other; N threads, N open)"; the first broken rule on stderr and exit 1.
 *   dump    one line per event: "<ts> <pid>/<tid> <ph> <name>".
 *   stats   events per thread, B and X events per name, the runtime's own counters per process
 *           and thread (runtime_stats.c); --calls: "<count> <name>" lines
 *           (B and X events), sorted by name.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/format.h"
#include "cli/namecount.h"
#include "formats/chrome/read_chrome.h"

int chrome_cli_convert(const char *path, const struct cli_convert_opts *o,
		       struct conv_stream *cs); /* cli_convert.c */

bool cli_json_name(const char *name)
{
	return cli_has_suffix(name, ".json");
}

/* a Chrome trace file named *.json (a PATH that is not a directory must be named so too) */
static bool chrome_sniff_file(const char *path)
{
	return cli_json_name(path) && ctr_sniff_file(path);
}

/* the JSON traces PATH stands for, malloc'ed; NULL after printing why none */
static char **chrome_paths(const char *path, size_t *n)
{
	return cli_trace_paths(path, cli_json_name, ctr_sniff_file, "Chrome trace JSON file", n);
}

/* a JSON trace, or a directory of them (and nothing a more specific format claims) */
static bool chrome_sniff(const char *path)
{
	return cli_sniff_traces(path, cli_json_name, chrome_sniff_file);
}

static int chrome_verify(const char *path, const struct cli_verify_opts *o)
{
	size_t n;
	char **v = chrome_paths(path, &n);
	int ret = CLI_OK;

	if (!v)
		return CLI_BAD_TRACE;
	for (size_t i = 0; i < n && ret == CLI_OK; i++) {
		struct ctr_counts c;
		struct rd_error err;

		rd_error_clear(&err);
		if (ctr_walk(v[i], &c, NULL, NULL, &err) < 0) {
			rd_error_print(stderr, &err);
			ret = CLI_BAD_TRACE;
		} else if (!o->quiet) {
			printf("%s: ok (Chrome trace JSON, %" PRIu64 " events: %" PRIu64
			       " B, %" PRIu64 " E, %" PRIu64 " X, %" PRIu64 " instant, %" PRIu64
			       " metadata, %" PRIu64 " other; %" PRIu64 " threads, %" PRIu64
			       " open)\n",
			       v[i], c.events, c.begins, c.ends, c.completes, c.instants,
			       c.metadata, c.other, c.threads, c.open);
		}
	}
	cli_free_paths(v, n);
	return ret;
}

static int dump_ev(void *arg, const struct ctr_event *ev)
{
	(void)arg;
	printf("%.3f %" PRId64 "/%" PRId64 " %c %s\n", ev->ts, ev->pid, ev->tid, ev->ph,
	       ev->name ? ev->name : "");
	return 0;
}

static int chrome_dump(const char *path, const struct cli_dump_opts *o)
{
	size_t n;
	char **v = chrome_paths(path, &n);
	int ret = CLI_OK;

	if (!v)
		return CLI_BAD_TRACE;
	for (size_t i = 0; i < n && ret == CLI_OK; i++) {
		struct ctr_counts c;
		struct rd_error err;

		rd_error_clear(&err);
		printf("%s: Chrome trace JSON\n", v[i]);
		if (ctr_walk(v[i], &c, o->headers_only ? NULL : dump_ev, NULL, &err) < 0) {
			fflush(stdout);
			rd_error_print(stderr, &err);
			ret = CLI_BAD_TRACE;
		}
	}
	cli_free_paths(v, n);
	return ret;
}

struct st_ctx {
	struct nc_table calls, threads;
};

static int st_ev(void *arg, const struct ctr_event *ev)
{
	struct st_ctx *c = arg;
	char key[64];

	if (ev->ph == 'M')
		return 0;
	snprintf(key, sizeof(key), "%" PRId64 "/%" PRId64, ev->pid, ev->tid);
	nc_add(&c->threads, key, 1);
	if (ev->ph == 'B' || ev->ph == 'X')
		nc_add(&c->calls, ev->name ? ev->name : "?", 1);
	return 0;
}

static int chrome_stats(const char *path, const struct cli_stats_opts *o)
{
	size_t n;
	char **v = chrome_paths(path, &n);
	struct st_ctx c;
	int ret = CLI_OK;

	if (!v)
		return CLI_BAD_TRACE;
	nc_init(&c.calls);
	nc_init(&c.threads);
	for (size_t i = 0; i < n && ret == CLI_OK; i++) {
		struct ctr_counts cnt;
		struct rd_error err;

		rd_error_clear(&err);
		if (ctr_walk(v[i], &cnt, st_ev, &c, &err) < 0) {
			rd_error_print(stderr, &err);
			ret = CLI_BAD_TRACE;
		} else if (!o->calls) {
			printf("%s: %" PRIu64 " events, %" PRIu64 " threads, %" PRIu64
			       " calls (B and X), %" PRIu64 " still open at the end\n",
			       v[i], cnt.events, cnt.threads, cnt.begins + cnt.completes, cnt.open);
		}
	}
	if (ret == CLI_OK) {
		struct nc_entry *e;
		if (!o->calls) {
			e = nc_sorted(&c.threads, 0);
			printf("events per thread (pid/tid):\n");
			for (size_t k = 0; e && k < c.threads.nr; k++)
				printf("  %-16s %" PRIu64 "\n", e[k].name, e[k].count);
			free(e);
			printf("calls per function:\n");
		}
		e = nc_sorted(&c.calls, 0);
		for (size_t k = 0; e && k < c.calls.nr; k++)
			printf(o->calls ? "%" PRIu64 " %s\n" : "  %" PRIu64 " %s\n", e[k].count,
			       e[k].name);
		free(e);
		if (!o->calls && cli_print_runtime(path, NULL) < 0)
			ret = CLI_BAD_TRACE;
	}
	nc_free(&c.calls);
	nc_free(&c.threads);
	cli_free_paths(v, n);
	return ret;
}

const struct cli_format cli_format_chrome = {
	.name = "chrome",
	.what = "a Chrome trace event JSON file",
	.sniff = chrome_sniff,
	.verify = chrome_verify,
	.dump = chrome_dump,
	.stats = chrome_stats,
	.convert = chrome_cli_convert,
};
