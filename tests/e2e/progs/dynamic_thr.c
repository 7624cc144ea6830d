/*
 * dynamic_thr.c - libdynamic_thr.so, preloaded beside libmcount.so by DynamicCases'
 * threads-before case: its constructor starts a thread that is still running when
 * libmcount's constructor would patch (which must then patch nothing and say so).
 */
#include <pthread.h>
#include <unistd.h>

static volatile int dt_stop;

static void *dt_run(void *arg)
{
	(void)arg;
	while (!dt_stop)
		usleep(1000);
	return NULL;
}

__attribute__((constructor)) static void dt_start(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, dt_run, NULL) == 0)
		pthread_detach(t);
}

__attribute__((destructor)) static void dt_end(void)
{
	dt_stop = 1;
}
