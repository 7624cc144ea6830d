/*
 * progress: a command's progress line on a terminal while it reads a trace (cli/progress.c).
 */
#ifndef FLIGHTREC_CLI_PROGRESS_H
#define FLIGHTREC_CLI_PROGRESS_H

#include <stdbool.h>

/* WHAT ("verify") reads the trace at PATH: draw its progress on stderr when that is a terminal
 * (and, STDOUT_IS_OUTPUT, stdout is not: the output is the progress then) */
void cli_progress_begin(const char *what, const char *path, bool stdout_is_output);
/* the read is over: erase the line, write what stdout holds */
void cli_progress_end(void);

#endif /* FLIGHTREC_CLI_PROGRESS_H */
