/*
 * rec_elf: an ELF file's function symbols, read in place (see rec_elf.h).
 */
#include "librecord/rec_elf.h"

#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* What is a function: the rule of rec_elf_tab_func (rec_elf.h). */
static bool rec_elf_is_func(unsigned char info, uint16_t shndx, uint64_t value)
{
	unsigned type = ELF64_ST_TYPE(info);

	return (type == STT_FUNC || type == STT_GNU_IFUNC) && shndx != SHN_UNDEF && value != 0;
}

static bool rec_elf_in(const struct rec_elf_map *m, uint64_t off, uint64_t len)
{
	return off <= m->size && len <= m->size - off;
}

static void rec_elf_map_tab(struct rec_elf_map *m, const Elf64_Shdr *sh, size_t shnum, size_t i,
			    struct rec_elf_tab *t)
{
	const Elf64_Shdr *s = &sh[i], *str;

	if (s->sh_entsize != sizeof(Elf64_Sym) || s->sh_link >= shnum ||
	    !rec_elf_in(m, s->sh_offset, s->sh_size))
		return;
	str = &sh[s->sh_link];
	if (!rec_elf_in(m, str->sh_offset, str->sh_size))
		return;
	t->syms = (const Elf64_Sym *)(m->p + s->sh_offset);
	t->nsyms = s->sh_size / sizeof(Elf64_Sym);
	t->str = (const char *)(m->p + str->sh_offset);
	t->strsize = str->sh_size;
}

int rec_elf_map_open(const char *path, struct rec_elf_map *m)
{
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;
	const Elf64_Phdr *ph;
	struct stat st;
	void *p;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	memset(m, 0, sizeof(*m));
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size < sizeof(*eh)) {
		close(fd);
		return -1;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -1;
	m->p = p;
	m->size = (size_t)st.st_size;
	eh = p;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != ELFDATA2LSB) {
		rec_elf_map_close(m);
		return -1;
	}
	if (eh->e_phentsize == sizeof(*ph) &&
	    rec_elf_in(m, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(*ph))) {
		ph = (const Elf64_Phdr *)(m->p + eh->e_phoff);
		for (size_t i = 0; i < eh->e_phnum; i++) {
			if (ph[i].p_type == PT_LOAD) {
				m->load_base = ph[i].p_vaddr & ~(uint64_t)0xfff;
				break;
			}
		}
	}
	/* (more than SHN_LORESERVE sections would need section 0's sh_size: not for programs) */
	if (eh->e_shentsize == sizeof(*sh) &&
	    rec_elf_in(m, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(*sh))) {
		sh = (const Elf64_Shdr *)(m->p + eh->e_shoff);
		for (size_t i = 0; i < eh->e_shnum; i++) {
			if (sh[i].sh_type == SHT_SYMTAB)
				rec_elf_map_tab(m, sh, eh->e_shnum, i, &m->symtab);
			else if (sh[i].sh_type == SHT_DYNSYM)
				rec_elf_map_tab(m, sh, eh->e_shnum, i, &m->dynsym);
		}
	}
	return 0;
}

void rec_elf_map_close(struct rec_elf_map *m)
{
	if (m->p)
		munmap((void *)m->p, m->size);
	memset(m, 0, sizeof(*m));
}

const struct rec_elf_tab *rec_elf_map_symtab(const struct rec_elf_map *m)
{
	return m->symtab.nsyms ? &m->symtab : &m->dynsym;
}

const char *rec_elf_tab_name(const struct rec_elf_tab *t, size_t i)
{
	uint32_t off = t->syms[i].st_name;

	/* the name must end inside the table */
	if (off >= t->strsize || !memchr(t->str + off, '\0', t->strsize - off))
		return "";
	return t->str + off;
}

bool rec_elf_tab_func(const struct rec_elf_tab *t, size_t i, const char **name)
{
	const Elf64_Sym *s = &t->syms[i];

	if (!rec_elf_is_func(s->st_info, s->st_shndx, s->st_value))
		return false;
	*name = rec_elf_tab_name(t, i);
	return **name;
}
