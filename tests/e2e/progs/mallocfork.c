/*
 * mallocfork.c - the program hooks malloc (as uftrace's s-malloc-hook and s-malloc-fork
 * tests): its malloc, free, calloc and realloc forward to libc's, looked up with
 * dlsym(RTLD_NEXT) from a .preinit_array function, and serve the calls that come before
 * that (dlsym's own) from a static buffer. Then it forks: parent and child both allocate.
 *
 * main: mf_prepare, fork from mf_spawn; child (same depth): mf_child x 1 -> mf_alloc x 8;
 * parent after the wait: mf_alloc x 8 from mf_after, so mf_alloc x 16 in all.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "e2e.h"

E2E_SINK_DEFINE;

#define MF_BOOT (64u << 10)
#define MF_HDR 16

static void *(*mf_real_malloc)(size_t);
static void (*mf_real_free)(void *);
static void *(*mf_real_calloc)(size_t, size_t);
static void *(*mf_real_realloc)(void *, size_t);
static char mf_boot[MF_BOOT] __attribute__((aligned(16)));
static size_t mf_boot_used;

NOTRACE static int mf_is_boot(const void *p)
{
	return (const char *)p >= mf_boot && (const char *)p < mf_boot + MF_BOOT;
}

NOTRACE static void *mf_boot_alloc(size_t n)
{
	size_t sz = ((n + 15) & ~(size_t)15) + MF_HDR;
	size_t off = __atomic_fetch_add(&mf_boot_used, sz, __ATOMIC_RELAXED);

	if (off + sz > MF_BOOT)
		return NULL;
	*(size_t *)(mf_boot + off) = n;
	return mf_boot + off + MF_HDR; /* zero: never reused */
}

FN void *malloc(size_t n)
{
	return mf_real_malloc ? mf_real_malloc(n) : mf_boot_alloc(n);
}

FN void free(void *p)
{
	if (p && !mf_is_boot(p) && mf_real_free)
		mf_real_free(p);
}

FN void *calloc(size_t n, size_t size)
{
	if (mf_real_calloc)
		return mf_real_calloc(n, size);
	if (size && n > (size_t)-1 / size)
		return NULL;
	return mf_boot_alloc(n * size);
}

FN void *realloc(void *p, size_t n)
{
	char *q;
	size_t old;

	if (mf_real_realloc && !mf_is_boot(p))
		return mf_real_realloc(p, n);
	q = malloc(n);
	if (q && p) {
		old = *(size_t *)((char *)p - MF_HDR);
		memcpy(q, p, old < n ? old : n);
	}
	return q;
}

NOTRACE static void mf_hook(void)
{
	mf_real_malloc = dlsym(RTLD_NEXT, "malloc");
	mf_real_free = dlsym(RTLD_NEXT, "free");
	mf_real_calloc = dlsym(RTLD_NEXT, "calloc");
	mf_real_realloc = dlsym(RTLD_NEXT, "realloc");
}

__attribute__((section(".preinit_array"), used)) static void (*mf_preinit[])(void) = { mf_hook };

FN long mf_alloc(int i)
{
	long *v = malloc(sizeof(long) * (size_t)(i + 1));
	long r;

	e2e_sink += (long)v; /* escapes: the call is not optimised away */
	v[i] = i;
	r = v[i];
	free(v);
	return r;
}

FN void mf_prepare(void)
{
	e2e_sink++;
}

FN long mf_child(void)
{
	long s = 0;

	for (int i = 0; i < 8; i++)
		s += mf_alloc(i);
	return s;
}

FN int mf_spawn(void)
{
	pid_t pid;
	int status;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(mf_child() == 28 ? 5 : 1);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

FN long mf_after(void)
{
	long s = 0;

	for (int i = 0; i < 8; i++)
		s += mf_alloc(i);
	return s;
}

int main(void)
{
	int status;

	mf_prepare();
	status = mf_spawn();
	printf("mallocfork: child exited with %d, sum %ld\n", status, mf_after());
	return 0;
}
