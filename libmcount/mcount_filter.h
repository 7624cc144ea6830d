/*
 * mcount_filter: the record-time filters of libmcount, with `uftrace record`'s options and
 * meaning: -F/-N (FLIGHTREC_FILTER), -D (FLIGHTREC_DEPTH), -t (FLIGHTREC_TIME_FILTER) and
 * --match (FLIGHTREC_MATCH).
 *
 * FLIGHTREC_FILTER is uftrace's own filter string: patterns separated by ';', in command-line
 * order, a notrace (-N) pattern prefixed with '!'. A pattern without any of uftrace's regex
 * characters (".?*+-^$|()[]{}") is compared whole with a symbol's name; any other is a POSIX
 * extended regex searched anywhere in the name (uftrace's default, --match=regex) or a glob
 * matched against the whole name (--match=glob). When several patterns match one symbol the
 * last one decides, as uftrace's filter tree does.
 *
 * Everything is decided once, at the session start: the patterns are compiled here (our own
 * matcher: regcomp and fnmatch allocate with the program's malloc, which may be instrumented),
 * matched against every function symbol of the modules loaded then, and the result is a sorted
 * table of disjoint address ranges, each IN (-F) or OUT (-N). The hooks only search that table
 * (no allocation, no lock). A module loaded later (dlopen) has no range: its functions are
 * neither filtered nor notraced.
 */
#ifndef MCOUNT_FILTER_H
#define MCOUNT_FILTER_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

enum mc_pattern_type {
	MC_PATT_SIMPLE, /* no regex character: the whole name */
	MC_PATT_REGEX,	/* POSIX ERE, searched (uftrace: regexec with REG_EXTENDED) */
	MC_PATT_GLOB,	/* fnmatch(pattern, name, 0) */
};

#define MC_PATT_LEN 256	   /* longest pattern text */
#define MC_RX_NODES 192	   /* regex nodes per pattern */
#define MC_RX_SETS 16	   /* bracket expressions per pattern */
#define MC_FILTER_MAX 64   /* patterns in FLIGHTREC_FILTER */

struct mc_rx_node {
	uint8_t op;	  /* enum in mcount_filter.c */
	uint8_t c;	  /* CHAR: the byte; SET: the set index */
	uint16_t min, max; /* repetitions; max 0xffff = unbounded */
	uint16_t next;	  /* next node of the sequence, MC_RX_END at its end */
	uint16_t sub;	  /* GROUP: its first ALT; ALT: its sequence's first node */
};

struct mc_pattern {
	int type;  /* enum mc_pattern_type */
	int out;   /* a notrace (-N, '!') pattern */
	char text[MC_PATT_LEN];
	uint16_t root; /* REGEX: the GROUP node of the whole pattern */
	uint16_t nnodes, nsets;
	struct mc_rx_node nodes[MC_RX_NODES];
	uint8_t sets[MC_RX_SETS][32];
};

/* Compile TEXT (LEN bytes) as --match=regex (glob 0) or --match=glob (glob 1) would take it.
 * 0, or -1 with the reason in err. */
int mc_pattern_compile(struct mc_pattern *p, const char *text, size_t len, int glob, char *err,
		       size_t errlen);
/* Does NAME match? (a pathological regex gives up after a bounded number of steps: no) */
int mc_pattern_match(const struct mc_pattern *p, const char *name);

/* FLIGHTREC_FILTER, parsed */
struct mc_filter_spec {
	size_t n;
	int has_in; /* some -F pattern */
	struct mc_pattern p[MC_FILTER_MAX];
};
int mc_filter_parse(struct mc_filter_spec *s, const char *list, int glob, char *err,
		    size_t errlen);
/* The mode of NAME: the last matching pattern's (MC_FILTER_IN or MC_FILTER_OUT), else 0. */
int mc_filter_mode_of(const struct mc_filter_spec *s, const char *name);

enum { MC_FILTER_IN = 1, MC_FILTER_OUT = 2 };

struct mc_frange {
	uintptr_t lo, hi; /* [lo, hi) */
	uint32_t mode;	  /* MC_FILTER_IN or MC_FILTER_OUT */
	uint32_t seq;	  /* order of addition: the first at one address wins */
};

struct mc_ftable {
	struct mc_frange *r; /* rec_mem_grow'n pages */
	size_t n, cap;
	int has_in; /* an IN range exists: uftrace's FILTER_MODE_IN */
};

/* Add the function NAME at [lo, hi) if a pattern of S matches it. 0, or -1 (no memory). */
int mc_ftable_add(struct mc_ftable *t, const struct mc_filter_spec *s, const char *name,
		  uintptr_t lo, uintptr_t hi);
/* Sort, and cut overlaps so that the ranges are disjoint (the earlier start keeps its bytes
 * up to the next start). */
void mc_ftable_finish(struct mc_ftable *t);
void mc_ftable_free(struct mc_ftable *t);
/* The mode of the range holding ADDR, 0 if none. Safe in hooks. */
static inline uint32_t mc_ftable_lookup(const struct mc_ftable *t, uintptr_t addr)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->r[mid].hi <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->n && t->r[lo].lo <= addr ? t->r[lo].mode : 0;
}

/* "10us" (ns us ms s, with decimals; no unit: ns, as uftrace's parse_time) in ns: 0, or -1 */
int mc_parse_time(const char *s, uint64_t *ns);

/* The configuration the hooks read (set once at the session start). */
struct mc_filter_conf {
	uint32_t active; /* any filter: the hooks take the filtering paths */
	uint32_t depth;	 /* -D: frames at a filter depth >= this are not recorded; 0: none */
	uint64_t time;	 /* -t, ns: a function that runs this long or less is not recorded */
	struct mc_ftable table;
};
extern struct mc_filter_conf mc_fconf;

/* Read FLIGHTREC_FILTER, FLIGHTREC_DEPTH, FLIGHTREC_TIME_FILTER, FLIGHTREC_MATCH and resolve
 * the patterns against the modules loaded now. 0, or -1 with the reason in why. */
int mc_filter_setup(char *why, size_t len);

#pragma GCC visibility pop

#endif
