/*
 * cli_tfile: the GDB trace file entry of the format table: verify, dump and stats of tfiles
 * (formats/tfile/read_tfile).
 *
 * PATH is one trace file, or a directory: then every trace file in it (what `flightrec record
 * --format=tfile` leaves: <program>.tf, and <program>.<pid>.tf per forked process), in name
 * order.
 *   verify  one line per file on stdout: "<FILE>: ok (GDB trace file, register block N
 *           bytes, N tracepoints, N trace state variables, N frames: N R, N M (N bytes), N V
 *           blocks)"; the first broken rule is one line on stderr and exit 1.
 *   dump    the definitions (status, trace state variables, tracepoints with their source
 *           forms) then one line per frame: "frame N tp=T size=S: R rip=.. rsp=.. | M
 *           0xADDR+LEN | V $name=value ..." (--offsets adds each frame's offset; --headers
 *           stops before the frames), then the end marker's offset.
 *   stats   per tracepoint: hits (its "tp V" count), frames, bytes; threads and the time span
 *           when the frames carry flightrec's $tid and $ts_ns. --calls: "<hits> <name>" lines,
 *           sorted by name (the name from flightrec's hits_<name> variables or notes, else the
 *           tracepoint's location). Then the runtime's own counters, per process and thread
 *           (runtime_stats.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/format.h"
#include "cli/namecount.h"
#include "formats/tfile/read_tfile.h"

static bool has_tf_suffix(const char *name)
{
	return cli_has_suffix(name, ".tf");
}

/* the trace files PATH stands for, malloc'ed; NULL after printing why none */
static char **tfile_paths(const char *path, size_t *n)
{
	return cli_trace_paths(path, has_tf_suffix, tfr_sniff_file, "GDB trace file (*.tf)", n);
}

static bool tfile_sniff(const char *path)
{
	return cli_sniff_traces(path, has_tf_suffix, tfr_sniff_file);
}

/* --- verify ---------------------------------------------------------------------------- */

struct count_ctx {
	uint64_t r, m, v, mbytes;
};

static int count_block(void *arg, const struct tfr_frame *fr, const struct tfr_block *b)
{
	struct count_ctx *c = arg;

	(void)fr;
	if (b->type == 'R')
		c->r++;
	else if (b->type == 'M') {
		c->m++;
		c->mbytes += b->len;
	} else
		c->v++;
	return 0;
}

static int tfile_verify(const char *path, const struct cli_verify_opts *o)
{
	size_t n;
	char **v = tfile_paths(path, &n);
	int ret = CLI_OK;

	if (!v)
		return CLI_BAD_TRACE;
	for (size_t i = 0; i < n && ret == CLI_OK; i++) {
		struct count_ctx c = {0};
		struct rd_error err;
		struct tfr_file f;

		rd_error_clear(&err);
		if (tfr_open(v[i], &f, &err) < 0 || tfr_walk(&f, NULL, count_block, &c, &err) < 0) {
			rd_error_print(stderr, &err);
			ret = CLI_BAD_TRACE;
		} else if (!o->quiet) {
			printf("%s: ok (GDB trace file, register block %u bytes, %zu tracepoints, "
			       "%zu trace state variables, %" PRIu64 " frames: %" PRIu64
			       " R, %" PRIu64 " M (%" PRIu64 " bytes), %" PRIu64 " V blocks)\n",
			       v[i], f.regsize, f.ntps, f.ntsvs, f.nframes, c.r, c.m, c.mbytes,
			       c.v);
		}
		tfr_close(&f);
	}
	cli_free_paths(v, n);
	return ret;
}

/* --- dump ------------------------------------------------------------------------------ */

/* S (NULL: "") between double quotes, escaped */
static void print_text(const char *s)
{
	cli_print_quoted(s, s ? strlen(s) : 0, '"');
}

static void dump_defs(const struct tfr_file *f)
{
	const struct tfr_status *st = &f->status;

	printf("%s: GDB trace file, register block %u bytes, %zu definition lines (%zu tdesc, "
	       "%zu unknown)\n",
	       f->path, f->regsize, f->nlines, f->ntdesc, f->nunknown);
	if (st->present) {
		printf("status: %s", st->running ? "running" : "stopped");
		if (st->reason[0])
			printf(" (%s", st->reason);
		if (st->reason[0] && st->stop_desc) {
			printf(" ");
			print_text(st->stop_desc);
		}
		if (st->reason[0])
			printf(")");
		if (st->tframes >= 0)
			printf(" tframes=%" PRId64, st->tframes);
		if (st->tcreated >= 0)
			printf(" tcreated=%" PRId64, st->tcreated);
		if (st->tfree >= 0)
			printf(" tfree=%" PRId64, st->tfree);
		if (st->tsize >= 0)
			printf(" tsize=%" PRId64, st->tsize);
		if (st->start_us)
			printf(" start=%" PRIu64 ".%06" PRIu64, st->start_us / 1000000,
			       st->start_us % 1000000);
		if (st->stop_us)
			printf(" stop=%" PRIu64 ".%06" PRIu64, st->stop_us / 1000000,
			       st->stop_us % 1000000);
		printf("\n");
		if (st->notes) {
			printf("notes: ");
			print_text(st->notes);
			printf("\n");
		}
		if (st->user) {
			printf("user: ");
			print_text(st->user);
			printf("\n");
		}
	}
	for (size_t i = 0; i < f->ntsvs; i++)
		printf("tsv %u $%s initial=%" PRId64 "%s\n", f->tsvs[i].num, f->tsvs[i].name,
		       f->tsvs[i].initial, f->tsvs[i].builtin ? " builtin" : "");
	for (size_t i = 0; i < f->ntps; i++) {
		const struct tfr_tp *tp = &f->tps[i];
		printf("tp %u addr=0x%" PRIx64 " %s", tp->num, tp->addr,
		       !tp->defined  ? "undefined"
		       : tp->enabled ? "enabled"
				     : "disabled");
		if (tp->has_status)
			printf(" hits=%" PRIu64 " usage=%" PRIu64, tp->hits, tp->usage);
		if (tp->at) {
			printf(" at=");
			print_text(tp->at);
		}
		if (tp->cond) {
			printf(" cond=");
			print_text(tp->cond);
		}
		if (tp->cmd) {
			printf(" cmd=");
			print_text(tp->cmd);
		}
		if (tp->nactions)
			printf(" actions=%u", tp->nactions);
		printf("\n");
	}
}

struct dump_ctx {
	const struct cli_dump_opts *o;
	const struct tfr_file *f;
};

static int dump_frame(void *arg, const struct tfr_frame *fr)
{
	struct dump_ctx *d = arg;

	if (d->o->offsets)
		printf("0x%08zx ", fr->off);
	printf("frame %" PRIu64 " tp=%u size=%u:", fr->index, fr->tpnum, fr->size);
	return 0;
}

static int dump_block(void *arg, const struct tfr_frame *fr, const struct tfr_block *b)
{
	struct dump_ctx *d = arg;
	const struct tfr_tsv *tsv;
	uint64_t rip, rsp;
	size_t end = fr->off + 6 + fr->size;

	switch (b->type) {
	case 'R':
		printf(" R");
		if (tfr_amd64_reg(d->f, b, 16, &rip))
			printf(" rip=0x%" PRIx64, rip);
		if (tfr_amd64_reg(d->f, b, 7, &rsp))
			printf(" rsp=0x%" PRIx64, rsp);
		break;
	case 'M':
		printf(" | M 0x%" PRIx64 "+%u", b->addr, b->len);
		break;
	case 'V':
		tsv = tfr_find_tsv(d->f, (uint32_t)b->tsv);
		if (tsv)
			printf(" | V $%s=%" PRId64, tsv->name, b->value);
		else
			printf(" | V %d=%" PRId64, b->tsv, b->value);
		break;
	}
	/* the last block of the frame ends the line */
	if (b->type == 'R'   ? b->off + 1 + b->len == end
	    : b->type == 'M' ? b->off + 11 + b->len == end
			     : b->off + 13 == end)
		printf("\n");
	return 0;
}

static int tfile_dump(const char *path, const struct cli_dump_opts *o)
{
	size_t n;
	char **v = tfile_paths(path, &n);
	int ret = CLI_OK;

	if (!v)
		return CLI_BAD_TRACE;
	for (size_t i = 0; i < n && ret == CLI_OK; i++) {
		struct rd_error err;
		struct tfr_file f;
		struct dump_ctx d = {o, &f};

		rd_error_clear(&err);
		if (tfr_open(v[i], &f, &err) < 0) {
			fflush(stdout);
			rd_error_print(stderr, &err);
			ret = CLI_BAD_TRACE;
		} else {
			dump_defs(&f);
			if (!o->headers_only) {
				if (tfr_walk(&f, dump_frame, dump_block, &d, &err) < 0) {
					printf("\n");
					fflush(stdout);
					rd_error_print(stderr, &err);
					ret = CLI_BAD_TRACE;
				} else {
					printf("end of frames at offset 0x%zx (%" PRIu64
					       " frames)\n",
					       f.end_off, f.nframes);
				}
			}
		}
		tfr_close(&f);
	}
	cli_free_paths(v, n);
	return ret;
}

/* --- stats ----------------------------------------------------------------------------- */

struct st_ctx {
	const struct tfr_file *f;
	int tid_tsv, ts_tsv; /* flightrec's $tid and $ts_ns, 0 if absent */
	struct nc_table threads;
	uint64_t first, last, bytes;
	bool have_ts;
};

static int st_frame(void *arg, const struct tfr_frame *fr)
{
	struct st_ctx *c = arg;
	c->bytes += 6 + fr->size;
	return 0;
}

static int st_block(void *arg, const struct tfr_frame *fr, const struct tfr_block *b)
{
	struct st_ctx *c = arg;
	char name[32];

	(void)fr;
	if (b->type != 'V')
		return 0;
	if (c->tid_tsv && b->tsv == c->tid_tsv) {
		snprintf(name, sizeof(name), "%" PRId64, b->value);
		nc_add(&c->threads, name, 1);
	}
	if (c->ts_tsv && b->tsv == c->ts_tsv) {
		uint64_t t = (uint64_t)b->value;
		if (!c->have_ts || t < c->first)
			c->first = t;
		if (!c->have_ts || t > c->last)
			c->last = t;
		c->have_ts = true;
	}
	return 0;
}

/* the function name of a tracepoint: flightrec's trace state variable 16 + its number,
 * "hits_<name>", else flightrec's notes ("name: N hits, M frames; ...", one entry per
 * tracepoint in number order), else its location; malloc'ed */
static char *tp_name(const struct tfr_file *f, const struct tfr_tp *tp)
{
	const struct tfr_tsv *tsv = tfr_find_tsv(f, 16 + tp->num);
	const char *p = f->status.notes;
	char *out = NULL;
	uint32_t rank = 0;

	if (tsv && !strncmp(tsv->name, "hits_", 5) && tsv->name[5])
		return strdup(tsv->name + 5);

	for (size_t i = 0; i < f->ntps; i++)
		rank += f->tps[i].num < tp->num;
	for (uint32_t k = 0; p && k < rank; k++) {
		p = strstr(p, "; ");
		if (p)
			p += 2;
	}
	if (p && *p) {
		size_t len = strcspn(p, ";");
		char *entry = strndup(p, len), *colon = entry ? strstr(entry, ": ") : NULL;
		if (colon && strstr(colon, " hits, ") && strstr(colon, " frames")) {
			*colon = '\0';
			out = strdup(entry);
		}
		free(entry);
	}
	if (!out && tp->at)
		out = strdup(tp->at);
	if (!out && asprintf(&out, "tracepoint%u", tp->num) < 0)
		out = NULL;
	return out;
}

static int tfile_stats(const char *path, const struct cli_stats_opts *o)
{
	size_t n;
	char **v = tfile_paths(path, &n);
	struct nc_table calls;
	int ret = CLI_OK;

	if (!v)
		return CLI_BAD_TRACE;
	nc_init(&calls);
	for (size_t i = 0; i < n && ret == CLI_OK; i++) {
		struct rd_error err;
		struct tfr_file f;
		struct st_ctx c = {&f, 0, 0, {0}, 0, 0, 0, false};

		rd_error_clear(&err);
		nc_init(&c.threads);
		if (tfr_open(v[i], &f, &err) < 0) {
			rd_error_print(stderr, &err);
			ret = CLI_BAD_TRACE;
			tfr_close(&f);
			nc_free(&c.threads);
			break;
		}
		for (size_t k = 0; k < f.ntsvs; k++) {
			if (!strcmp(f.tsvs[k].name, "tid"))
				c.tid_tsv = (int)f.tsvs[k].num;
			if (!strcmp(f.tsvs[k].name, "ts_ns"))
				c.ts_tsv = (int)f.tsvs[k].num;
		}
		if (tfr_walk(&f, st_frame, st_block, &c, &err) < 0) {
			rd_error_print(stderr, &err);
			ret = CLI_BAD_TRACE;
		} else {
			if (!o->calls)
				printf("%s: %" PRIu64 " frames, %" PRIu64
				       " bytes, %zu tracepoints, "
				       "%zu threads\n",
				       v[i], f.nframes, c.bytes, f.ntps, c.threads.nr);
			for (size_t k = 0; k < f.ntps; k++) {
				const struct tfr_tp *tp = &f.tps[k];
				uint64_t hits = tp->has_status ? tp->hits : tp->frames;
				char *name = tp_name(&f, tp);
				if (o->calls)
					nc_add(&calls, name ? name : "?", hits);
				else
					printf("  tracepoint %u %s at 0x%" PRIx64 ": %" PRIu64
					       " hits, %" PRIu64 " frames\n",
					       tp->num, name ? name : "?", tp->addr, hits,
					       tp->frames);
				free(name);
			}
			if (!o->calls && c.threads.nr) {
				struct nc_entry *e = nc_sorted(&c.threads, 0);
				printf("  frames per thread:");
				for (size_t k = 0; e && k < c.threads.nr; k++)
					printf(" %s=%" PRIu64, e[k].name, e[k].count);
				printf("\n");
				free(e);
			}
			if (!o->calls && c.have_ts)
				printf("  time span: %.6f s\n", (double)(c.last - c.first) / 1e9);
		}
		tfr_close(&f);
		nc_free(&c.threads);
	}
	if (o->calls && ret == CLI_OK) {
		struct nc_entry *e = nc_sorted(&calls, 0);
		for (size_t k = 0; e && k < calls.nr; k++)
			printf("%" PRIu64 " %s\n", e[k].count, e[k].name);
		free(e);
	} else if (ret == CLI_OK && cli_print_runtime(path, NULL) < 0) {
		ret = CLI_BAD_TRACE;
	}
	nc_free(&calls);
	cli_free_paths(v, n);
	return ret;
}

const struct cli_format cli_format_tfile = {
	.name = "tfile",
	.what = "a GDB trace file (tfile)",
	.sniff = tfile_sniff,
	.verify = tfile_verify,
	.dump = tfile_dump,
	.stats = tfile_stats,
};
