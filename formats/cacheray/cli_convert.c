/*
 * cli_convert: `flightrec convert` for a Cacheray trace (or a directory of them): the memory
 * accesses of each thread over time (formats/common/conv.h).
 *
 * A Cacheray record has no time: a record's time is its index in its trace, one microsecond
 * apart, so a viewer's time axis is the trace's order (equal for every thread of a trace,
 * and the gaps in a thread's track are the other threads' records). Each thread is a track
 * with one instant per record ("READ 4", "atomic WRITE 8", "unaligned READ 4", "RTTA_ADD
 * struct.point", "RTTA_REMOVE"; the address and the RTTA sizes in args) and two counters,
 * "bytes read (tid T)" and "bytes written (tid T)", its running totals, sampled at each of its
 * accesses. Nothing in a Cacheray trace has a duration: a writer that holds only frames
 * (speedscope, folded) is refused before anything is written (cli_format.convert_points).
 *
 * Threads interleave in the file: it is walked once to list them, then once per thread (the
 * file is mapped; memory is the thread list). One trace is one process: pid 1, 2, ... in the
 * order of the directory's traces, named after the file.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/format.h"
#include "formats/cacheray/read_cacheray.h"
#include "formats/common/conv.h"

struct crc {
	struct conv_tids threads;
	uint64_t tid;	/* the thread of this pass */
	uint64_t index; /* of the record in the trace */
	uint64_t bytes_read, bytes_written;
	struct conv_stream *cs;
	char rname[64], wname[64];
	int failed, oom;
};

static int crc_list(void *ctx, const struct crt_rec *r)
{
	struct crc *c = ctx;

	if (conv_tids_add(&c->threads, 0, (int64_t)r->tid) < 0)
		return c->oom = 1;
	return 0;
}

static int crc_feed(void *ctx, const struct crt_rec *r)
{
	struct crc *c = ctx;
	uint64_t ns = c->index++ * 1000;
	char name[96], args[160];

	if (r->tid != c->tid)
		return 0;
	switch (r->kind) {
	case CRT_READ:
	case CRT_WRITE:
		snprintf(name, sizeof(name), "%s%s%s %u", r->atomic ? "atomic " : "",
			 r->unaligned ? "unaligned " : "", crt_kind_name(r->kind), r->size);
		snprintf(args, sizeof(args), "\"addr\":\"0x%" PRIx64 "\"", r->addr);
		break;
	case CRT_RTTA_ADD: {
		int n = r->name_len > 64 ? 64 : (int)r->name_len;
		snprintf(name, sizeof(name), "RTTA_ADD %.*s", n, (const char *)r->name);
		snprintf(args, sizeof(args),
			 "\"addr\":\"0x%" PRIx64 "\",\"elem_size\":%" PRIu32
			 ",\"elem_count\":%" PRIu32,
			 r->addr, r->elem_size, r->elem_count);
		break;
	}
	default:
		snprintf(name, sizeof(name), "%s", crt_kind_name(r->kind));
		snprintf(args, sizeof(args), "\"addr\":\"0x%" PRIx64 "\"", r->addr);
		break;
	}
	if (conv_instant(c->cs, ns, name, args) < 0)
		return c->failed = 1;
	if (r->kind == CRT_READ) {
		c->bytes_read += r->size;
		if (conv_counter(c->cs, ns, c->rname, "bytes", (double)c->bytes_read) < 0)
			return c->failed = 1;
	} else if (r->kind == CRT_WRITE) {
		c->bytes_written += r->size;
		if (conv_counter(c->cs, ns, c->wname, "bytes", (double)c->bytes_written) < 0)
			return c->failed = 1;
	}
	return 0;
}

static int crc_one(const char *path, int pid, struct conv_stream *cs)
{
	struct crc c = { .cs = cs };
	struct rd_error err, err2;
	const char *base = strrchr(path, '/');
	char pname[300], tname[64];
	int ret = CLI_OK, r;

	rd_error_clear(&err);
	r = crt_walk(path, NULL, crc_list, &c, &err);
	if (c.oom) {
		cli_err("convert: out of memory");
		conv_tids_free(&c.threads);
		return CLI_BAD_TRACE;
	}
	if (r < 0) {
		/* what comes before the broken record is converted; the error is said at the end */
		ret = CLI_BAD_TRACE;
	}
	snprintf(pname, sizeof(pname), "Cacheray trace %s", base ? base + 1 : path);
	for (size_t i = 0; i < c.threads.nr; i++) {
		c.tid = (uint64_t)c.threads.v[i].tid;
		c.index = 0;
		c.bytes_read = c.bytes_written = 0;
		snprintf(tname, sizeof(tname), "thread %" PRIu64, c.tid);
		snprintf(c.rname, sizeof(c.rname), "bytes read (tid %" PRIu64 ")", c.tid);
		snprintf(c.wname, sizeof(c.wname), "bytes written (tid %" PRIu64 ")", c.tid);
		if (conv_track(cs, pid, (int)c.tid, pname, tname) < 0)
			goto fail;
		rd_error_clear(&err2);
		crt_walk(path, NULL, crc_feed, &c, &err2);
		if (c.failed)
			goto fail;
	}
	if (r < 0)
		rd_error_print(stderr, &err);
	conv_tids_free(&c.threads);
	return ret;
fail:
	conv_tids_free(&c.threads);
	return CLI_BAD_TRACE;
}

static bool crc_suffix(const char *name)
{
	return cli_has_suffix(name, ".trace");
}

int cacheray_cli_convert(const char *path, const struct cli_convert_opts *o, struct conv_stream *cs)
{
	size_t n;
	char **v =
		cli_trace_paths(path, crc_suffix, crt_sniff_file, "Cacheray trace (*.trace)", &n);
	int ret = CLI_OK;

	(void)o;
	if (!v)
		return CLI_BAD_TRACE;
	for (size_t i = 0; i < n && ret == CLI_OK; i++)
		ret = crc_one(v[i], (int)i + 1, cs);
	cli_free_paths(v, n);
	return ret;
}
