/*
 * cli_convert: `flightrec convert` for an XRay FDR log: its function records, thread by
 * thread (formats/common/conv.h).
 *
 * A thread's records are spread over blocks that alternate with other threads' blocks, so
 * the log is walked once to list its threads (pid, tid, in order of appearance) and once more
 * per thread (the log is mapped: a walk reads no more than it). Times are the records' TSCs
 * from the log's earliest, in ns through the header's cycle frequency. Names come from the
 * instrumentation map: --instr-map (the executable, or llvm-xray's YAML), else LOG.yaml
 * beside the log (flightrec writes one when it transcodes); a function id without a name is
 * "#<id>", as llvm-xray prints it. PATH may be a directory of logs (one per process, as
 * `flightrec record --format xray` leaves them): each is converted in turn, its times from its
 * own first record.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/format.h"
#include "formats/common/conv.h"
#include "formats/xray/read_instrmap.h"
#include "formats/xray/read_xray.h"

struct xcv {
	struct conv_tids threads;
	int32_t pid, tid; /* the thread of this pass */
	uint64_t tsc0;
	int have_tsc0;
	double ns_per_tick;
	const struct xim *names;
	struct conv_stream *cs;
	int failed;
};

static int xcv_list(void *ctx, const struct xfr_header *h, const struct xfr_rec *r)
{
	struct xcv *x = ctx;

	(void)h;
	if (r->kind != XFR_FUNCTION)
		return 0;
	/* the earliest, not the first: a thread's block may come after a later one's */
	if (!x->have_tsc0 || r->tsc < x->tsc0) {
		x->tsc0 = r->tsc;
		x->have_tsc0 = 1;
	}
	return conv_tids_add(&x->threads, r->pid, r->tid) < 0;
}

static int xcv_feed(void *ctx, const struct xfr_header *h, const struct xfr_rec *r)
{
	struct xcv *x = ctx;
	uint64_t ns;
	char buf[32];
	const char *name;

	(void)h;
	if (r->kind != XFR_FUNCTION || r->pid != x->pid || r->tid != x->tid)
		return 0;
	ns = r->tsc > x->tsc0 ? (uint64_t)((double)(r->tsc - x->tsc0) * x->ns_per_tick) : 0;
	if (r->fn_type == XFR_ENTER || r->fn_type == XFR_ENTER_ARGS) {
		name = xim_name(x->names, r->fid);
		if (!name) {
			snprintf(buf, sizeof(buf), "#%" PRIu32, r->fid);
			name = buf;
		}
		if (conv_enter(x->cs, ns, name) < 0)
			return x->failed = 1;
	} else if (conv_exit(x->cs, ns) < 0) {
		return x->failed = 1;
	}
	return 0;
}

static int xray_convert_log(const char *path, const struct cli_convert_opts *o,
			    struct conv_stream *cs)
{
	struct xfr_header h;
	struct xfr_counts c;
	struct rd_error err;
	struct xim names = { 0 };
	struct xcv x = { 0 };
	char *yaml = NULL;
	const char *map = o->instr_map;
	int ret = CLI_OK, r;

	rd_error_clear(&err);
	if (!map) {
		size_t n = strlen(path) + 6;
		yaml = malloc(n);
		if (yaml) {
			snprintf(yaml, n, "%s.yaml", path);
			if (access(yaml, R_OK) == 0)
				map = yaml;
		}
	}
	if (map && xim_load(map, &names, &err) < 0) {
		rd_error_print(stderr, &err);
		free(yaml);
		return CLI_BAD_TRACE;
	}
	if (!map)
		fprintf(stderr, "flightrec: convert: %s: no instrumentation map (--instr-map=EXE, or "
			"%s.yaml): functions are named by id\n", path, path);
	x.names = &names;
	x.cs = cs;
	r = xfr_walk(path, &h, &c, xcv_list, &x, &err);
	if (r < 0 || r > 0) {
		if (r < 0)
			rd_error_print(stderr, &err);
		else
			cli_err("convert: out of memory");
		ret = CLI_BAD_TRACE;
		goto out;
	}
	x.ns_per_tick = h.cycle_frequency ? 1e9 / (double)h.cycle_frequency : 1.0;
	for (size_t i = 0; i < x.threads.nr && ret == CLI_OK; i++) {
		x.pid = (int32_t)x.threads.v[i].pid;
		x.tid = (int32_t)x.threads.v[i].tid;
		if (conv_thread(cs, x.pid ? x.pid : x.tid, x.tid) < 0) {
			ret = CLI_BAD_TRACE;
			break;
		}
		r = xfr_walk(path, &h, &c, xcv_feed, &x, &err);
		if (r != 0 || conv_close_all(cs) < 0)
			ret = CLI_BAD_TRACE;
	}
out:
	conv_tids_free(&x.threads);
	xim_free(&names);
	free(yaml);
	return ret;
}

int xray_cli_convert(const char *path, const struct cli_convert_opts *o, struct conv_stream *cs)
{
	size_t n;
	char **v = cli_trace_paths(path, NULL, xfr_sniff_file, "XRay FDR log", &n);
	int ret = CLI_OK;

	if (!v)
		return CLI_BAD_TRACE;
	/* one log per process: each is converted whole, its times from its own first record */
	for (size_t i = 0; i < n && ret == CLI_OK; i++)
		ret = xray_convert_log(v[i], o, cs);
	cli_free_paths(v, n);
	return ret;
}
