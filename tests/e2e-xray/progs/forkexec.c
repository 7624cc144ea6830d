/*
 * forkexec.c - fork children: one calls traced code and leaves with _exit from inside a traced
 * frame, one execs this program again (a new image: a new log), one returns from main. Every
 * process that records writes its own log; a call entered before a fork is counted once, in
 * the process that entered it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "xe2e.h"

XE2E_SINK_DEFINE;

FN long fx_work(long x)
{
	xe2e_sink += x;
	return x + 1;
}

FN void fx_child_exit(void)
{
	for (int i = 0; i < 5; i++)
		fx_work(i);
	fflush(stdout);
	_exit(0); /* from a traced frame */
}

FN long fx_exec_leaf(long x)
{
	xe2e_sink += x;
	return x;
}

FN void fx_exec_work(void)
{
	for (int i = 0; i < 4; i++)
		fx_exec_leaf(i);
}

FN pid_t fx_spawn(int kind, const char *self)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	if (kind == 0)
		fx_child_exit();
	if (kind == 1) {
		execl(self, self, "exec", (char *)NULL);
		_exit(127);
	}
	return 0; /* kind 2: the child goes on in main */
}

FN void fx_after_wait(int status)
{
	xe2e_sink += status;
}

int main(int argc, char **argv)
{
	int status;

	if (argc > 1 && strcmp(argv[1], "exec") == 0) {
		fx_exec_work();
		return 0;
	}
	for (int kind = 0; kind < 3; kind++) {
		pid_t pid = fx_spawn(kind, argv[0]);
		if (pid == 0) { /* kind 2 */
			fx_work(100);
			return 0;
		}
		waitpid(pid, &status, 0);
		fx_after_wait(status);
	}
	printf("forkexec: done\n");
	return 0;
}
