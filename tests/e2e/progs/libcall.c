/*
 * libcall: calls through the PLT (malloc, memset, snprintf with a double in a vector register,
 * strlen, free, getpid, printf, atof's double return, a thread), for the libcall/ cases:
 * `uftrace replay` of our recording must equal that of uftrace's own (library calls on).
 * Argument "exit": main ends in exit(3) under two of its own frames (a call that never
 * returns: its frames stay open in both traces). Argument "longjmp": a longjmp two frames
 * deep back to a setjmp (uftrace shows the setjmp returning again), then more calls.
 * Argument "vfork": a vfork child that calls getpid, then execs this program again with
 * "vfork-child" (which only calls lc_after); "vfork-exit": one that calls getpid and
 * _exit(7); "vfork-closefds": one that closes every descriptor above 2 (close_range, as a
 * spawner does to hand the next image only its own) before getpid and the exec;
 * "vfork-parent-closefds": the parent closes them before the vfork (a daemon), "vfork-nofile":
 * the parent fills its descriptor table up to RLIMIT_NOFILE first (the child can have no
 * state of its own then, and must still exec, and the parent still return once). The child's
 * records are its own (uftrace's t011_vforkexec), the parent's vfork returns once in its own
 * stream.
 * Built with -DLC_NEST (the libcall/nest cases), it also calls liblcnest.so's lc_lib_work,
 * whose own library calls only --nest-libcall records.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"

FN int lc_fill(int n)
{
	char *p = malloc((size_t)n);
	int r;

	memset(p, 0, (size_t)n);
	snprintf(p, (size_t)n, "%d %.1f", n, 1.5 * n);
	r = (int)strlen(p);
	free(p);
	return r;
}

FN void lc_quit(int code)
{
	getpid();
	exit(code);
}

FN void lc_deep(int code)
{
	lc_quit(code);
}

#ifdef LC_NEST
int lc_lib_work(int n);
#endif

static jmp_buf lc_env, lc_env2;

FN void lc_jump(int v)
{
	getpid();
	longjmp(lc_env, v);
}

FN void lc_jump_deep(int v)
{
	lc_jump(v);
}

/* "longjmp2": main's two setjmp calls return through one stack slot; each jump must land at
 * its own (uftrace's t145_longjmp3) */
FN void lc_jump2(int which, int v)
{
	longjmp(which == 1 ? lc_env : lc_env2, v);
}

FN int lc_after(int v)
{
	return v + (int)strlen("after");
}

FN void *lc_thread(void *arg)
{
	lc_fill(24);
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t t;
	int s = 0;

	if (argc > 1 && !strcmp(argv[1], "vfork-child"))
		return lc_after(argc) == 0;
	for (int i = 0; i < 2; i++)
		s += lc_fill(16 + i);
	/* the thread runs alone: its lines do not interleave with main's */
	pthread_create(&t, NULL, lc_thread, NULL);
	pthread_join(t, NULL);
#ifdef LC_NEST
	s += lc_lib_work(s);
#endif
	printf("%d %.2f\n", s, atof("2.5"));
	fflush(stdout);
	if (argc > 1 && !strcmp(argv[1], "exit"))
		lc_deep(3);
	if (argc > 1 && !strcmp(argv[1], "longjmp2")) {
		volatile int r = setjmp(lc_env);

		printf("at 1: %d\n", r);
		if (r == 0)
			r = setjmp(lc_env2);
		if (r == 0)
			lc_jump2(1, 1);
		else if (r == 1)
			lc_jump2(2, 2);
		else if (r == 2)
			lc_jump2(1, 3);
		printf("done: %d\n", r);
	}
	if (argc > 1 && !strcmp(argv[1], "longjmp")) {
		if (setjmp(lc_env) == 0)
			lc_jump_deep(7);
		else
			printf("%d\n", lc_after(s));
	}
	if (argc > 1 && !strncmp(argv[1], "vfork", 5)) {
		int status = 0;
		pid_t pid;

		if (!strcmp(argv[1], "vfork-parent-closefds"))
			syscall(SYS_close_range, 3, ~0U, 0);
		if (!strcmp(argv[1], "vfork-nofile")) {
			struct rlimit rl = {64, 64};

			setrlimit(RLIMIT_NOFILE, &rl);
			while (open("/dev/null", O_RDONLY | O_CLOEXEC) >= 0)
				;
		}
		pid = vfork();

		if (pid == 0) {
			if (!strcmp(argv[1], "vfork-closefds"))
				syscall(SYS_close_range, 3, ~0U, 0);
			getpid();
			if (strcmp(argv[1], "vfork-exit"))
				execl(argv[0], argv[0], "vfork-child", (char *)NULL);
			_exit(7);
		}
		waitpid(pid, &status, 0);
		printf("child: %d\n", WEXITSTATUS(status));
	}
	return 0;
}
