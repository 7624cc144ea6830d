/* forkexec: a parent, a forked child that then replaces itself with exec, and the image it
 * executes, all writing one trace. Each process writes a known number of 4-byte elements of an
 * array mapped at a fixed address (so that the exec'ed image's addresses match): the trace must
 * hold exactly those records under each real thread id, the child's before and after its exec
 * under the same id (the exec'ed image appends, it does not start a new trace). With "self" the
 * process execs itself without a fork first. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define AREA	((int *)0x5a0000000000ul)
#define NPARENT 3000
#define NCHILD	2000
#define NEXEC	1000

static int *area(void)
{
	void *p = mmap(AREA, 1 << 20, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != AREA) {
		perror("mmap");
		exit(2);
	}
	return p;
}

__attribute__((noinline)) void touch(int *a, int n)
{
	for (int i = 0; i < n; i++)
		a[i] = i;
}

static void expect(int n)
{
	printf("EXPECT tid=%d tag=0x01 size=4 lo=%p hi=%p count=%d\n", (int)syscall(SYS_gettid),
	       (void *)AREA, (void *)(AREA + (1 << 18)), n);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	int *a = area();

	if (argc > 1 && !strcmp(argv[1], "exec")) {
		touch(a, NEXEC);
		expect(NCHILD + NEXEC);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "self")) {
		touch(a, NCHILD);
		execl("/proc/self/exe", argv[0], "exec", (char *)NULL);
		return 3;
	}
	touch(a, NPARENT);
	pid_t pid = fork();
	if (pid == 0) {
		touch(a, NCHILD);
		execl("/proc/self/exe", argv[0], "exec", (char *)NULL);
		_exit(3);
	}
	int st;
	waitpid(pid, &st, 0);
	expect(NPARENT);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
