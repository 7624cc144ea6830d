/*
 * cacheray_rtta.h: Run-Time Type Annotations for Cacheray traces (flightrec's cacheray-rt).
 *
 * A program annotates a memory region with a type name; the trace then holds an RTTA_ADD
 * record (address, thread, element size, element count, type name) where the call happened,
 * and an RTTA_REMOVE record (address, thread) when the annotation ends, so that a cache
 * simulator can tell which type each access touched:
 *
 *     struct point *pts = malloc(n * sizeof(*pts));
 *     CACHERAY_RTTA_TYPE(pts, struct point, n);   // RTTA_ADD pts, 16, n, "struct point"
 *     ...
 *     CACHERAY_RTTA_REMOVE(pts);                  // RTTA_REMOVE pts
 *     free(pts);
 *
 * [addr, addr + elem_size * elem_count) is inhabited by values of type `type_name`. The names
 * are free text (Cacheray's MallocTracker pass writes LLVM type names such as "struct.point");
 * names longer than 4000 bytes are cut.
 *
 * Link with libcacheray-rt (.so or .a). The functions are declared weak, so the macros do
 * nothing in a program that runs without the runtime.
 */
#ifndef CACHERAY_RTTA_H
#define CACHERAY_RTTA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

void __cacheray_rtta_add(const volatile void *addr, const char *type_name, size_t elem_size,
			 size_t elem_count) __attribute__((weak));
void __cacheray_rtta_remove(const volatile void *addr) __attribute__((weak));

#ifdef __cplusplus
}
#endif

/* Annotate [addr, addr + elem_size * elem_count) with type_name. */
#define CACHERAY_RTTA_ADD(addr, type_name, elem_size, elem_count)                                  \
	do {                                                                                       \
		if (__cacheray_rtta_add)                                                           \
			__cacheray_rtta_add((addr), (type_name), (elem_size), (elem_count));       \
	} while (0)

/* Annotate `count` elements of `type` at addr, named as written: CACHERAY_RTTA_TYPE(p, struct
 * point, n) gives "struct point", elem_size sizeof(struct point). */
#define CACHERAY_RTTA_TYPE(addr, type, count)                                                      \
	CACHERAY_RTTA_ADD((addr), #type, sizeof(type), (count))

/* End the annotation that starts at addr. */
#define CACHERAY_RTTA_REMOVE(addr)                                                                 \
	do {                                                                                       \
		if (__cacheray_rtta_remove)                                                        \
			__cacheray_rtta_remove((addr));                                            \
	} while (0)

#endif /* CACHERAY_RTTA_H */
