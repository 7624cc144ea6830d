/* rtta: type annotations, from the calls Cacheray's MallocTracker pass inserts after each
 * malloc/calloc/realloc/free (made by hand here: the pass is not available in CI) and from the
 * public API of cacheray_rtta.h. The RTTA records of the trace must be exactly these, in order.
 * A program that calls the hooks itself gets no automatic malloc records, even preloaded. */
#include <stdio.h>
#include <stdlib.h>

#include "cacheray_rtta.h"

void __malloc_recorded(long byte_size, char *type_name, void *addr);
void __calloc_recorded(long nmemb, long size, char *name, void *addr);
void __realloc_recorded(void *old_addr, long size, char *name, void *addr);
void __free_recorded(void *addr);

struct point {
	int x, y;
	long tag;
};

static struct point pts[5];

int main(void)
{
	struct point *p = malloc(4 * sizeof(*p));
	__malloc_recorded(4 * sizeof(*p), "struct.point", p);
	long *arr = calloc(8, sizeof(long));
	__calloc_recorded(8, sizeof(long), "i64*", arr);
	long *old = arr;
	arr = realloc(arr, 16 * sizeof(long));
	__realloc_recorded(old, 16 * sizeof(long), "i64*", arr);
	CACHERAY_RTTA_TYPE(pts, struct point, 5);
	CACHERAY_RTTA_ADD(&pts[1].tag, "a name with spaces \"and quotes\"", 8, 1);
	CACHERAY_RTTA_REMOVE(&pts[1].tag);
	CACHERAY_RTTA_REMOVE(pts);
	free(arr);
	__free_recorded(arr);
	free(p);
	__free_recorded(p);
	__free_recorded(NULL); /* no record */

	printf("RTTA add %p 64 1 struct.point\n", (void *)p);
	printf("RTTA add %p 8 8 i64*\n", (void *)old);
	printf("RTTA remove %p\n", (void *)old);
	printf("RTTA add %p 128 1 i64*\n", (void *)arr);
	printf("RTTA add %p %zu 5 struct point\n", (void *)pts, sizeof(struct point));
	printf("RTTA add %p 8 1 a name with spaces \"and quotes\"\n", (void *)&pts[1].tag);
	printf("RTTA remove %p\n", (void *)&pts[1].tag);
	printf("RTTA remove %p\n", (void *)pts);
	printf("RTTA remove %p\n", (void *)arr);
	printf("RTTA remove %p\n", (void *)p);
	printf("RTTA end\n");
	return 0;
}
