/*
 * rec_elf: an ELF file's function symbols (see rec_elf.h).
 */
#include "librecord/rec_elf.h"

Elf_Scn *rec_elf_symtab(Elf *elf)
{
	Elf_Scn *scn = NULL, *tab = NULL, *dyn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			tab = scn;
		else if (sh.sh_type == SHT_DYNSYM)
			dyn = scn;
	}
	return tab ? tab : dyn;
}

bool rec_elf_func_sym(Elf *elf, Elf_Data *data, size_t strtab, size_t i, GElf_Sym *s,
		      const char **name)
{
	unsigned type;

	if (!gelf_getsym(data, (int)i, s))
		return false;
	type = GELF_ST_TYPE(s->st_info);
	if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s->st_shndx == SHN_UNDEF ||
	    s->st_value == 0)
		return false;
	*name = elf_strptr(elf, strtab, s->st_name);
	return *name && **name;
}
