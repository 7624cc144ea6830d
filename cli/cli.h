/*
 * cli.h: what the flightrec command-line tool's files share.
 *
 * Role: the command entry points dispatched by main.c, the exit code contract and the
 * message helpers. Every command returns CLI_OK (0) on success, CLI_BAD_TRACE (1) when a trace
 * is unreadable or breaks a rule, CLI_USAGE (2) on bad usage; `record` instead returns the
 * traced program's own status.
 *
 * Invariant: diagnostics go to stderr prefixed with "flightrec: "; data goes to stdout.
 */
#ifndef FLIGHTREC_CLI_H
#define FLIGHTREC_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum { CLI_OK = 0, CLI_BAD_TRACE = 1, CLI_USAGE = 2 };

int cmd_verify(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_salvage(int argc, char **argv);
int cmd_convert(int argc, char **argv);

/* "flightrec: <msg>\n" on stderr; a format ending in ':' appends ": strerror(errno)" */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* print USAGE to stderr (bad usage) and return CLI_USAGE */
int cli_usage_error(const char *usage, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* JOBS, or when 0 the CPUs this process may run on: how many threads read a trace's files at
 * once (-j) */
unsigned cli_jobs(unsigned jobs);
/* -j's argument: a number from 1 to 1024, else 0 */
unsigned cli_parse_jobs(const char *arg);

/* N bytes at P on stdout between QUOTEs: QUOTE and '\\' escaped with '\\', printable ASCII
 * as is, any other byte as \xNN */
void cli_print_quoted(const void *p, size_t n, char quote);

/*
 * The trace files of a format whose PATH is one file or a directory of them. MATCH looks at a
 * directory entry's name (NULL: any name), SNIFF at the file (readers' *_sniff_file); names
 * starting with '.' are never traces.
 */
/* NAME ends in SUFFIX and has something before it */
bool cli_has_suffix(const char *name, const char *suffix);
/* a name ending in .json (formats/chrome/cli_chrome.c) */
bool cli_json_name(const char *name);
/* the trace files PATH stands for: PATH itself if it is not a directory, else the entries that
 * MATCH and SNIFF accept, in name order; malloc'ed (free with cli_free_paths), *N of them.
 * NULL after printing "PATH: no WHAT in this directory" or why PATH cannot be read */
char **cli_trace_paths(const char *path, bool (*match)(const char *name),
		       bool (*sniff)(const char *file), const char *what, size_t *n);
/* free what cli_trace_paths returned */
void cli_free_paths(char **v, size_t n);
/* a sniff: PATH is a file SNIFF accepts, or a directory holding one whose name MATCH accepts;
 * quiet */
bool cli_sniff_traces(const char *path, bool (*match)(const char *name),
		      bool (*sniff)(const char *file));

struct rd_error;
/* The runtime's counters (runtime_stats.c) in the .flightrec/ of PATH (a directory) or of
 * PATH's directory (a trace file): per process and per thread, after a blank line; nothing
 * when there is none. 0, or -1 when its files are broken: the error goes to FIRST (unless it
 * holds one already) or, FIRST NULL, to stderr. */
int cli_print_runtime(const char *path, struct rd_error *first);

#endif /* FLIGHTREC_CLI_H */
