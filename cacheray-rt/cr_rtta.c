/*
 * cr_rtta: Run-Time Type Annotations: the hooks Cacheray's MallocTracker compiler pass calls
 * after each malloc/calloc/realloc/free, and the public API of cacheray_rtta.h.
 *
 *   __malloc_recorded(n, name, p)          RTTA_ADD p, elemsize n, elemcount 1 (as Cacheray)
 *   __calloc_recorded(k, s, name, p)       RTTA_ADD p, elemsize s, elemcount k
 *   __realloc_recorded(old, n, name, p)    RTTA_REMOVE old, then RTTA_ADD p, n, 1
 *   __free_recorded(p)                     RTTA_REMOVE p
 *   __cacheray_rtta_add(p, name, s, k)     RTTA_ADD p, s, k
 *   __cacheray_rtta_remove(p)              RTTA_REMOVE p
 * Unlike Cacheray, a NULL address gives no record (free(NULL), a failed allocation; a failed
 * realloc leaves the old block annotated), and sizes beyond 32 bits are folded between
 * elemsize and elemcount so that their product stays exact where it can (saturated else).
 * A type name longer than CR_NAME_MAX bytes is cut; NULL is the empty name.
 */
#include "cacheray-rt/internal.h"

void cr_rtta_add(uintptr_t addr, const char *name, uint64_t elem_size, uint64_t elem_count)
{
	struct rec_thread *t = cr_thread(1);
	uint32_t len = name ? (uint32_t)strnlen(name, CR_NAME_MAX) : 0, es, ec;
	uint8_t *p;

	if (!t)
		return;
	if (t->busy) {
		rec_count_lost(t, REC_LOST_NESTED, 1);
		return;
	}
	cr_rtta_dims(elem_size, elem_count, &es, &ec);
	t->busy = 1;
	CR_BARRIER();
	p = rec_reserve(t, CR_ADD_FIXED_BYTES + len);
	if (p) {
		cr_put_add(p, addr, (uint64_t)(uint32_t)t->tid, es, ec, name ? name : "", len);
		rec_commit(t);
	}
	CR_BARRIER();
	t->busy = 0;
}

void cr_rtta_remove(uintptr_t addr)
{
	struct rec_thread *t = cr_thread(1);
	uint8_t *p;

	if (!t)
		return;
	if (t->busy) {
		rec_count_lost(t, REC_LOST_NESTED, 1);
		return;
	}
	t->busy = 1;
	CR_BARRIER();
	p = rec_reserve(t, CR_REMOVE_BYTES);
	if (p) {
		cr_put_remove(p, addr, (uint64_t)(uint32_t)t->tid);
		rec_commit(t);
	}
	CR_BARRIER();
	t->busy = 0;
}

/* --- MallocTracker's hooks ------------------------------------------------------------------ */

CR_EXPORT void __malloc_recorded(long byte_size, char *type_name, void *addr)
{
	if (addr)
		cr_rtta_add((uintptr_t)addr, type_name, (uint64_t)byte_size, 1);
}

CR_EXPORT void __calloc_recorded(long nmemb, long size, char *name, void *addr)
{
	if (addr)
		cr_rtta_add((uintptr_t)addr, name, (uint64_t)size, (uint64_t)nmemb);
}

CR_EXPORT void __realloc_recorded(void *old_addr, long size, char *name, void *addr)
{
	/* realloc(p, 0) frees p; a failed realloc leaves it alone */
	if (old_addr && (addr || size == 0))
		cr_rtta_remove((uintptr_t)old_addr);
	if (addr)
		cr_rtta_add((uintptr_t)addr, name, (uint64_t)size, 1);
}

CR_EXPORT void __free_recorded(void *addr)
{
	if (addr)
		cr_rtta_remove((uintptr_t)addr);
}

/* --- the public API (cacheray_rtta.h) -------------------------------------------------------- */

CR_EXPORT void __cacheray_rtta_add(const volatile void *addr, const char *type_name,
				   size_t elem_size, size_t elem_count)
{
	cr_rtta_add((uintptr_t)addr, type_name, elem_size, elem_count);
}

CR_EXPORT void __cacheray_rtta_remove(const volatile void *addr)
{
	cr_rtta_remove((uintptr_t)addr);
}
