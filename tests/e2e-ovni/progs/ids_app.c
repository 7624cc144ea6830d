/*
 * ids_app: a process and its one thread under ids the caller chooses (libovni takes the pid
 * and tid given to ovni_proc_init/ovni_thread_init as they are), so that a test knows the
 * names of the files the run will write before it starts: thread.TID.obs/.json (v2) or
 * thread.TID/stream.obs/.json (v3) below loom.ids-loom/proc.PID.
 *
 * usage: ids_app PID TID [flush]   emits OHx, N marks, OHe (N = 100), frees the thread,
 *                                  finishes the process; prints "EMITTED <PID> <TID> <events>"
 *   flush   ovni_flush after mark N/2 and after OHe, as ovni's own tests end a thread
 *           (libovni's stream is then OHx, N/2 marks, OF[, OF], N/2 marks, OHe: the pair of
 *           the last flush is never written, ovni_thread_free drops its buffer)
 */
#define _GNU_SOURCE
#include <ovni.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ovni_test.h"

int main(int argc, char **argv)
{
	int pid = argc > 2 ? atoi(argv[1]) : (int)getpid();
	int tid = argc > 2 ? atoi(argv[2]) : (int)gettid();
	int flush = argc > 3 && !strcmp(argv[3], "flush");
	int n = 100;

	ovni_version_check();
	ovni_proc_init(1, "ids-loom", pid);
	ovni_thread_init(tid);
	ovni_add_cpu(0, 0);
	test_emit_ohx();
	ovni_mark_type(1, 0, "steps");
	for (int i = 1; i <= n; i++) {
		ovni_mark_set(1, i);
		if (flush && i == n / 2)
			ovni_flush();
	}
	test_emit0("OHe");
	if (flush)
		ovni_flush();
	ovni_thread_free();
	ovni_proc_fini();
	printf("EMITTED %d %d %d\n", pid, tid, n + 2);
	return 0;
}
