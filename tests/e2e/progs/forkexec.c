/*
 * forkexec.c - fork, then the child execs this same program with the argument "child".
 *
 * Parent: fx_prepare, fork from fx_spawn, wait, fx_after_wait.  Child before exec:
 * fx_child_setup, then an exec of a file that does not exist (it fails, ENOENT) and
 * fx_exec_failed: recorded in the forked task, same session (a failed exec must not end the
 * trace).  Exec'ed image (new session,
 * same pid): main again, fx_exec_work x 5 -> fx_exec_leaf x 10.  main is counted twice.
 * With the argument "env" the successful exec is an execle with an environment of its own
 * (one variable, none of the recorder's): the same calls must be recorded, in the same format.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "e2e.h"

E2E_SINK_DEFINE;

FN void fx_prepare(void)
{
	e2e_sink++;
}

FN void fx_exec_leaf(int i)
{
	e2e_sink += i;
}

FN void fx_exec_work(int i)
{
	fx_exec_leaf(i);
	fx_exec_leaf(i + 1);
}

FN void fx_child_setup(void)
{
	e2e_sink++;
}

FN void fx_exec_failed(int err)
{
	e2e_sink += err;
}

static int custom_env; /* "env": the exec'ed image gets an environment of its own */

FN int fx_spawn(void)
{
	pid_t pid;
	int status;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		fx_child_setup();
		execl("/nonexistent/forkexec", "forkexec", "child", (char *)NULL);
		fx_exec_failed(errno);
		if (custom_env) {
			/* an environment of its own, none of the recorder's variables in it: the
			 * runtime hands on what the next image needs to record as this one does */
			char *env[] = { "E2E_FORKEXEC=custom", NULL };
			execle("/proc/self/exe", "forkexec", "child", (char *)NULL, env);
		} else {
			execl("/proc/self/exe", "forkexec", "child", (char *)NULL);
		}
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

FN void fx_after_wait(int status)
{
	e2e_sink += status;
}

int main(int argc, char **argv)
{
	int status;

	if (argc > 1 && strcmp(argv[1], "child") == 0) {
		for (int i = 0; i < 5; i++)
			fx_exec_work(i);
		return 7;
	}
	custom_env = argc > 1 && strcmp(argv[1], "env") == 0;
	fx_prepare();
	status = fx_spawn();
	fx_after_wait(status);
	printf("forkexec: child exited with %d\n", status);
	return 0;
}
