/*
 * cmd_stats: `flightrec stats [--calls] [-j N] PATH`.
 *
 * Role: parse the options, recognise PATH's format and run its statistics. With --calls only
 * "<count> <name>" lines are printed, sorted by name, for comparison with other tools'
 * per-function call counts. -j N: the formats that can (uftrace.data) read up to N per-thread
 * files at once; the output is the same as with -j 1.
 */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/format.h"
#include "cli/progress.h"

static const char usage[] =
	"usage: flightrec stats [--calls] [-j N] PATH\n"
	"  Per thread: records, entries, exits, events, lost, bytes, first/last time; totals;\n"
	"  call counts per function; and the runtime's own counters when PATH/.flightrec/\n"
	"  holds stats.<pid> files.\n"
	"  --calls   print only \"<count> <name>\" lines (entries per function), sorted by name\n"
	"  -j, --jobs N  read up to N per-thread files at once (uftrace.data; default: one per\n"
	"            CPU); the output is the same\n";

int cmd_stats(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "calls", no_argument, NULL, 'c' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli_stats_opts o = { 0 };
	const struct cli_format *fmt;
	int c, ret;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "hj:", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			o.calls = true;
			break;
		case 'j':
			o.jobs = cli_parse_jobs(optarg);
			if (!o.jobs)
				return cli_usage_error(usage, "stats: -j wants a number from 1 "
							      "to 1024, not '%s'",
						       optarg);
			break;
		case 'h':
			fputs(usage, stdout);
			return CLI_OK;
		default:
			return cli_usage_error(usage, "stats: unknown option '%s'",
					       argv[optind - 1]);
		}
	}
	if (argc - optind != 1)
		return cli_usage_error(usage, "stats: expected one PATH");

	fmt = cli_format_detect(argv[optind]);
	if (fmt == NULL)
		return CLI_BAD_TRACE;
	cli_progress_begin("stats", argv[optind], false);
	ret = fmt->stats(argv[optind], &o);
	cli_progress_end();
	return ret;
}
