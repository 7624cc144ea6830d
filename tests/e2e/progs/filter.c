/*
 * filter.c - the record-time filters (-D, -F, -N, --match, -t): calls at several depths under
 * names the patterns of tests/e2e/run's FilterCases pick apart, a recursion for the depth
 * limits, and for the time filter functions that take milliseconds (ft_spin waits on the
 * clock) next to ones that take well under a microsecond. With the argument "pthexit" the main
 * thread ends in pthread_exit under ft_end instead: the frames it ends in never return. With
 * "signal" it raises SIGUSR1 and SIGUSR2 between its calls: --signal's cases install the
 * handlers (the program has none of its own); a signal with no handler is ignored instead,
 * so that the unfiltered recordings run to the end too. With "sigstate" it only says whether
 * SIGUSR1 has a handler.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "e2e.h"

E2E_SINK_DEFINE;

FN void ft_leaf(int x)
{
	e2e_sink += x;
}

FN void ft_mid(int x)
{
	ft_leaf(x);
	ft_leaf(x + 1);
}

FN void ft_top(int x)
{
	ft_mid(x);
	ft_leaf(x);
}

FN void ft_skip_me(void)
{
	ft_leaf(1);
	ft_mid(2);
}

FN void ft_rec(int n)
{
	e2e_sink++;
	if (n > 0)
		ft_rec(n - 1);
}

NOTRACE static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* waits ms milliseconds without a call of ours in between */
FN void ft_spin(int ms)
{
	long long end = now_ns() + ms * 1000000ll;

	while (now_ns() < end)
		e2e_sink++;
}

FN void ft_slow(void)
{
	ft_leaf(1);
	ft_spin(3);
	ft_leaf(2);
}

FN void ft_fast(void)
{
	ft_leaf(3);
}

FN void ft_end(void)
{
	ft_leaf(4);
	pthread_exit(NULL);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "pthexit")) {
		ft_mid(1);
		ft_end();
	}
	if (argc > 1 && !strcmp(argv[1], "sigstate")) {
		/* whether something installed a SIGUSR1 handler into this program */
		struct sigaction old;

		sigaction(SIGUSR1, NULL, &old);
		printf("sigusr1: %s\n", old.sa_handler == SIG_DFL ? "default" : "handled");
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "signal")) {
		struct sigaction old;

		for (int sig = SIGUSR1; sig <= SIGUSR2; sig += SIGUSR2 - SIGUSR1)
			if (sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_DFL)
				signal(sig, SIG_IGN);
		ft_top(1);
		raise(SIGUSR1);
		ft_skip_me();
		ft_rec(2);
		raise(SIGUSR2);
		ft_mid(3);
	}
	ft_top(1);
	ft_skip_me();
	ft_rec(4);
	ft_slow();
	ft_fast();
	ft_top(2);
	printf("filter: %ld\n", (long)e2e_sink > 0 ? 1L : 0L);
	return 0;
}
