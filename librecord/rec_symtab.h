/*
 * rec_symtab: the function symbols of the process's modules (the executable and the shared
 * objects it has loaded), for the sinks and the tracepoints: a function found by name
 * (FLIGHTREC_TRACEPOINTS), a function found by an address inside it (a -pg hook reports the
 * address it was called from, a few bytes into the function), and a function's stable id.
 *
 * Modules are found with dl_iterate_phdr and read with libelf (.symtab, else .dynsym); each
 * keeps its symbols sorted by run-time address. The table only grows: a module loaded later
 * is appended when an address is not found (rec_symtab_find rescans, under a lock), so a
 * symbol's address, its module and its id never change once published, and readers take no
 * lock. Ids number every distinct function address: module id_base + index + 1.
 *
 * Slow paths only (session start, the flusher, finish): this file allocates and reads files.
 */
#ifndef REC_SYMTAB_H
#define REC_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

struct rec_sym {
	uintptr_t addr; /* run-time address */
	uint32_t size;	/* bytes, 0 if unknown (then it ends where the next symbol starts) */
	uint32_t name;	/* offset in the module's name pool */
	uint32_t id;	/* function id, shared by the aliases at one address */
	uint8_t global; /* STB_GLOBAL or STB_WEAK */
	uint8_t used;	/* a sink wrote an event of it (racy byte stores: a hint) */
	uint8_t pad[2];
};

struct rec_module {
	char path[512];	      /* file name ("" when it could not be read) */
	uintptr_t bias;	      /* load bias (dlpi_addr) */
	uintptr_t lo, hi;     /* run-time range of its PT_LOAD segments */
	int is_exe;	      /* the main program */
	int is_dyn;	      /* ET_DYN (PIE or shared object): addresses move with the bias */
	struct rec_sym *syms; /* sorted by addr, aliases after the first (global first) */
	size_t nsyms;
	char *names;
	uint32_t id_base;
	uint32_t nids; /* distinct addresses */
};

/* Load the modules now (idempotent; later calls only add new modules). 0 on success. */
int rec_symtab_load(void);
/* Modules loaded so far, in load order (the executable first). */
size_t rec_symtab_nmodules(void);
const struct rec_module *rec_symtab_module_at(size_t i);
/* The module whose segments hold addr, NULL if none (rescans once for new modules). */
const struct rec_module *rec_symtab_module(uintptr_t addr);
/* The function holding addr (its first alias), NULL if none. */
struct rec_sym *rec_symtab_find(uintptr_t addr, const struct rec_module **mod);
static inline const char *rec_symtab_name(const struct rec_module *m, const struct rec_sym *s)
{
	return m->names + s->name;
}
/* Every function named `name` (all modules), up to max; returns how many there are. */
size_t rec_symtab_lookup(const char *name, struct rec_sym **out, const struct rec_module **mods,
			 size_t max);
/* The function with id `id`, NULL if none. */
struct rec_sym *rec_symtab_by_id(uint32_t id, const struct rec_module **mod);
/* Read PATH's function symbols into M, a module of the caller's that the table does not hold
 * (bias, lo and hi set by the caller; for one loaded where another was, which the table
 * keeps). 0, or -1 when the file cannot be read. rec_symtab_free_module gives it back. */
int rec_symtab_read_module(struct rec_module *m, const char *path);
void rec_symtab_free_module(struct rec_module *m);
/* uftrace record --with-syms DIR (libmcount's FLIGHTREC_WITH_SYMS), before the first load:
 * a module whose DIR/<file name>.sym holds functions gets those instead of its ELF file's
 * (an earlier trace's, of the program before it was stripped). NULL or "": none. */
void rec_symtab_set_symdir(const char *dir);
/* Forget everything (unit tests). */
void rec_symtab_reset(void);

#pragma GCC visibility pop

#endif
