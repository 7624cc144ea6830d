/*
 * cmd_verify: `flightrec verify [-q] PATH`.
 *
 * Role: parse the options, recognise PATH's format and run its verifier. On the first broken
 * rule the verifier prints ONE line "flightrec: FILE: offset 0xOFF: RULE" and the command
 * exits 1; on success it prints "PATH: ok (...)" unless -q. -j N: the formats that have one
 * file per thread (uftrace.data, ovni traces) check up to N of them at once, as many as CPUs
 * by default;
 * the answer is the same whatever N (the first error in file order, the same counts).
 * verify, stats and dump draw a progress line on a terminal (cli/progress.c).
 */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/format.h"
#include "cli/progress.h"

static const char usage[] =
	"usage: flightrec verify [-q] [-j N] PATH\n"
	"  Check the trace at PATH against the rules its readers enforce.\n"
	"  -q, --quiet   print nothing on success\n"
	"  -j, --jobs N  check up to N per-thread files at once (default: one per CPU)\n"
	"Exit status: 0 ok, 1 a rule is broken (one line on stderr), 2 usage.\n";

int cmd_verify(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "quiet", no_argument, NULL, 'q' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli_verify_opts o = { 0 };
	const struct cli_format *fmt;
	int c, ret;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "qj:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'q':
			o.quiet = true;
			break;
		case 'j':
			o.jobs = cli_parse_jobs(optarg);
			if (!o.jobs)
				return cli_usage_error(usage, "verify: -j wants a number from 1 "
							      "to 1024, not '%s'",
						       optarg);
			break;
		case 'h':
			fputs(usage, stdout);
			return CLI_OK;
		default:
			return cli_usage_error(usage, "verify: unknown option '%s'",
					       argv[optind - 1]);
		}
	}
	if (argc - optind != 1)
		return cli_usage_error(usage, "verify: expected one PATH");

	fmt = cli_format_detect(argv[optind]);
	if (fmt == NULL)
		return CLI_BAD_TRACE;
	cli_progress_begin("verify", argv[optind], false);
	ret = fmt->verify(argv[optind], &o);
	cli_progress_end();
	return ret;
}
