/*
 * uftrace_sym: write a module's function symbols as the old-format `.sym` file uftrace 0.13
 * reads: "<16 hex addr> <type> <name>" lines, sorted by address, addresses relative to the
 * module's first PT_LOAD, each function closed by the next line's address (a `?` marker
 * closes a gap and the last function), with `# symbols:` and `# path name:` headers.
 *
 * Slow path only (session start): it allocates and reads the ELF file with libelf.
 */
#include "formats/uftrace/uftrace_sym.h"
#include "librecord/rec_elf.h"
#include "librecord/rec_util.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct usym {
	uint64_t addr;
	uint64_t size;
	char type;
	const char *name;
};

static int usym_cmp(const void *a, const void *b)
{
	const struct usym *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* at one address prefer a global name: it is the one users know */
	return (x->type == 't') - (y->type == 't');
}

static uint64_t usym_load_base(Elf *elf)
{
	size_t n;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &n) < 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			return ph.p_vaddr & ~(uint64_t)0xfff;
	}
	return 0;
}

/* Collect functions of the symtab (or the dynsym when stripped). Returns count, -1 on error. */
static long usym_collect(Elf *elf, struct usym **out)
{
	Elf_Scn *tab;
	GElf_Shdr use_sh;
	struct usym *v = NULL;
	size_t cnt = 0, cap = 0;
	uint64_t base = usym_load_base(elf);

	tab = rec_elf_symtab(elf);
	if (!tab || !gelf_getshdr(tab, &use_sh) || use_sh.sh_entsize == 0)
		return 0;
	Elf_Data *data = elf_getdata(tab, NULL);
	if (!data)
		return -1;
	size_t nsyms = use_sh.sh_size / use_sh.sh_entsize;
	for (size_t i = 0; i < nsyms; i++) {
		GElf_Sym s;
		const char *name;

		if (!rec_elf_func_sym(elf, data, use_sh.sh_link, i, &s, &name))
			continue;
		if (cnt == cap) {
			cap = cap ? cap * 2 : 256;
			struct usym *nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				return -1;
			}
			v = nv;
		}
		v[cnt].addr = s.st_value - base;
		v[cnt].size = s.st_size;
		v[cnt].name = name;
		switch (GELF_ST_BIND(s.st_info)) {
		case STB_LOCAL: v[cnt].type = 't'; break;
		case STB_WEAK: v[cnt].type = 'W'; break;
		default: v[cnt].type = 'T'; break;
		}
		cnt++;
	}
	*out = v;
	return (long)cnt;
}

int uftrace_sym_write(int dirfd, const char *path, const char *symname)
{
	struct usym *v = NULL;
	long n;
	int fd, ret = -1;
	Elf *elf;
	FILE *f;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		goto out_fd;
	n = usym_collect(elf, &v);
	if (n < 0)
		goto out_elf;
	qsort(v, (size_t)n, sizeof(*v), usym_cmp);

	int ofd = rec_open_write(dirfd, symname, O_TRUNC);
	if (ofd < 0)
		goto out_elf;
	f = fdopen(ofd, "w");
	if (!f) {
		close(ofd);
		goto out_elf;
	}
	fprintf(f, "# symbols: %ld\n# path name: %s\n", n, path);
	for (long i = 0; i < n; i++) {
		uint64_t end;
		if (i > 0 && v[i].addr == v[i - 1].addr)
			continue; /* aliases: the first (global) name stands */
		fprintf(f, "%016llx %c %s\n", (unsigned long long)v[i].addr, v[i].type, v[i].name);
		end = v[i].addr + v[i].size;
		/* close the function where it ends, unless the next one starts right there */
		if (v[i].size && (i + 1 == n || v[i + 1].addr > end))
			fprintf(f, "%016llx ? __func_end\n", (unsigned long long)end);
	}
	if (n > 0 && v[n - 1].size == 0)
		fprintf(f, "%016llx ? __sym_end\n", (unsigned long long)v[n - 1].addr + 1);
	ret = fclose(f) == 0 ? 0 : -1;
out_elf:
	free(v);
	elf_end(elf);
out_fd:
	close(fd);
	return ret;
}
