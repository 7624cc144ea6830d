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
#include <stdio.h>

enum { CLI_OK = 0, CLI_BAD_TRACE = 1, CLI_USAGE = 2 };

int cmd_verify(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_salvage(int argc, char **argv);

/* "flightrec: <msg>\n" on stderr; a format ending in ':' appends ": strerror(errno)" */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* print USAGE to stderr (bad usage) and return CLI_USAGE */
int cli_usage_error(const char *usage, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* FLIGHTREC_CLI_H */
