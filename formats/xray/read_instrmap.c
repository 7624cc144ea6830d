/*
 * read_instrmap: XRay function ids to names (see read_instrmap.h).
 */
#include "formats/xray/read_instrmap.h"
#include "formats/xray/read_xray.h" /* XFR_RULE_IO: the map is a file the reader needs */

#include <ctype.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define XIM_ENTRY 32
#define XIM_MAX_IDS (1u << XIM_OBJ_SHIFT)

static int xim_set(struct xim *m, uint32_t fid, const char *name, size_t len)
{
	uint32_t k = fid >> XIM_OBJ_SHIFT, id = fid & (XIM_MAX_IDS - 1);

	if (k >= XIM_OBJS)
		return -1;
	if (id >= m->nr[k]) {
		size_t n = id + 1 > 2 * m->nr[k] ? id + 1 : 2 * m->nr[k];
		char **v = realloc(m->names[k], n * sizeof(*v));
		if (!v)
			return -1;
		memset(v + m->nr[k], 0, (n - m->nr[k]) * sizeof(*v));
		m->names[k] = v;
		m->nr[k] = n;
	}
	free(m->names[k][id]);
	m->names[k][id] = strndup(name, len);
	return m->names[k][id] ? 0 : -1;
}

const char *xim_name(const struct xim *m, uint32_t fid)
{
	uint32_t k = fid >> XIM_OBJ_SHIFT, id = fid & (XIM_MAX_IDS - 1);

	return k < XIM_OBJS && id < m->nr[k] ? m->names[k][id] : NULL;
}

void xim_free(struct xim *m)
{
	for (size_t k = 0; k < XIM_OBJS; k++) {
		for (size_t i = 0; i < m->nr[k]; i++)
			free(m->names[k][i]);
		free(m->names[k]);
		m->names[k] = NULL;
		m->nr[k] = 0;
	}
}

/* the YAML map: one "- { ... }" line per sled; only id and function-name matter */
static int xim_yaml(const char *path, FILE *f, struct xim *m, struct rd_error *err)
{
	char line[4096];
	long lineno = 0;

	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "id: "), *q = strstr(line, "function-name: ");
		char name[2048];
		size_t n = 0;
		unsigned long id;

		lineno++;
		if (!p || !q)
			continue;
		id = strtoul(p + 4, NULL, 10);
		q += strlen("function-name: ");
		if (*q == '\'') { /* single-quoted: '' is a quote */
			for (q++; *q && n < sizeof(name) - 1; q++) {
				if (*q == '\'' && q[1] == '\'')
					name[n++] = *q++;
				else if (*q == '\'')
					break;
				else
					name[n++] = *q;
			}
		} else {
			while (*q && *q != ',' && *q != '}' && *q != '\n' && n < sizeof(name) - 1)
				name[n++] = *q++;
			while (n && isspace((unsigned char)name[n - 1]))
				n--;
		}
		if (!n)
			continue;
		if (xim_set(m, (uint32_t)id, name, n) < 0)
			return rd_error_set(err, XFR_RULE_IO, path, -1, "line %ld: function id %lu too large "
					    "or out of memory", lineno, id);
	}
	return 0;
}

static int xim_sym_cmp(const void *a, const void *b)
{
	const GElf_Sym *x = a, *y = b;
	return x->st_value < y->st_value ? -1 : x->st_value > y->st_value;
}

/* the ELF file: its xray_instr_map section, named through its symbol table */
static int xim_elf(const char *path, int fd, struct xim *m, struct rd_error *err)
{
	Elf *e;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstr;
	Elf_Data *map = NULL;
	uint64_t map_addr = 0;
	GElf_Sym *syms = NULL;
	size_t nsyms = 0;
	const char *strtab_name = NULL;
	Elf_Data *symdata = NULL;
	size_t symstr = 0;
	int ret = -1;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_getshdrstrndx(e, &shstr) < 0) {
		rd_error_set(err, XFR_RULE_IO, path, -1, "not an ELF file libelf reads");
		goto out;
	}
	while ((scn = elf_nextscn(e, scn))) {
		const char *name;
		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstr, sh.sh_name)))
			continue;
		if (!strcmp(name, "xray_instr_map")) {
			map = elf_getdata(scn, NULL);
			map_addr = sh.sh_addr;
		} else if (sh.sh_type == SHT_SYMTAB ||
			   (sh.sh_type == SHT_DYNSYM && !strtab_name)) {
			symdata = elf_getdata(scn, NULL);
			symstr = sh.sh_link;
			nsyms = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
			strtab_name = name;
		}
	}
	if (!map || !map->d_buf || map->d_size % XIM_ENTRY) {
		rd_error_set(err, XFR_RULE_IO, path, -1, "no xray_instr_map section (not built with "
			     "-fxray-instrument?)");
		goto out;
	}
	syms = calloc(nsyms ? nsyms : 1, sizeof(*syms));
	if (!syms) {
		rd_error_set(err, XFR_RULE_IO, path, -1, "out of memory");
		goto out;
	}
	{
		size_t k = 0;
		for (size_t i = 0; symdata && i < nsyms; i++) {
			GElf_Sym s;
			if (gelf_getsym(symdata, (int)i, &s) && GELF_ST_TYPE(s.st_info) == STT_FUNC &&
			    s.st_value)
				syms[k++] = s;
		}
		nsyms = k;
		qsort(syms, nsyms, sizeof(*syms), xim_sym_cmp);
	}
	{
		const uint8_t *p = map->d_buf;
		uint64_t prev_func = 0;
		uint32_t id = 0;

		for (size_t off = 0; off + XIM_ENTRY <= map->d_size; off += XIM_ENTRY) {
			uint64_t fn;
			uint8_t version = p[off + 18];
			memcpy(&fn, p + off + 8, 8);
			/* version 2+: an offset from the field's own address */
			if (version >= 2)
				fn += map_addr + off + 8;
			if (off == 0 || fn != prev_func)
				id++;
			prev_func = fn;
			if (xim_name(m, id))
				continue;
			/* the symbol at exactly the function's address */
			size_t lo = 0, hi = nsyms;
			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;
				if (syms[mid].st_value < fn)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo < nsyms && syms[lo].st_value == fn) {
				const char *name = elf_strptr(e, symstr, syms[lo].st_name);
				if (name && xim_set(m, id, name, strlen(name)) < 0) {
					rd_error_set(err, XFR_RULE_IO, path, -1, "out of memory");
					goto out;
				}
			}
		}
	}
	ret = 0;
out:
	free(syms);
	if (e)
		elf_end(e);
	return ret;
}

int xim_load(const char *path, struct xim *m, struct rd_error *err)
{
	unsigned char magic[4] = { 0 };
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;
	FILE *f;

	memset(m, 0, sizeof(*m));
	if (fd < 0)
		return rd_error_set(err, XFR_RULE_IO, path, -1, "cannot open the instrumentation map");
	if (read(fd, magic, 4) == 4 && !memcmp(magic, "\177ELF", 4)) {
		ret = xim_elf(path, fd, m, err);
		close(fd);
		return ret;
	}
	lseek(fd, 0, SEEK_SET);
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return rd_error_set(err, XFR_RULE_IO, path, -1, "cannot read the instrumentation map");
	}
	ret = xim_yaml(path, f, m, err);
	fclose(f);
	return ret;
}
