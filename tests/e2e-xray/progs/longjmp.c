/*
 * longjmp.c - non-local exits out of nested traced frames.
 * 1. setjmp/longjmp: 10 rounds of lj_try -> lj_deep1 -> lj_deep2 -> lj_deep3; on even rounds
 *    lj_deep3 longjmps back to lj_try (3 traced frames skipped: their exit sleds never run).
 * 2. sigsetjmp/siglongjmp: 6 rounds of lj_stry -> lj_sdeep1 -> lj_sdeep2 -> raise(SIGUSR1);
 *    the handler siglongjmps out of the signal frame on odd rounds.
 * 3. lj_final x 3: the log must still be balanced (llvm-xray account checks every exit).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include "xe2e.h"

XE2E_SINK_DEFINE;

static jmp_buf lj_env;
static sigjmp_buf lj_senv;
static volatile int lj_sround;

FN void lj_deep3(int i)
{
	xe2e_sink += i;
	if (i % 2 == 0)
		longjmp(lj_env, 1);
}

FN void lj_deep2(int i)
{
	lj_deep3(i);
	xe2e_sink++;
}

FN void lj_deep1(int i)
{
	lj_deep2(i);
	xe2e_sink++;
}

FN void lj_caught(int v)
{
	xe2e_sink += v;
}

FN void lj_normal(int i)
{
	xe2e_sink += i;
}

FN int lj_try(int i)
{
	if (setjmp(lj_env) == 0) {
		lj_deep1(i);
		lj_normal(i);
		return 0;
	}
	lj_caught(i);
	return 1;
}

FN void lj_handler_leaf(int x)
{
	xe2e_sink += x;
}

FN void lj_on_usr1(int sig)
{
	lj_handler_leaf(sig);
	if (lj_sround % 2 == 1)
		siglongjmp(lj_senv, 1);
}

FN void lj_sdeep2(int i)
{
	raise(SIGUSR1);
	xe2e_sink += i;
}

FN void lj_sdeep1(int i)
{
	lj_sdeep2(i);
	xe2e_sink++;
}

FN int lj_stry(int i)
{
	lj_sround = i;
	if (sigsetjmp(lj_senv, 1) == 0) {
		lj_sdeep1(i);
		lj_normal(i);
		return 0;
	}
	lj_caught(i);
	return 1;
}

FN void lj_final(int i)
{
	xe2e_sink += i;
}

int main(void)
{
	struct sigaction sa;
	int jumps = 0, sjumps = 0;

	for (int i = 0; i < 10; i++)
		jumps += lj_try(i);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = lj_on_usr1;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 0; i < 6; i++)
		sjumps += lj_stry(i);
	for (int i = 0; i < 3; i++)
		lj_final(i);
	printf("longjmp: jumps=%d sigjumps=%d\n", jumps, sjumps);
	return 0;
}
