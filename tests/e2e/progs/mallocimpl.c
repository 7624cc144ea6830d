/*
 * mallocimpl.c - the program brings its own allocator: malloc, free, calloc and realloc are
 * defined here (a bump allocator over a static arena, never given back), instrumented like
 * the rest of the program (as uftrace's s-malloc test).
 *
 * libc calls this malloc too (stdio's buffers, strdup), and so does any runtime code that
 * calls such libc functions: every hook the runtime reaches that way must record nothing and
 * must not take the runtime's locks again (a session start inside fopen inside the session
 * start waited for itself forever). The allocator's own counts depend on libc and are not
 * checked; the program's functions are.
 *
 * mi_build x 3 -> mi_fill x 8 (each a realloc and a calloc), mi_sum x 3.
 */
#include <stdio.h>
#include <string.h>
#include "e2e.h"

E2E_SINK_DEFINE;

#define MI_ARENA (16u << 20)
#define MI_HDR 16 /* each block starts with its size, for realloc */

static char mi_arena[MI_ARENA] __attribute__((aligned(16)));
static size_t mi_used;

FN void *malloc(size_t n)
{
	size_t sz = ((n + 15) & ~(size_t)15) + MI_HDR;
	size_t off = __atomic_fetch_add(&mi_used, sz, __ATOMIC_RELAXED);

	if (off + sz > MI_ARENA)
		return NULL;
	*(size_t *)(mi_arena + off) = n;
	return mi_arena + off + MI_HDR;
}

FN void free(void *p)
{
	e2e_sink += p != NULL; /* nothing is given back */
}

/* the arena is zero and never reused */
FN void *calloc(size_t n, size_t size)
{
	if (size && n > (size_t)-1 / size)
		return NULL;
	return malloc(n * size);
}

FN void *realloc(void *p, size_t n)
{
	char *q = malloc(n);
	size_t old;

	if (q && p) {
		old = *(size_t *)((char *)p - MI_HDR);
		memcpy(q, p, old < n ? old : n);
	}
	return q;
}

FN int *mi_fill(int *v, int len)
{
	int *w = realloc(v, (size_t)(len + 1) * sizeof(*v));
	int *z = calloc(4, sizeof(int));

	w[len] = len + z[len & 3];
	free(z);
	return w;
}

FN int *mi_build(int n)
{
	int *v = NULL;

	for (int i = 0; i < n; i++)
		v = mi_fill(v, i);
	return v;
}

FN long mi_sum(const int *v, int n)
{
	long s = 0;

	for (int i = 0; i < n; i++)
		s += v[i];
	e2e_sink += s;
	return s;
}

int main(void)
{
	long total = 0;

	for (int r = 0; r < 3; r++) {
		int *v = mi_build(8);
		total += mi_sum(v, 8);
		free(v);
	}
	printf("mallocimpl: %ld\n", total);
	return 0;
}
