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
 *
 * -j N (N > 1, the trace without argument specs): N workers read and check the threads'
 * files, each taking the next thread; a worker counts a thread's entries per (address,
 * session), with no name: symbolizing goes through d's caches, which are not shared. This
 * thread then names them, thread by thread in order, and keeps every thread's counts and first
 * broken rule by its index: the output, the rule printed and the exit status are -j 1's.
 */
#include <inttypes.h>
#include <pthread.h>
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

const char *ufcli_addr_name(struct ufr_data *d, const struct ufr_thread *t,
			    const struct ufr_rec *r, struct ufcli_addr_cache *cache)
{
	const struct ufr_session *s = t->task ? ufr_session_at(d, t->task, r->time) : NULL;
	bool hit;
	struct ufcli_addr_cache *slot = addr_slot(cache, r->addr, s, &hit);

	if (!hit)
		*slot = (struct ufcli_addr_cache){ r->addr, s, ufr_symbolize(d, t, r->time, r->addr),
						   true, 0 };
	return slot->name;
}

const char *ufcli_entry_name(struct ufr_data *d, const struct ufr_thread *t,
			     const struct ufr_rec *r, struct ufcli_addr_cache *cache, char *buf,
			     size_t len)
{
	const char *name = ufcli_addr_name(d, t, r, cache);

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

/* Walk one thread's records through the checker (which counts every record; after a broken
 * rule only counting goes on) and hand each entry to EACH_ENTRY; the thread's first error
 * (opening, reading or a broken rule) goes to ERR. 0; -1 when EACH_ENTRY fails. */
static int walk_thread(struct ufr_data *d, struct ufr_thread *t, struct ufr_check *ck,
		       struct rd_error *err,
		       int (*each_entry)(void *arg, struct ufr_data *d, struct ufr_thread *t,
					 const struct ufr_rec *r),
		       void *arg)
{
	struct ufr_dat_iter it;
	struct ufr_rec rec;
	struct rd_error ierr, cerr;
	int r, ret = 0;

	rd_error_clear(&ierr);
	rd_error_clear(&cerr);
	if (ufr_thread_open(d, t, &it, &ierr) < 0) {
		*err = ierr;
		ufr_check_init(ck, &(struct ufr_check_cfg){ 0 });
		return 0;
	}
	ufr_thread_check_init(d, t, ck);
	while ((r = ufr_dat_next(&it, &rec, &ierr)) > 0) {
		if (!rd_error_isset(&cerr))
			ufr_check_rec(ck, &rec, t->dat_file, &cerr);
		else
			ufr_count_rec(&ck->counts, &rec);
		if (rec.type == UFR_ENTRY && each_entry(arg, d, t, &rec) < 0) {
			ret = -1;
			break;
		}
	}
	*err = rd_error_isset(&cerr) ? cerr : ierr;
	ufr_dat_iter_close(&it);
	ufr_check_fini(ck);
	return ret;
}

struct count_arg {
	struct ufcli_addr_cache *cache;
	struct nc_table *calls;
};

static int count_entry_cb(void *arg, struct ufr_data *d, struct ufr_thread *t,
			  const struct ufr_rec *r)
{
	struct count_arg *a = arg;

	return count_entry(d, t, r, a->cache, a->calls);
}

/* count one thread; the first broken rule goes to FIRST */
static int count_thread(struct ufr_data *d, struct ufr_thread *t, struct ufr_check *ck,
			struct nc_table *calls, struct ufcli_addr_cache *cache, struct rd_error *first)
{
	struct count_arg a = { cache, calls };
	struct rd_error err;

	memset(cache, 0, UFCLI_SYMCACHE_SLOTS * sizeof(*cache));
	if (walk_thread(d, t, ck, &err, count_entry_cb, &a) < 0 || count_flush(cache, calls) < 0)
		return -1;
	if (!rd_error_isset(first))
		*first = err;
	return 0;
}

/* ---- -j: threads read by workers, their entries named here ---- */

/* a thread's entries of one address in one session, and the time of the first (to name it) */
struct addr_count {
	uint64_t addr;
	const struct ufr_session *sess;
	uint64_t time;
	uint64_t count; /* 0: a free slot */
};

/* open addressing, at most half full */
struct addr_table {
	struct addr_count *slots;
	size_t cap, nr;
};

static size_t addr_hash(uint64_t addr, const struct ufr_session *s, size_t cap)
{
	uint64_t h = (addr ^ (uint64_t)(uintptr_t)s) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 32) & (cap - 1);
}

/* one entry of ADDR in S at TIME; 0, or -1 (no memory) */
static int addr_add(struct addr_table *a, uint64_t addr, const struct ufr_session *s,
		    uint64_t time)
{
	struct addr_count *e;

	if (2 * (a->nr + 1) > a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 256;
		struct addr_count *n = calloc(cap, sizeof(*n));

		if (n == NULL)
			return -1;
		for (size_t i = 0; i < a->cap; i++) {
			struct addr_count *o = &a->slots[i];
			size_t k = addr_hash(o->addr, o->sess, cap);

			if (!o->count)
				continue;
			while (n[k].count)
				k = (k + 1) & (cap - 1);
			n[k] = *o;
		}
		free(a->slots);
		a->slots = n;
		a->cap = cap;
	}
	for (size_t k = addr_hash(addr, s, a->cap);; k = (k + 1) & (a->cap - 1)) {
		e = &a->slots[k];
		if (!e->count) {
			*e = (struct addr_count){ addr, s, time, 0 };
			a->nr++;
			break;
		}
		if (e->addr == addr && e->sess == s)
			break;
	}
	e->count++;
	return 0;
}

struct stats_job {
	struct ufr_data *d;
	pthread_mutex_t lock;
	size_t next;		   /* the next thread to take */
	struct ufr_counts *counts; /* per thread */
	struct addr_table *tabs;   /* per thread */
	struct rd_error *errs;	   /* per thread: its first broken rule */
	bool oom;
};

static int addr_add_cb(void *arg, struct ufr_data *d, struct ufr_thread *t,
		       const struct ufr_rec *r)
{
	return addr_add(arg, r->addr, t->task ? ufr_session_at(d, t->task, r->time) : NULL,
			r->time);
}

/* count_thread for a worker: the entries into TAB, unnamed */
static int count_thread_addrs(struct ufr_data *d, struct ufr_thread *t, struct ufr_check *ck,
			      struct addr_table *tab, struct rd_error *first)
{
	return walk_thread(d, t, ck, first, addr_add_cb, tab);
}

static void *stats_worker(void *arg)
{
	struct stats_job *j = arg;
	struct ufr_check *ck = malloc(sizeof(*ck));

	for (;;) {
		size_t i;

		pthread_mutex_lock(&j->lock);
		i = j->next++;
		if (!ck)
			j->oom = true;
		if (!ck || j->oom || i >= j->d->nr_threads) {
			pthread_mutex_unlock(&j->lock);
			break;
		}
		pthread_mutex_unlock(&j->lock);
		if (j->d->threads[i].dat_size < 0)
			continue;
		if (count_thread_addrs(j->d, &j->d->threads[i], ck, &j->tabs[i], &j->errs[i]) < 0) {
			pthread_mutex_lock(&j->lock);
			j->oom = true;
			pthread_mutex_unlock(&j->lock);
		}
		j->counts[i] = ck->counts;
	}
	free(ck);
	return NULL;
}

/* Every thread's counts into TS, its calls into CALLS, its first broken rule into FIRST
 * (when not set yet), in thread order, with JOBS workers (> 1). 0; -1: no memory; -2: it
 * could not start (the caller goes on alone). */
static int stats_parallel(struct ufr_data *d, unsigned jobs, struct thread_stats *ts,
			  struct ufcli_addr_cache *cache, struct nc_table *calls,
			  struct rd_error *first)
{
	struct stats_job j;
	pthread_t *tids = calloc(jobs, sizeof(*tids));
	int ret = 0;

	memset(&j, 0, sizeof(j));
	j.d = d;
	j.counts = calloc(d->nr_threads, sizeof(*j.counts));
	j.tabs = calloc(d->nr_threads, sizeof(*j.tabs));
	j.errs = calloc(d->nr_threads, sizeof(*j.errs));
	if (!tids || !j.counts || !j.tabs || !j.errs) {
		free(tids);
		free(j.counts);
		free(j.tabs);
		free(j.errs);
		return -2;
	}
	for (size_t i = 0; i < d->nr_threads; i++)
		rd_error_clear(&j.errs[i]);
	pthread_mutex_init(&j.lock, NULL);
	rd_run_workers(tids, jobs, stats_worker, &j);
	if (j.oom)
		ret = -1;
	/* names, here only: one cache for the whole trace, (address, session) as with -j 1 */
	memset(cache, 0, UFCLI_SYMCACHE_SLOTS * sizeof(*cache));
	for (size_t i = 0; i < d->nr_threads && ret == 0; i++) {
		struct ufr_thread *t = &d->threads[i];
		struct addr_table *a = &j.tabs[i];

		if (t->dat_size < 0)
			continue;
		ts[i].c = j.counts[i];
		ts[i].bytes = t->dat_size;
		if (!rd_error_isset(first))
			*first = j.errs[i];
		for (size_t k = 0; k < a->cap && ret == 0; k++) {
			struct addr_count *e = &a->slots[k];
			struct ufcli_addr_cache *slot;
			char buf[32];
			bool hit;

			if (!e->count)
				continue;
			slot = addr_slot(cache, e->addr, e->sess, &hit);
			if (!hit)
				*slot = (struct ufcli_addr_cache){ e->addr, e->sess,
								   ufr_symbolize(d, t, e->time,
										 e->addr),
								   true, 0 };
			if (slot->name == NULL) {
				snprintf(buf, sizeof(buf), "<%" PRIx64 ">", e->addr);
				ret = nc_add(calls, buf, e->count);
			} else {
				ret = nc_add(calls, slot->name, e->count);
			}
		}
	}
	for (size_t i = 0; i < d->nr_threads; i++)
		free(j.tabs[i].slots);
	pthread_mutex_destroy(&j.lock);
	free(tids);
	free(j.counts);
	free(j.tabs);
	free(j.errs);
	return ret;
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
	unsigned jobs;
	int ret = CLI_OK, par;

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

	/* argument specs size payloads through d's symbol caches, not shared: alone then */
	jobs = d->argspecs != NULL ? 1 : cli_jobs(o->jobs);
	if (jobs > d->nr_threads)
		jobs = (unsigned)d->nr_threads;
	par = jobs > 1 ? stats_parallel(d, jobs, ts, cache, &calls, &first) : -2;
	if (par == -1)
		goto oom;
	for (size_t i = 0; i < d->nr_threads; i++) {
		struct ufr_thread *t = &d->threads[i];

		if (t->dat_size < 0)
			continue;
		if (par == -2) {
			if (count_thread(d, t, ck, &calls, cache, &first) < 0)
				goto oom;
			ts[i].c = ck->counts;
			ts[i].bytes = t->dat_size;
		}
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
