/*
 * mcount_dwarf: the argument and return-value specs uftrace 0.13 derives from a program's
 * DWARF (utils/dwarf.c, `-a` and `-A/-R FUNC` without items on a program built with -g), read
 * with elfutils' libdw at the session start only.
 *
 * libdw is loaded with dlopen the first time DWARF is asked for, so libmcount has no link-time
 * dependency on it; a missing libdw (or a build without its headers) is one warning and the
 * table's prototypes (uftrace_autoargs) only, as uftrace without DWARF support.
 *
 * What is read: every DW_TAG_subprogram with a low_pc of the file, for which WANT(lowpc,
 * name) agrees (a symbol of the module starts there), gets a function entry: its source line
 * (decl_file, decl_line) and, when specs are asked for, its argument spec and return spec in
 * uftrace's own text (the part after '@': "arg1,arg2/p", "arg1/e:foo_enum", "fparg1/64",
 * "arg1/t16:point%rdi+rsi", "retval/s"), built with the same rules as uftrace's
 * resolve_type_info / add_type_info / add_location (x86_64 psABI classes for structs passed
 * by value). Enum types met on the way are kept by name.
 *
 * The `<module>.dbg` text (mc_dwarf_dbg_text) is what uftrace's save_debug_entries writes:
 * the "# path name:" line, E: enum lines by name (descending, as uftrace's tree walks), then
 * for each function with a source line, in address order, F: (address in the file, name),
 * L: (line, file name past the most used compilation directory), A: and R: ("@" + spec).
 *
 * Invariants: set-up only (never on the hook path); libdw and this file allocate with the
 * program's malloc, which is why it runs only when DWARF is asked for. Plain C, also built
 * for the host (unit tests).
 */
#ifndef MCOUNT_DWARF_H
#define MCOUNT_DWARF_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

struct mc_dwfn {
	uint64_t addr; /* low_pc, as the file has it (the .dbg's F: address) */
	char *name;    /* the symbol's name (WANT's) or the DIE's */
	char *file;    /* decl_file, NULL if none */
	int line;
	char *arg; /* "arg1,arg2/s" or NULL */
	char *ret; /* "retval/d32" or NULL */
};

struct mc_dwenum {
	char *name;
	char *vals; /* uftrace's get_enum_def_string: "XXX=1,YYY" */
};

struct mc_dwarf {
	char path[512];
	struct mc_dwfn *fn; /* sorted by addr */
	size_t nfn;
	struct mc_dwenum *en; /* by name, descending */
	size_t nen;
	char *base_dir; /* the most used compilation directory, or NULL */
	/* subtracted from the addresses of the F: lines: the file's first PT_LOAD, page aligned
	 * (the .sym files' addresses, uftrace's SYM_REL_ADDR; 0 for a PIE); the caller's */
	uint64_t sym_base;
};

enum { MC_DW_ARG = 1, MC_DW_RET = 2 };

/* The name of the symbol that starts at file address ADDR, NULL for none (DIE skipped); in
 * *KINDS the specs it wants (MC_DW_ARG | MC_DW_RET: uftrace builds them only for the
 * functions the patterns without items match) */
typedef const char *(*mc_dwarf_want_fn)(void *data, uint64_t addr, const char *die_name,
					int *kinds);

/* Read PATH's DWARF into D. WANT NULL: every function, named by its DIE, both specs. 1: read
 * (D->nfn may be 0); 0: no DWARF in the file; -1: libdw cannot be loaded or the file read
 * (reason in WHY). */
int mc_dwarf_read(struct mc_dwarf *d, const char *path, mc_dwarf_want_fn want, void *data,
		  char *why, size_t len);

/* The entry at file address ADDR, or NULL */
const struct mc_dwfn *mc_dwarf_find(const struct mc_dwarf *d, uint64_t addr);

/* The .dbg text (malloc'ed, NUL-terminated), NULL without memory */
char *mc_dwarf_dbg_text(const struct mc_dwarf *d);

void mc_dwarf_free(struct mc_dwarf *d);

#pragma GCC visibility pop

#endif
