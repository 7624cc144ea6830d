/*
 * cmd_dump: `flightrec dump [--offsets] [--headers] PATH`.
 *
 * Role: parse the options, recognise PATH's format and run its dumper, which prints to stdout
 * whatever it can read; if the trace breaks a rule, the first broken rule is printed on stderr
 * after the dump and the command exits 1.
 */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/format.h"
#include "cli/progress.h"

static const char usage[] =
	"usage: flightrec dump [--offsets] [--headers] PATH\n"
	"  Print the trace at PATH: header fields, info sections, task.txt, session maps and\n"
	"  every record of each thread as\n"
	"    <sec.nsec> <tid> <type> depth=<d> addr=0x<hex> [<symbol>]\n"
	"  (LOST records as \"count=<n>\", EVENT records as \"id=<n>\").\n"
	"  --offsets   prefix each record with its byte offset in its .dat file\n"
	"  --headers   stop before the records\n";

int cmd_dump(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "offsets", no_argument, NULL, 'o' },
		{ "headers", no_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli_dump_opts o = { 0 };
	const struct cli_format *fmt;
	int c, ret;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o.offsets = true;
			break;
		case 'H':
			o.headers_only = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return CLI_OK;
		default:
			return cli_usage_error(usage, "dump: unknown option '%s'",
					       argv[optind - 1]);
		}
	}
	if (argc - optind != 1)
		return cli_usage_error(usage, "dump: expected one PATH");

	fmt = cli_format_detect(argv[optind]);
	if (fmt == NULL)
		return CLI_BAD_TRACE;
	cli_progress_begin("dump", argv[optind], true);
	ret = fmt->dump(argv[optind], &o);
	cli_progress_end();
	return ret;
}
