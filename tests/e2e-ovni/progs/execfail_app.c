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

static void emit0(const char *mcv)
{
	struct ovni_ev ev = { 0 };
	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_emit(&ev);
}

int main(int argc, char **argv)
{
	struct ovni_ev ev = { 0 };
	int32_t cpu = -1, ctid = -1;
	uint64_t tag = 0;
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
	ovni_ev_set_mcv(&ev, "OHx");
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_payload_add(&ev, (uint8_t *)&cpu, sizeof(cpu));
	ovni_payload_add(&ev, (uint8_t *)&ctid, sizeof(ctid));
	ovni_payload_add(&ev, (uint8_t *)&tag, sizeof(tag));
	ovni_ev_emit(&ev);
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
		emit0((i & 1) ? "OU]" : "OU[");
	emit0("OHp");
	emit0("OHr");
	emit0("OHe");
	ovni_flush();
	ovni_thread_free();
	ovni_proc_fini();
	printf("EMITTED %d %d %d\n", (int)getpid(), (int)gettid(), 1 + 100 + 3);
	return 0;
}
