/*
 * cli_ovni: the ovni entry of the format table: verify, dump and stats of ovni trace
 * directories, layouts v2 and v3 (formats/ovni/read_ovni).
 *
 *   verify  one line on stdout: "<PATH>: ok (ovni v<2|3>, <N> looms, <N> processes, <N>
 *           threads, <N> cpus, <N> events: <N> flush markers, <N> jumbo; libovni <version>
 *           commit <commit>)"; what ovniemu would only warn about goes to stderr as
 *           "flightrec: warning: ..."; the first broken rule is one line on stderr, exit 1.
 *   dump    every event of every stream in clock order, as ovnidump prints them:
 *           "<clock> <MCV> <stream> [:<payload hex>]" (jumbo events: "jumbo=<N>:<hex>", the
 *           data cut after 64 bytes); --offsets puts "0x<offset> " first; --headers prints
 *           the looms, CPUs, processes, threads and mark types instead of events.
 *   stats   per thread: events, flush markers, jumbo events, bytes and time span; per event
 *           type (MCV): count; the runtime's own counters, per process and thread
 *           (runtime_stats.c). --calls: "<count> <MCV>" lines, sorted by MCV.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/format.h"
#include "formats/ovni/read_ovni.h"

int ovni_cli_convert(const char *path, const struct cli_convert_opts *o,
		     struct conv_stream *cs); /* cli_convert.c */

static struct ovr_trace *ovni_load(const char *path)
{
	struct ovr_trace *t;
	struct rd_error err;

	rd_error_clear(&err);
	if (ovr_open(path, &t, &err) < 0) {
		rd_error_print(stderr, &err);
		return NULL;
	}
	return t;
}

static void ovni_print_warnings(const struct ovr_trace *t)
{
	for (size_t i = 0; i < t->nwarnings; i++)
		fprintf(stderr, "flightrec: warning: %s\n", t->warnings[i]);
}

static size_t ovni_ncpus(const struct ovr_trace *t)
{
	size_t n = 0;
	for (size_t i = 0; i < t->nlooms; i++)
		n += t->looms[i].ncpus;
	return n;
}

static int ovni_verify(const char *path, const struct cli_verify_opts *o)
{
	struct ovr_trace *t = ovni_load(path);
	struct ovr_totals tot;
	struct rd_error err;
	int ret;

	if (!t)
		return CLI_BAD_TRACE;
	rd_error_clear(&err);
	ret = ovr_verify_jobs(t, cli_jobs(o->jobs), &tot, &err);
	ovni_print_warnings(t);
	if (ret < 0) {
		rd_error_print(stderr, &err);
	} else if (!o->quiet) {
		printf("%s: ok (ovni v%d, %zu looms, %zu processes, %zu threads, %zu cpus, %" PRIu64
		       " events: %" PRIu64 " flush markers, %" PRIu64 " jumbo; libovni %s commit "
		       "%s)\n",
		       path, t->layout, t->nlooms, t->nprocs, t->nstreams, ovni_ncpus(t),
		       tot.events, tot.flush_markers, tot.jumbo, t->lib_version, t->lib_commit);
	}
	ovr_close(t);
	return ret < 0 ? CLI_BAD_TRACE : CLI_OK;
}

/* --- dump ----------------------------------------------------------------------------- */

static void ovni_print_event(const struct ovr_stream *s, const struct ovr_event *ev, bool offsets)
{
	if (offsets)
		printf("0x%" PRIx64 " ", ev->off);
	printf("%" PRId64 "  %s  %s", (int64_t)ev->clock, ev->mcv, s->relpath);
	if (ev->jumbo) {
		uint32_t n = ev->jumbo_size < 64 ? ev->jumbo_size : 64;
		printf("  jumbo=%" PRIu32 ":", ev->jumbo_size);
		for (uint32_t i = 0; i < n; i++)
			printf("%02x", ev->jumbo[i]);
		if (n < ev->jumbo_size)
			printf("...");
	} else if (ev->payload_size) {
		printf("  ");
		for (size_t i = 0; i < ev->payload_size; i++)
			printf(":%02x", ev->payload[i]);
	}
	putchar('\n');
}

static void ovni_dump_headers(const struct ovr_trace *t)
{
	printf("ovni trace %s: layout v%d, libovni %s commit %s\n", t->dir, t->layout,
	       t->lib_version, t->lib_commit);
	for (size_t i = 0; i < t->nlooms; i++) {
		const struct ovr_loom *l = &t->looms[i];
		printf("loom %s: %zu cpus (index:phyid", l->name, l->ncpus);
		for (size_t k = 0; k < l->ncpus; k++)
			printf(" %d:%d", l->cpus[k].index, l->cpus[k].phyid);
		printf(")\n");
		for (size_t p = 0; p < t->nprocs; p++) {
			const struct ovr_proc *pr = &t->procs[p];
			if (pr->loom != i)
				continue;
			printf("  proc %d: app_id %d", pr->pid, pr->app_id);
			if (pr->rank >= 0)
				printf(", rank %d of %d", pr->rank, pr->nranks);
			printf(", %zu threads\n", pr->nthreads);
			for (size_t s = 0; s < t->nstreams; s++)
				if (t->streams[s].proc == p)
					printf("    thread %d: %s (%zu bytes)\n", t->streams[s].tid,
					       t->streams[s].relpath, t->streams[s].size);
		}
	}
	for (size_t i = 0; i < t->nmarks; i++)
		printf("mark type %d: %s (%s)\n", t->marks[i].type, t->marks[i].title,
		       t->marks[i].stack ? "stack" : "single");
}

static int ovni_dump(const char *path, const struct cli_dump_opts *o)
{
	struct ovr_trace *t = ovni_load(path);
	const struct ovr_event *ev;
	struct ovr_merge m;
	struct rd_error err;
	size_t si;
	int ret = CLI_OK, r;

	if (!t)
		return CLI_BAD_TRACE;
	if (o->headers_only) {
		ovni_dump_headers(t);
		ovr_close(t);
		return CLI_OK;
	}
	rd_error_clear(&err);
	r = ovr_merge_init(&m, t, OVR_ALL_LOOMS, &err);
	if (r == 0)
		while ((r = ovr_merge_next(&m, &ev, &si, &err)) > 0)
			ovni_print_event(&t->streams[si], ev, o->offsets);
	if (r < 0) {
		fflush(stdout);
		if (rd_error_isset(&err))
			rd_error_print(stderr, &err);
		else
			cli_err("out of memory");
		ret = CLI_BAD_TRACE;
	}
	ovr_merge_close(&m);
	ovr_close(t);
	return ret;
}

/* --- stats ---------------------------------------------------------------------------- */

/* event counts by MCV: an open-addressing table (a trace has tens of event types) */
#define OVNI_MCV_SLOTS 4096

struct ovni_mcv_count {
	uint32_t key; /* mcv bytes + 1, 0 for an empty slot */
	uint64_t n;
};

static bool ovni_count_mcv(struct ovni_mcv_count *tab, const char mcv[4])
{
	uint32_t key = ((uint32_t)(unsigned char)mcv[0] << 16 |
			(uint32_t)(unsigned char)mcv[1] << 8 | (unsigned char)mcv[2]) +
		       1;
	size_t i = (key * 2654435761u) % OVNI_MCV_SLOTS;

	for (size_t probe = 0; probe < OVNI_MCV_SLOTS; probe++, i = (i + 1) % OVNI_MCV_SLOTS) {
		if (tab[i].key == key || tab[i].key == 0) {
			tab[i].key = key;
			tab[i].n++;
			return true;
		}
	}
	return false;
}

static int ovni_cmp_mcv(const void *a, const void *b)
{
	const struct ovni_mcv_count *x = a, *y = b;
	return (x->key > y->key) - (x->key < y->key);
}

static int ovni_stats(const char *path, const struct cli_stats_opts *o)
{
	struct ovr_trace *t = ovni_load(path);
	struct ovni_mcv_count *count = calloc(OVNI_MCV_SLOTS, sizeof(*count));
	struct rd_error err;
	uint64_t total = 0, flush = 0, jumbo = 0, bytes = 0;
	int ret = CLI_OK;

	if (!t || !count) {
		free(count);
		ovr_close(t);
		return CLI_BAD_TRACE;
	}
	rd_error_clear(&err);
	if (!o->calls)
		printf("%s: ovni v%d, %zu looms, %zu processes, %zu threads\n", path, t->layout,
		       t->nlooms, t->nprocs, t->nstreams);
	for (size_t i = 0; i < t->nstreams; i++) {
		const struct ovr_stream *s = &t->streams[i];
		uint64_t ev_n = 0, fl = 0, jb = 0, first = 0, last = 0;
		struct ovr_cursor c;
		struct ovr_event ev;
		int r;

		ovr_cursor_init(&c, t, s);
		while ((r = ovr_cursor_next(&c, &ev, &err)) > 0) {
			if (ev_n == 0)
				first = ev.clock;
			last = ev.clock;
			ev_n++;
			if (!ovni_count_mcv(count, ev.mcv)) {
				r = rd_error_set(&err, OVR_RULE_EVENT, s->obs, (int64_t)ev.off,
						 "more than %d event types", OVNI_MCV_SLOTS);
				break;
			}
			fl += ev.mcv[0] == 'O' && ev.mcv[1] == 'F';
			jb += (ev.flags & 0x10) != 0;
		}
		if (r < 0) {
			fflush(stdout);
			rd_error_print(stderr, &err);
			ret = CLI_BAD_TRACE;
			break;
		}
		if (!o->calls)
			printf("  thread %d (%s): %" PRIu64 " events, %" PRIu64
			       " flush markers, %" PRIu64 " jumbo, %zu bytes, %.6f s\n",
			       s->tid, s->relpath, ev_n, fl, jb, s->size,
			       ev_n ? (double)(last - first) / 1e9 : 0.0);
		total += ev_n;
		flush += fl;
		jumbo += jb;
		bytes += s->size;
	}
	if (ret == CLI_OK && !o->calls)
		printf("total: %" PRIu64 " events, %" PRIu64 " flush markers, %" PRIu64
		       " jumbo, %" PRIu64 " bytes\nby event type:\n",
		       total, flush, jumbo, bytes);
	qsort(count, OVNI_MCV_SLOTS, sizeof(*count), ovni_cmp_mcv);
	for (size_t k = 0; ret == CLI_OK && k < OVNI_MCV_SLOTS; k++) {
		uint32_t key = count[k].key - 1;
		char mcv[4] = { (char)(key >> 16), (char)(key >> 8), (char)key, 0 };
		const struct ovr_model *m;
		if (!count[k].key)
			continue;
		if (o->calls) {
			printf("%" PRIu64 " %s\n", count[k].n, mcv);
			continue;
		}
		m = ovr_model_of(mcv[0]);
		printf("  %12" PRIu64 " %s (%s)\n", count[k].n, mcv, m ? m->name : "unknown model");
	}
	if (ret == CLI_OK && !o->calls && cli_print_runtime(path, NULL) < 0)
		ret = CLI_BAD_TRACE;
	free(count);
	ovr_close(t);
	return ret;
}

const struct cli_format cli_format_ovni = {
	.name = "ovni",
	.what = "an ovni trace directory",
	.sniff = ovr_sniff,
	.verify = ovni_verify,
	.dump = ovni_dump,
	.stats = ovni_stats,
	.convert = ovni_cli_convert,
};
