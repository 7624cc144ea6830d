/*
 * main: the flightrec command-line tool's entry point and command dispatch.
 *
 * Role: find the command named by argv[1] in a table and hand it the rest of the arguments
 * (argv[0] of the command is its own name, so each command parses with getopt as usual).
 * Exit codes: 0 success, 1 bad trace, 2 bad usage (record: the traced program's status).
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "librecord/rec_version.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "record", cmd_record, "run a program under the recording runtime" },
	{ "verify", cmd_verify, "check a trace against the rules its readers enforce" },
	{ "dump", cmd_dump, "print a trace in human-readable form" },
	{ "stats", cmd_stats, "per-thread counts, totals and per-function call counts" },
	{ "salvage", cmd_salvage, "rebuild a trace from the rings of a process that died" },
	{ "convert", cmd_convert, "convert a trace for a viewer: chrome, speedscope, folded, uftrace" },
};

static void print_help(FILE *fp)
{
	fputs("usage: flightrec <command> [options] [args]\n"
	      "\n"
	      "commands:\n",
	      fp);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(fp, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fputs("\n"
	      "  flightrec record [-d DIR] [--hook=TYPE] [--] PROG [ARGS...]\n"
	      "  flightrec verify [-q] PATH\n"
	      "  flightrec dump [--offsets] [--headers] PATH\n"
	      "  flightrec stats [--calls] PATH\n"
	      "  flightrec salvage [-n] [-q] [--keep] DIR\n"
	      "  flightrec convert [--to=chrome|speedscope|folded|uftrace] [-o OUT] PATH\n"
	      "\n"
	      "  flightrec --version\n"
	      "\n"
	      "PATH is a trace of any format flightrec writes: a uftrace.data directory, an XRay\n"
	      "log, an ovni trace directory, a Cacheray trace, a GDB trace file or a Chrome trace.\n"
	      "Run 'flightrec <command> --help' for a command's options, 'man flightrec' for all.\n"
	      "Exit status: 0 ok, 1 bad trace, 2 bad usage; record exits with the program's "
	      "status.\n",
	      fp);
}

int main(int argc, char **argv)
{
	const char *name;

	if (argc < 2) {
		print_help(stderr);
		return CLI_USAGE;
	}
	name = argv[1];
	if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
		print_help(stdout);
		return CLI_OK;
	}
	if (!strcmp(name, "--version") || !strcmp(name, "-V")) {
		printf("flightrec %s\n", FLIGHTREC_VERSION);
		return CLI_OK;
	}
	if (!strcmp(name, "help")) {
		if (argc < 3) {
			print_help(stdout);
			return CLI_OK;
		}
		/* "help CMD" is "CMD --help" */
		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
			if (!strcmp(argv[2], commands[i].name)) {
				char *av[] = { argv[2], "--help", NULL };

				return commands[i].run(2, av);
			}
		}
		cli_err("no command '%s' (try 'flightrec --help')", argv[2]);
		return CLI_USAGE;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(name, commands[i].name))
			return commands[i].run(argc - 1, argv + 1);

	cli_err("no command '%s' (try 'flightrec --help')", name);
	return CLI_USAGE;
}
