/*
 * exitdeep.c - exit() from 5 traced frames deep (none of them returns) and pthread_exit()
 * from 3 frames deep in 4 threads. An atexit handler calls traced code during exit().
 * Frames still open when a thread or the process ends get their exits then, so each of these
 * calls is counted by llvm-xray account.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "xe2e.h"

XE2E_SINK_DEFINE;

FN void ed_cleanup(void)
{
	xe2e_sink++;
}

FN void ed_at_exit(void)
{
	ed_cleanup();
}

FN void ed_pthread_leaf(long id)
{
	xe2e_sink += id;
	pthread_exit(NULL);
}

FN void ed_pthread_mid(long id)
{
	ed_pthread_leaf(id);
	xe2e_sink++;
}

FN void *ed_thread(void *arg)
{
	ed_pthread_mid((long)arg);
	return NULL;
}

FN void ed_level5(int n)
{
	printf("exitdeep: exiting from depth %d\n", n);
	exit(0);
}

FN void ed_level4(int n)
{
	ed_level5(n + 1);
	xe2e_sink++;
}

FN void ed_level3(int n)
{
	ed_level4(n + 1);
	xe2e_sink++;
}

FN void ed_level2(int n)
{
	ed_level3(n + 1);
	xe2e_sink++;
}

FN void ed_level1(int n)
{
	ed_level2(n + 1);
	xe2e_sink++;
}

int main(void)
{
	pthread_t t[4];

	atexit(ed_at_exit);
	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, ed_thread, (void *)i);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	ed_level1(1);
	return 1; /* never reached */
}
