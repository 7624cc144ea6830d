/*
 * uftrace_autoargs: the prototypes of well-known library functions that `-a/--auto-args`
 * (and `-A FUNC` / `-R FUNC` without items) record, in uftrace's argspec syntax, and the
 * enums their items name (/e:NAME). uftrace keeps such a table too (0.13's utils/auto-args.h);
 * ours is our own, a smaller set: the calls of uftrace's test suite and the common libc ones.
 *
 * Both sides use it: libmcount (mcount_argspec.c) to lay out the payloads it records, and the
 * `info` writer (uftrace_info.c), which copies it into the argauto/retauto/enumauto lines that
 * uftrace's readers lay the payloads out by. So what is recorded and what is read always agree,
 * whatever uftrace's own table says.
 *
 * Invariants: the table is sorted by name (strcmp order; a unit test checks it); lookups do no
 * allocation and call nothing but strcmp (they run at the session start, in the traced
 * program).
 */
#ifndef UFTRACE_AUTOARGS_H
#define UFTRACE_AUTOARGS_H

#include <stddef.h>

#pragma GCC visibility push(hidden)

struct uftrace_autoarg {
	const char *name; /* the symbol, as the PLT relocation or the symbol table names it */
	const char *args; /* "arg1/s,arg2/u": the items -A would take, NULL: none */
	const char *ret;  /* "retval/d32", NULL: none */
};

/* the entry of NAME, NULL when the table has none */
const struct uftrace_autoarg *uftrace_autoarg_find(const char *name);
/* every entry, in name order */
const struct uftrace_autoarg *uftrace_autoarg_at(size_t i);
size_t uftrace_autoarg_count(void);
/* the enums the items name, as C declarations ("enum uft_open_flag { O_RDONLY = 0, ... };...") */
extern const char uftrace_autoarg_enums[];

#pragma GCC visibility pop

#endif
