/*
 * cmd_salvage: `flightrec salvage [-n] [-q] [--keep] [--cmdline=TEXT] DIR`.
 *
 * Role: rebuild the native trace files in DIR from the ring files that processes which died
 * without finishing (SIGKILL, a crash in finish) left in DIR/.flightrec (librecord/
 * rec_salvage.h). One line per ring on stderr (unless -q), then one summary line on stdout:
 *   DIR: salvaged N rings of N processes: N chunks, N bytes, N events, N lost[, N gaps]
 *   [; N left to live processes][; N empty rings removed][; N bad]
 * Exit status: 0 when every ring that could be read was salvaged (none at all is fine),
 * 1 when a ring is unreadable or its trace could not be completed, 2 on bad usage.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/salvage.h"
#include "formats/salvagers.h"

static const char usage[] =
	"usage: flightrec salvage [-n] [-q] [--keep] [--cmdline=TEXT] DIR\n"
	"  Rebuild the trace in DIR from the ring files in DIR/.flightrec that processes which\n"
	"  died without finishing (SIGKILL, a crash) left behind: only committed records are\n"
	"  written, each exactly once; rings of live processes are left alone.\n"
	"  -n, --dry-run   say what would be written, change nothing\n"
	"  -q, --quiet     no line per ring\n"
	"  --keep          keep the ring files once salvaged\n"
	"  --cmdline=TEXT  the program's command line, for the trace's metadata\n"
	"Exit status: 0 ok (also when there is nothing to salvage), 1 a ring or the trace could\n"
	"not be salvaged, 2 usage.\n";

int cli_salvage(const char *dir, const char *cmdline, FILE *out, bool quiet, bool dry_run,
		bool keep, struct rec_salvage_report *report)
{
	struct rec_salvage_opts o = { .dry_run = dry_run, .keep_rings = keep, .cmdline = cmdline,
				      .log = quiet ? NULL : stderr };
	struct rec_salvage_report rep;
	int ret = fmt_salvage_dir(dir, &o, &rep);

	if (report)
		*report = rep;
	fprintf(out, "%s: %s %u rings of %u processes: %llu chunks, %llu bytes, %llu events, %llu lost",
	       dir, dry_run ? "would salvage" : "salvaged", dry_run ? rep.rings - rep.busy - rep.bad - rep.unborn :
	       rep.salvaged, rep.processes, (unsigned long long)rep.chunks,
	       (unsigned long long)rep.bytes, (unsigned long long)rep.events,
	       (unsigned long long)rep.lost);
	if (rep.gaps)
		fprintf(out, ", %llu chunks missing", (unsigned long long)rep.gaps);
	if (rep.busy)
		fprintf(out, "; %u left to live processes", rep.busy);
	if (rep.unborn)
		fprintf(out, "; %u empty rings removed", rep.unborn);
	if (rep.bad)
		fprintf(out, "; %u bad", rep.bad);
	fprintf(out, "\n");
	fflush(out);
	return ret < 0 ? CLI_BAD_TRACE : CLI_OK;
}

int cmd_salvage(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dry-run", no_argument, NULL, 'n' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "keep", no_argument, NULL, 'k' },
		{ "cmdline", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool quiet = false, dry = false, keep = false;
	const char *cmdline = NULL;
	struct stat st;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "nqh", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			dry = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'k':
			keep = true;
			break;
		case 'c':
			cmdline = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return CLI_OK;
		default:
			return cli_usage_error(usage, "salvage: unknown option '%s'",
					       argv[optind - 1]);
		}
	}
	if (argc - optind != 1)
		return cli_usage_error(usage, "salvage: expected one DIR");
	if (stat(argv[optind], &st) < 0 || !S_ISDIR(st.st_mode)) {
		cli_err("%s: not a directory", argv[optind]);
		return CLI_USAGE;
	}
	return cli_salvage(argv[optind], cmdline, stdout, quiet, dry, keep, NULL);
}
