/*
 * xray_map: find the executable's `xray_instr_map` and decode it (see xray_map.h).
 *
 * Where the map is: compiler-rt's runtime uses the linker-made __start_xray_instr_map /
 * __stop_xray_instr_map symbols, but those exist only when the runtime is linked in, and
 * never in .dynsym, so a preloaded library cannot see them. The section headers of the file
 * (/proc/self/exe) always name the section; its run-time address is the load bias (the
 * first dl_iterate_phdr entry is the executable) plus sh_addr. The map is then read where it
 * is mapped (it is SHF_ALLOC), so version < 2 entries already carry relocated addresses.
 *
 * compiler-rt's runtime, when clang linked it in, is found the same way: its handler
 * variables are named in the file's symbol table (.symtab; a stripped executable has none,
 * and then compiler-rt goes unnoticed).
 */
#include "xray-rt/xray_map.h"
#include "librecord/rec_util.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

long xr_map_decode(const uint8_t *map, size_t size, uintptr_t map_addr, struct xr_sled *out)
{
	uintptr_t cur = 0;
	uint32_t id = 0;
	size_t n;

	if (size % XR_MAP_ENTRY_SIZE)
		return -1;
	n = size / XR_MAP_ENTRY_SIZE;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *e = map + i * XR_MAP_ENTRY_SIZE;
		uintptr_t here = map_addr + i * XR_MAP_ENTRY_SIZE;
		uint64_t a, f;
		struct xr_sled *s = &out[i];

		memcpy(&a, e, 8); /* unaligned */
		memcpy(&f, e + 8, 8);
		s->kind = e[16];
		s->always = e[17];
		s->version = e[18];
		s->patched = 0;
		if (s->version >= 2) {
			a += here;
			f += here + 8;
		}
		s->addr = (uintptr_t)a;
		s->func = (uintptr_t)f;
		/* llvm-xray: the first entry starts id 1; a different function than the previous
		 * entry's gets the next id */
		if (i == 0 || s->func != cur) {
			id++;
			cur = s->func;
		}
		s->id = id;
	}
	return (long)n;
}

struct xr_phdr_scan {
	uintptr_t bias;
	uintptr_t text_lo, text_hi;
	int done;
};

static int xr_phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct xr_phdr_scan *sc = arg;

	(void)size;
	if (sc->done)
		return 1;
	sc->done = 1; /* the first object is the executable */
	sc->bias = info->dlpi_addr;
	sc->text_lo = UINTPTR_MAX;
	sc->text_hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (lo < sc->text_lo)
			sc->text_lo = lo;
		if (hi > sc->text_hi)
			sc->text_hi = hi;
	}
	return 1;
}

/* compiler-rt's handler variables (namespace __xray, default visibility), in the order of
 * xr_map.crt_handler */
static const char *const xr_crt_names[XR_CRT_HANDLERS] = {
	"_ZN6__xray19XRayPatchedFunctionE",
	"_ZN6__xray13XRayArgLoggerE",
	"_ZN6__xray22XRayPatchedCustomEventE",
	"_ZN6__xray21XRayPatchedTypedEventE",
};

/* Look for compiler-rt's handler variables in a symbol table: their link-time addresses in
 * crt[] (left alone when absent). */
static void xr_scan_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, uint64_t crt[])
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

	for (size_t i = 0; data && i < n; i++) {
		GElf_Sym sym;
		const char *name;
		if (!gelf_getsym(data, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_OBJECT ||
		    sym.st_shndx == SHN_UNDEF)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || strncmp(name, "_ZN6__xray", 10) != 0)
			continue;
		for (int k = 0; k < XR_CRT_HANDLERS; k++)
			if (strcmp(name, xr_crt_names[k]) == 0)
				crt[k] = sym.st_value;
	}
}

/* sh_addr and sh_size of xray_instr_map in the ELF file at `path`; 1 found, 0 none, -1 error.
 * Also: is xray-rt (its marker section) or compiler-rt (its variables in crt[]) linked in. */
static int xr_find_section(const char *path, uint64_t *addr, uint64_t *size, int *has_runtime,
			   uint64_t crt[])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), found = 0;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	Elf *elf;

	if (fd < 0) {
		rec_debug("xray-rt: cannot open %s:", path);
		return -1;
	}
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx) != 0) {
		rec_debug("xray-rt: %s is not a readable ELF file: %s", path, elf_errmsg(-1));
		found = -1;
		goto out;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			xr_scan_symtab(elf, scn, &sh, crt);
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (strcmp(name, XR_MARKER_SECTION) == 0)
			*has_runtime = 1;
		if (strcmp(name, "xray_instr_map") == 0 && (sh.sh_flags & SHF_ALLOC)) {
			*addr = sh.sh_addr;
			*size = sh.sh_size;
			found = 1;
		}
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}

static int xr_map_decode_at(struct xr_map *m, uintptr_t map, size_t sh_size);

int xr_map_load(struct xr_map *m)
{
	struct xr_phdr_scan sc = {0};
	uint64_t sh_addr = 0, sh_size = 0, crt[XR_CRT_HANDLERS] = {0};
	int ret;

	memset(m, 0, sizeof(*m));
	ret = xr_find_section("/proc/self/exe", &sh_addr, &sh_size, &m->has_runtime, crt);
	dl_iterate_phdr(xr_phdr_cb, &sc);
	m->text_lo = sc.text_lo;
	m->text_hi = sc.text_hi;
	for (int k = 0; k < XR_CRT_HANDLERS; k++) {
		if (crt[k] && sc.done) {
			m->crt_handler[k] = sc.bias + (uintptr_t)crt[k];
			m->has_crt = 1;
		}
	}
	if (ret <= 0)
		return ret;
	if (!sc.done || sc.text_hi == 0) {
		rec_debug("xray-rt: cannot find the executable's segments");
		return -1;
	}
	if (sh_size == 0)
		return 0;
	m->bias = sc.bias;
	return xr_map_decode_at(m, sc.bias + (uintptr_t)sh_addr, (size_t)sh_size);
}

/* m->sleds, count and max_id from the `size` bytes of map mapped at `map` */
static int xr_map_decode_at(struct xr_map *m, uintptr_t map, size_t sh_size)
{
	long n;

	m->sleds = calloc(sh_size / XR_MAP_ENTRY_SIZE + 1, sizeof(*m->sleds));
	if (!m->sleds) {
		rec_debug("xray-rt: no memory for %llu map entries",
			  (unsigned long long)(sh_size / XR_MAP_ENTRY_SIZE));
		return -1;
	}
	n = xr_map_decode((const uint8_t *)map, sh_size, map, m->sleds);
	if (n < 0) {
		rec_debug("xray-rt: xray_instr_map size %llu is not a multiple of %d",
			  (unsigned long long)sh_size, XR_MAP_ENTRY_SIZE);
		free(m->sleds);
		m->sleds = NULL;
		return -1;
	}
	m->count = (size_t)n;
	m->max_id = n ? m->sleds[n - 1].id : 0;
	return 1;
}

int xr_map_load_dso(const char *path, uintptr_t bias, struct xr_map *m)
{
	uint64_t sh_addr = 0, sh_size = 0, crt[XR_CRT_HANDLERS] = {0};
	int has_runtime = 0, ret;

	memset(m, 0, sizeof(*m));
	ret = xr_find_section(path, &sh_addr, &sh_size, &has_runtime, crt);
	if (ret <= 0 || sh_size == 0)
		return ret < 0 ? -1 : 0;
	m->bias = bias;
	return xr_map_decode_at(m, bias + (uintptr_t)sh_addr, (size_t)sh_size);
}
