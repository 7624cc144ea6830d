/*
 * format.h: the trace formats the offline commands understand, and how a path is recognised.
 *
 * Role: verify, dump and stats take a PATH and ask cli_format_detect() which format it is.
 * Each format is one `struct cli_format` (a name, a cheap sniff of a file or directory, and
 * one function per command); adding XRay FDR logs, ovni directories, Cacheray traces or GDB
 * tfiles means adding an entry to the table in format.c, nothing else.
 *
 * Invariant: sniff() only looks (stat, a few header bytes) and never fails loudly; the
 * command functions return the CLI exit codes of cli.h and print their own diagnostics.
 */
#ifndef FLIGHTREC_CLI_FORMAT_H
#define FLIGHTREC_CLI_FORMAT_H

#include <stdbool.h>

struct cli_verify_opts {
	bool quiet; /* no "ok" line on success */
	unsigned jobs; /* threads reading a trace's files at once (-j); 0: as many as CPUs */
};

struct cli_dump_opts {
	bool offsets; /* prefix each record with its file offset */
	bool headers_only; /* header, info, task.txt and maps; no records */
};

struct cli_stats_opts {
	bool calls;    /* only "<count> <name>" lines, sorted by name */
	unsigned jobs; /* -j: per-thread files read at once where the format can (0: per CPU) */
};

struct conv_stream;

struct cli_convert_opts {
	const char *instr_map; /* XRay: the executable or YAML map naming function ids */
};

struct cli_format {
	const char *name;
	const char *what; /* "a uftrace.data directory" */
	bool (*sniff)(const char *path);
	int (*verify)(const char *path, const struct cli_verify_opts *o);
	int (*dump)(const char *path, const struct cli_dump_opts *o);
	int (*stats)(const char *path, const struct cli_stats_opts *o);
	/* the trace's function entries and exits into CS (formats/common/conv.h), each thread
	 * in turn; NULL: this format cannot be converted yet */
	int (*convert)(const char *path, const struct cli_convert_opts *o,
		       struct conv_stream *cs);
	/* non-NULL: convert gives only instants and counters, for this reason; a writer that
	 * holds frames only (speedscope, folded) is refused before anything is written */
	const char *convert_points;
};

/* the format of PATH, or NULL after printing why none fits */
const struct cli_format *cli_format_detect(const char *path);

/* one per format, each in its own file */
extern const struct cli_format cli_format_uftrace;
extern const struct cli_format cli_format_xray;
extern const struct cli_format cli_format_ovni;
extern const struct cli_format cli_format_cacheray;
extern const struct cli_format cli_format_tfile;
extern const struct cli_format cli_format_chrome;

#endif /* FLIGHTREC_CLI_FORMAT_H */
