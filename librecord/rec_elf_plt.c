/*
 * rec_elf_plt: where an x86-64 ELF file's PLT entries are, for libmcount's PLT hooks
 * (mcount_plt.c) and the 'P' lines of uftrace's .sym file (uftrace_sym.c), which must agree:
 * a call through reloc i of .rela.plt is recorded at the address the .sym file names it at.
 *
 * Layout (GNU ld, x86-64, 16-byte entries): without .plt.sec, entry i is at .plt + 16 (i + 1)
 * (`jmp *GOT[3+i]; push $i; jmp PLT0`) and GOT[3+i] holds entry + 6 (the push) until
 * resolved; with .plt.sec (-fcf-protection, IBT), the entry called is .plt.sec + 16 i and
 * GOT[3+i] holds .plt + 16 (i + 1) (`endbr64; push $i; jmp PLT0`). uftrace 0.13 names and
 * records the same addresses (utils/symbol.c, arch/x86_64/symbol.c). Read in place, no
 * malloc (rec_elf.h).
 *
 * A file with a dynamic section but no .rela.plt nor .rel.plt (every call built -fno-plt and
 * none from the start files through a PLT) has its library calls in GOT slots bound by
 * R_X86_64_GLOB_DAT relocs: uftrace 0.13 (arch_load_dynsymtab_noplt) takes the last
 * SHT_RELA section and names reloc i of it, a GLOB_DAT of an undefined function or ifunc, at
 * the reloc's own address (section address + i entries); so do we (noplt).
 */
#include "librecord/rec_elf.h"

#include <string.h>

static bool rec_elf_plt_in(const struct rec_elf_map *m, uint64_t off, uint64_t len)
{
	return off <= m->size && len <= m->size - off;
}

int rec_elf_plt(const struct rec_elf_map *m, struct rec_elf_plt *out)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)m->p;
	const Elf64_Shdr *sh, *shstr;
	uint64_t plt = 0, plt_sec = 0;
	const Elf64_Shdr *rela_last = NULL;
	bool has_jmprel = false, has_dynamic = false;

	memset(out, 0, sizeof(*out));
	if (eh->e_machine != EM_X86_64 || eh->e_shentsize != sizeof(*sh) ||
	    !rec_elf_plt_in(m, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(*sh)) ||
	    eh->e_shstrndx >= eh->e_shnum)
		return -1;
	sh = (const Elf64_Shdr *)(m->p + eh->e_shoff);
	shstr = &sh[eh->e_shstrndx];
	if (!rec_elf_plt_in(m, shstr->sh_offset, shstr->sh_size))
		return -1;
	for (size_t i = 0; i < eh->e_shnum; i++) {
		const char *name;

		if (sh[i].sh_name >= shstr->sh_size)
			continue;
		name = (const char *)m->p + shstr->sh_offset + sh[i].sh_name;
		if (!memchr(name, '\0', shstr->sh_size - sh[i].sh_name))
			continue;
		if (!strcmp(name, ".rela.plt") || !strcmp(name, ".rel.plt"))
			has_jmprel = true;
		if (!strcmp(name, ".dynamic"))
			has_dynamic = true;
		if (sh[i].sh_type == SHT_RELA)
			rela_last = &sh[i];
		if (!strcmp(name, ".plt"))
			plt = sh[i].sh_addr;
		else if (!strcmp(name, ".plt.sec"))
			plt_sec = sh[i].sh_addr;
		else if (!strcmp(name, ".rela.plt") && sh[i].sh_type == SHT_RELA &&
			 sh[i].sh_entsize == sizeof(Elf64_Rela) &&
			 rec_elf_plt_in(m, sh[i].sh_offset, sh[i].sh_size)) {
			out->rela = (const Elf64_Rela *)(m->p + sh[i].sh_offset);
			out->nrel = sh[i].sh_size / sizeof(Elf64_Rela);
		}
	}
	if (!has_jmprel && has_dynamic && rela_last && m->dynsym.nsyms &&
	    rela_last->sh_entsize == sizeof(Elf64_Rela) &&
	    rec_elf_plt_in(m, rela_last->sh_offset, rela_last->sh_size)) {
		out->rela = (const Elf64_Rela *)(m->p + rela_last->sh_offset);
		out->nrel = rela_last->sh_size / sizeof(Elf64_Rela);
		out->first = rela_last->sh_addr;
		out->step = sizeof(Elf64_Rela);
		out->noplt = true;
		return out->nrel ? 0 : -1;
	}
	if (!plt || !out->rela || !out->nrel || !m->dynsym.nsyms)
		return -1;
	out->step = 16;
	if (plt_sec) {
		out->first = plt_sec;
		out->stub0 = plt + 16;
	} else {
		out->first = plt + 16;
		out->stub0 = plt + 16 + 6;
	}
	return 0;
}

const char *rec_elf_plt_name(const struct rec_elf_map *m, const struct rec_elf_plt *p, size_t i)
{
	const Elf64_Rela *r = &p->rela[i];
	size_t sym = ELF64_R_SYM(r->r_info);
	const Elf64_Sym *s;

	if (ELF64_R_TYPE(r->r_info) != (p->noplt ? R_X86_64_GLOB_DAT : R_X86_64_JUMP_SLOT) ||
	    sym == 0 || sym >= m->dynsym.nsyms)
		return "";
	s = &m->dynsym.syms[sym];
	/* -fno-plt: a GOT slot of an undefined function (not data, not one defined here) */
	if (p->noplt && (s->st_shndx != SHN_UNDEF || (ELF64_ST_TYPE(s->st_info) != STT_FUNC &&
						      ELF64_ST_TYPE(s->st_info) != STT_GNU_IFUNC)))
		return "";
	return rec_elf_tab_name(&m->dynsym, sym);
}
