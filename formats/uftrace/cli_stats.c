/*
 * cli_stats: `flightrec stats` for a uftrace.data directory.
 *
 * Output (default):
 *   tid  records  entries  exits  events  lost  bytes  first_time  last_time    one row per
 *   ...                                                                          thread, then
 *   total ...                                                                    a total row
 *   (blank line)
 *   calls:                                 then "<count> <name>" per function, most called
 *   <count> <name>                         first ("<hex>" for an unresolved address)
 * A call is an ENTRY record (as counted from `uftrace dump`'s [entry] lines); a forked child's
 * EXITs of frames its parent entered are not calls of its own.
 *   (blank line)
 *   runtime (.flightrec/stats.<pid>):      only when the directory has .flightrec/stats.*:
 *   ...                                    per process and per thread (runtime_stats.c)
 * "lost" is the sum of the LOST records' counts; times are <sec>.<nsec> of the trace clock.
 * With --calls only the "<count> <name>" lines are printed, sorted by name (byte order), which
 * is what end-to-end tests compare with uftrace's own per-function call counts.
 *
 * Like dump, the directory is read leniently with the per-thread rules checked alongside; the
 * first broken rule is printed on stderr at the end and the exit status is then 1.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/namecount.h"
#include "formats/uftrace/cli_uftrace.h"
#include "formats/uftrace/read_uftrace.h"


struct thread_stats {
	struct ufr_counts c;
	int64_t bytes;
};

/* ADDR's slot in a cache of UFCLI_SYMCACHE_SLOTS entries, and whether it holds ADDR of S */
static struct ufcli_addr_cache *addr_slot(struct ufcli_addr_cache *cache, uint64_t addr,
					  const struct ufr_session *s, bool *hit)
{
	struct ufcli_addr_cache *slot = &cache[(addr ^ (addr >> 12)) % UFCLI_SYMCACHE_SLOTS];

	*hit = slot->valid && slot->addr == addr && slot->sess == s;
	return slot;
}

const char *ufcli_entry_name(struct ufr_data *d, const struct ufr_thread *t,
			     const struct ufr_rec *r, struct ufcli_addr_cache *cache, char *buf,
			     size_t len)
{
	const struct ufr_session *s = t->task ? ufr_session_at(d, t->task, r->time) : NULL;
	bool hit;
	struct ufcli_addr_cache *slot = addr_slot(cache, r->addr, s, &hit);
	const char *name;

	if (hit)
		name = slot->name;
	else {
		name = ufr_symbolize(d, t, r->time, r->addr);
		*slot = (struct ufcli_addr_cache){ r->addr, s, name, true, 0 };
	}
	if (name != NULL)
		return name;
	snprintf(buf, len, "<%" PRIx64 ">", r->addr);
	return buf;
}

/*
 * One ENTRY counted: against its address's cache slot, the name's count in CALLS being moved
 * only when the slot changes hands (count_flush at the thread's end): hashing and comparing the
 * name on every call was a third of stats' time. An unresolved address ("<hex>") is counted
 * at once. 0, or -1 (no memory).
 */
static int count_entry(struct ufr_data *d, struct ufr_thread *t, const struct ufr_rec *r,
		       struct ufcli_addr_cache *cache, struct nc_table *calls)
{
	const struct ufr_session *s = t->task ? ufr_session_at(d, t->task, r->time) : NULL;
	bool hit;
	struct ufcli_addr_cache *slot = addr_slot(cache, r->addr, s, &hit);
	char buf[32];

	if (!hit) {
		if (slot->valid && slot->pending && nc_add(calls, slot->name, slot->pending) < 0)
			return -1;
		*slot = (struct ufcli_addr_cache){ r->addr, s, ufr_symbolize(d, t, r->time, r->addr),
						   true, 0 };
	}
	if (slot->name == NULL) {
		snprintf(buf, sizeof(buf), "<%" PRIx64 ">", r->addr);
		return nc_add(calls, buf, 1);
	}
	slot->pending++;
	return 0;
}

/* the counts the cache still holds, into CALLS */
static int count_flush(struct ufcli_addr_cache *cache, struct nc_table *calls)
{
	for (size_t i = 0; i < UFCLI_SYMCACHE_SLOTS; i++) {
		if (cache[i].valid && cache[i].pending &&
		    nc_add(calls, cache[i].name, cache[i].pending) < 0)
			return -1;
		cache[i].pending = 0;
	}
	return 0;
}

/* count one thread; the first broken rule goes to FIRST */
static int count_thread(struct ufr_data *d, struct ufr_thread *t, struct ufr_check *ck,
			struct nc_table *calls, struct ufcli_addr_cache *cache, struct rd_error *first)
{
	struct ufr_dat_iter it;
	struct ufr_rec rec;
	struct rd_error ierr, cerr;
	int r;

	rd_error_clear(&ierr);
	rd_error_clear(&cerr);
	memset(cache, 0, UFCLI_SYMCACHE_SLOTS * sizeof(*cache));
	if (ufr_thread_open(d, t, &it, &ierr) < 0) {
		if (!rd_error_isset(first))
			*first = ierr;
		ufr_check_init(ck, &(struct ufr_check_cfg){ 0 });
		return 0;
	}
	ufr_thread_check_init(d, t, ck);
	while ((r = ufr_dat_next(&it, &rec, &ierr)) > 0) {
		/* the checker counts every record; after a broken rule only counting goes on */
		if (!rd_error_isset(&cerr))
			ufr_check_rec(ck, &rec, t->dat_file, &cerr);
		else
			ufr_count_rec(&ck->counts, &rec);
		if (rec.type == UFR_ENTRY && count_entry(d, t, &rec, cache, calls) < 0) {
			ufr_dat_iter_close(&it);
			ufr_check_fini(ck);
			return -1;
		}
	}
	if (count_flush(cache, calls) < 0) {
		ufr_dat_iter_close(&it);
		ufr_check_fini(ck);
		return -1;
	}
	if (!rd_error_isset(first))
		*first = rd_error_isset(&cerr) ? cerr : ierr;
	ufr_dat_iter_close(&it);
	ufr_check_fini(ck);
	return 0;
}

static void print_row(const char *label, const struct ufr_counts *c, int64_t bytes)
{
	printf("%-8s %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %8" PRIu64 " %8" PRIu64 " %12" PRId64
	       " ",
	       label, c->records, c->entries, c->exits, c->events, c->lost, bytes);
	if (c->has_time) {
		char t1[RD_TIME_LEN], t2[RD_TIME_LEN];

		printf("%s %s", rd_time_str(c->first_time, t1), rd_time_str(c->last_time, t2));
	} else {
		printf("- -");
	}
	putchar('\n');
}

int ufcli_stats(const char *path, const struct cli_stats_opts *o)
{
	struct ufr_data *d;
	struct ufr_check *ck;
	struct thread_stats *ts;
	struct ufcli_addr_cache *cache;
	struct nc_table calls;
	struct nc_entry *sorted;
	struct ufr_counts total = { 0 };
	struct rd_error err, first;
	int64_t total_bytes = 0;
	int ret = CLI_OK;

	rd_error_clear(&err);
	if (ufr_open(path, UFR_OPEN_LENIENT, &d, &err) < 0) {
		rd_error_print(stderr, &err);
		return CLI_BAD_TRACE;
	}
	first = d->err;
	nc_init(&calls);
	ck = malloc(sizeof(*ck));
	ts = calloc(d->nr_threads ? d->nr_threads : 1, sizeof(*ts));
	cache = malloc(UFCLI_SYMCACHE_SLOTS * sizeof(*cache));
	if (ck == NULL || ts == NULL || cache == NULL)
		goto oom;

	for (size_t i = 0; i < d->nr_threads; i++) {
		struct ufr_thread *t = &d->threads[i];

		if (t->dat_size < 0)
			continue;
		if (count_thread(d, t, ck, &calls, cache, &first) < 0)
			goto oom;
		ts[i].c = ck->counts;
		ts[i].bytes = t->dat_size;
		ufr_counts_add(&total, &ts[i].c);
		total_bytes += t->dat_size;
	}

	sorted = nc_sorted(&calls, !o->calls);
	if (sorted == NULL)
		goto oom;
	if (o->calls) {
		for (size_t i = 0; i < calls.nr; i++)
			printf("%" PRIu64 " %s\n", sorted[i].count, sorted[i].name);
	} else {
		printf("%-8s %10s %10s %10s %8s %8s %12s %s\n", "tid", "records", "entries",
		       "exits", "events", "lost", "bytes", "first_time last_time");
		for (size_t i = 0; i < d->nr_threads; i++) {
			char label[16];

			if (d->threads[i].dat_size < 0)
				continue;
			snprintf(label, sizeof(label), "%d", d->threads[i].tid);
			print_row(label, &ts[i].c, ts[i].bytes);
		}
		print_row("total", &total, total_bytes);
		printf("\ncalls:\n");
		for (size_t i = 0; i < calls.nr; i++)
			printf("%10" PRIu64 " %s\n", sorted[i].count, sorted[i].name);
		cli_print_runtime(path, &first);
	}
	free(sorted);
	goto out;

oom:
	cli_err("out of memory");
	ret = CLI_BAD_TRACE;
out:
	fflush(stdout);
	if (ret == CLI_OK && rd_error_isset(&first)) {
		rd_error_print(stderr, &first);
		ret = CLI_BAD_TRACE;
	}
	nc_free(&calls);
	free(cache);
	free(ts);
	free(ck);
	ufr_close(d);
	return ret;
}
