/*
 * rec_dlcaller: the real dlopen called as if from the program (rec_dlcaller.h says why).
 *
 * The return address given to the loader must lie in the caller's object and hold a `ret`
 * (0xc3): the loader returns there and the ret pops the address rec_dlcall_via pushed below.
 * The object's _fini (DT_FINI) ends in such a ret and has no unwind entry, so a backtrace taken
 * inside the dlopen (a constructor of the loaded library) stops there cleanly instead of reading
 * the frame of an unrelated function; without DT_FINI the first ret byte after the call site is
 * used. Either way the byte is only executed as a ret, never as part of what it was compiled in.
 */
#include "rec_dlcaller.h"
#include "rec_util.h"

#include <dlfcn.h>
#include <errno.h>

#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>

void *rec_dlcall_via(const char *file, int mode, rec_dlopen_fn fn, const void *via);

#define REC_GADGET_SCAN 4096 /* bytes searched for a ret after DT_FINI or the call site */

struct rec_gadget_find {
	uintptr_t caller;
	uintptr_t found;
};

/* The first 0xc3 in [from, min(from + REC_GADGET_SCAN, end)), or 0. */
static uintptr_t rec_ret_byte(uintptr_t from, uintptr_t end)
{
	const unsigned char *p = (const unsigned char *)from;

	if (end - from > REC_GADGET_SCAN)
		end = from + REC_GADGET_SCAN;
	for (; (uintptr_t)p < end; p++)
		if (*p == 0xc3)
			return (uintptr_t)p;
	return 0;
}

/* The readable, executable segment of INFO holding ADDR: its bounds, or 0. */
static int rec_exec_seg(const struct dl_phdr_info *info, uintptr_t addr, uintptr_t *lo,
			uintptr_t *hi)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || addr < s || addr - s >= ph->p_memsz)
			continue;
		if ((ph->p_flags & (PF_R | PF_X)) != (PF_R | PF_X))
			return 0;
		*lo = s;
		*hi = s + ph->p_filesz; /* past the file's bytes lies zero fill, never code */
		return 1;
	}
	return 0;
}

/* DT_FINI of INFO as a run-time address, or 0. The loader leaves DT_FINI's value as linked
 * (it adds the base when it calls it); one already past the base is taken as it is. */
static uintptr_t rec_fini_addr(const struct dl_phdr_info *info)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const ElfW(Dyn) *d;

		if (ph->p_type != PT_DYNAMIC)
			continue;
		for (d = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr); d->d_tag != DT_NULL;
		     d++) {
			if (d->d_tag != DT_FINI || !d->d_un.d_ptr)
				continue;
			if (d->d_un.d_ptr < info->dlpi_addr)
				return info->dlpi_addr + d->d_un.d_ptr;
			return d->d_un.d_ptr;
		}
	}
	return 0;
}

static int rec_gadget_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct rec_gadget_find *g = arg;
	uintptr_t lo, hi, fini;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && g->caller >= s && g->caller - s < ph->p_memsz)
			goto mine;
	}
	return 0;
mine:
	fini = rec_fini_addr(info);
	if (fini && rec_exec_seg(info, fini, &lo, &hi))
		g->found = rec_ret_byte(fini, hi);
	if (!g->found && rec_exec_seg(info, g->caller, &lo, &hi))
		g->found = rec_ret_byte(g->caller, hi);
	return 1;
}

const void *rec_dl_ret_gadget(const void *caller)
{
	struct rec_gadget_find g = { (uintptr_t)caller, 0 };

	if (!caller)
		return NULL;
	dl_iterate_phdr(rec_gadget_cb, &g);
	return (const void *)g.found;
}

void *rec_dlopen_as_caller(rec_dlopen_fn real, const char *file, int mode, const void *caller)
{
	const void *via = rec_dl_ret_gadget(caller);

	if (!via)
		return real(file, mode);
	return rec_dlcall_via(file, mode, real, via);
}

void *rec_dlopen_tracked(rec_dlopen_fn real, const char *file, int mode, const void *caller,
			 struct link_map **added)
{
	unsigned long long before = rec_dl_adds();
	void *h = rec_dlopen_as_caller(real, file, mode, caller);
	int saved = errno;

	*added = NULL;
	if (h && file && rec_dl_adds() != before && dlinfo(h, RTLD_DI_LINKMAP, added) != 0)
		*added = NULL;
	errno = saved;
	return h;
}
