/*
 * namecount: count occurrences per name (prefix nc_), for per-function call counts.
 *
 * Role: an open-addressing hash table of owned name copies and 64-bit counts, and a way to
 * list them sorted. Invariant: the table is at most half full, so probing always ends.
 */
#ifndef FLIGHTREC_CLI_NAMECOUNT_H
#define FLIGHTREC_CLI_NAMECOUNT_H

#include <stddef.h>
#include <stdint.h>

struct nc_entry {
	char *name;
	uint64_t count;
};

struct nc_table {
	struct nc_entry *slots;
	size_t cap, nr;
};

void nc_init(struct nc_table *t);
int nc_add(struct nc_table *t, const char *name, uint64_t n); /* -1: out of memory */
/* NAME's counter, made (at 0) if new; NULL: out of memory */
uint64_t *nc_slot(struct nc_table *t, const char *name);
/* the entries, sorted by name (BY_COUNT: by count descending, then name); free() the array */
struct nc_entry *nc_sorted(const struct nc_table *t, int by_count);
void nc_free(struct nc_table *t);

#endif /* FLIGHTREC_CLI_NAMECOUNT_H */
