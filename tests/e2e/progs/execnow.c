/*
 * execnow.c - fork children that exec before they call any traced function.
 *
 * Parent: en_prepare, then two children from en_spawn, each waited for, en_after_wait after
 * each. Child 1 execs /bin/true at once (an image with nothing to trace): the forked task has
 * no record at all, and must leave no <pid>.dat that info does not list (uftrace writes none;
 * `flightrec verify` and `stats` read the directory as uftrace does). Child 2 execs this
 * program with the argument "child" at once: main and en_child_work x 3 in the exec'ed image
 * (a new session, same pid), nothing in the forked task before it.
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "e2e.h"

E2E_SINK_DEFINE;

FN void en_prepare(void)
{
	e2e_sink++;
}

FN void en_child_work(int i)
{
	e2e_sink += i;
}

FN void en_after_wait(int status)
{
	e2e_sink += status;
}

FN int en_spawn(const char *path, const char *arg)
{
	pid_t pid;
	int status;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		execl(path, path, arg, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

int main(int argc, char **argv)
{
	int a, b;

	if (argc > 1 && strcmp(argv[1], "child") == 0) {
		for (int i = 0; i < 3; i++)
			en_child_work(i);
		return 5;
	}
	en_prepare();
	a = en_spawn("/bin/true", NULL);
	en_after_wait(a);
	b = en_spawn("/proc/self/exe", "child");
	en_after_wait(b);
	printf("execnow: %d %d\n", a, b);
	return 0;
}
