/*
 * pthexit.c - pthread_exit called from nested traced frames.
 *
 * 4 threads run pe_thread -> pe_nested1 -> pe_nested2 -> pthread_exit: none of the three
 * frames ever returns.  The threads run one at a time (each is joined before the next starts),
 * so the counts do not depend on scheduling.  Then main calls pe_after x 3.
 */
#include <pthread.h>
#include <stdio.h>
#include "e2e.h"

E2E_SINK_DEFINE;

#define NTHREADS 4

FN void pe_leaf(long x)
{
	e2e_sink += x;
}

FN void pe_nested2(long id)
{
	pe_leaf(id);
	pthread_exit((void *)(id * 10));
}

FN void pe_nested1(long id)
{
	pe_nested2(id);
	e2e_sink++; /* never reached */
}

FN void *pe_thread(void *arg)
{
	pe_nested1((long)arg);
	return NULL; /* never reached */
}

FN void pe_after(int i)
{
	e2e_sink += i;
}

int main(void)
{
	long sum = 0;

	for (long i = 0; i < NTHREADS; i++) {
		pthread_t t;
		void *ret;

		pthread_create(&t, NULL, pe_thread, (void *)(i + 1));
		pthread_join(t, &ret);
		sum += (long)ret;
	}
	for (int i = 0; i < 3; i++)
		pe_after(i);
	printf("pthexit: %d threads, sum=%ld\n", NTHREADS, sum);
	return 0;
}
