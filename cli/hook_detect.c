/*
 * hook_detect: classify a program by its instrumentation symbols (see hook_detect.h).
 */
#include "cli/hook_detect.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const struct {
	const char *name;
	const char *library;
	const char *runtime;
} hooks[] = {
	[HOOK_NONE] = { "none", NULL, NULL },
	[HOOK_MCOUNT] = { "mcount", "libmcount.so", "libmcount" },
	[HOOK_XRAY] = { "xray", "libxray-rt.so", "xray-rt" },
	[HOOK_CACHERAY] = { "cacheray", "libcacheray-rt.so", "cacheray-rt" },
};

enum hook_kind hook_from_name(const char *name)
{
	for (unsigned k = HOOK_MCOUNT; k <= HOOK_CACHERAY; k++)
		if (!strcmp(name, hooks[k].name))
			return (enum hook_kind)k;
	return HOOK_NONE;
}

const char *hook_name(enum hook_kind kind)
{
	return hooks[kind].name;
}

const char *hook_library(enum hook_kind kind)
{
	return hooks[kind].library;
}

const char *hook_runtime_name(enum hook_kind kind)
{
	return hooks[kind].runtime;
}

struct found {
	bool mcount, xray, tsan;
};

static void classify(const char *name, struct found *f)
{
	if (!strcmp(name, "mcount") || !strcmp(name, "_mcount") || !strcmp(name, "__fentry__") ||
	    !strcmp(name, "__gnu_mcount_nc") || !strcmp(name, "__cyg_profile_func_enter"))
		f->mcount = true;
	else if (!strncmp(name, "__xray_", 7))
		f->xray = true;
	else if (!strncmp(name, "__tsan_", 7))
		f->tsan = true;
}

static void scan_symbols(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct found *f)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n;

	if (data == NULL || sh->sh_entsize == 0)
		return;
	n = data->d_size / sh->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		const char *name;

		if (gelf_getsym(data, (int)i, &sym) == NULL)
			break;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		/* every name of interest starts with '_' or 'm': skip the rest cheaply */
		if (name != NULL && (name[0] == '_' || name[0] == 'm'))
			classify(name, f);
	}
}

static bool has_interpreter(Elf *elf)
{
	size_t n;

	if (elf_getphdrnum(elf, &n) != 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) != NULL && ph.p_type == PT_INTERP)
			return true;
	}
	return false;
}

int hook_detect(const char *path, enum hook_kind *kind, bool *dynamic, char *why, size_t whylen)
{
	struct found f = { false, false, false };
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	Elf *elf;
	int fd;

	*kind = HOOK_NONE;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(why, whylen, "libelf: %s", elf_errmsg(-1));
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, whylen, "%s", strerror(errno));
		return -1;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf == NULL || elf_kind(elf) != ELF_K_ELF) {
		snprintf(why, whylen,
			 "not an ELF executable (a script? record the interpreter's "
			 "instrumented binary instead)");
		if (elf)
			elf_end(elf);
		close(fd);
		return -1;
	}
	*dynamic = has_interpreter(elf);
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		shstrndx = 0;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *name;

		if (gelf_getshdr(scn, &sh) == NULL)
			continue;
		name = shstrndx ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
		if (name != NULL && !strcmp(name, "xray_instr_map"))
			f.xray = true;
		if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM)
			scan_symbols(elf, scn, &sh, &f);
	}
	elf_end(elf);
	close(fd);

	if (f.xray)
		*kind = HOOK_XRAY;
	else if (f.tsan)
		*kind = HOOK_CACHERAY;
	else if (f.mcount)
		*kind = HOOK_MCOUNT;
	return 0;
}
