/*
 * cli_xray: the XRay entry of the format table: verify, dump and stats of FDR logs
 * (versions 1 to 5, formats/xray/read_xray) and of basic-mode logs (versions 1 to 3,
 * read_xray_basic.c; verify then says "XRay basic v<N>", without blocks or custom events).
 *
 * PATH is one log, or a directory: then every FDR log in it (what `flightrec record` of an
 * XRay program leaves: one xray-log.<prog>.<suffix> per process), in name order.
 *   verify  one line per log on stdout: "<LOG>: ok (XRay FDR v<N>, <N> threads, <N> blocks,
 *           <N> records: <N> entries, <N> exits, <N> tail exits, <N> arguments, <N> custom
 *           events)"; the first broken rule is one line on stderr and exit 1. The rules
 *           are the grammar's and those of `llvm-xray account` (balanced entries and exits per
 *           thread, no record before the first one account replays: xfr_verify).
 *   dump    every record: "[0xOFFSET ]<Kind> field=value ..." (--offsets adds the offsets; with
 *           --headers only the file header and the block headers); a function record ends
 *           with name=NAME when LOG.yaml beside the log names its id.
 *   stats   per thread: records by type and the time span; per function id: calls (entries);
 *           the runtime's own counters, per process and thread (what was lost, and why: FDR
 *           has no loss record; runtime_stats.c). --calls: "<count> <function id>" lines,
 *           sorted by id.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/format.h"
#include "formats/xray/read_instrmap.h"
#include "formats/xray/read_xray.h"

int xray_cli_convert(const char *path, const struct cli_convert_opts *o,
		     struct conv_stream *cs); /* cli_convert.c */

/* the logs PATH stands for, malloc'ed; NULL after printing why none */
static char **xray_paths(const char *path, size_t *n)
{
	return cli_trace_paths(path, NULL, xfr_sniff_file, "XRay log", n);
}

/* what `flightrec record` names a log: the sniff of a directory looks at no other file */
static bool is_xray_log_name(const char *name)
{
	return strncmp(name, "xray-log.", 9) == 0;
}

static bool xray_sniff(const char *path)
{
	return cli_sniff_traces(path, is_xray_log_name, xfr_sniff_file);
}

static int xray_verify(const char *path, const struct cli_verify_opts *o)
{
	size_t n;
	char **v = xray_paths(path, &n);
	int ret = CLI_OK;

	if (!v)
		return CLI_BAD_TRACE;
	for (size_t i = 0; i < n && ret == CLI_OK; i++) {
		struct xfr_header h;
		struct xfr_counts c;
		struct rd_error err;

		rd_error_clear(&err);
		if (xfr_verify(v[i], &h, &c, &err) < 0) {
			rd_error_print(stderr, &err);
			ret = CLI_BAD_TRACE;
		} else if (!o->quiet && h.type == 0) {
			printf("%s: ok (XRay basic v%u, %" PRIu64 " threads, %" PRIu64
			       " records: %" PRIu64 " entries, %" PRIu64 " exits, %" PRIu64
			       " tail exits, %" PRIu64 " arguments)\n",
			       v[i], h.version, c.threads, c.records, c.entries, c.exits,
			       c.tail_exits, c.args);
		} else if (!o->quiet) {
			printf("%s: ok (XRay FDR v%u, %" PRIu64 " threads, %" PRIu64
			       " blocks, %" PRIu64 " records: %" PRIu64 " entries, %" PRIu64
			       " exits, %" PRIu64 " tail exits, %" PRIu64 " arguments, %" PRIu64
			       " custom events)\n",
			       v[i], h.version, c.threads, c.blocks, c.records, c.entries, c.exits,
			       c.tail_exits, c.args, c.custom);
		}
	}
	cli_free_paths(v, n);
	return ret;
}

/* --- dump ----------------------------------------------------------------------------- */

struct dump_ctx {
	const struct cli_dump_opts *o;
	struct xim names; /* from LOG.yaml beside the log, when there is one */
};

/* " name=NAME" after a function record whose id LOG.yaml names (flightrec writes one beside a
 * transcoded log, and beside xray-rt's when shared objects had sleds: no ELF map names those) */
static void dump_name(const struct dump_ctx *d, uint32_t fid)
{
	const char *name = xim_name(&d->names, fid);

	if (name)
		printf(" name=%s", name);
}

static int dump_rec(void *ctx, const struct xfr_header *h, const struct xfr_rec *r)
{
	struct dump_ctx *d = ctx;
	bool head = r->kind == XFR_BUFFER_EXTENTS || r->kind == XFR_NEW_BUFFER ||
		    r->kind == XFR_WALLCLOCK || r->kind == XFR_PID;

	if (d->o->headers_only && !head)
		return 0;
	if (d->o->offsets)
		printf("0x%06" PRIx64 " ", r->off);
	switch (r->kind) {
	case XFR_FUNCTION:
		if (h->type == 0) /* basic: every record has its own time, CPU, thread */
			printf("%s fid=%" PRIu32 " tsc=%" PRIu64 " cpu=%u tid=%d pid=%d",
			       xfr_fn_type_name(r->fn_type), r->fid, r->tsc, r->cpu, (int)r->tid,
			       (int)r->pid);
		else
			printf("%s fid=%" PRIu32 " delta=+%" PRIu32 " tsc=%" PRIu64,
			       xfr_fn_type_name(r->fn_type), r->fid, r->delta, r->tsc);
		dump_name(d, r->fid);
		putchar('\n');
		break;
	case XFR_BUFFER_EXTENTS:
		printf("BufferExtents size=%" PRIu64 "\n", r->value);
		break;
	case XFR_NEW_BUFFER:
		printf("NewBuffer tid=%" PRId64 "\n", r->ivalue);
		break;
	case XFR_WALLCLOCK:
		printf("WallClock sec=%" PRIu64 " usec=%" PRId64 "\n", r->value, r->ivalue);
		break;
	case XFR_PID:
		printf("Pid pid=%" PRId64 "\n", r->ivalue);
		break;
	case XFR_NEW_CPU:
		printf("NewCPUId cpu=%u tsc=%" PRIu64 "\n", r->cpu, r->value);
		break;
	case XFR_TSC_WRAP:
		printf("TSCWrap tsc=%" PRIu64 "\n", r->value);
		break;
	case XFR_CALL_ARG:
		printf("CallArgument arg=%" PRIu64 " (0x%" PRIx64 ")\n", r->value, r->value);
		break;
	case XFR_END_OF_BUFFER:
		printf("EndOfBuffer\n");
		break;
	case XFR_CUSTOM_EVENT:
		if (h->version >= 5)
			printf("CustomEvent size=%" PRId64 " delta=%+d tsc=%" PRIu64 " data=",
			       r->ivalue, r->event_delta, r->tsc);
		else
			printf("CustomEvent size=%" PRId64 " tsc=%" PRIu64 " cpu=%u data=",
			       r->ivalue, r->value, r->cpu);
		cli_print_quoted(r->payload, r->payload_len, '"');
		putchar('\n');
		break;
	case XFR_TYPED_EVENT:
		printf("TypedEvent size=%" PRId64 " type=%u delta=%+d tsc=%" PRIu64 " data=",
		       r->ivalue, r->event_type, r->event_delta, r->tsc);
		cli_print_quoted(r->payload, r->payload_len, '"');
		putchar('\n');
		break;
	}
	return 0;
}

static int xray_dump(const char *path, const struct cli_dump_opts *o)
{
	size_t n;
	char **v = xray_paths(path, &n);
	int ret = CLI_OK;
	struct dump_ctx d = {.o = o};

	if (!v)
		return CLI_BAD_TRACE;
	for (size_t i = 0; i < n && ret == CLI_OK; i++) {
		struct xfr_header h;
		struct rd_error err;
		FILE *f;
		uint8_t hdr[32];
		char *yaml = malloc(strlen(v[i]) + 6);

		rd_error_clear(&err);
		if (yaml) {
			sprintf(yaml, "%s.yaml", v[i]);
			/* a map that cannot be read only costs the names */
			if (access(yaml, R_OK) == 0 && xim_load(yaml, &d.names, &err) < 0) {
				xim_free(&d.names);
				rd_error_clear(&err);
			}
			free(yaml);
		}
		f = fopen(v[i], "rb");
		if (f && fread(hdr, 1, sizeof(hdr), f) == sizeof(hdr)) {
			memcpy(&h.version, hdr, 2);
			memcpy(&h.type, hdr + 2, 2);
			memcpy(&h.bits, hdr + 4, 4);
			memcpy(&h.cycle_frequency, hdr + 8, 8);
			memcpy(&h.buffer_size, hdr + 16, 8);
			printf("%s%s: version=%u type=%u constant_tsc=%u nonstop_tsc=%u "
			       "cycle_frequency=%" PRIu64 " buffer_size=%" PRIu64 "\n",
			       o->offsets ? "0x000000 " : "", v[i], h.version, h.type, h.bits & 1,
			       (h.bits >> 1) & 1, h.cycle_frequency, h.buffer_size);
		}
		if (f)
			fclose(f);
		if (xfr_walk(v[i], &h, NULL, dump_rec, &d, &err) < 0) {
			fflush(stdout);
			rd_error_print(stderr, &err);
			ret = CLI_BAD_TRACE;
		}
		xim_free(&d.names);
	}
	cli_free_paths(v, n);
	return ret;
}

/* --- stats ---------------------------------------------------------------------------- */

struct st_thread {
	int32_t pid, tid;
	uint64_t entries, exits, tails, custom, first, last;
	bool seen;
};

/* calls per function id: an open-addressing table (ids have 28 bits: a file cannot make us
 * allocate an array indexed by them) */
struct st_call {
	uint32_t key; /* function id + 1; 0: free */
	uint64_t calls;
};

struct st_ctx {
	struct st_thread *t;
	size_t nt, capt;
	size_t last; /* the thread of the last record (a block's records share it) */
	struct st_call *calls;
	size_t ncalls, capcalls; /* capcalls: a power of two, at most half full */
	int failed;
};

static struct st_call *st_call(struct st_ctx *s, uint32_t fid)
{
	uint32_t key = fid + 1;

	if (2 * (s->ncalls + 1) > s->capcalls) {
		size_t cap = s->capcalls ? s->capcalls * 2 : 1024;
		struct st_call *nc = calloc(cap, sizeof(*nc));
		if (!nc)
			return NULL;
		for (size_t i = 0; i < s->capcalls; i++) {
			size_t j = s->calls[i].key * 2654435761u & (cap - 1);
			if (!s->calls[i].key)
				continue;
			while (nc[j].key)
				j = (j + 1) & (cap - 1);
			nc[j] = s->calls[i];
		}
		free(s->calls);
		s->calls = nc;
		s->capcalls = cap;
	}
	size_t j = key * 2654435761u & (s->capcalls - 1);
	while (s->calls[j].key && s->calls[j].key != key)
		j = (j + 1) & (s->capcalls - 1);
	if (!s->calls[j].key) {
		s->calls[j].key = key;
		s->ncalls++;
	}
	return &s->calls[j];
}

static int st_call_cmp(const void *a, const void *b)
{
	const struct st_call *x = a, *y = b;
	return (x->key > y->key) - (x->key < y->key);
}

static struct st_thread *st_thread(struct st_ctx *s, int32_t pid, int32_t tid)
{
	if (s->last < s->nt && s->t[s->last].pid == pid && s->t[s->last].tid == tid)
		return &s->t[s->last];
	for (size_t i = 0; i < s->nt; i++)
		if (s->t[i].pid == pid && s->t[i].tid == tid) {
			s->last = i;
			return &s->t[i];
		}
	if (s->nt == s->capt) {
		size_t cap = s->capt ? s->capt * 2 : 16;
		struct st_thread *nt = realloc(s->t, cap * sizeof(*nt));
		if (!nt)
			return NULL;
		s->t = nt;
		s->capt = cap;
	}
	memset(&s->t[s->nt], 0, sizeof(s->t[0]));
	s->t[s->nt].pid = pid;
	s->t[s->nt].tid = tid;
	s->last = s->nt;
	return &s->t[s->nt++];
}

/* a record at TSC into its thread's span */
static inline void st_time(struct st_thread *t, uint64_t tsc)
{
	if (!t->seen || tsc < t->first)
		t->first = tsc;
	if (!t->seen || tsc > t->last)
		t->last = tsc;
	t->seen = true;
}

/* a function record of TYPE (enum xfr_fn_type) and FID on thread T; 1 on no memory */
static inline int st_function(struct st_ctx *s, struct st_thread *t, unsigned type, uint32_t fid)
{
	struct st_call *c;

	if (type == XFR_EXIT) {
		t->exits++;
		return 0;
	}
	if (type == XFR_TAIL_EXIT) {
		t->tails++;
		return 0;
	}
	t->entries++;
	c = st_call(s, fid);
	if (!c)
		return 1;
	c->calls++;
	return 0;
}

static int stats_rec(void *ctx, const struct xfr_header *h, const struct xfr_rec *r)
{
	struct st_ctx *s = ctx;
	struct st_thread *t;

	(void)h;
	if (r->kind != XFR_FUNCTION && r->kind != XFR_CUSTOM_EVENT)
		return 0;
	t = st_thread(s, r->pid, r->tid);
	if (!t)
		return 1;
	st_time(t, r->tsc);
	if (r->kind == XFR_CUSTOM_EVENT) {
		t->custom++;
		return 0;
	}
	return st_function(s, t, r->fn_type, r->fid);
}

/* stats_rec for each record of a run of function records (xfr_walk_runs), the thread found
 * once */
static int stats_run(void *ctx, const struct xfr_header *h, int32_t pid, int32_t tid, uint64_t off,
		     uint64_t tsc, const uint8_t *recs, size_t n)
{
	struct st_ctx *s = ctx;
	struct st_thread *t = st_thread(s, pid, tid);

	(void)h;
	(void)off;
	if (!t)
		return 1;
	for (size_t i = 0; i < n; i++, recs += 8) {
		uint32_t word = rd_le32(recs);
		unsigned type = (word >> 1) & 7;

		tsc += rd_le32(recs + 4);
		st_time(t, tsc);
		if (st_function(s, t, type, word >> 4))
			return 1;
	}
	return 0;
}

static int xray_stats(const char *path, const struct cli_stats_opts *o)
{
	size_t n;
	char **v = xray_paths(path, &n);
	struct st_ctx s = {0};
	uint64_t hz = 0;
	int ret = CLI_OK;

	if (!v)
		return CLI_BAD_TRACE;
	for (size_t i = 0; i < n && ret == CLI_OK; i++) {
		struct xfr_header h;
		struct rd_error err;
		rd_error_clear(&err);
		int r = xfr_walk_file_runs(v[i], &h, NULL, stats_rec, stats_run, &s, &err);
		if (r < 0) {
			rd_error_print(stderr, &err);
			ret = CLI_BAD_TRACE;
		} else if (r > 0) {
			cli_err("out of memory");
			ret = CLI_BAD_TRACE;
		}
		hz = h.cycle_frequency;
	}
	/* by function id: the used slots first, sorted */
	if (s.calls) {
		size_t k = 0;
		for (size_t i = 0; i < s.capcalls; i++)
			if (s.calls[i].key)
				s.calls[k++] = s.calls[i];
		qsort(s.calls, k, sizeof(*s.calls), st_call_cmp);
	}
	if (ret == CLI_OK && o->calls) {
		for (size_t f = 0; f < s.ncalls; f++)
			printf("%" PRIu64 " %u\n", s.calls[f].calls, s.calls[f].key - 1);
	} else if (ret == CLI_OK) {
		uint64_t te = 0, tx = 0, tt = 0, tc = 0;
		printf("%8s %8s %10s %10s %10s %8s %12s\n", "pid", "tid", "entries", "exits",
		       "tail_exits", "custom", "seconds");
		for (size_t i = 0; i < s.nt; i++) {
			struct st_thread *t = &s.t[i];
			printf("%8d %8d %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %8" PRIu64
			       " %12.6f\n",
			       t->pid, t->tid, t->entries, t->exits, t->tails, t->custom,
			       hz ? (double)(t->last - t->first) / (double)hz : 0.0);
			te += t->entries;
			tx += t->exits;
			tt += t->tails;
			tc += t->custom;
		}
		printf("%8s %8s %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %8" PRIu64 "\n", "total",
		       "", te, tx, tt, tc);
		printf("\n%8s %10s\n", "fid", "calls");
		for (size_t f = 0; f < s.ncalls; f++)
			printf("%8u %10" PRIu64 "\n", s.calls[f].key - 1, s.calls[f].calls);
		if (cli_print_runtime(path, NULL) < 0)
			ret = CLI_BAD_TRACE;
	}
	free(s.t);
	free(s.calls);
	cli_free_paths(v, n);
	return ret;
}

const struct cli_format cli_format_xray = {
	.name = "xray",
	.what = "an XRay FDR or basic-mode log (or a directory of them)",
	.sniff = xray_sniff,
	.verify = xray_verify,
	.dump = xray_dump,
	.stats = xray_stats,
	.convert = xray_cli_convert,
};
