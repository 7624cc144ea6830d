/*
 * namecount: per-name counters in an open-addressing hash table (see namecount.h).
 */
#include "cli/namecount.h"

#include <stdlib.h>
#include <string.h>

static size_t hash(const char *s)
{
	size_t h = 14695981039346656037ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

void nc_init(struct nc_table *t)
{
	memset(t, 0, sizeof(*t));
}

static int grow(struct nc_table *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 256;
	struct nc_entry *n = calloc(ncap, sizeof(*n));

	if (n == NULL)
		return -1;
	for (size_t i = 0; i < t->cap; i++) {
		size_t j;

		if (t->slots[i].name == NULL)
			continue;
		for (j = hash(t->slots[i].name) & (ncap - 1); n[j].name; j = (j + 1) & (ncap - 1))
			;
		n[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = n;
	t->cap = ncap;
	return 0;
}

uint64_t *nc_slot(struct nc_table *t, const char *name)
{
	size_t i;

	if ((t->nr + 1) * 2 > t->cap && grow(t) < 0)
		return NULL;
	for (i = hash(name) & (t->cap - 1); t->slots[i].name; i = (i + 1) & (t->cap - 1))
		if (!strcmp(t->slots[i].name, name))
			return &t->slots[i].count;
	t->slots[i].name = strdup(name);
	if (t->slots[i].name == NULL)
		return NULL;
	t->slots[i].count = 0;
	t->nr++;
	return &t->slots[i].count;
}

int nc_add(struct nc_table *t, const char *name, uint64_t n)
{
	uint64_t *c = nc_slot(t, name);

	if (c == NULL)
		return -1;
	*c += n;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct nc_entry *)a)->name, ((const struct nc_entry *)b)->name);
}

static int by_count(const void *a, const void *b)
{
	const struct nc_entry *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->name, y->name);
}

struct nc_entry *nc_sorted(const struct nc_table *t, int count_order)
{
	struct nc_entry *arr = malloc((t->nr ? t->nr : 1) * sizeof(*arr));
	size_t k = 0;

	if (arr == NULL)
		return NULL;
	for (size_t i = 0; i < t->cap; i++)
		if (t->slots[i].name)
			arr[k++] = t->slots[i];
	qsort(arr, k, sizeof(*arr), count_order ? by_count : by_name);
	return arr;
}

void nc_free(struct nc_table *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->slots[i].name);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}
