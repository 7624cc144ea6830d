/*
 * coro.c - coroutines: traced frames suspended on other stacks (swapcontext).
 *
 * Coroutine A (its stack from malloc) runs co_body -> co_step x 5; each step yields back to
 * main through co_yield, which tail-calls swapcontext where the compiler allows it (gcc -O2,
 * and clang by musttail), so the return address swapcontext saves in the context is the
 * hijacked one. main resumes it from drive() 6 times; the last resume ends co_body, and
 * uc_link brings main back. Coroutine B (its stack from mmap) runs one step and is then
 * destroyed while suspended: its stack is unmapped. A -pg runtime sees returns that are not
 * the newest frame's, and frames left on stacks that are switched away or gone: the program
 * must run as it does untraced (before, a resumed step returned into the wrong function).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include "e2e.h"

E2E_SINK_DEFINE;

#define STACK_SIZE (1 << 16)

static ucontext_t main_ctx, a_ctx, b_ctx;
static ucontext_t *current;
static int steps;

#if defined(__clang__)
#define TAIL __attribute__((musttail))
#define FN_TAIL FN
#else
#define TAIL
#define FN_TAIL FN __attribute__((optimize("optimize-sibling-calls")))
#endif

FN_TAIL int co_yield(ucontext_t *from, ucontext_t *to)
{
	e2e_sink++;
	TAIL return swapcontext(from, to);
}

FN void co_step(int i)
{
	e2e_sink += i;
	steps++;
	co_yield(current, &main_ctx);
}

FN void co_body(void)
{
	for (int i = 0; i < 5; i++)
		co_step(i);
}

FN void drive(ucontext_t *co)
{
	current = co;
	swapcontext(&main_ctx, co);
}

FN void after(int n)
{
	e2e_sink += n;
}

int main(void)
{
	char *a_stack = malloc(STACK_SIZE);
	char *b_stack = mmap(NULL, STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			     -1, 0);

	if (!a_stack || b_stack == MAP_FAILED)
		return 1;
	getcontext(&a_ctx);
	a_ctx.uc_stack.ss_sp = a_stack;
	a_ctx.uc_stack.ss_size = STACK_SIZE;
	a_ctx.uc_link = &main_ctx;
	makecontext(&a_ctx, co_body, 0);
	getcontext(&b_ctx);
	b_ctx.uc_stack.ss_sp = b_stack;
	b_ctx.uc_stack.ss_size = STACK_SIZE;
	b_ctx.uc_link = &main_ctx;
	makecontext(&b_ctx, co_body, 0);

	for (int i = 0; i < 6; i++)
		drive(&a_ctx);
	printf("coroutine A: %d steps\n", steps);
	drive(&b_ctx); /* one step, then B is dropped while suspended */
	munmap(b_stack, STACK_SIZE);
	for (int i = 0; i < 3; i++)
		after(i);
	printf("coroutine B dropped after %d steps in all\n", steps);
	free(a_stack);
	return 0;
}
