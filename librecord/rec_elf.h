/*
 * rec_elf: the reading of an ELF file's function symbols that rec_symtab (the run-time table)
 * and uftrace_sym (the .sym file) share, so both take the same table and the same symbols.
 *
 * Slow paths only: libelf reads files.
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

#pragma GCC visibility pop

#endif
