/* Copied unchanged from shared/samples/ovni/sample_app.c (the reference traces there were
 * recorded from it with the real libovni 1.14 and 1.10). */
/* Tiny libovni-instrumented app used as a reference for ovni traces.
 * Two threads (main + 1 worker), 3 loom CPUs, mark events, one
 * affinity change, pause/resume, explicit flush.  Written from the
 * public ovni documentation (runtime/index.md, mark.md).
 *
 * Build:  cc -O2 -pthread sample_app.c -I$OVNI/include -L$OVNI/lib \
 *             -Wl,-rpath,$OVNI/lib -lovni -o sample_app
 * Run:    OVNI_TRACEDIR=/some/dir/ovni ./sample_app
 * Check:  ovniemu /some/dir/ovni   (must print "emulation finished ok")
 */
#define _GNU_SOURCE
#include <ovni.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void emit0(const char *mcv)
{
	struct ovni_ev ev = {0};
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_emit(&ev);
}

/* OHx(i32 cpu, i32 creator_tid, u64 tag) */
static void thread_execute(int32_t cpu, int32_t ctid, uint64_t tag)
{
	struct ovni_ev ev = {0};
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_set_mcv(&ev, "OHx");
	ovni_payload_add(&ev, (uint8_t *) &cpu, sizeof(cpu));
	ovni_payload_add(&ev, (uint8_t *) &ctid, sizeof(ctid));
	ovni_payload_add(&ev, (uint8_t *) &tag, sizeof(tag));
	ovni_ev_emit(&ev);
}

/* OHC(i32 cpu, u64 tag): this thread creates another one */
static void thread_create(int32_t cpu, uint64_t tag)
{
	struct ovni_ev ev = {0};
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_set_mcv(&ev, "OHC");
	ovni_payload_add(&ev, (uint8_t *) &cpu, sizeof(cpu));
	ovni_payload_add(&ev, (uint8_t *) &tag, sizeof(tag));
	ovni_ev_emit(&ev);
}

/* OAs(i32 cpu): switch own affinity */
static void affinity_set(int32_t cpu)
{
	struct ovni_ev ev = {0};
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_set_mcv(&ev, "OAs");
	ovni_payload_add(&ev, (uint8_t *) &cpu, sizeof(cpu));
	ovni_ev_emit(&ev);
}

static void thread_end(void)
{
	emit0("OHe");
	ovni_flush();
	ovni_thread_free();
}

static void work(int n)
{
	for (int i = 1; i <= n; i++) {
		ovni_mark_push(0, i);
		usleep(100);
		ovni_mark_pop(0, i);
	}
}

struct warg { int32_t parent_tid; uint64_t tag; };

static void *worker(void *p)
{
	struct warg *a = p;
	ovni_thread_init(gettid());
	thread_execute(1, a->parent_tid, a->tag);
	ovni_mark_set(1, 2);
	work(3);
	emit0("OHp");          /* pause */
	usleep(100);
	emit0("OHr");          /* resume */
	thread_end();
	return NULL;
}

int main(void)
{
	char host[OVNI_MAX_HOSTNAME];
	char loom[OVNI_MAX_HOSTNAME + 16];
	if (gethostname(host, sizeof(host)) != 0)
		strcpy(host, "localhost");
	host[64] = '\0';
	/* loom = hostname + '.' + suffix (required form) */
	snprintf(loom, sizeof(loom), "%s.sample", host);

	ovni_version_check();
	ovni_proc_init(1, loom, getpid());
	ovni_thread_init(gettid());

	/* Loom CPUs: logical index 0..N-1 -> OS cpu id */
	ovni_add_cpu(0, 0);
	ovni_add_cpu(1, 1);
	ovni_add_cpu(2, 2);

	/* Mark types/labels live in the thread metadata */
	ovni_mark_type(0, OVNI_MARK_STACK, "Iteration");
	ovni_mark_type(1, 0, "Phase");
	ovni_mark_label(1, 1, "main-phase");
	ovni_mark_label(1, 2, "worker-phase");
	ovni_attr_set_str("sample.note", "hello from sample_app");

	thread_execute(0, -1, 0);
	ovni_mark_set(1, 1);

	struct warg a = { (int32_t) gettid(), 0x1234 };
	thread_create(1, a.tag);
	pthread_t th;
	pthread_create(&th, NULL, worker, &a);
	work(3);
	affinity_set(2);
	affinity_set(0);
	pthread_join(th, NULL);

	thread_end();
	ovni_proc_fini();
	return 0;
}
