/*
 * timebase.c - the time base of a thread's stream: the thread is moved between CPUs six times
 * (each move must give a NewCPUId record before its next event), then sleeps 1.1 s, longer
 * than a 31-bit TSC delta covers at any current TSC rate (the next event must come after a
 * TSCWrap record). Durations stay right in llvm-xray because of both.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <time.h>
#include "xe2e.h"

XE2E_SINK_DEFINE;

FN void tb_tick(int i)
{
	xe2e_sink += i;
}

FN void tb_after_sleep(void)
{
	xe2e_sink++;
}

NOTRACE static void tb_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

NOTRACE static void tb_sleep(void)
{
	struct timespec ts = { 1, 100000000 };

	while (nanosleep(&ts, &ts) != 0)
		;
}

int main(void)
{
	cpu_set_t allowed;
	int cpus[2], n = 0;

	sched_getaffinity(0, sizeof(allowed), &allowed);
	for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[n++] = c;
	for (int i = 0; i < 6; i++) {
		tb_pin(cpus[i % n]);
		tb_tick(i);
	}
	tb_sleep();
	tb_after_sleep();
	printf("timebase: done\n");
	return 0;
}
