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
 * own first record. An entry with arguments (xray_log_args) carries its CallArguments' values
 * to the writers that have a place for them (Chrome's args: {"arguments":"(42)"}).
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

/* a held entry's args, before its first value */
#define XCV_ARGS_HEAD "\"arguments\":\"("

struct xcv {
	struct conv_tids threads;
	int32_t pid, tid; /* the thread of this pass */
	uint64_t tsc0;
	int have_tsc0;
	double ns_per_tick;
	const struct xim *names;
	struct conv_stream *cs;
	int failed;
	/* an entry with arguments, held until the record after its CallArguments */
	int pend;
	uint64_t pend_ns;
	char pend_name[1024];
	char pend_args[512]; /* "\"arguments\":\"(1, 2)\"" as it grows: without the ")\"" */
	size_t pend_len;
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

/* the held entry, with its arguments in its args (Chrome's) */
static int xcv_flush(struct xcv *x)
{
	if (!x->pend)
		return 0;
	x->pend = 0;
	/* xcv_add_arg keeps the room for the end */
	memcpy(x->pend_args + x->pend_len, ")\"", 3);
	return conv_enter_args(x->cs, x->pend_ns, x->pend_name,
			       x->pend_len > strlen(XCV_ARGS_HEAD) ? x->pend_args : NULL);
}

/*
 * One more argument of the held entry, as `uftrace dump --chrome` writes an "arg1" (uftrace's
 * auto format of a long: decimal, hex past +-100000, a negative int held in 4 bytes in
 * decimal), so that an XRay log and its uftrace.data (--format uftrace) convert alike. The
 * ones past the buffer are left out.
 */
static void xcv_add_arg(struct xcv *x, uint64_t v)
{
	int64_t sv = (int64_t)v;
	size_t room = sizeof(x->pend_args) - 3 - x->pend_len; /* ")\"" and its NUL */
	const char *sep = x->pend_len > strlen(XCV_ARGS_HEAD) ? ", " : "";
	char *p = x->pend_args + x->pend_len;
	int n;

	if ((sv > 100000 || sv < -100000) && v > 0xffff0000ull && v <= 0xffffffffull)
		n = snprintf(p, room, "%s%d", sep, (int)(uint32_t)v);
	else if (sv > 100000 || sv < -100000)
		n = snprintf(p, room, "%s%#" PRIx64, sep, v);
	else
		n = snprintf(p, room, "%s%" PRId64, sep, sv);
	if (n > 0 && (size_t)n < room)
		x->pend_len += (size_t)n;
}

static int xcv_feed(void *ctx, const struct xfr_header *h, const struct xfr_rec *r)
{
	struct xcv *x = ctx;
	uint64_t ns;
	char buf[32];
	const char *name;

	(void)h;
	if (r->pid != x->pid || r->tid != x->tid)
		return 0;
	if (r->kind == XFR_CALL_ARG && x->pend) {
		xcv_add_arg(x, r->value);
		return 0;
	}
	if (r->kind != XFR_FUNCTION)
		return 0;
	if (xcv_flush(x) < 0)
		return x->failed = 1;
	ns = r->tsc > x->tsc0 ? (uint64_t)((double)(r->tsc - x->tsc0) * x->ns_per_tick) : 0;
	if (r->fn_type == XFR_ENTER || r->fn_type == XFR_ENTER_ARGS) {
		name = xim_name(x->names, r->fid);
		if (!name) {
			snprintf(buf, sizeof(buf), "#%" PRIu32, r->fid);
			name = buf;
		}
		if (r->fn_type == XFR_ENTER_ARGS) {
			/* its CallArguments follow it: the entry waits for them */
			snprintf(x->pend_name, sizeof(x->pend_name), "%s", name);
			x->pend_ns = ns;
			memcpy(x->pend_args, XCV_ARGS_HEAD, strlen(XCV_ARGS_HEAD));
			x->pend_len = strlen(XCV_ARGS_HEAD);
			x->pend = 1;
			return 0;
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
		x.pend = 0;
		r = xfr_walk(path, &h, &c, xcv_feed, &x, &err);
		if (r != 0 || xcv_flush(&x) < 0 || conv_close_all(cs) < 0)
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
