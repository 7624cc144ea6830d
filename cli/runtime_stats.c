/*
 * runtime_stats: the runtime's own counters in `flightrec stats`, for every format (the
 * .flightrec/stats.<pid>.* files next to the trace, formats/common/rtstats.h).
 *
 * Output, after the format's own statistics (nothing when there is no .flightrec):
 *   (blank line)
 *   runtime (.flightrec/stats.<pid>):
 *   pid ppid format threads events bytes lost_full lost_nested lost_dead lost_depth exe
 *   ...                                           one row per process image
 *   total ... (lost: N)
 *   (blank line)
 *   runtime, per thread:
 *   pid tid events bytes lost_full lost_nested lost_dead lost_depth
 *   ...                                           one row per thread, in the order the
 *   <pid> after-exit ... lost_dead                runtime wrote them; then the events of
 *   total ... (lost: N)                           threads past their exit (lost_dead only)
 * The per-thread rows add up to the process rows exactly (the reader checks it: a stats
 * file whose lines do not is an error naming the file).
 */
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "formats/common/rtstats.h"

static void print_procs(const struct rts_set *set)
{
	struct rts_proc sum = { 0 };

	printf("\nruntime (.flightrec/stats.<pid>):\n");
	printf("%-8s %-8s %-8s %8s %12s %12s %10s %11s %10s %10s %s\n", "pid", "ppid", "format",
	       "threads", "events", "bytes", "lost_full", "lost_nested", "lost_dead", "lost_depth",
	       "exe");
	for (size_t i = 0; i < set->nr; i++) {
		const struct rts_proc *p = &set->procs[i];

		printf("%-8d %-8d %-8s %8" PRIu64 " %12" PRIu64 " %12" PRIu64 " %10" PRIu64
		       " %11" PRIu64 " %10" PRIu64 " %10" PRIu64 " %s\n",
		       p->pid, p->ppid, p->format[0] ? p->format : "-", p->threads, p->events,
		       p->bytes, p->lost_full, p->lost_nested, p->lost_dead, p->lost_depth,
		       p->exe[0] ? p->exe : "-");
		sum.threads += p->threads;
		sum.events += p->events;
		sum.bytes += p->bytes;
		sum.lost_full += p->lost_full;
		sum.lost_nested += p->lost_nested;
		sum.lost_dead += p->lost_dead;
		sum.lost_depth += p->lost_depth;
	}
	printf("%-8s %-8s %-8s %8" PRIu64 " %12" PRIu64 " %12" PRIu64 " %10" PRIu64 " %11" PRIu64
	       " %10" PRIu64 " %10" PRIu64 " (lost: %" PRIu64 ")\n",
	       "total", "", "", sum.threads, sum.events, sum.bytes, sum.lost_full, sum.lost_nested,
	       sum.lost_dead, sum.lost_depth, rts_lost(&sum));
}

#define THREAD_ROW "%-8d %-10s %12" PRIu64 " %12" PRIu64 " %10" PRIu64 " %11" PRIu64 " %10" PRIu64 \
		   " %10" PRIu64 "\n"

static void print_threads(const struct rts_set *set)
{
	struct rts_thread sum = { 0 };
	size_t n = 0;

	for (size_t i = 0; i < set->nr; i++)
		n += set->procs[i].nr_thr;
	if (n == 0)
		return; /* a runtime that wrote no thread lines */
	printf("\nruntime, per thread:\n");
	printf("%-8s %-10s %12s %12s %10s %11s %10s %10s\n", "pid", "tid", "events", "bytes",
	       "lost_full", "lost_nested", "lost_dead", "lost_depth");
	for (size_t i = 0; i < set->nr; i++) {
		const struct rts_proc *p = &set->procs[i];
		uint64_t unowned = rts_unowned_dead(p);

		for (size_t k = 0; k < p->nr_thr; k++) {
			const struct rts_thread *t = &p->thr[k];
			char tid[16];

			snprintf(tid, sizeof(tid), "%d", t->tid);
			printf(THREAD_ROW, p->pid, tid, t->events, t->bytes, t->lost_full,
			       t->lost_nested, t->lost_dead, t->lost_depth);
			rts_thread_add(&sum, t);
		}
		if (unowned) {
			/* events of threads past their exit: no thread state was left to count them */
			printf(THREAD_ROW, p->pid, "after-exit", (uint64_t)0, (uint64_t)0, (uint64_t)0,
			       (uint64_t)0, unowned, (uint64_t)0);
			sum.lost_dead += unowned;
		}
	}
	printf("%-8s %-10s %12" PRIu64 " %12" PRIu64 " %10" PRIu64 " %11" PRIu64 " %10" PRIu64
	       " %10" PRIu64 " (lost: %" PRIu64 ")\n",
	       "total", "", sum.events, sum.bytes, sum.lost_full, sum.lost_nested, sum.lost_dead,
	       sum.lost_depth, rts_thread_lost(&sum));
}

int cli_print_runtime(const char *path, struct rd_error *first)
{
	struct rts_set set;
	struct rd_error err;
	struct stat st;
	char *copy = NULL;
	const char *dir = path;
	int ret = 0;

	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode)) {
		copy = strdup(path);
		if (!copy)
			return -1;
		dir = dirname(copy);
	}
	rd_error_clear(&err);
	if (rts_load(dir, &set, &err) < 0) {
		if (!first) {
			fflush(stdout);
			rd_error_print(stderr, &err);
		} else if (!rd_error_isset(first)) {
			*first = err;
		}
		ret = -1;
	} else if (set.present && set.nr) {
		print_procs(&set);
		print_threads(&set);
	}
	rts_free(&set);
	free(copy);
	return ret;
}
