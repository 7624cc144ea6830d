/*
 * cr_modules: which code is instrumented.
 *
 * A module (the executable or a shared library) is instrumented when it calls __tsan_*
 * functions: its dynamic string table names them, or, for the executable that links
 * libcacheray-rt.a, it holds this runtime itself. Each instrumented object file's constructor
 * calls __tsan_init, which scans the modules loaded since the last scan (dl_iterate_phdr's
 * dlpi_adds says when there are new ones, so the thousand constructors of a big program cost one
 * scan each at most) and notes the executable segments of the instrumented ones. (The caller of
 * __tsan_init cannot tell: gcc -O2 tail-calls it, so its return address is in ld.so or libc.)
 *
 * The interposed libc functions (cr_intercept.c) record a call only when their return address
 * is in an instrumented module, which is what TSan itself would have seen of the program: calls
 * made by libc or other uninstrumented libraries on their own behalf are not recorded, like
 * their other accesses.
 *
 * For malloc=auto, a module whose dynamic string table names a MallocTracker hook
 * (__malloc_recorded & co.) records its allocations itself, with types: the automatic records
 * skip it.
 *
 * Writers (constructors, dlopen) take a mutex; readers take none: an entry is complete before
 * the count that covers it is published (release; pairs with the readers' acquire). Unloaded
 * modules are not forgotten (dlclose of instrumented code is rare; a stale range can only make a
 * later module at the same address count as instrumented).
 */
#include "cacheray-rt/internal.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

#define CR_MAX_RANGES  64
#define CR_MAX_MODULES 1024

struct cr_code_range {
	uintptr_t lo, hi;
	int malloc_hooks; /* the module calls MallocTracker's hooks itself */
};

static struct cr_code_range cr_ranges[CR_MAX_RANGES];
static uint32_t cr_nranges; /* release/acquire */

/* scanner state, under the lock */
static pthread_mutex_t cr_modules_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long cr_seen_adds;
static const void *cr_done[CR_MAX_MODULES]; /* dlpi_phdr of the modules already looked at */
static unsigned cr_ndone;
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

/* The module's (loaded) dynamic string table, or NULL. */
static const char *cr_dynstr(const struct dl_phdr_info *info, size_t *size)
{
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
		return NULL;
	/* glibc relocates these entries in place; another loader may not have */
	if (strtab < info->dlpi_addr)
		strtab += info->dlpi_addr;
	*size = strsz;
	return (const char *)strtab;
}

enum { CR_NAMES_TSAN = 1, CR_NAMES_MALLOC_HOOKS = 2 };

/* Which of our names the module's dynamic string table holds. */
static int cr_names(const struct dl_phdr_info *info)
{
	static const char *const hooks[] = {"__malloc_recorded", "__calloc_recorded",
					    "__realloc_recorded", "__free_recorded"};
	size_t size = 0;
	const char *s = cr_dynstr(info, &size), *end = s ? s + size : NULL;
	int found = 0;

	while (s && s < end) {
		size_t len = strnlen(s, (size_t)(end - s));
		if (len > 7 && !memcmp(s, "__tsan_", 7))
			found |= CR_NAMES_TSAN;
		for (size_t h = 0; h < sizeof(hooks) / sizeof(hooks[0]); h++)
			if (len == strlen(hooks[h]) && !memcmp(s, hooks[h], len))
				found |= CR_NAMES_MALLOC_HOOKS;
		s += len + 1;
	}
	return found;
}

static int cr_contains(const struct dl_phdr_info *info, uintptr_t pc)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && pc >= lo && pc < lo + ph->p_memsz)
			return 1;
	}
	return 0;
}

static void cr_add_ranges(const struct dl_phdr_info *info, int malloc_hooks)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint32_t n = cr_nranges;
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (n == CR_MAX_RANGES) {
			if (!cr_full_warned++)
				rec_warn(
					"cacheray-rt: more than %d instrumented code segments: the "
					"memcpy and malloc calls of %s are not recorded",
					CR_MAX_RANGES, info->dlpi_name);
			return;
		}
		cr_ranges[n].lo = info->dlpi_addr + ph->p_vaddr;
		cr_ranges[n].hi = cr_ranges[n].lo + ph->p_memsz;
		cr_ranges[n].malloc_hooks = malloc_hooks;
		__atomic_store_n(&cr_nranges, n + 1, __ATOMIC_RELEASE);
	}
}

static int cr_scan_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	int *first = arg, names, instrumented;

	if (*first) {
		*first = 0;
		if (size >= offsetof(struct dl_phdr_info, dlpi_subs) &&
		    info->dlpi_adds == cr_seen_adds)
			return 1; /* nothing loaded since the last scan */
		if (size >= offsetof(struct dl_phdr_info, dlpi_subs))
			cr_seen_adds = info->dlpi_adds;
	}
	for (unsigned i = 0; i < cr_ndone; i++)
		if (cr_done[i] == info->dlpi_phdr)
			return 0;
	if (cr_ndone < CR_MAX_MODULES)
		cr_done[cr_ndone++] = info->dlpi_phdr;
	names = cr_names(info);
	if (cr_contains(info, (uintptr_t)cr_module_note))
		/* this runtime: linked into the program (libcacheray-rt.a), or our own .so */
		instrumented = !strstr(info->dlpi_name, "libcacheray-rt");
	else
		instrumented = (names & CR_NAMES_TSAN) != 0;
	if (instrumented)
		cr_add_ranges(info, (names & CR_NAMES_MALLOC_HOOKS) != 0);
	return 0;
}

void cr_module_note(void)
{
	int saved = errno, first = 1;

	pthread_mutex_lock(&cr_modules_lock);
	dl_iterate_phdr(cr_scan_cb, &first);
	pthread_mutex_unlock(&cr_modules_lock);
	errno = saved;
}
