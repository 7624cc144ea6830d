/* automalloc: malloc, calloc, realloc and free called by instrumented code that has no
 * MallocTracker hooks. With CACHERAY_OPTIONS=malloc=1, or when the runtime is LD_PRELOADed
 * (malloc=auto), each call gives the RTTA records MallocTracker would ("void*" as the type);
 * otherwise none. Allocations made by libc for itself (printf's buffer) are never recorded. */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	char *p = malloc(100);
	int *q = calloc(10, sizeof(int));
	int *q0 = q;
	q = realloc(q, 4000);
	free(q);
	free(p);
	free(NULL);
	printf("RTTA add %p 100 1 void*\n", (void *)p);
	printf("RTTA add %p %zu 10 void*\n", (void *)q0, sizeof(int));
	printf("RTTA remove %p\n", (void *)q0);
	printf("RTTA add %p 4000 1 void*\n", (void *)q);
	printf("RTTA remove %p\n", (void *)q);
	printf("RTTA remove %p\n", (void *)p);
	printf("RTTA end\n");
	return 0;
}
