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

#pragma GCC visibility pop

#endif
