/*
 * test_mcount_read: the read= trigger action's reading and records (libmcount/mcount_read.c):
 * /proc/self/statm's text, uftrace 0.13's builtin event ids and payload sizes, and the records
 * a frame's entry and exit write into a thread's chunk, byte for byte as uftrace's
 * record_event lays them out (16-byte record: time, type EVENT with the `more` bit, magic 5,
 * depth 0, the id in the address bits; then a u16 size, the u64 values, padding to 8): the
 * entry's READ values as this process's own, the exit's DIFF as the change since the entry
 * (a MiB touched in between), nothing written for a frame whose exit is not. statm is read by
 * the helper in its own descriptor table (rec_fd_call): the test's session is marked active so
 * that one starts, and ends it after.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "librecord/rec_ring.h"
#include "librecord/rec_session.h"
#include "librecord/rec_thread.h"
#include "libmcount/mcount_filter.h"
#include "libmcount/mcount_read.h"

/* the shadow stack's depth (mcount_hooks.c has it in libmcount): slots to map */
uint32_t mc_max_stack = 8;
/* librecord's session code is linked in (rec_reserve's slow path): a front end it names */
struct rec_frontend rec_frontend_self_storage = { .name = "test_mcount_read" };

static void test_statm_text(void **state)
{
	uint64_t v[3];

	(void)state;
	assert_int_equal(mc_read_parse_statm("5227 1379 1131 3 0 302 0\n", 25, v), 0);
	assert_true(v[0] == 5227 && v[1] == 1379 && v[2] == 1131);
	/* only what was read counts: the text may end after the third number */
	assert_int_equal(mc_read_parse_statm("1 2 3", 5, v), 0);
	assert_true(v[0] == 1 && v[1] == 2 && v[2] == 3);
	assert_int_equal(mc_read_parse_statm("1 2", 3, v), -1);
	assert_int_equal(mc_read_parse_statm("", 0, v), -1);
	assert_int_equal(mc_read_parse_statm("1 x2 3\n", 7, v), -1);
	assert_int_equal(mc_read_parse_statm("1 2 3x 4\n", 9, v), -1);
}

static void test_event_ids(void **state)
{
	uint16_t size = 0;

	(void)state;
	/* uftrace.h: EVENT_ID_BUILTIN 100000, then READ/DIFF in this order */
	assert_int_equal(mc_read_event_id(MC_READ_PROC_STATM, 0, &size), 100001);
	assert_int_equal(size, 24);
	assert_int_equal(mc_read_event_id(MC_READ_PAGE_FAULT, 0, &size), 100002);
	assert_int_equal(size, 16);
	assert_int_equal(mc_read_event_id(MC_READ_PROC_STATM, 1, &size), 100003);
	assert_int_equal(mc_read_event_id(MC_READ_PAGE_FAULT, 1, &size), 100004);
	assert_int_equal(mc_read_event_id(MC_READ_PMU_CYCLE, 0, &size), 100005);
	assert_int_equal(mc_read_event_id(MC_READ_PMU_CYCLE, 1, &size), 100006);
	assert_int_equal(mc_read_event_id(MC_READ_PMU_CACHE, 0, &size), 100007);
	assert_int_equal(mc_read_event_id(MC_READ_PMU_CACHE, 1, &size), 100008);
	assert_int_equal(mc_read_event_id(MC_READ_PMU_BRANCH, 0, &size), 100009);
	assert_int_equal(mc_read_event_id(MC_READ_PMU_BRANCH, 1, &size), 100010);
	assert_int_equal(size, 16);
}

struct ev {
	uint64_t time, id, v[3];
	unsigned size;
};

/* the event record at P: its fields, checked against uftrace's layout; its length */
static size_t decode(const uint8_t *p, struct ev *e)
{
	uint64_t word;
	unsigned padded;

	memcpy(&e->time, p, 8);
	memcpy(&word, p + 8, 8);
	assert_int_equal(word & 3, 3);		 /* UFTRACE_EVENT */
	assert_int_equal((word >> 2) & 1, 1);	 /* more */
	assert_int_equal((word >> 3) & 7, 5);	 /* magic */
	assert_int_equal((word >> 6) & 0x3ff, 0); /* depth */
	e->id = word >> 16;
	e->size = p[16] | (unsigned)p[17] << 8;
	assert_true(e->size == 16 || e->size == 24);
	memset(e->v, 0, sizeof(e->v));
	memcpy(e->v, p + 18, e->size);
	padded = (e->size + 2 + 7) & ~7u;
	for (unsigned i = 2 + e->size; i < padded; i++)
		assert_int_equal(p[16 + i], 0);
	return 16 + padded;
}

static void test_frame_records(void **state)
{
	size_t csize = sizeof(struct rec_chunk) + 4096, off = 0, n;
	struct rec_chunk *c = calloc(1, csize);
	struct rec_thread *t = calloc(1, sizeof(*t));
	uint8_t *data, *mib;
	struct ev e[4];

	(void)state;
	assert_non_null(c);
	assert_non_null(t);
	t->chunk = c;
	t->pos = data = rec_chunk_data(c);
	t->end = data + 4096;
	t->tid = getpid();
	/* an active session of no files: rec_fd_call's helper starts for statm */
	rec_sess.pid = getpid();
	rec_sess.dirfd = rec_sess.ringdirfd = rec_sess.livefd = rec_sess.keep_fd = -1;
	rec_sess.state = REC_SESSION_ACTIVE;

	/* the size in pages as the kernel says it, for the unit (KB) below */
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long long pages = 0;

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%llu", &pages), 1);
	fclose(f);
	mc_read_enter(t, 3, MC_READ_PROC_STATM | MC_READ_PAGE_FAULT);
	assert_int_equal(c->committed, 0); /* read, not written: the entry may be held */
	mc_read_write_entry(t, 3, 1000);
	/* a MiB mapped and touched: the size and the minor faults grow */
	mib = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(mib != MAP_FAILED);
	for (size_t i = 0; i < (1 << 20); i += 4096)
		mib[i] = 1;
	mc_read_exit(t, 3, 2000, 1);
	assert_int_equal(c->committed, 2 * (16 + 32) + 2 * (16 + 24));

	for (int i = 0; i < 4; i++)
		off += decode(data + off, &e[i]);
	assert_int_equal(off, c->committed);
	assert_true(e[0].time == 1000 && e[0].id == 100001 && e[0].size == 24);
	assert_true(e[0].v[0] > 0 && e[0].v[1] > 0 && e[0].v[0] >= e[0].v[1]);
	/* KB, as uftrace keeps them (within a MiB of what the kernel said just before) */
	if (e[0].v[0] + 1024 < pages * (getpagesize() / 1024) ||
	    e[0].v[0] > pages * (getpagesize() / 1024) + 1024)
		fail_msg("vmsize %llu KB, /proc/self/statm said %llu pages",
			 (unsigned long long)e[0].v[0], pages);
	assert_true(e[1].time == 1000 && e[1].id == 100002 && e[1].size == 16);
	assert_true(e[1].v[1] > 0); /* minor faults: this process has had some */
	assert_true(e[2].time == 2000 && e[2].id == 100003);
	assert_true(e[2].v[0] >= 1024 && e[2].v[0] < (1u << 20)); /* +1 MiB (and no wrap) */
	assert_true(e[2].v[1] >= 1024);
	assert_true(e[3].time == 2000 && e[3].id == 100004);
	assert_true(e[3].v[1] >= 256 && e[3].v[1] < 100000); /* a fault per page touched */

	/* a frame whose exit is not written (-t): nothing more in the chunk */
	n = c->committed;
	mc_read_enter(t, 2, MC_READ_PAGE_FAULT);
	mc_read_exit(t, 2, 3000, 0);
	assert_int_equal(c->committed, n);
	/* and a frame at that depth without read= writes nothing at its exit */
	mc_read_exit(t, 2, 4000, 1);
	assert_int_equal(c->committed, n);

	mc_read_thread_exit();
	rec_flusher_end_helpers();
	rec_sess.state = REC_SESSION_FINISHED;
	munmap(mib, 1 << 20);
	free(t);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_statm_text),
		cmocka_unit_test(test_event_ids),
		cmocka_unit_test(test_frame_records),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
