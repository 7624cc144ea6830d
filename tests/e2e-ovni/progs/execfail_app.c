/*
 * execfail_app: an exec that fails after the runtime's first check (the file is executable
 * but no program: ENOEXEC), then the program goes on: everything it emits afterwards must be
 * in the trace, as with libovni (which knows nothing of exec).
 *
 * usage: execfail_app FILE    FILE is created (a text file, mode 0755) and given to execv;
 * prints "EMITTED <pid> <tid> <events>" at the end (OHx, 100 events, OHp, OHr, OHe).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ovni.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ovni_test.h"

int main(int argc, char **argv)
{
	char *args[] = { "not-a-program", NULL };
	int fd;

	if (argc < 2)
		return 2;
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (fd < 0 || write(fd, "not a program\n", 14) != 14 || close(fd) < 0)
		return 2;
	ovni_version_check();
	ovni_proc_init(1, "execfail-loom", getpid());
	ovni_thread_init(gettid());
	ovni_add_cpu(0, 0);
	test_emit_ohx();
	execv(argv[1], args);
	if (errno != ENOEXEC) {
		fprintf(stderr, "execv: %s, expected ENOEXEC\n", strerror(errno));
		return 1;
	}
	if (!ovni_thread_isready()) {
		fprintf(stderr, "the thread is no longer ready after a failed exec\n");
		return 1;
	}
	for (int i = 0; i < 100; i++)
		test_emit0((i & 1) ? "OU]" : "OU[");
	test_emit0("OHp");
	test_emit0("OHr");
	test_emit0("OHe");
	ovni_flush();
	ovni_thread_free();
	ovni_proc_fini();
	printf("EMITTED %d %d %d\n", (int)getpid(), (int)gettid(), 1 + 100 + 3);
	return 0;
}
