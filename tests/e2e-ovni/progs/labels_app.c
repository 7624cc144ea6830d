/*
 * labels_app: a program that changes its metadata at every event: per event, a new label of
 * a mark type (ovni_mark_label) and the mark set to it (ovni_mark_set). The metadata grows by
 * one key per event; the runtime must not rewrite all of it at every event (2000 labels took
 * 6-9 s that way, libovni 0.03 s).
 *
 * usage: labels_app N    prints "EMITTED <pid> <tid> <events>" (OHx, N marks, OHe)
 */
#define _GNU_SOURCE
#include <ovni.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ovni_test.h"

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	char label[32];

	ovni_version_check();
	ovni_proc_init(1, "labels-loom", getpid());
	ovni_thread_init(gettid());
	ovni_add_cpu(0, 0);
	test_emit_ohx();
	ovni_mark_type(1, 0, "tasks");
	for (int i = 1; i <= n; i++) {
		snprintf(label, sizeof(label), "task %d", i);
		ovni_mark_label(1, i, label);
		ovni_mark_set(1, i);
	}
	test_emit0("OHe");
	ovni_flush();
	ovni_thread_free();
	ovni_proc_fini();
	printf("EMITTED %d %d %d\n", (int)getpid(), (int)gettid(), n + 2);
	return 0;
}
