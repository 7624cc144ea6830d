/*
 * cr_signals: a signal storm on cacheray-rt (built with -fsanitize=thread, linked with
 * libcacheray-rt): 4 threads store into a shared array while the main thread sends them 20000
 * SIGUSR1, whose handler stores into it too (instrumented accesses in the handler). A handler
 * that lands inside an access's hook records nothing and is counted lost_nested; nothing may
 * crash, and the trace's records must equal the runtime's count of events.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static volatile int stop;
static long shared[256];
static void on_usr1(int sig) { for (int i = 0; i < 16; i++) shared[(sig + i) & 255] += i; }
static void *w(void *a) { long k = (long)a; while (!stop) { for (int i = 0; i < 64; i++) shared[(k + i) & 255] += i; } return 0; }
int main(void) {
	pthread_t t[4];
	signal(SIGUSR1, on_usr1);
	for (long i = 0; i < 4; i++) pthread_create(&t[i], 0, w, (void *)i);
	for (int i = 0; i < 20000; i++) { pthread_kill(t[i % 4], SIGUSR1); if (i % 64 == 63) sched_yield(); }
	usleep(20000); stop = 1;
	for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
	printf("%ld\n", shared[3]);
	return 0;
}
