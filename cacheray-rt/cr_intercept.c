/*
 * cr_intercept: libc functions cacheray-rt interposes, and the __tsan_mem* callbacks.
 *
 *   memcpy, memmove, memset, __memcpy_chk, __memmove_chk, __memset_chk
 *       clang 14's TSan pass turns struct copies and memory intrinsics into calls of the plain
 *       functions (TSan's runtime intercepts them and checks the ranges). Called from
 *       instrumented code (cr_modules.c), they are recorded as ranges: READ of the source,
 *       WRITE of the destination (CACHERAY_OPTIONS memfuncs=0 turns this off).
 *   __tsan_memcpy, __tsan_memmove, __tsan_memset
 *       what newer compilers emit instead: always recorded.
 *   malloc, calloc, realloc, free
 *       with malloc=1 (or auto, when the runtime is LD_PRELOADed), calls from instrumented code
 *       give RTTA records with the type name "void*" (MallocTracker's name for an untyped
 *       block); with auto, modules that call the MallocTracker hooks themselves are skipped.
 *
 * The real functions come from dlsym(RTLD_NEXT) at start-up (cr_intercept_init). Before that
 * (another library's constructor, or dlsym itself allocating), the memory functions are plain
 * `rep movsb`/`rep stosb` loops and the allocator is glibc's own __libc_* entry points.
 *
 * None of this ever starts a session or attaches a thread inside the runtime's own start-up:
 * a call is recorded only when the session is running, and never while the thread is inside a
 * hook (busy: the runtime's own calls when it is linked statically, or a signal handler).
 */
#include "cacheray-rt/internal.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef void *(*cr_memcpy_fn)(void *, const void *, size_t);
typedef void *(*cr_memset_fn)(void *, int, size_t);
typedef void *(*cr_memcpy_chk_fn)(void *, const void *, size_t, size_t);
typedef void *(*cr_memset_chk_fn)(void *, int, size_t, size_t);
typedef void *(*cr_malloc_fn)(size_t);
typedef void *(*cr_calloc_fn)(size_t, size_t);
typedef void *(*cr_realloc_fn)(void *, size_t);
typedef void (*cr_free_fn)(void *);

static cr_memcpy_fn cr_real_memcpy, cr_real_memmove;
static cr_memset_fn cr_real_memset;
static cr_memcpy_chk_fn cr_real_memcpy_chk, cr_real_memmove_chk;
static cr_memset_chk_fn cr_real_memset_chk;
static cr_malloc_fn cr_real_malloc;
static cr_calloc_fn cr_real_calloc;
static cr_realloc_fn cr_real_realloc;
static cr_free_fn cr_real_free;

/* glibc's own allocator entry points (exported since 2.2.5) */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

/* 1: automatic RTTA records for the allocator; 2: only for modules without MallocTracker */
static int cr_malloc_rtta;

/* --- fallbacks before start-up --------------------------------------------------------------- */

static void *cr_copy(void *d, const void *s, size_t n)
{
	void *ret = d;

	if ((uintptr_t)d - (uintptr_t)s >= n) { /* no overlap that a forward copy would break */
		__asm__ __volatile__("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
	} else {
		unsigned char *dd = d;
		const unsigned char *ss = s;
		while (n--)
			((volatile unsigned char *)dd)[n] = ss[n];
	}
	return ret;
}

static void *cr_fill(void *d, int c, size_t n)
{
	void *ret = d;

	__asm__ __volatile__("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
	return ret;
}

/* --- start-up ------------------------------------------------------------------------------ */

static void *cr_next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

/* Is this copy of the runtime the one LD_PRELOAD names? */
static int cr_preloaded(void)
{
	const char *pre = getenv("LD_PRELOAD"), *me, *base;
	Dl_info info;
	size_t blen;

	if (!pre || !dladdr((void *)cr_preloaded, &info) || !info.dli_fname)
		return 0;
	me = info.dli_fname;
	base = strrchr(me, '/');
	base = base ? base + 1 : me;
	blen = strlen(base);
	/* entries are separated by spaces or colons */
	for (const char *p = pre; *p;) {
		size_t len = strcspn(p, " :");
		const char *slash = NULL;
		for (const char *q = p; q < p + len; q++)
			if (*q == '/')
				slash = q;
		const char *eb = slash ? slash + 1 : p;
		if ((size_t)(p + len - eb) == blen && !memcmp(eb, base, blen))
			return 1;
		p += len;
		p += strspn(p, " :");
	}
	return 0;
}

void cr_intercept_init(void)
{
	*(void **)&cr_real_malloc = cr_next("malloc");
	*(void **)&cr_real_calloc = cr_next("calloc");
	*(void **)&cr_real_realloc = cr_next("realloc");
	*(void **)&cr_real_free = cr_next("free");
	*(void **)&cr_real_memmove_chk = cr_next("__memmove_chk");
	*(void **)&cr_real_memcpy_chk = cr_next("__memcpy_chk");
	*(void **)&cr_real_memset_chk = cr_next("__memset_chk");
	*(void **)&cr_real_memset = cr_next("memset");
	*(void **)&cr_real_memmove = cr_next("memmove");
	*(void **)&cr_real_memcpy = cr_next("memcpy");
	if (cr_opts.malloc_mode == CR_MALLOC_ON)
		cr_malloc_rtta = 1;
	else if (cr_opts.malloc_mode == CR_MALLOC_AUTO && cr_preloaded())
		cr_malloc_rtta = 2;
}

/* --- recording ------------------------------------------------------------------------------ */

/* The thread to record a call from instrumented code at `ra` into, or NULL. */
static inline struct rec_thread *cr_caller_thread(uintptr_t ra)
{
	struct rec_thread *t;

	if (!cr_module_has(ra))
		return NULL;
	t = cr_thread(0);
	return t && !t->busy ? t : NULL;
}

static inline void cr_note_copy(uintptr_t ra, const void *d, const void *s, size_t n)
{
	if (!cr_opts.memfuncs || !cr_caller_thread(ra))
		return;
	cr_range(CR_READ, (uintptr_t)s, n);
	cr_range(CR_WRITE, (uintptr_t)d, n);
}

static inline void cr_note_fill(uintptr_t ra, const void *d, size_t n)
{
	if (!cr_opts.memfuncs || !cr_caller_thread(ra))
		return;
	cr_range(CR_WRITE, (uintptr_t)d, n);
}

#define CR_RA() ((uintptr_t)__builtin_return_address(0))

CR_EXPORT void *memcpy(void *d, const void *s, size_t n)
{
	cr_note_copy(CR_RA(), d, s, n);
	return cr_real_memcpy ? cr_real_memcpy(d, s, n) : cr_copy(d, s, n);
}

CR_EXPORT void *memmove(void *d, const void *s, size_t n)
{
	cr_note_copy(CR_RA(), d, s, n);
	return cr_real_memmove ? cr_real_memmove(d, s, n) : cr_copy(d, s, n);
}

CR_EXPORT void *memset(void *d, int c, size_t n)
{
	cr_note_fill(CR_RA(), d, n);
	return cr_real_memset ? cr_real_memset(d, c, n) : cr_fill(d, c, n);
}

/* _FORTIFY_SOURCE: the real ones check n against the object's size and abort */
CR_EXPORT void *__memcpy_chk(void *d, const void *s, size_t n, size_t dlen)
{
	cr_note_copy(CR_RA(), d, s, n);
	if (cr_real_memcpy_chk)
		return cr_real_memcpy_chk(d, s, n, dlen);
	if (n > dlen)
		abort();
	return cr_copy(d, s, n);
}

CR_EXPORT void *__memmove_chk(void *d, const void *s, size_t n, size_t dlen)
{
	cr_note_copy(CR_RA(), d, s, n);
	if (cr_real_memmove_chk)
		return cr_real_memmove_chk(d, s, n, dlen);
	if (n > dlen)
		abort();
	return cr_copy(d, s, n);
}

CR_EXPORT void *__memset_chk(void *d, int c, size_t n, size_t dlen)
{
	cr_note_fill(CR_RA(), d, n);
	if (cr_real_memset_chk)
		return cr_real_memset_chk(d, c, n, dlen);
	if (n > dlen)
		abort();
	return cr_fill(d, c, n);
}

/* emitted by the instrumentation itself: no caller check */
CR_EXPORT void *__tsan_memcpy(void *d, const void *s, size_t n)
{
	cr_range(CR_READ, (uintptr_t)s, n);
	cr_range(CR_WRITE, (uintptr_t)d, n);
	return cr_real_memcpy ? cr_real_memcpy(d, s, n) : cr_copy(d, s, n);
}

CR_EXPORT void *__tsan_memmove(void *d, const void *s, size_t n)
{
	cr_range(CR_READ, (uintptr_t)s, n);
	cr_range(CR_WRITE, (uintptr_t)d, n);
	return cr_real_memmove ? cr_real_memmove(d, s, n) : cr_copy(d, s, n);
}

CR_EXPORT void *__tsan_memset(void *d, int c, size_t n)
{
	cr_range(CR_WRITE, (uintptr_t)d, n);
	return cr_real_memset ? cr_real_memset(d, c, n) : cr_fill(d, c, n);
}

/* --- the allocator -------------------------------------------------------------------------- */

static inline struct rec_thread *cr_alloc_thread(uintptr_t ra)
{
	struct rec_thread *t;

	if (likely(!cr_malloc_rtta))
		return NULL;
	if (cr_malloc_rtta == 2 ? !cr_module_wants_malloc_rtta(ra) : !cr_module_has(ra))
		return NULL;
	t = cr_thread(0);
	return t && !t->busy ? t : NULL;
}

CR_EXPORT void *malloc(size_t n)
{
	void *p = cr_real_malloc ? cr_real_malloc(n) : __libc_malloc(n);

	if (p && cr_alloc_thread(CR_RA()))
		cr_rtta_add((uintptr_t)p, "void*", n, 1);
	return p;
}

CR_EXPORT void *calloc(size_t k, size_t n)
{
	void *p = cr_real_calloc ? cr_real_calloc(k, n) : __libc_calloc(k, n);

	if (p && cr_alloc_thread(CR_RA()))
		cr_rtta_add((uintptr_t)p, "void*", n, k);
	return p;
}

CR_EXPORT void *realloc(void *old, size_t n)
{
	int rec = cr_alloc_thread(CR_RA()) != NULL;
	void *p = cr_real_realloc ? cr_real_realloc(old, n) : __libc_realloc(old, n);

	/* realloc(p, 0) frees p; a failed realloc leaves it alone */
	if (rec && old && (p || n == 0))
		cr_rtta_remove((uintptr_t)old);
	if (rec && p)
		cr_rtta_add((uintptr_t)p, "void*", n, 1);
	return p;
}

CR_EXPORT void free(void *p)
{
	if (p && cr_alloc_thread(CR_RA()))
		cr_rtta_remove((uintptr_t)p);
	if (cr_real_free)
		cr_real_free(p);
	else
		__libc_free(p);
}
