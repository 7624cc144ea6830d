/*
 * spawn.c - posix_spawn and posix_spawnp of this same program (as uftrace's t191
 * posix_spawn), each child given an environment of its own that holds only "FOO=1": no
 * LD_PRELOAD, no FLIGHTREC_DIR. glibc's posix_spawn execs in the child by itself (no exec*
 * call the runtime could see), so the runtime must give the environment what the child needs
 * to record, as its exec wrappers do; the child must still see FOO=1.
 *
 * Parent: sp_spawn x 2 (one posix_spawn, one posix_spawnp), each waiting for its child.
 * Child (a new image, main at depth 0): sp_child -> sp_leaf x 4, exit 7 if FOO=1 is there.
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "e2e.h"

E2E_SINK_DEFINE;

FN void sp_leaf(int i)
{
	e2e_sink += i;
}

FN int sp_child(void)
{
	const char *foo = getenv("FOO");

	for (int i = 0; i < 4; i++)
		sp_leaf(i);
	return foo && strcmp(foo, "1") == 0 ? 7 : 1;
}

FN int sp_spawn(int use_path)
{
	char *argv[] = { "spawn", "child", NULL };
	char *envp[] = { "FOO=1", NULL };
	pid_t pid;
	int status, err;

	fflush(stdout);
	if (use_path)
		err = posix_spawnp(&pid, "/proc/self/exe", NULL, NULL, argv, envp);
	else
		err = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, envp);
	if (err)
		return -err;
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

int main(int argc, char **argv)
{
	int a, b;

	if (argc > 1 && strcmp(argv[1], "child") == 0)
		return sp_child();
	a = sp_spawn(0);
	b = sp_spawn(1);
	printf("spawn: children exited with %d and %d\n", a, b);
	return 0;
}
