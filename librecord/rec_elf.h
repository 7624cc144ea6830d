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
 * The library calls of an x86-64 file (rec_elf_plt.c), at the addresses uftrace names them
 * at; addresses are the file's (add the load bias). Reloc i is recorded at first + step i:
 *  - a PLT (step 16): reloc i of .rela.plt, its PLT entry called there, its GOT slot holding
 *    stub0 + 16 i until resolved;
 *  - no PLT relocations at all (-fno-plt: `call *foo@GOTPCREL(%rip)`; noplt set, stub0 0):
 *    reloc i of the dynamic relocations (step: their size, 24), the address of that reloc
 *    itself, as uftrace 0.13 names it (arch/x86_64/symbol.c); its GOT slot is r_offset.
 * 0, or -1 when the file has neither.
 */
struct rec_elf_plt {
	uint64_t first;
	uint64_t stub0;
	const Elf64_Rela *rela;
	size_t nrel;
	uint32_t step;
	bool noplt;
};
int rec_elf_plt(const struct rec_elf_map *m, struct rec_elf_plt *out);
/* The function reloc i binds ("" when it is not a named R_X86_64_JUMP_SLOT; with noplt, not
 * an R_X86_64_GLOB_DAT of an undefined function or ifunc). */
const char *rec_elf_plt_name(const struct rec_elf_map *m, const struct rec_elf_plt *p, size_t i);

#pragma GCC visibility pop

#endif
