/*
 * salvage.h: `flightrec salvage` as a function, for `flightrec record` to run on a trace whose
 * program died without finishing.
 */
#ifndef FLIGHTREC_CLI_SALVAGE_H
#define FLIGHTREC_CLI_SALVAGE_H

#include <stdbool.h>
#include <stdio.h>

struct rec_salvage_report;

/* salvage DIR, print the summary line on OUT and, unless QUIET, one line per ring on stderr;
 * what was salvaged in *REPORT (unless NULL); CLI_OK or CLI_BAD_TRACE */
int cli_salvage(const char *dir, const char *cmdline, FILE *out, bool quiet, bool dry_run,
		bool keep, struct rec_salvage_report *report);

#endif
