/*
 * signal.c - signal handlers that call traced code.
 * 1. raise(SIGUSR1) from two traced frames, 5 times (the handler runs nested in them);
 * 2. a one-shot 1 ms timer, 3 times, waited for in sigsuspend (never inside a hook);
 * 3. a storm: a 100 us periodic SIGALRM while main makes 50000 traced calls, so the signal
 *    often lands inside the runtime's hooks. A handler that interrupts a hook goes unrecorded
 *    (the busy guard), so sg_storm_tick is not checked; every other count must stay exact.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include "xe2e.h"

XE2E_SINK_DEFINE;

static volatile sig_atomic_t sg_alarm_count;

FN void sg_handler_leaf(int x)
{
	xe2e_sink += x;
}

FN void sg_on_usr1(int sig)
{
	sg_handler_leaf(sig);
	sg_handler_leaf(sig + 1);
}

FN void sg_raise_inner(void)
{
	raise(SIGUSR1);
	xe2e_sink++;
}

FN void sg_raise_outer(void)
{
	sg_raise_inner();
	xe2e_sink++;
}

FN void sg_on_alarm(int sig)
{
	sg_handler_leaf(sig);
	sg_alarm_count++;
}

FN void sg_storm_tick(int sig)
{
	xe2e_sink += sig;
}

FN void sg_on_storm(int sig)
{
	sg_storm_tick(sig);
}

FN long sg_spin(long i)
{
	xe2e_sink += i;
	return i & 1;
}

FN long sg_busy(long n)
{
	long s = 0;

	for (long i = 0; i < n; i++)
		s += sg_spin(i);
	return s;
}

NOTRACE static void sg_install(int sig, void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

NOTRACE static void sg_arm(long first_us, long interval_us)
{
	struct itimerval it;

	memset(&it, 0, sizeof(it));
	it.it_value.tv_usec = first_us;
	it.it_interval.tv_usec = interval_us;
	setitimer(ITIMER_REAL, &it, NULL);
}

FN void sg_wait_timer(void)
{
	sigset_t block, old;
	int before = sg_alarm_count;

	sigemptyset(&block);
	sigaddset(&block, SIGALRM);
	sigprocmask(SIG_BLOCK, &block, &old);
	sg_arm(1000, 0);
	while (sg_alarm_count == before)
		sigsuspend(&old);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

int main(void)
{
	long busy;

	sg_install(SIGUSR1, sg_on_usr1);
	for (int i = 0; i < 5; i++)
		sg_raise_outer();
	sg_install(SIGALRM, sg_on_alarm);
	for (int i = 0; i < 3; i++)
		sg_wait_timer();
	sg_install(SIGALRM, sg_on_storm);
	sg_arm(100, 100);
	busy = sg_busy(50000);
	sg_arm(0, 0);
	printf("signal: busy=%ld\n", busy);
	return 0;
}
