/*
 * cli_cacheray: the Cacheray entry of the format table: verify, dump and stats of Cacheray
 * traces (formats/cacheray/read_cacheray).
 *
 * PATH is one trace, or a directory: then every *.trace in it that is a Cacheray trace (what
 * `flightrec record -d DIR` of a TSan-instrumented program leaves: DIR/cacheray.trace), in name
 * order.
 *   verify  one line per trace on stdout: "<TRACE>: ok (Cacheray trace, <N> records, <N> bytes,
 *           <N> threads: <N> reads, <N> writes, <N> atomic, <N> unaligned, <N> rtta_add,
 *           <N> rtta_remove)"; the first broken rule is one line on stderr and exit 1.
 *   dump    one line per record, as in tests/samples/cacheray/sample.dump.txt:
 *             [ATOMIC ][UNALIGNED ]READ|WRITE addr=0x<hex> size=<n> tid=<n>
 *             RTTA_ADD addr=0x<hex> tid=<n> elemsize=<n> elemcount=<n> type='<name>'
 *             RTTA_REMOVE addr=0x<hex> tid=<n>
 *           --offsets prefixes each with its file offset ("%8llu  "); --headers prints only
 *           "<TRACE>: Cacheray trace (no header), <N> bytes". With several traces, each starts
 *           with a "# <TRACE>" line.
 *   stats   per thread: records by type (reads, writes, atomic, unaligned, RTTA add/remove)
 *           and bytes read/written; per tag: count; then the runtime's own counters
 *           (.flightrec/stats.<pid>.* next to the trace: events and losses of every process
 *           and thread, runtime_stats.c).
 *           --calls: "<count> <record type>" lines, sorted by type.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/format.h"
#include "formats/cacheray/read_cacheray.h"

int cacheray_cli_convert(const char *path, const struct cli_convert_opts *o,
			 struct conv_stream *cs); /* cli_convert.c */

static bool has_trace_suffix(const char *name)
{
	return cli_has_suffix(name, ".trace");
}

/* the traces PATH stands for, malloc'ed; NULL after printing why none */
static char **cr_paths(const char *path, size_t *n)
{
	return cli_trace_paths(path, has_trace_suffix, crt_sniff_file, "Cacheray trace (*.trace)",
			       n);
}

static bool cr_sniff(const char *path)
{
	return cli_sniff_traces(path, has_trace_suffix, crt_sniff_file);
}

/* --- per-thread counts -------------------------------------------------------------------- */

struct cr_thread_counts {
	uint64_t tid;
	uint64_t reads, writes, atomic, unaligned, adds, removes;
	uint64_t bytes_read, bytes_written;
};

struct cr_stats {
	struct cr_thread_counts *t; /* sorted by tid */
	size_t nt, capt;
	size_t last; /* index of the last thread looked up */
};

static struct cr_thread_counts *cr_stats_thread(struct cr_stats *s, uint64_t tid)
{
	size_t lo = 0, hi = s->nt;

	if (s->nt && s->t[s->last].tid == tid)
		return &s->t[s->last];
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->t[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == s->nt || s->t[lo].tid != tid) {
		if (s->nt == s->capt) {
			size_t cap = s->capt ? s->capt * 2 : 16;
			struct cr_thread_counts *nt = realloc(s->t, cap * sizeof(*nt));
			if (!nt)
				return NULL;
			s->t = nt;
			s->capt = cap;
		}
		memmove(&s->t[lo + 1], &s->t[lo], (s->nt - lo) * sizeof(s->t[0]));
		memset(&s->t[lo], 0, sizeof(s->t[0]));
		s->t[lo].tid = tid;
		s->nt++;
	}
	s->last = lo;
	return &s->t[lo];
}

static int cr_stats_rec(void *ctx, const struct crt_rec *r)
{
	struct cr_thread_counts *t = cr_stats_thread(ctx, r->tid);

	if (!t)
		return 1;
	switch (r->kind) {
	case CRT_READ:
		t->reads++;
		t->bytes_read += r->size;
		break;
	case CRT_WRITE:
		t->writes++;
		t->bytes_written += r->size;
		break;
	case CRT_RTTA_ADD:
		t->adds++;
		break;
	default:
		t->removes++;
		break;
	}
	t->atomic += r->atomic;
	t->unaligned += r->unaligned;
	return 0;
}

/* --- verify -------------------------------------------------------------------------------- */

static int cr_verify(const char *path, const struct cli_verify_opts *o)
{
	size_t n;
	char **v = cr_paths(path, &n);
	int ret = CLI_OK;

	if (!v)
		return CLI_BAD_TRACE;
	for (size_t i = 0; i < n && ret == CLI_OK; i++) {
		struct cr_stats s = {0};
		struct crt_counts c;
		struct rd_error err;
		int r;

		rd_error_clear(&err);
		r = crt_walk(v[i], &c, cr_stats_rec, &s, &err);
		if (r < 0) {
			rd_error_print(stderr, &err);
			ret = CLI_BAD_TRACE;
		} else if (r > 0) {
			cli_err("out of memory");
			ret = CLI_BAD_TRACE;
		} else if (!o->quiet) {
			struct cr_thread_counts tot = {0};
			for (size_t k = 0; k < s.nt; k++) {
				tot.reads += s.t[k].reads;
				tot.writes += s.t[k].writes;
				tot.atomic += s.t[k].atomic;
				tot.unaligned += s.t[k].unaligned;
				tot.adds += s.t[k].adds;
				tot.removes += s.t[k].removes;
			}
			printf("%s: ok (Cacheray trace, %" PRIu64 " records, %" PRIu64
			       " bytes, %zu threads: %" PRIu64 " reads, %" PRIu64
			       " writes, %" PRIu64 " atomic, %" PRIu64 " unaligned, %" PRIu64
			       " rtta_add, %" PRIu64 " rtta_remove)\n",
			       v[i], c.records, c.bytes, s.nt, tot.reads, tot.writes, tot.atomic,
			       tot.unaligned, tot.adds, tot.removes);
		}
		free(s.t);
	}
	cli_free_paths(v, n);
	return ret;
}

/* --- dump ---------------------------------------------------------------------------------- */

static int dump_rec(void *ctx, const struct crt_rec *r)
{
	const struct cli_dump_opts *o = ctx;

	if (o->offsets)
		printf("%8" PRIu64 "  ", r->off);
	switch (r->kind) {
	case CRT_READ:
	case CRT_WRITE:
		printf("%s%s%s addr=0x%" PRIx64 " size=%u tid=%" PRIu64 "\n",
		       r->atomic ? "ATOMIC " : "", r->unaligned ? "UNALIGNED " : "",
		       crt_kind_name(r->kind), r->addr, r->size, r->tid);
		break;
	case CRT_RTTA_ADD:
		printf("RTTA_ADD addr=0x%" PRIx64 " tid=%" PRIu64 " elemsize=%" PRIu32
		       " elemcount=%" PRIu32 " type=",
		       r->addr, r->tid, r->elem_size, r->elem_count);
		cli_print_quoted(r->name, r->name_len, '\'');
		putchar('\n');
		break;
	default:
		printf("RTTA_REMOVE addr=0x%" PRIx64 " tid=%" PRIu64 "\n", r->addr, r->tid);
		break;
	}
	return 0;
}

static int cr_dump(const char *path, const struct cli_dump_opts *o)
{
	size_t n;
	char **v = cr_paths(path, &n);
	int ret = CLI_OK;

	if (!v)
		return CLI_BAD_TRACE;
	for (size_t i = 0; i < n && ret == CLI_OK; i++) {
		struct rd_error err;
		struct stat st;

		rd_error_clear(&err);
		if (o->headers_only) {
			if (stat(v[i], &st) == 0)
				printf("%s: Cacheray trace (no header), %lld bytes\n", v[i],
				       (long long)st.st_size);
			continue;
		}
		if (n > 1)
			printf("# %s\n", v[i]);
		if (crt_walk(v[i], NULL, dump_rec, (void *)o, &err) < 0) {
			fflush(stdout);
			rd_error_print(stderr, &err);
			ret = CLI_BAD_TRACE;
		}
	}
	cli_free_paths(v, n);
	return ret;
}

/* --- stats --------------------------------------------------------------------------------- */

static const char *tag_name(unsigned tag, char *buf, size_t size)
{
	snprintf(buf, size, "%s%s%s", (tag & CRT_FLAG_ATOMIC) ? "ATOMIC " : "",
		 (tag & CRT_FLAG_UNALIGNED) ? "UNALIGNED " : "", crt_kind_name(tag & 0x3f));
	return buf;
}

/* "<count> <name>" lines, ordered by name */
static int cmp_name_after_count(const void *a, const void *b)
{
	const char *x = strchr(*(char *const *)a, ' '), *y = strchr(*(char *const *)b, ' ');
	return strcmp(x ? x : "", y ? y : "");
}

static int cr_stats_one(const char *path, const struct cli_stats_opts *o)
{
	struct cr_stats s = {0};
	struct crt_counts c;
	struct rd_error err;
	char name[64];
	int r;

	rd_error_clear(&err);
	r = crt_walk(path, &c, cr_stats_rec, &s, &err);
	if (r != 0) {
		if (r < 0)
			rd_error_print(stderr, &err);
		else
			cli_err("out of memory");
		free(s.t);
		return CLI_BAD_TRACE;
	}
	if (o->calls) {
		char *lines[256];
		size_t nl = 0;
		for (unsigned tag = 0; tag < 256; tag++) {
			if (!c.by_tag[tag])
				continue;
			if (asprintf(&lines[nl], "%" PRIu64 " %s", c.by_tag[tag],
				     tag_name(tag, name, sizeof(name))) >= 0)
				nl++;
		}
		qsort(lines, nl, sizeof(lines[0]), cmp_name_after_count);
		for (size_t i = 0; i < nl; i++) {
			puts(lines[i]);
			free(lines[i]);
		}
		free(s.t);
		return CLI_OK;
	}
	struct cr_thread_counts tot = {0};
	printf("%s: %" PRIu64 " records, %" PRIu64 " bytes, %zu threads\n\n", path, c.records,
	       c.bytes, s.nt);
	printf("%10s %12s %12s %10s %10s %9s %9s %14s %14s\n", "tid", "reads", "writes", "atomic",
	       "unaligned", "rtta_add", "rtta_rm", "bytes_read", "bytes_written");
	for (size_t i = 0; i < s.nt; i++) {
		const struct cr_thread_counts *t = &s.t[i];
		printf("%10" PRIu64 " %12" PRIu64 " %12" PRIu64 " %10" PRIu64 " %10" PRIu64
		       " %9" PRIu64 " %9" PRIu64 " %14" PRIu64 " %14" PRIu64 "\n",
		       t->tid, t->reads, t->writes, t->atomic, t->unaligned, t->adds, t->removes,
		       t->bytes_read, t->bytes_written);
		tot.reads += t->reads;
		tot.writes += t->writes;
		tot.atomic += t->atomic;
		tot.unaligned += t->unaligned;
		tot.adds += t->adds;
		tot.removes += t->removes;
		tot.bytes_read += t->bytes_read;
		tot.bytes_written += t->bytes_written;
	}
	printf("%10s %12" PRIu64 " %12" PRIu64 " %10" PRIu64 " %10" PRIu64 " %9" PRIu64 " %9" PRIu64
	       " %14" PRIu64 " %14" PRIu64 "\n",
	       "total", tot.reads, tot.writes, tot.atomic, tot.unaligned, tot.adds, tot.removes,
	       tot.bytes_read, tot.bytes_written);
	printf("\n%6s %-22s %12s\n", "tag", "type", "records");
	for (unsigned tag = 0; tag < 256; tag++)
		if (c.by_tag[tag])
			printf("  0x%02x %-22s %12" PRIu64 "\n", tag,
			       tag_name(tag, name, sizeof(name)), c.by_tag[tag]);
	free(s.t);
	return cli_print_runtime(path, NULL) < 0 ? CLI_BAD_TRACE : CLI_OK;
}

static int cr_stats(const char *path, const struct cli_stats_opts *o)
{
	size_t n;
	char **v = cr_paths(path, &n);
	int ret = CLI_OK;

	if (!v)
		return CLI_BAD_TRACE;
	for (size_t i = 0; i < n && ret == CLI_OK; i++) {
		if (i)
			putchar('\n');
		ret = cr_stats_one(v[i], o);
	}
	cli_free_paths(v, n);
	return ret;
}

const struct cli_format cli_format_cacheray = {
	.name = "cacheray",
	.what = "a Cacheray trace (or a directory holding *.trace files)",
	.sniff = cr_sniff,
	.verify = cr_verify,
	.dump = cr_dump,
	.stats = cr_stats,
	.convert = cacheray_cli_convert,
	.convert_points = "its records are memory accesses, with no time and no duration",
};
