/*
 * malloctsd.c - the program's own malloc keeps per-thread state in pthread thread-specific
 * data (as uftrace's s-malloc-tsd test): each thread carves its blocks from a slab of its own,
 * found with pthread_getspecific, whose key is made at the first malloc; a key destructor
 * frees a thread's TSD block at its exit. The runtime's own libc calls (the session start's,
 * the flusher's creation) reach this malloc in whatever thread runs them.
 *
 * main: mt_spawn x 4 (pthread_create), mt_join x 4. Each worker (depth 0): mt_work ->
 * mt_alloc x 16; its TSD destructor mt_dtor runs at its exit, once.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "e2e.h"

E2E_SINK_DEFINE;

#define MT_ARENA (32u << 20)
#define MT_SLAB (256u << 10)
#define MT_HDR 16

struct mt_slab {
	size_t used;
	char *base;
};

static char mt_arena[MT_ARENA] __attribute__((aligned(16)));
static size_t mt_arena_used;
static pthread_key_t mt_key;
static pthread_once_t mt_once = PTHREAD_ONCE_INIT;
static pthread_key_t mt_data_key;

NOTRACE static void mt_make_key(void)
{
	pthread_key_create(&mt_key, NULL);
}

/* a bump from the shared arena: slabs, and blocks too big for a slab */
NOTRACE static void *mt_carve(size_t sz)
{
	size_t off = __atomic_fetch_add(&mt_arena_used, sz, __ATOMIC_RELAXED);

	return off + sz > MT_ARENA ? NULL : mt_arena + off;
}

FN void *malloc(size_t n)
{
	size_t sz = ((n + 15) & ~(size_t)15) + MT_HDR;
	struct mt_slab *s;
	char *p;

	pthread_once(&mt_once, mt_make_key);
	s = pthread_getspecific(mt_key);
	if (!s) {
		s = mt_carve(MT_SLAB);
		if (!s)
			return NULL;
		s->used = (sizeof(*s) + 15) & ~(size_t)15;
		s->base = (char *)s;
		pthread_setspecific(mt_key, s);
	}
	if (sz > MT_SLAB / 4)
		p = mt_carve(sz);
	else {
		if (s->used + sz > MT_SLAB) {
			s = mt_carve(MT_SLAB);
			if (!s)
				return NULL;
			s->used = (sizeof(*s) + 15) & ~(size_t)15;
			s->base = (char *)s;
			pthread_setspecific(mt_key, s);
		}
		p = s->base + s->used;
		s->used += sz;
	}
	if (!p)
		return NULL;
	*(size_t *)p = n;
	return p + MT_HDR;
}

FN void free(void *p)
{
	e2e_sink += p != NULL; /* nothing is given back */
}

FN void *calloc(size_t n, size_t size)
{
	if (size && n > (size_t)-1 / size)
		return NULL;
	return malloc(n * size); /* never-reused memory is zero */
}

FN void *realloc(void *p, size_t n)
{
	char *q = malloc(n);
	size_t old;

	if (q && p) {
		old = *(size_t *)((char *)p - MT_HDR);
		memcpy(q, p, old < n ? old : n);
	}
	return q;
}

FN void mt_dtor(void *data)
{
	free(data);
}

FN long mt_alloc(int i)
{
	long *v = malloc(sizeof(long) * (size_t)(i + 1));

	e2e_sink += (long)v; /* escapes: the call is not optimised away */
	v[i] = i;
	return v[i];
}

FN void mt_work(long *out)
{
	long s = 0;

	for (int i = 0; i < 16; i++)
		s += mt_alloc(i);
	*out = s;
}

FN void *mt_worker(void *arg)
{
	pthread_setspecific(mt_data_key, malloc(8));
	mt_work(arg);
	return NULL;
}

FN int mt_spawn(pthread_t *t, long *out)
{
	return pthread_create(t, NULL, mt_worker, out);
}

FN void mt_join(pthread_t t)
{
	pthread_join(t, NULL);
}

int main(void)
{
	pthread_t t[4];
	long out[4], total = 0;

	pthread_key_create(&mt_data_key, mt_dtor);
	for (int i = 0; i < 4; i++)
		mt_spawn(&t[i], &out[i]);
	for (int i = 0; i < 4; i++)
		mt_join(t[i]);
	for (int i = 0; i < 4; i++)
		total += out[i];
	printf("malloctsd: %ld\n", total);
	return 0;
}
