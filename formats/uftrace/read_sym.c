/*
 * read_sym: session maps (sid-<sid>.map) and symbol tables (<module>.sym, or the ELF file).
 *
 * Role: what uftrace 0.13 needs to turn a record address into a name. A map line is
 * "<start>-<end> <prot> <off> <dev> <inode> [<path> [build-id:<hex>]]"; consecutive lines of
 * one path form a module whose first start is the base for module-relative lookups; lines
 * without a path (anonymous) are ignored; a "[stack" line must be there (without it 0.13
 * classifies every address as kernel). A .sym line is "<hex addr> <type> <name>" (the old
 * format, the only one 0.13 reads); a symbol's size is the next kept line's address minus its
 * own, in file order, and a '?' line (or __sym_end / __dynsym_end / __func_end) only closes the
 * previous symbol.
 *
 * Invariants:
 *  - map and .sym lines are checked the way 0.13 reads them: map lines with fgets into 4096
 *    bytes, .sym lines with getline; types other than "?TtwPKDdvu" are skipped like 0.13 does
 *    (lenient), or an error (strict: uftrace never writes one, and the line is lost).
 *  - strict .sym rules: addresses never decrease, the last kept line is an end marker, no line
 *    in the newer "<addr> <size> <type> <name>" format.
 *  - lookups use tables sorted by address; nothing here follows a size from the file blindly.
 */
#include "formats/uftrace/read_uftrace.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FGETS_MAX 4095
#define SYM_TYPES "?TtwPKDdvu"

static bool is_end_name(const char *p, size_t n)
{
	return (n == 9 && !memcmp(p, "__sym_end", 9)) ||
	       (n == 12 && !memcmp(p, "__dynsym_end", 12)) ||
	       (n == 10 && !memcmp(p, "__func_end", 10));
}

/* ---- maps ---- */

static int map_add(struct ufr_map *map, size_t *cap, uint64_t start, uint64_t end, const char *path,
		   size_t plen, const char *bid, size_t blen)
{
	struct ufr_module *m;

	if (map->nr > 0) {
		m = &map->mods[map->nr - 1];
		if (strlen(m->path) == plen && !memcmp(m->path, path, plen)) {
			/* another segment of the same file */
			if (end > m->end)
				m->end = end;
			return 0;
		}
	}
	if (map->nr == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		struct ufr_module *n = realloc(map->mods, ncap * sizeof(*n));

		if (n == NULL)
			return -1;
		map->mods = n;
		*cap = ncap;
	}
	m = &map->mods[map->nr];
	memset(m, 0, sizeof(*m));
	m->start = start;
	m->end = end;
	m->path = rd_strndup(path, plen);
	m->build_id = blen ? rd_strndup(bid, blen) : NULL;
	if (m->path == NULL)
		return -1;
	map->nr++;
	return 0;
}

static int mod_cmp(const void *a, const void *b)
{
	const struct ufr_module *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

struct ufr_module *ufr_map_find(struct ufr_map *map, uint64_t addr)
{
	size_t lo = 0, hi = map->nr;

	/* the last module starting at or below ADDR */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (map->mods[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && addr < map->mods[lo - 1].end)
		return &map->mods[lo - 1];
	return NULL;
}

int ufr_map_parse(const char *buf, size_t len, const char *file, bool lenient, struct ufr_map *map,
		  struct rd_error *err)
{
	struct rd_lines it;
	struct rd_line line;
	size_t cap = 0;
	int ret = 0;

	memset(map, 0, sizeof(*map));
	rd_lines_init(&it, buf, len, 0);
	while (rd_lines_next(&it, &line)) {
		struct rd_scan sc;
		uint64_t start, end, x;
		const char *w, *path, *bid = NULL;
		size_t n, plen, blen = 0;

		if (line.len + (line.has_nl ? 1 : 0) > FGETS_MAX) {
			ret = rd_error_set(err, UFR_E_MAP_LINE, file, (int64_t)line.off,
					   "line %u is longer than uftrace's 4096-byte line buffer",
					   line.lineno);
			if (!lenient)
				return -1;
			continue;
		}
		rd_scan_init(&sc, line.p, line.len);
		/* start-end prot offset dev inode */
		if (!rd_scan_hex(&sc, &start, NULL) || !rd_scan_char(&sc, '-') ||
		    !rd_scan_hex(&sc, &end, NULL) || !rd_scan_spaces(&sc) ||
		    rd_scan_until(&sc, ' ', &w) != 4 || !rd_scan_spaces(&sc) ||
		    !rd_scan_hex(&sc, &x, NULL) || !rd_scan_spaces(&sc) ||
		    !rd_scan_hex(&sc, &x, NULL) || !rd_scan_char(&sc, ':') ||
		    !rd_scan_hex(&sc, &x, NULL) || !rd_scan_spaces(&sc) ||
		    !rd_scan_dec(&sc, &x, NULL)) {
			ret = rd_error_set(err, UFR_E_MAP_LINE, file, (int64_t)line.off,
					   "line %u is not \"<start>-<end> <prot> <offset> "
					   "<major>:<minor> <inode> [<path>]\"",
					   line.lineno);
			if (!lenient)
				return -1;
			continue;
		}
		if (start > end) {
			ret = rd_error_set(err, UFR_E_MAP_LINE, file, (int64_t)line.off,
					   "line %u: start 0x%llx is above end 0x%llx", line.lineno,
					   (unsigned long long)start, (unsigned long long)end);
			if (!lenient)
				return -1;
			continue;
		}
		rd_scan_spaces(&sc);
		plen = rd_scan_until(&sc, ' ', &path);
		if (plen == 0)
			continue; /* anonymous mapping: skipped by uftrace too */
		rd_scan_spaces(&sc);
		n = rd_scan_until(&sc, ' ', &w);
		if (n > 9 && !memcmp(w, "build-id:", 9)) {
			bid = w + 9;
			blen = n - 9;
		}
		if (path[0] == '[') {
			if (plen >= 6 && !memcmp(path, "[stack", 6) && !map->has_stack) {
				map->has_stack = true;
				map->stack_start = start;
			}
			continue;
		}
		if (map_add(map, &cap, start, end, path, plen, bid, blen) < 0)
			return rd_error_set(err, UFR_E_IO, file, -1, "out of memory");
	}
	rd_sort(map->mods, map->nr, sizeof(*map->mods), mod_cmp);
	if (!map->has_stack) {
		ret = rd_error_set(err, UFR_E_MAP_NO_STACK, file, (int64_t)len,
				   "no [stack] line: uftrace 0.13 then treats every address as "
				   "kernel and resolves no user symbol");
	}
	return ret;
}

void ufr_map_free(struct ufr_map *map)
{
	for (size_t i = 0; i < map->nr; i++) {
		free(map->mods[i].path);
		free(map->mods[i].build_id);
	}
	free(map->mods);
	memset(map, 0, sizeof(*map));
}

/* ---- symbol tables ---- */

static int sym_cmp(const void *a, const void *b)
{
	const struct ufr_sym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int tab_push(struct ufr_symtab *tab, size_t *cap, uint64_t addr, uint64_t size, char type,
		    const char *name, size_t nlen)
{
	struct ufr_sym *s;

	if (tab->nr == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct ufr_sym *n = realloc(tab->syms, ncap * sizeof(*n));

		if (n == NULL)
			return -1;
		tab->syms = n;
		*cap = ncap;
	}
	s = &tab->syms[tab->nr];
	s->addr = addr;
	s->size = size;
	s->type = type;
	s->name = rd_strndup(name, nlen);
	if (s->name == NULL)
		return -1;
	tab->nr++;
	return 0;
}

static void header_value(const struct rd_line *line, const char *key, char **out)
{
	size_t kl = strlen(key);

	if (line->len >= kl && !memcmp(line->p, key, kl) && *out == NULL)
		*out = rd_strndup(line->p + kl, line->len - kl);
}

int ufr_sym_parse(const char *buf, size_t len, const char *file, bool lenient,
		  struct ufr_symtab *tab, struct rd_error *err)
{
	struct rd_lines it;
	struct rd_line line;
	size_t cap = 0;
	bool have_prev = false, prev_is_end = false;
	uint64_t prev_addr = 0;
	char prev_type = 0;
	size_t last_off = 0;
	const char *last_name = NULL;
	size_t last_nlen = 0;
	int ret = 0;

	memset(tab, 0, sizeof(*tab));
	rd_lines_init(&it, buf, len, 0);
	while (rd_lines_next(&it, &line)) {
		struct rd_scan sc;
		uint64_t addr;
		const char *name;
		size_t nlen;
		char type;

		if (line.len > 0 && line.p[0] == '#') {
			header_value(&line, "# path name: ", &tab->path_name);
			header_value(&line, "# build-id: ", &tab->build_id);
			continue;
		}
		rd_scan_init(&sc, line.p, line.len);
		if (!rd_scan_hex(&sc, &addr, NULL) || !rd_scan_char(&sc, ' ') || rd_scan_eol(&sc)) {
			ret = rd_error_set(err, UFR_E_SYM_LINE, file, (int64_t)line.off,
					   "line %u is not \"<hex address> <type> <name>\"",
					   line.lineno);
			if (!lenient)
				goto fail;
			continue;
		}
		type = *sc.p++;
		if (!rd_scan_char(&sc, ' ')) {
			struct rd_scan probe = sc;
			uint64_t size;

			probe.p--;
			if (rd_scan_hex(&probe, &size, NULL) && rd_scan_char(&probe, ' '))
				ret = rd_error_set(err, UFR_E_SYM_NEW_FORMAT, file,
						   (int64_t)line.off,
						   "line %u is in the newer \"<addr> <size> <type> "
						   "<name>\" format, which uftrace 0.13 skips",
						   line.lineno);
			else
				ret = rd_error_set(err, UFR_E_SYM_LINE, file, (int64_t)line.off,
						   "line %u is not \"<hex address> <type> <name>\"",
						   line.lineno);
			if (!lenient)
				goto fail;
			continue;
		}
		nlen = rd_scan_rest(&sc, &name);
		/* 0.13 cuts a kernel module suffix at a tab */
		{
			const char *tab_ch = memchr(name, '\t', nlen);

			if (tab_ch != NULL)
				nlen = (size_t)(tab_ch - name);
		}
		if (nlen == 0 || !((type >= 'a' && type <= 'z') || (type >= 'A' && type <= 'Z') ||
				   type == '?')) {
			ret = rd_error_set(err, UFR_E_SYM_LINE, file, (int64_t)line.off,
					   "line %u: bad symbol type or empty name", line.lineno);
			if (!lenient)
				goto fail;
			continue;
		}
		if (have_prev && addr == prev_addr && type == prev_type)
			continue; /* duplicate: 0.13 keeps the first */
		if (strchr(SYM_TYPES, type) == NULL) {
			/* 0.13 drops the line without a word and the addresses fall to the
			 * symbol before (as our writer's 'W' for weak functions once did);
			 * uftrace itself never writes such a type */
			ret = rd_error_set(err, UFR_E_SYM_TYPE, file, (int64_t)line.off,
					   "line %u: type '%c' of \"%.*s\" is not one uftrace 0.13 "
					   "reads (\"%s\"): it skips the line and the function "
					   "goes missing or takes the name of the symbol before it",
					   line.lineno, type, (int)(nlen > 64 ? 64 : nlen), name,
					   SYM_TYPES);
			if (!lenient)
				goto fail;
			continue;
		}

		if (have_prev && addr < prev_addr) {
			ret = rd_error_set(err, UFR_E_SYM_UNSORTED, file, (int64_t)line.off,
					   "line %u: address 0x%llx is below the previous 0x%llx "
					   "(uftrace sizes symbols in file order)",
					   line.lineno, (unsigned long long)addr,
					   (unsigned long long)prev_addr);
			if (!lenient)
				goto fail;
		}
		have_prev = true;
		prev_addr = addr;
		prev_type = type;
		prev_is_end = type == '?' || is_end_name(name, nlen);
		last_off = line.off;
		last_name = name;
		last_nlen = nlen;

		/* a symbol without a size yet is closed by whatever comes next */
		if (tab->nr > 0 && tab->syms[tab->nr - 1].size == 0)
			tab->syms[tab->nr - 1].size = addr >= tab->syms[tab->nr - 1].addr
							      ? addr - tab->syms[tab->nr - 1].addr
							      : 0;
		if (prev_is_end)
			continue;
		if (tab_push(tab, &cap, addr, 0, type, name, nlen) < 0) {
			ret = rd_error_set(err, UFR_E_IO, file, -1, "out of memory");
			goto fail;
		}
	}
	if (have_prev && !prev_is_end) {
		ret = rd_error_set(
			err, UFR_E_SYM_NO_END, file, (int64_t)last_off,
			"last symbol \"%.*s\" is not closed by an end marker ('?' line): "
			"uftrace gives it size 0 and never matches it",
			(int)(last_nlen > 64 ? 64 : last_nlen), last_name);
		if (!lenient)
			goto fail;
	}
	rd_sort(tab->syms, tab->nr, sizeof(*tab->syms), sym_cmp);
	return ret;

fail:
	ufr_sym_free(tab);
	return -1;
}

const struct ufr_sym *ufr_sym_find(const struct ufr_symtab *tab, uint64_t addr)
{
	size_t lo = 0, hi = tab->nr;

	/* last symbol whose address is <= addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (tab->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* equal addresses may hide a sized symbol behind an unsized one: look back a little */
	for (size_t i = lo, n = 0; i > 0 && n < 8; i--, n++) {
		const struct ufr_sym *s = &tab->syms[i - 1];

		if (addr - s->addr < s->size)
			return s;
		if (s->addr != tab->syms[lo - 1].addr)
			break;
	}
	return NULL;
}

void ufr_sym_free(struct ufr_symtab *tab)
{
	for (size_t i = 0; i < tab->nr; i++)
		free(tab->syms[i].name);
	free(tab->syms);
	free(tab->path_name);
	free(tab->build_id);
	memset(tab, 0, sizeof(*tab));
}

/* ---- ELF fallback ---- */

static bool elf_first_load(Elf *elf, uint64_t *vaddr)
{
	size_t n;

	if (elf_getphdrnum(elf, &n) != 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) != NULL && ph.p_type == PT_LOAD) {
			*vaddr = ph.p_vaddr;
			return true;
		}
	}
	return false;
}

static Elf_Scn *elf_find_symtab(Elf *elf, Elf64_Word type, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn)) != NULL)
		if (gelf_getshdr(scn, sh) != NULL && sh->sh_type == type && sh->sh_entsize > 0)
			return scn;
	return NULL;
}

int ufr_sym_load_elf(const char *path, bool rel, struct ufr_symtab *tab)
{
	struct stat st;
	Elf *elf = NULL;
	Elf_Scn *scn;
	Elf_Data *data;
	GElf_Shdr sh;
	uint64_t base = 0;
	size_t cap = 0, nsyms;
	int fd, ret = -1;

	memset(tab, 0, sizeof(*tab));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		goto out;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf == NULL || elf_kind(elf) != ELF_K_ELF)
		goto out;
	if (rel && !elf_first_load(elf, &base))
		goto out;
	scn = elf_find_symtab(elf, SHT_SYMTAB, &sh);
	if (scn == NULL)
		scn = elf_find_symtab(elf, SHT_DYNSYM, &sh);
	if (scn == NULL || (data = elf_getdata(scn, NULL)) == NULL)
		goto out;
	nsyms = data->d_size / sh.sh_entsize;
	for (size_t i = 0; i < nsyms; i++) {
		GElf_Sym sym;
		const char *name;
		int t;

		if (gelf_getsym(data, (int)i, &sym) == NULL)
			break;
		t = GELF_ST_TYPE(sym.st_info);
		if ((t != STT_FUNC && t != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
		    sym.st_value < base)
			continue;
		name = elf_strptr(elf, sh.sh_link, sym.st_name);
		if (name == NULL || *name == '\0')
			continue;
		if (tab_push(tab, &cap, sym.st_value - base, sym.st_size,
			     GELF_ST_BIND(sym.st_info) == STB_LOCAL ? 't' : 'T', name,
			     strlen(name)) < 0)
			goto out;
	}
	rd_sort(tab->syms, tab->nr, sizeof(*tab->syms), sym_cmp);
	/* sizeless symbols (hand-written assembly) reach the next one */
	for (size_t i = 0; i + 1 < tab->nr; i++)
		if (tab->syms[i].size == 0)
			tab->syms[i].size = tab->syms[i + 1].addr - tab->syms[i].addr;
	ret = 0;
out:
	if (elf)
		elf_end(elf);
	close(fd);
	if (ret < 0)
		ufr_sym_free(tab);
	return ret;
}
