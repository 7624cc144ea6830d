/*
 * tpfork.c - target() 3 times in the parent, then a fork child calls it 2 times more: the
 * child's hits go to its own trace file (tpfork.<pid>.tf), numbered from 1 again.
 */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__clang__)
#define FN __attribute__((noinline, used))
#else
#define FN __attribute__((noinline, noipa, used))
#endif

volatile long tp_sink;

FN long target(int x, long y)
{
	tp_sink += x + y;
	return x + y;
}

int main(void)
{
	pid_t pid;

	for (int i = 0; i < 3; i++)
		target(i, 10);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		for (int i = 0; i < 2; i++)
			target(1000 + i, 20);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	printf("tpfork: done\n");
	return 0;
}
