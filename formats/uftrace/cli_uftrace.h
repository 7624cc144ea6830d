/*
 * cli_uftrace.h: the uftrace.data implementations of verify, dump and stats (prefix ufcli_),
 * gathered into cli_format_uftrace by cli_uftrace.c (dump and stats: cli_dump.c, cli_stats.c).
 */
#ifndef FLIGHTREC_CLI_UFTRACE_CMDS_H
#define FLIGHTREC_CLI_UFTRACE_CMDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli/format.h"

int ufcli_verify(const char *path, const struct cli_verify_opts *o);
int ufcli_dump(const char *path, const struct cli_dump_opts *o);
int ufcli_stats(const char *path, const struct cli_stats_opts *o);
int ufcli_convert(const char *path, const struct cli_convert_opts *o,
		  struct conv_stream *cs);

struct ufr_data;
struct ufr_thread;
struct ufr_rec;
struct ufr_session;

#define UFCLI_SYMCACHE_SLOTS 4096

/* recently resolved addresses: resolving is a few binary searches, this is one compare */
struct ufcli_addr_cache {
	uint64_t addr;
	const struct ufr_session *sess;
	const char *name;
	bool valid;
	uint64_t pending; /* stats: entries of this address not yet added to its name's count */
};

/* the name of the function record R's address names, NULL when none does, through CACHE
 * (UFCLI_SYMCACHE_SLOTS entries, zeroed per thread) */
const char *ufcli_addr_name(struct ufr_data *d, const struct ufr_thread *t,
			    const struct ufr_rec *r, struct ufcli_addr_cache *cache);
/* the name of the function an ENTRY record R names ("<hex>" in BUF when unresolved), through
 * CACHE (UFCLI_SYMCACHE_SLOTS entries, zeroed per thread) */
const char *ufcli_entry_name(struct ufr_data *d, const struct ufr_thread *t,
			     const struct ufr_rec *r, struct ufcli_addr_cache *cache, char *buf,
			     size_t len);

#endif /* FLIGHTREC_CLI_UFTRACE_CMDS_H */
