/*
 * uftrace_sym: write a module's function symbols as the old-format `.sym` file uftrace 0.13
 * reads: "<16 hex addr> <type> <name>" lines, sorted by address, addresses relative to the
 * module's first PT_LOAD, each function closed by the next line's address (a `?` marker
 * closes a gap and the last function), each data symbol (`d D v u`, as uftrace saves them)
 * running to the next line, with `# symbols:` and `# path name:` headers. The PLT
 * entries are 'P' lines (rec_elf_plt.h), closed by `__dynsym_end` as uftrace closes them.
 *
 * Slow path only (session start, a dlopen): the ELF file is mapped and read in place, the
 * table is mmap'ed memory, the file written through a fixed buffer: no malloc, no stdio
 * (the program's malloc may be its own: rec_util.h).
 */
#include "formats/uftrace/uftrace_sym.h"
#include "librecord/rec_elf.h"
#include "librecord/rec_util.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

struct usym {
	uint64_t addr;
	uint64_t size;
	char type;
	const char *name;
	size_t idx; /* in the symbol table: ties keep that order (rec_sort is not stable) */
};

static int usym_cmp(const void *a, const void *b)
{
	const struct usym *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* at one address prefer a global name: it is the one users know */
	if ((x->type == 't') != (y->type == 't'))
		return (x->type == 't') - (y->type == 't');
	return (x->idx > y->idx) - (x->idx < y->idx);
}

/* room for one more entry in *v (freed on failure) */
static int usym_room(struct usym **v, size_t *cnt, size_t *cap)
{
	struct usym *nv;

	if (*cnt < *cap)
		return 0;
	*cap = *cap ? *cap * 2 : 256;
	nv = rec_mem_grow(*v, *cap * sizeof(**v));
	if (!nv) {
		rec_mem_free(*v);
		*v = NULL;
		return -1;
	}
	*v = nv;
	return 0;
}

/* the data symbols uftrace 0.13 saves too (its load_symbol: STT_OBJECT, defined, sized),
 * 'd' 'D' 'v' 'u' by binding: its replay names a /p argument pointing into them
 * (`&_IO_stdin_used`). 0, or -1 (no memory). */
static int usym_data(const struct rec_elf_tab *tab, size_t i, uint64_t base, struct usym **v,
		     size_t *cnt, size_t *cap)
{
	const Elf64_Sym *s = &tab->syms[i];
	const char *name;
	char type;

	if (ELF64_ST_TYPE(s->st_info) != STT_OBJECT || s->st_shndx == SHN_UNDEF ||
	    !s->st_size || s->st_value < base)
		return 0;
	name = rec_elf_tab_name(tab, i);
	if (!*name)
		return 0;
	switch (ELF64_ST_BIND(s->st_info)) {
	case STB_LOCAL: type = 'd'; break;
	case STB_GLOBAL: type = 'D'; break;
	case STB_WEAK: type = 'v'; break;
	case STB_GNU_UNIQUE: type = 'u'; break;
	default: return 0;
	}
	if (usym_room(v, cnt, cap) < 0)
		return -1;
	(*v)[*cnt] = (struct usym){ .addr = s->st_value - base, .size = s->st_size, .type = type,
				    .name = name, .idx = i };
	(*cnt)++;
	return 0;
}

static int usym_is_data(char type)
{
	return type == 'd' || type == 'D' || type == 'v' || type == 'u';
}

/* Collect functions of the symtab (or the dynsym when stripped) and its data symbols, then
 * the PLT entries. Returns count, -1 on error. */
static long usym_collect(const struct rec_elf_map *m, struct usym **out)
{
	const struct rec_elf_tab *tab = rec_elf_map_symtab(m);
	struct rec_elf_plt plt;
	struct usym *v = NULL;
	size_t cnt = 0, cap = 0;

	for (size_t i = 0; i < tab->nsyms; i++) {
		const Elf64_Sym *s = &tab->syms[i];
		const char *name;

		if (!rec_elf_tab_func(tab, i, &name)) {
			if (usym_data(tab, i, m->load_base, &v, &cnt, &cap) < 0)
				return -1;
			continue;
		}
		if (usym_room(&v, &cnt, &cap) < 0)
			return -1;
		v[cnt].addr = s->st_value - m->load_base;
		v[cnt].size = s->st_size;
		v[cnt].name = name;
		v[cnt].idx = i;
		switch (ELF64_ST_BIND(s->st_info)) {
		case STB_LOCAL: v[cnt].type = 't'; break;
		/* 'w' as uftrace writes it: 0.13 drops a line of any type outside "?TtwPKDdvu"
		 * (nm's 'W' among them), and the function then takes its neighbour's name */
		case STB_WEAK: v[cnt].type = 'w'; break;
		default: v[cnt].type = 'T'; break;
		}
		cnt++;
	}
	/* the PLT entries, 'P' as uftrace writes them: libmcount records a call through the PLT
	 * at its entry's address (mcount_plt.c) */
	if (rec_elf_plt(m, &plt) == 0) {
		for (size_t i = 0; i < plt.nrel; i++) {
			const char *name = rec_elf_plt_name(m, &plt, i);

			if (!*name)
				continue;
			if (usym_room(&v, &cnt, &cap) < 0)
				return -1;
			v[cnt] = (struct usym){ .addr = plt.first + plt.step * i - m->load_base,
						.size = plt.step, .type = 'P', .name = name,
						.idx = tab->nsyms + i };
			cnt++;
		}
	}
	*out = v;
	return (long)cnt;
}

int uftrace_sym_write(int dirfd, const char *path, const char *symname)
{
	struct rec_elf_map m;
	struct usym *v = NULL;
	struct rec_out out;
	long n;
	int ofd, ret = -1;

	if (rec_elf_map_open(path, &m) < 0)
		return -1;
	n = usym_collect(&m, &v);
	if (n < 0)
		goto out;
	rec_sort(v, (size_t)n, sizeof(*v), usym_cmp);

	ofd = rec_open_write(dirfd, symname, O_TRUNC);
	if (ofd < 0)
		goto out;
	rec_out_init(&out, ofd);
	rec_out_printf(&out, "# symbols: %ld\n# path name: %s\n", n, path);
	for (long i = 0; i < n; i++) {
		uint64_t end;
		if (i > 0 && v[i].addr == v[i - 1].addr)
			continue; /* aliases: the first (global) name stands */
		rec_out_printf(&out, "%016llx %c %s\n", (unsigned long long)v[i].addr, v[i].type,
			       v[i].name);
		end = v[i].addr + v[i].size;
		/* the PLT block ends as uftrace ends it (its reader takes either marker) */
		if (v[i].type == 'P' && (i + 1 == n || v[i + 1].type != 'P'))
			rec_out_printf(&out, "%016llx ? __dynsym_end\n", (unsigned long long)end);
		/* a data symbol runs to the next line, as in uftrace's files (no marker between
		 * data symbols); the last one ends at its size */
		else if (usym_is_data(v[i].type)) {
			if (i + 1 == n)
				rec_out_printf(&out, "%016llx ? __sym_end\n", (unsigned long long)end);
		}
		/* close the function where it ends, unless the next one starts right there */
		else if (v[i].size && (i + 1 == n || v[i + 1].addr > end))
			rec_out_printf(&out, "%016llx ? __func_end\n", (unsigned long long)end);
		/* a sizeless one the data follow: one byte, as when it is the last line */
		else if (!v[i].size && i + 1 < n && usym_is_data(v[i + 1].type))
			rec_out_printf(&out, "%016llx ? __func_end\n",
				       (unsigned long long)v[i].addr + 1);
	}
	if (n > 0 && v[n - 1].size == 0)
		rec_out_printf(&out, "%016llx ? __sym_end\n",
			       (unsigned long long)v[n - 1].addr + 1);
	ret = rec_out_close(&out);
out:
	rec_mem_free(v);
	rec_elf_map_close(&m);
	return ret;
}
