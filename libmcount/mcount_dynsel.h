/*
 * mcount_dynsel: what dynamic patching (uftrace's -P/-U, FLIGHTREC_PATCH/_UNPATCH) selects,
 * and where a function's code can take a call: the plain-C half of mcount_dynamic.c, shared
 * with `flightrec record` (which checks the patterns before PROG runs) and the unit tests.
 *
 * The pattern list is uftrace 0.13's UFTRACE_PATCH string (its libmcount/dynamic.c
 * parse_pattern_list / match_pattern_list): patterns separated by ';' in command-line order,
 * an unpatch (-U) pattern prefixed with '!', each optionally PATTERN@MODULE. A pattern without
 * a module names the executable; with one, the modules whose file name starts with MODULE.
 * For a function, the last pattern of its module that matches its name decides; a function no
 * pattern matches is not patched; a list of only '!' patterns starts with an implicit "." (or
 * "*" under --match=glob) for the executable. Names are compared as the record-time filters
 * compare them (mcount_filter.h: whole name, regex searched, or glob).
 *
 * Patch sites (x86-64): a 5-byte call replaces
 *   - the nops gcc's -fpatchable-function-entry=N[,M] puts at the entry (N-M >= 5 single-byte
 *     nops, after an endbr64 when there is one), or -pg -mfentry -mnop-mcount's 5-byte nop at
 *     the entry: the call goes to __fentry__ (the same records as a -mfentry build);
 *   - -pg -mnop-mcount's 5-byte nop after the frame set-up (`push %rbp; mov %rsp,%rbp`, where
 *     the call to mcount was; only found through __mcount_loc, -mrecord-mcount): the call
 *     goes to mcount (the same records as a -pg build).
 * Nothing here touches memory that is not given to it.
 */
#ifndef MCOUNT_DYNSEL_H
#define MCOUNT_DYNSEL_H

#include <stddef.h>
#include <stdint.h>

#include "libmcount/mcount_filter.h"

#pragma GCC visibility push(hidden)

#define MC_DYN_MAX 32 /* patterns in FLIGHTREC_PATCH and _UNPATCH together */

struct mc_dyn_spec {
	size_t n;
	struct mc_pattern p[MC_DYN_MAX];
	char module[MC_DYN_MAX][MC_MODULE_LEN]; /* "": the executable */
	uint8_t patch[MC_DYN_MAX];		/* 1: -P, 0: -U ('!') */
};

/* Parse PATCH (uftrace's string, NULL for none) then UNPATCH (every item an unpatch one, as
 * if prefixed with '!'; NULL for none) into S. 0, or -1 with the reason in err. */
int mc_dyn_parse(struct mc_dyn_spec *s, const char *patch, const char *unpatch, int glob, char *err,
		 size_t errlen);
/* Does some pattern name the module of file name BASE (IS_EXE: the executable)? */
int mc_dyn_names_module(const struct mc_dyn_spec *s, const char *base, int is_exe);
/* Is the function NAME of that module to be patched? */
int mc_dyn_selected(const struct mc_dyn_spec *s, const char *base, int is_exe, const char *name);

enum mc_dyn_target {
	MC_DYN_NONE,   /* no patchable nop here */
	MC_DYN_FENTRY, /* a call to __fentry__ at the entry */
	MC_DYN_MCOUNT, /* a call to mcount after the frame set-up */
};

/* The 5 bytes at CODE (AVAIL readable) are one of the nop forms a call may replace (five
 * 0x90, gcc's and clang's 5-byte nops)? */
int mc_dyn_is_nop5(const uint8_t *code, size_t avail);
/* A function starting at FN (AVAIL bytes of it readable): where its entry nops are, as an
 * offset from FN in *off (after an endbr64), MC_DYN_FENTRY; MC_DYN_NONE if there are none. */
enum mc_dyn_target mc_dyn_entry_site(const uint8_t *fn, size_t avail, size_t *off);
/* A site listed by __mcount_loc at offset OFF of the function FN (AVAIL bytes readable): the
 * entry (MC_DYN_FENTRY), after `push %rbp; mov %rsp,%rbp` (MC_DYN_MCOUNT), or not a nop
 * there or not after such a frame set-up (MC_DYN_NONE; *why says which). */
enum mc_dyn_target mc_dyn_mcount_site(const uint8_t *fn, size_t avail, size_t off,
				      const char **why);

#pragma GCC visibility pop

#endif
