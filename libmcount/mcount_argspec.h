/*
 * mcount_argspec: uftrace's argument and return-value specs (-A/--argument, -R/--retval),
 * parsed and merged per function the way uftrace 0.13 does (utils/argspec.c parse_argspec,
 * utils/filter.c setup_trigger / add_arg_spec), so that the payloads we write have the layout
 * uftrace's readers compute from the same spec strings (saved in the `info` file).
 *
 * A spec list is uftrace's own string: entries separated by ';', each
 * "PATTERN[@ITEM,ITEM,...]" (no item: the table's prototype, uftrace_autoargs.h) where an ITEM is argN, fpargN or retval with an optional
 * "/FMT[BITS]" and "%REG" or "%stackN", or a module name (the first loaded module whose file
 * name starts with it). Items of the other kind (retval in -A, argN in -R) and uftrace's
 * trigger actions are ignored, as uftrace ignores them.
 *
 * Invariants: plain data, no allocation (the runtime parses at the session start, where the
 * program's malloc may be instrumented); the host build (flightrec record's checks, the unit
 * tests) uses the same code.
 */
#ifndef MCOUNT_ARGSPEC_H
#define MCOUNT_ARGSPEC_H

#include <stddef.h>
#include <stdint.h>

#include "libmcount/mcount_filter.h"

#pragma GCC visibility push(hidden)

enum mc_arg_type {
	MC_AT_INDEX, /* argN / retval: a register by index, or the stack past the sixth */
	MC_AT_FLOAT, /* fpargN (or argN/f): xmm(N-1), or the stack past the eighth */
	MC_AT_REG,   /* %reg */
	MC_AT_STACK, /* %stackN: the Nth word above the return address */
};

/* uftrace's register numbers (utils/arch.h): rdi..r9 = 1..6, xmm0..xmm7 = 101..108 */
#define MC_REG_XMM0 101

struct mc_arg {
	uint8_t type;	   /* enum mc_arg_type */
	char fmt;	   /* uftrace's format letter: d i u x s c f p S e t */
	uint8_t size;	   /* bytes: 1 2 4 8, or 10 (f80); t: see tsize */
	uint8_t exact;	   /* from a pattern without regex characters */
	int32_t idx;	   /* N of argN / fpargN (as uftrace's int: arg4294967295 is -1); 0:
			    * the return value */
	uint8_t reg;	   /* MC_AT_REG */
	int16_t stack_ofs; /* MC_AT_STACK */
	/* t (a struct by value, "/tSIZE[:NAME][%REG+REG...|%stack+N]"): its bytes (the payload
	 * takes them rounded up to 4) and the registers that carry it, in order */
	uint8_t tsize;
	uint8_t nregs;
	uint8_t regs[4];
};

/* the largest struct by value we record: the payload of an item stays within a string's */
#define MC_STRUCT_MAX 96

#define MC_ARGS_MAX 16	   /* items per entry and per function */
#define MC_ARGRULES_MAX 32 /* entries of -A and -R together */
#define MC_ARG_MODULE_LEN 64

enum { MC_AR_ARG = 1, MC_AR_RET = 2 };

/* One ';' entry of -A or -R. */
struct mc_argrule {
	struct mc_pattern patt;
	char module[MC_ARG_MODULE_LEN]; /* "" : every module */
	uint8_t kind;			/* MC_AR_ARG or MC_AR_RET */
	uint8_t n;
	struct mc_arg a[MC_ARGS_MAX];
};

struct mc_argspec_set {
	size_t n;
	uint8_t auto_all; /* -a/--auto-args: every function the table knows (uftrace_autoargs) */
	struct mc_argrule r[MC_ARGRULES_MAX];
};

/* What one function records: its merged items, in uftrace's list order. */
struct mc_arglist {
	uint8_t n;
	uint8_t nargs; /* items that are not the return value */
	uint8_t nret;  /* return-value items */
	struct mc_arg a[MC_ARGS_MAX];
};

/* Parse one item ("arg2/s", "fparg1/32", "retval/i32", "arg7%stack+1"...) as uftrace's
 * parse_argspec. 0, or -1 with the reason in err. */
int mc_arg_parse(struct mc_arg *a, const char *item, size_t len, char *err, size_t errlen);

/* Add the entries of LIST (-A: MC_AR_ARG, -R: MC_AR_RET) to S. Patterns are compiled as the
 * filters' (glob: --match=glob). 0, or -1 with the reason in err. */
int mc_argspec_parse(struct mc_argspec_set *s, const char *list, int kind, int glob, char *err,
		     size_t errlen);

/* Does the module at PATH take entries naming MODULE? (its file name starts with it) */
int mc_argspec_module_is(const char *path, const char *module);

/* The merged items for function NAME of the module at PATH. MODULE_OK[i]: rule i's module is
 * this one (the first loaded whose file name starts with it, uftrace's find_map_by_name); a
 * rule naming a module applies nowhere else (NULL: to none). OUT->n is 0 when nothing
 * applies. */
void mc_argspec_for(const struct mc_argspec_set *s, const char *path, const char *name,
		    const uint8_t *module_ok, struct mc_arglist *out);

/*
 * A trigger list's (-T, FLIGHTREC_TRIGGER) argument actions taken out into -A and -R entries,
 * as uftrace 0.13's extract_trigger_args moves them into its argspec/retspec: per entry
 * "NAME@argN,..." (argN and fpargN items as given) into ARGS, "NAME@retval" (its format
 * dropped, as uftrace saves it) into RETS, auto-args as NAME alone into both; the entry's
 * other actions stay in REST as "NAME@action,..." (an entry left with none is dropped), an
 * entry without '@' as it is. Each output is a ';'-separated list, "" when empty. 0, or -1
 * when an output does not fit its SIZE bytes.
 */
int mc_trigger_split(const char *trig, char *rest, char *args, char *rets, size_t size);

/* mc_argspec_for, with the function's DWARF specs (mcount_dwarf.h: "arg1,arg2/s", "retval/d32";
 * NULL: none), which an entry without items of their kind (and -a) takes before the table's
 * prototype, as uftrace does */
void mc_argspec_for_dwarf(const struct mc_argspec_set *s, const char *path, const char *name,
			  const uint8_t *module_ok, const char *dw_arg, const char *dw_ret,
			  struct mc_arglist *out);

#pragma GCC visibility pop

#endif
