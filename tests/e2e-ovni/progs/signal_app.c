/*
 * signal_app: an ovni program that dies by a signal while it is inside the runtime's locks or
 * malloc's: the runtime must finish the trace and let it die, never hang it.
 *
 * usage: signal_app MODE
 *   attrs   the main thread sets 200 attributes, then loops: set an attribute (the runtime's
 *           metadata lock), emit an event. The test sends SIGTERM.
 *   worker  the same loop in a second thread; the main thread waits in pause(). The test
 *           sends SIGTERM (to the process: either thread may take it).
 *   heap    a worker emits in a loop; the main thread overruns a heap block and calls
 *           malloc, which aborts inside malloc with its arena lock held (SIGABRT).
 * Each mode prints "READY <pid> <tid>" once its loop runs, and never exits by itself.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <ovni.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ovni_test.h"

static void thread_start(void)
{
	ovni_thread_init(gettid());
	test_emit_ohx();
}

static void ready(void)
{
	printf("READY %d %d\n", (int)getpid(), (int)gettid());
	fflush(stdout);
}

static void attr_loop(void)
{
	char key[32];

	for (int i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "app.k%d", i);
		ovni_attr_set_double(key, i);
	}
	ready();
	for (long i = 0;; i++) {
		ovni_attr_set_double("app.counter", (double)i);
		test_emit0((i & 1) ? "OU]" : "OU[");
	}
}

static void *worker(void *arg)
{
	thread_start();
	if (arg)
		attr_loop();
	ready();
	for (long i = 0;; i++)
		test_emit0((i & 1) ? "OU]" : "OU[");
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	pthread_t th;

	ovni_version_check();
	ovni_proc_init(1, "signal-loom", getpid());
	thread_start();
	ovni_add_cpu(0, 0);
	if (!strcmp(mode, "attrs")) {
		attr_loop();
	} else if (!strcmp(mode, "worker")) {
		pthread_create(&th, NULL, worker, (void *)1);
		for (;;)
			pause();
	} else if (!strcmp(mode, "heap")) {
		char *a, *b;
		pthread_create(&th, NULL, worker, NULL);
		usleep(200000);
		/* a block too big for any free one (from the top of the heap), then the size
		 * field of the top chunk right after it overwritten: the next malloc from the top
		 * aborts ("corrupted top size") inside malloc */
		a = malloc(100000);
		memset(a + malloc_usable_size(a), 0xff, sizeof(size_t));
		b = malloc(1 << 16);
		printf("malloc did not abort: %p\n", (void *)b);
		return 1;
	}
	fprintf(stderr, "usage: signal_app attrs|worker|heap\n");
	return 2;
}
