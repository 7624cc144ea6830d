/*
 * rec_elf: the reading of an ELF file's function symbols that rec_symtab (the run-time table)
 * and uftrace_sym (the .sym file) share, so both take the same table and the same symbols.
 *
 * The file is mapped read-only and its 64-bit little-endian tables are read in place, not
 * with libelf, which allocates with malloc: these run at the session start, at hooks and in
 * libmcount's constructor, where the program's malloc may not be called (rec_util.h).
 * Slow paths only.
 */
#ifndef REC_ELF_H
#define REC_ELF_H

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

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
/* The symbol table: .symtab, else .dynsym (a stripped file). */
const struct rec_elf_tab *rec_elf_map_symtab(const struct rec_elf_map *m);
/* Symbol i's name ("" when out of the string table). */
const char *rec_elf_tab_name(const struct rec_elf_tab *t, size_t i);
/* Symbol i is a defined function (STT_FUNC or STT_GNU_IFUNC, at a nonzero address) with a
 * name, in *name. */
bool rec_elf_tab_func(const struct rec_elf_tab *t, size_t i, const char **name);

/*
 * The PLT of an x86-64 file (rec_elf_plt.c): reloc i of .rela.plt is called at first + 16 i
 * (the address uftrace names it at) and its GOT slot holds stub0 + 16 i until resolved.
 * Addresses are the file's (add the load bias). 0, or -1 when the file has no such PLT.
 */
struct rec_elf_plt {
	uint64_t first;
	uint64_t stub0;
	const Elf64_Rela *rela;
	size_t nrel;
};
int rec_elf_plt(const struct rec_elf_map *m, struct rec_elf_plt *out);
/* The function reloc i binds ("" when it is not a named R_X86_64_JUMP_SLOT). */
const char *rec_elf_plt_name(const struct rec_elf_map *m, const struct rec_elf_plt *p, size_t i);

#pragma GCC visibility pop

#endif
