/*
 * cli_uftrace.h: the uftrace.data implementations of verify, dump and stats (prefix ufcli_),
 * gathered into cli_format_uftrace by cli_uftrace.c (dump and stats: cli_dump.c, cli_stats.c).
 */
#ifndef FLIGHTREC_CLI_UFTRACE_CMDS_H
#define FLIGHTREC_CLI_UFTRACE_CMDS_H

#include "cli/format.h"

int ufcli_verify(const char *path, const struct cli_verify_opts *o);
int ufcli_dump(const char *path, const struct cli_dump_opts *o);
int ufcli_stats(const char *path, const struct cli_stats_opts *o);

#endif /* FLIGHTREC_CLI_UFTRACE_CMDS_H */
