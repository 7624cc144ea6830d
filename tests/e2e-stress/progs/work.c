/*
 * work: the instrumented functions of the stress programs (built with the front end's flags;
 * stress.c, the driver, is not instrumented). Each function counts its own calls, so the
 * driver can print exactly how many calls the trace must account for.
 */
#include <setjmp.h>
#include <stdint.h>

uint64_t n_work, n_leaf, n_handler, n_recurse, n_jump;

__attribute__((noinline)) int leaf(int x)
{
	__atomic_fetch_add(&n_leaf, 1, __ATOMIC_RELAXED);
	return x * 3 + 1;
}

__attribute__((noinline)) int work(int x)
{
	__atomic_fetch_add(&n_work, 1, __ATOMIC_RELAXED);
	return leaf(x) + 1;
}

/* runs in a signal handler */
__attribute__((noinline)) int handler_work(int sig)
{
	__atomic_fetch_add(&n_handler, 1, __ATOMIC_RELAXED);
	return leaf(sig);
}

__attribute__((noinline)) int recurse(int depth)
{
	__atomic_fetch_add(&n_recurse, 1, __ATOMIC_RELAXED);
	if (depth <= 1)
		return 1;
	return recurse(depth - 1) + 1;
}

/* three instrumented frames, the innermost longjmps to the caller's setjmp */
__attribute__((noinline)) void jump_c(jmp_buf *env, int i)
{
	__atomic_fetch_add(&n_jump, 1, __ATOMIC_RELAXED);
	longjmp(*env, i + 1);
}

__attribute__((noinline)) void jump_b(jmp_buf *env, int i)
{
	__atomic_fetch_add(&n_jump, 1, __ATOMIC_RELAXED);
	jump_c(env, i);
}

__attribute__((noinline)) void jump_a(jmp_buf *env, int i)
{
	__atomic_fetch_add(&n_jump, 1, __ATOMIC_RELAXED);
	jump_b(env, i);
}
