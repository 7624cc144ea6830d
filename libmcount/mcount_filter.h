/*
 * mcount_filter: the record-time filters and triggers of libmcount, with `uftrace record`'s
 * options and meaning: -F/-N (FLIGHTREC_FILTER), -T (FLIGHTREC_TRIGGER), -C
 * (FLIGHTREC_CALLER), -D (FLIGHTREC_DEPTH), -t (FLIGHTREC_TIME_FILTER), -Z
 * (FLIGHTREC_MIN_SIZE), --disable (FLIGHTREC_DISABLED), --signal (FLIGHTREC_SIGNAL) and
 * --match (FLIGHTREC_MATCH).
 *
 * FLIGHTREC_FILTER is uftrace's own filter string: patterns separated by ';', in command-line
 * order, a notrace (-N) pattern prefixed with '!'. A pattern without any of uftrace's regex
 * characters (".?*+-^$|()[]{}") is compared whole with a symbol's name; any other is a POSIX
 * extended regex searched anywhere in the name (uftrace's default, --match=regex) or a glob
 * matched against the whole name (--match=glob). When several patterns match one symbol the
 * last one decides, as uftrace's filter tree does.
 *
 * Every pattern may carry "@" and a ','-separated list: actions and at most one module name
 * (the first loaded module whose file name starts with it; uftrace's find_map_by_name). The
 * actions of one symbol's patterns merge in order (uftrace's add_trigger): -F/-N and -C take
 * the filter actions (filter notrace depth= time= size= caller hide), -T every one we do
 * (those and trace trace_on trace_off finish recover backtrace color=); backtrace, hide and
 * color= change nothing uftrace's libmcount records (they are its replay's); read=WHAT
 * (proc/statm page-fault pmu-cycle pmu-cache pmu-branch, uftrace's) records WHAT as an event
 * after the entry and its difference before the exit (mcount_read.h); the argument actions
 * (arg fparg retval auto-args) are refused here (FLIGHTREC_TRIGGER's go to -A/-R first,
 * mc_args_split_trigger), as are kernel modules.
 * "PLT" (any case) names the program's library calls only (uftrace's plt_only).
 *
 * Everything is decided once, at the session start: the patterns are compiled here (our own
 * matcher: regcomp and fnmatch allocate with the program's malloc, which may be instrumented),
 * matched against every function symbol of the modules loaded then, and the result is a sorted
 * table of disjoint address ranges, each with its merged trigger. C++ names are matched as
 * uftrace matches them, demangled the way its default "simple" demangler shows them
 * (mc_demangle_simple), with the __cxa_demangle of the libstdc++ the program has loaded; a
 * program without libstdc++ has its names matched mangled. The hooks only search that
 * table (no allocation, no lock). A module loaded later (dlopen) has no range: its functions are
 * neither filtered nor triggered.
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

enum { MC_FILTER_IN = 1, MC_FILTER_OUT = 2 };

/* What a pattern's actions ask for (uftrace's TRIGGER_FL_*); merged per symbol */
enum {
	MC_TR_FILTER = 1 << 0,	  /* -F / -N / filter / notrace: fmode says which */
	MC_TR_DEPTH = 1 << 1,	  /* depth=N */
	MC_TR_TIME = 1 << 2,	  /* time=DUR */
	MC_TR_SIZE = 1 << 3,	  /* size=N */
	MC_TR_TRACE_ON = 1 << 4,  /* trace_on */
	MC_TR_TRACE_OFF = 1 << 5, /* trace_off */
	MC_TR_TRACE = 1 << 6,	  /* trace: recorded whatever its time */
	MC_TR_FINISH = 1 << 7,	  /* finish: nothing is recorded after its entry */
	MC_TR_RECOVER = 1 << 8,	  /* recover: real return addresses while it runs (-pg) */
	MC_TR_CALLER = 1 << 9,	  /* -C / caller: recorded with its callers */
	MC_TR_REPLAY = 1 << 10,	  /* backtrace, hide, color=: replay's, nothing here */
	MC_TR_LOC_IN = 1 << 11,	  /* -L: its source file matches (the last -L pattern) */
	MC_TR_LOC_OUT = 1 << 12,  /* -L FILE@hide: its source file is hidden */
	MC_TR_READ = 1 << 13,	  /* read=: mc_trigger.read says what */
};

/* read=WHAT (uftrace's TRIGGER_READ_*, same bits): what a read action reads */
enum {
	MC_READ_PROC_STATM = 1 << 0, /* proc/statm: /proc/self/statm's size, rss, shared */
	MC_READ_PAGE_FAULT = 1 << 1, /* page-fault: getrusage's major and minor faults */
	MC_READ_PMU_CYCLE = 1 << 2,  /* pmu-cycle: the thread's cycles and instructions */
	MC_READ_PMU_CACHE = 1 << 3,  /* pmu-cache: cache references and misses */
	MC_READ_PMU_BRANCH = 1 << 4, /* pmu-branch: branch instructions and misses */
	MC_READ_KINDS = 5,
};
/* The MC_READ_* bit of read='s value (LEN bytes at S, uftrace's names, case as given), 0 if
 * it names none */
uint32_t mc_read_kind(const char *s, size_t len);

struct mc_trigger {
	uint32_t flags; /* MC_TR_* */
	uint32_t fmode; /* MC_FILTER_IN or MC_FILTER_OUT, with MC_TR_FILTER */
	uint32_t depth; /* MC_TR_DEPTH */
	uint32_t size;	/* MC_TR_SIZE */
	uint64_t time;	/* MC_TR_TIME, ns */
	uint32_t read;	/* MC_TR_READ: MC_READ_* bits */
	uint32_t pad;
};

/* Where a list comes from: which actions it may carry and what a bare pattern means */
enum mc_list_kind {
	MC_LIST_FILTER,	 /* FLIGHTREC_FILTER: a bare pattern filters (-F, '!': -N) */
	MC_LIST_TRIGGER, /* FLIGHTREC_TRIGGER: only its actions */
	MC_LIST_CALLER,	 /* FLIGHTREC_CALLER: a bare pattern is a caller filter */
};

#define MC_MODULE_LEN 64

/* FLIGHTREC_FILTER, _TRIGGER and _CALLER, parsed in that order (uftrace's) */
struct mc_filter_spec {
	size_t n;
	int has_in; /* some -F pattern */
	struct mc_pattern p[MC_FILTER_MAX];
	struct mc_trigger tr[MC_FILTER_MAX];
	char module[MC_FILTER_MAX][MC_MODULE_LEN]; /* "" for every module */
	int modidx[MC_FILTER_MAX]; /* mc_resolve: the module it names, -1 none loaded,
				    * MC_MODIDX_PLT for "PLT" */
};
/* PATTERN@PLT (any case): the executable's library calls only, as uftrace's plt_only */
#define MC_MODIDX_PLT (-2)
/* added to a module index (mc_filter_trigger_of's MOD): a library call of the executable, an
 * entry of its PLT (or -fno-plt GOT), which @PLT and the executable's own name both match */
#define MC_MOD_EXE_PLT 0x40000000
/* Empty S, then take LIST as FLIGHTREC_FILTER. 0, or -1 with the reason in err. */
int mc_filter_parse(struct mc_filter_spec *s, const char *list, int glob, char *err,
		    size_t errlen);
/* Append LIST (of KIND) to S. 0, or -1 with the reason in err. */
int mc_filter_parse_more(struct mc_filter_spec *s, const char *list, enum mc_list_kind kind,
			 int glob, char *err, size_t errlen);
/* The mode of NAME: the last matching filter pattern's (MC_FILTER_IN or MC_FILTER_OUT), else
 * 0 (module names not considered). */
int mc_filter_mode_of(const struct mc_filter_spec *s, const char *name);
/* The merged trigger of NAME in the module of index MOD (mc_resolve's numbering, plus
 * MC_MOD_EXE_PLT for the executable's library calls; patterns naming a module match only where
 * modidx is MOD, @PLT only those calls); 1 if some pattern matched. */
int mc_filter_trigger_of(const struct mc_filter_spec *s, const char *name, int mod,
			 struct mc_trigger *out);

struct mc_frange {
	uintptr_t lo, hi; /* [lo, hi) */
	uint32_t mode;	  /* MC_FILTER_IN or MC_FILTER_OUT (a filter), or 0 */
	uint32_t seq;	  /* order of addition: the first at one address wins */
	uint32_t symsize; /* the symbol's size (-Z compares it), 0 if unknown */
	uint32_t pad;
	struct mc_trigger tr; /* merged; tr.flags 0: only here for its size */
};

struct mc_ftable {
	struct mc_frange *r; /* rec_mem_grow'n pages */
	size_t n, cap;
	int has_in;	/* an IN range exists: uftrace's FILTER_MODE_IN */
	int has_caller; /* a caller range exists: uftrace's mcount_has_caller */
	int has_loc_in; /* a function matched an -L pattern: uftrace's mcount_loc_mode IN */
};

/* Add the function NAME at [lo, hi) if a pattern of S matches it. 0, or -1 (no memory). */
int mc_ftable_add(struct mc_ftable *t, const struct mc_filter_spec *s, const char *name,
		  uintptr_t lo, uintptr_t hi);
/* The same for a symbol of SIZE bytes in module MOD; ALL: added even if nothing matched (-Z
 * needs every function's size). */
int mc_ftable_add_sym(struct mc_ftable *t, const struct mc_filter_spec *s, const char *name,
		      int mod, uintptr_t lo, uintptr_t hi, uint32_t size, int all);
/* Sort, and cut overlaps so that the ranges are disjoint (the earlier start keeps its bytes
 * up to the next start). */
void mc_ftable_finish(struct mc_ftable *t);
void mc_ftable_free(struct mc_ftable *t);
/* The range holding ADDR, NULL if none. Safe in hooks. */
static inline const struct mc_frange *mc_ftable_find(const struct mc_ftable *t, uintptr_t addr)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->r[mid].hi <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->n && t->r[lo].lo <= addr ? &t->r[lo] : NULL;
}

/* The mode of the range holding ADDR, 0 if none. Safe in hooks. */
static inline uint32_t mc_ftable_lookup(const struct mc_ftable *t, uintptr_t addr)
{
	const struct mc_frange *r = mc_ftable_find(t, addr);

	return r ? r->mode : 0;
}

/* FULL, a name as __cxa_demangle gives it, as uftrace 0.13's "simple" demangler shows it:
 * no template arguments, parameters, qualifiers or return type; "(anonymous namespace)" as
 * _GLOBAL__N_1 ("int f<int>(int)" -> "f", "ns::A::operator<(ns::A const&) const" ->
 * "ns::A::operator<"). Into OUT (LEN bytes, cut if longer). 0, or -1 if LEN is 0. */
int mc_demangle_simple(const char *full, char *out, size_t len);

/*
 * The names the patterns see (-F/-N/-T/-C, -A/-R, -P/-U), as uftrace matches them: a C++ name
 * demangled by the __cxa_demangle of the libstdc++ the program has loaded, then shown as
 * mc_demangle_simple shows it; any other name as it is. Set-up only (the demangler mallocs).
 */
struct mc_namer {
	char *(*demangle)(const char *, char *, size_t *, int *); /* NULL: no libstdc++ */
	char *dbuf;	  /* the demangler's buffer, reused from name to name */
	size_t dlen;
	char simple[1024];
	int full;	  /* FLIGHTREC_DEMANGLE=full: the demangler's text as it is */
};
void mc_namer_init(struct mc_namer *n);
/* NAME as the patterns see it: NAME itself, or n->simple (until the next call) */
const char *mc_namer_name(struct mc_namer *n, const char *name);
void mc_namer_fini(struct mc_namer *n);

struct rec_module;
/* where the function of M's symbol I ends: its size, or for a symbol without one the next
 * function's start (past I's aliases) or the module's end */
uintptr_t mc_sym_end(const struct rec_module *m, size_t i);

/* "10us" (ns us ms s, with decimals; no unit: ns, as uftrace's parse_time) in ns: 0, or -1 */
int mc_parse_time(const char *s, uint64_t *ns);

/* The configuration the hooks read (set once at the session start). */
struct mc_filter_conf {
	uint32_t active;   /* any filter or trigger: the hooks take the filtering paths */
	uint32_t depth;	   /* -D: levels recorded below the top or a filter match; 0: none */
	uint64_t time;	   /* -t, ns: a function that runs this long or less is not recorded */
	uint32_t min_size; /* -Z: functions smaller than this (symbol size) are not recorded */
	uint32_t pad;
	struct mc_ftable table;
};
extern struct mc_filter_conf mc_fconf;
/* uftrace's mcount_enabled: trace_on/trace_off triggers and signals, --disable. Plain loads
 * and stores (a signal handler writes it). */
extern volatile uint32_t mc_tracing_on;
/* uftrace's MCOUNT_GFL_FINISH: a finish trigger or signal came, nothing more is recorded */
extern volatile uint32_t mc_finished;

/* --signal: "SIG@action;..." (trace_on, trace_off, finish), SIG a name with or without
 * "SIG", a number, SIGRTMIN+N or SIGRTMAX-N. Parsed into SIGS/ACTS (up to max); the count,
 * or -1 with the reason in err. */
int mc_signal_parse(const char *list, int *sigs, uint32_t *acts, size_t max, char *err,
		    size_t errlen);

/* FLIGHTREC_TRIGGER as the triggers take it: without its argument actions, which go to
 * -A/-R (mc_args_split_trigger); NULL: the variable as it is */
extern const char *mc_trigger_list;

/*
 * -L/--loc-filter (FLIGHTREC_LOC_FILTER, uftrace's UFTRACE_LOCATION): patterns on the source
 * file of a function (its DWARF decl_file, the whole path), ';'-separated, a hidden one
 * ('-L FILE@hide') prefixed with '!'. As uftrace's init_locfilter_pattern: a pattern without
 * regex characters is a path component sequence ("dir/file.c" matches ".../dir/file.c" and
 * "dir/file.c/..."), any other a regex (or glob, --match=glob) on the path. Per function, not
 * inherited: once a function matches an IN pattern, every function whose file no IN pattern
 * matches is left out (its calls still recorded), and a hidden file's functions are left out.
 * Into P (up to MAX); the count, or -1 with the reason in err.
 */
#define MC_LOC_MAX 16
int mc_loc_parse(struct mc_pattern *p, size_t max, const char *list, int glob, char *err,
		 size_t errlen);
/* The source file of the function at run-time ADDR in module M, NULL if unknown: set by the
 * runtime before mc_filter_setup when FLIGHTREC_LOC_FILTER is set (libmcount's --srcline
 * reading); NULL: no location known, -L matches nothing */
extern const char *(*mc_filter_locate)(const struct rec_module *m, uintptr_t addr);

/* Read the FLIGHTREC_* variables above and resolve the patterns against the modules loaded
 * now. 0, or -1 with the reason in why. */
int mc_filter_setup(char *why, size_t len);
/* The session records: install the --signal handlers (not before: a session that does not
 * start leaves the program's signals alone). */
void mc_filter_start(void);

#pragma GCC visibility pop

#endif
