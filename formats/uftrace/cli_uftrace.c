/*
 * cli_uftrace: the uftrace.data entry of the format table, and its verify command.
 *
 * Role: verify opens the directory strictly (formats/uftrace/read_uftrace), runs every remaining
 * rule and prints either the first broken rule (one line on stderr, exit 1) or one summary
 * line on stdout:
 *   <PATH>: ok (uftrace.data v<file version>, <N> threads, <N> records: <N> entries,
 *   <N> exits, <N> events, <N> lost)
 */
#include <inttypes.h>
#include <stdio.h>

#include "cli/cli.h"
#include "formats/uftrace/cli_uftrace.h"
#include "formats/uftrace/read_uftrace.h"

int ufcli_verify(const char *path, const struct cli_verify_opts *o)
{
	struct ufr_data *d;
	struct ufr_counts total;
	struct rd_error err;
	int ret;

	rd_error_clear(&err);
	if (ufr_open(path, 0, &d, &err) < 0) {
		rd_error_print(stderr, &err);
		return CLI_BAD_TRACE;
	}
	ret = ufr_verify_jobs(d, cli_jobs(o->jobs), &total, &err);
	if (ret < 0)
		rd_error_print(stderr, &err);
	else if (!o->quiet)
		printf("%s: ok (uftrace.data v%u, %zu threads, %" PRIu64 " records: %" PRIu64
		       " entries, %" PRIu64 " exits, %" PRIu64 " events, %" PRIu64 " lost)\n",
		       path, d->info.hdr.version, d->nr_threads, total.records, total.entries,
		       total.exits, total.events, total.lost);
	ufr_close(d);
	return ret < 0 ? CLI_BAD_TRACE : CLI_OK;
}

const struct cli_format cli_format_uftrace = {
	.name = "uftrace",
	.what = "a uftrace.data directory",
	.sniff = ufr_sniff,
	.verify = ufcli_verify,
	.dump = ufcli_dump,
	.stats = ufcli_stats,
	.convert = ufcli_convert,
};
