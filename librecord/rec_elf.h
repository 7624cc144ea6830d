/*
 * rec_elf: the reading of an ELF file's function symbols that rec_symtab (the run-time table)
 * and uftrace_sym (the .sym file) share, so both take the same table and the same symbols.
 *
 * Slow paths only. Two readers with one rule of what a function is: through libelf (which
 * allocates: for the CLI, rec_symtab) and in place in a read-only mapping (for the runtime's
 * session start and libmcount's constructor, which may not call malloc).
 */
#ifndef REC_ELF_H
#define REC_ELF_H

#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>

#pragma GCC visibility push(hidden)

/* The symbol table: .symtab, else .dynsym (a stripped file); NULL when there is neither. */
Elf_Scn *rec_elf_symtab(Elf *elf);

/* Symbol i of a table (its data, and its sh_link: the string table) in *s. True when it is a
 * defined function (STT_FUNC or STT_GNU_IFUNC, at a nonzero address) with a name, in *name. */
bool rec_elf_func_sym(Elf *elf, Elf_Data *data, size_t strtab, size_t i, GElf_Sym *s,
		      const char **name);

/*
 * The same without libelf, which allocates with malloc (the program's own, maybe): the file
 * mapped read-only and its 64-bit little-endian tables read in place, for the session start
 * and the libmcount constructor (rec_util.h says why they may not call malloc).
 */
struct rec_elf_tab {
	const Elf64_Sym *syms;
	size_t nsyms;
	const char *str;
	size_t strsize;
};

struct rec_elf_map {
	const uint8_t *p;
	size_t size;
	struct rec_elf_tab symtab, dynsym; /* nsyms 0 where the file has none */
	uint64_t load_base;                /* the first PT_LOAD's address, page-aligned */
};

/* 0, or -1 (not a file we can map, not a 64-bit ELF file: then nothing to close) */
int rec_elf_map_open(const char *path, struct rec_elf_map *m);
void rec_elf_map_close(struct rec_elf_map *m);
/* The table rec_elf_symtab picks: .symtab, else .dynsym. */
const struct rec_elf_tab *rec_elf_map_symtab(const struct rec_elf_map *m);
/* Symbol i's name ("" when out of the string table). */
const char *rec_elf_tab_name(const struct rec_elf_tab *t, size_t i);
/* Symbol i is a function by rec_elf_func_sym's rule; its name in *name. */
bool rec_elf_tab_func(const struct rec_elf_tab *t, size_t i, const char **name);

#pragma GCC visibility pop

#endif
