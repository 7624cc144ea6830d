/*
 * cr_modules: which code is instrumented.
 *
 * Every object file compiled with -fsanitize=thread has a constructor that calls __tsan_init,
 * so the caller of __tsan_init lies in an instrumented module (the executable or a shared
 * library). Its executable segments are noted here; the interposed libc functions
 * (cr_intercept.c) record a call only when their return address is in one of them, which is
 * what TSan itself would have seen of the program: calls made by libc or other uninstrumented
 * libraries on their own behalf are not recorded, like their other accesses.
 *
 * For malloc=auto, a module whose dynamic string table names a MallocTracker hook
 * (__malloc_recorded & co.) records its allocations itself, with types: the automatic records
 * skip it.
 *
 * Writers (module constructors, dlopen) take a mutex; readers take none: an entry is complete
 * before the count that covers it is published (release; pairs with the readers' acquire).
 * Unloaded modules are not forgotten (dlclose of instrumented code is rare; a stale range can
 * only make a later module at the same address count as instrumented).
 */
#include "cacheray-rt/internal.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

#define CR_MAX_RANGES 64

struct cr_code_range {
	uintptr_t lo, hi;
	int malloc_hooks; /* the module calls MallocTracker's hooks itself */
};

static struct cr_code_range cr_ranges[CR_MAX_RANGES];
static uint32_t cr_nranges; /* release/acquire */
static pthread_mutex_t cr_modules_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t cr_full_warned;

static const struct cr_code_range *cr_range_of(uintptr_t pc)
{
	uint32_t n = __atomic_load_n(&cr_nranges, __ATOMIC_ACQUIRE);

	for (uint32_t i = 0; i < n; i++)
		if (pc >= cr_ranges[i].lo && pc < cr_ranges[i].hi)
			return &cr_ranges[i];
	return NULL;
}

int cr_module_has(uintptr_t pc)
{
	return cr_range_of(pc) != NULL;
}

int cr_module_wants_malloc_rtta(uintptr_t pc)
{
	const struct cr_code_range *r = cr_range_of(pc);
	return r && !r->malloc_hooks;
}

/* Does the module's (loaded) dynamic string table hold one of the MallocTracker hook names? */
static int cr_uses_malloc_hooks(const struct dl_phdr_info *info)
{
	static const char *const hooks[] = { "__malloc_recorded", "__calloc_recorded",
					     "__realloc_recorded", "__free_recorded" };
	const ElfW(Dyn) *dyn = NULL;
	uintptr_t strtab = 0;
	size_t strsz = 0;

	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
		if (dyn->d_tag == DT_STRTAB)
			strtab = dyn->d_un.d_ptr;
		else if (dyn->d_tag == DT_STRSZ)
			strsz = dyn->d_un.d_val;
	}
	if (!strtab || !strsz)
		return 0;
	/* glibc relocates these entries in place; another loader may not have */
	if (strtab < info->dlpi_addr)
		strtab += info->dlpi_addr;
	const char *s = (const char *)strtab, *end = s + strsz;
	while (s < end) {
		size_t len = strnlen(s, (size_t)(end - s));
		for (size_t h = 0; h < sizeof(hooks) / sizeof(hooks[0]); h++)
			if (len == strlen(hooks[h]) && !memcmp(s, hooks[h], len))
				return 1;
		s += len + 1;
	}
	return 0;
}

static int cr_note_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t pc = *(uintptr_t *)arg;
	int found = 0, hooks;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum && !found; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		found = ph->p_type == PT_LOAD && pc >= lo && pc < lo + ph->p_memsz;
	}
	if (!found)
		return 0;
	hooks = cr_uses_malloc_hooks(info);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint32_t n = cr_nranges;
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (n == CR_MAX_RANGES) {
			if (!cr_full_warned++)
				rec_warn("cacheray-rt: more than %d instrumented code segments: the "
					 "memcpy and malloc calls of %s are not recorded",
					 CR_MAX_RANGES, info->dlpi_name);
			break;
		}
		cr_ranges[n].lo = info->dlpi_addr + ph->p_vaddr;
		cr_ranges[n].hi = cr_ranges[n].lo + ph->p_memsz;
		cr_ranges[n].malloc_hooks = hooks;
		__atomic_store_n(&cr_nranges, n + 1, __ATOMIC_RELEASE);
	}
	return 1;
}

void cr_module_note(uintptr_t pc)
{
	int saved = errno;

	if (cr_module_has(pc))
		return;
	pthread_mutex_lock(&cr_modules_lock);
	if (!cr_module_has(pc))
		dl_iterate_phdr(cr_note_cb, &pc);
	pthread_mutex_unlock(&cr_modules_lock);
	errno = saved;
}
