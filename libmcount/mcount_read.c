/*
 * mcount_read: the read= trigger action's reading and its event records (mcount_read.h has
 * the behaviour, uftrace 0.13's libmcount/record.c save_trigger_read and record_ret_stack).
 *
 * Built with -mgeneral-regs-only -fno-tree-loop-distribute-patterns, as the hook files: the
 * entry hook runs before the instrumented function reads its float arguments, so nothing
 * here may touch a vector register (no memcpy/memset, no libc but syscall(2)).
 *
 * Invariant: no descriptor of ours is ever in the program's table, not even for the length of
 * one read (the program may close, dup2 onto or be given that number meanwhile, or be out of
 * numbers under its RLIMIT_NOFILE). /proc/self/statm and the perf_event counters are opened,
 * read and closed by the helper in its own table (rec_fd_call); a reading that cannot go
 * there (no helper, a vfork child) is not made.
 */
#define REC_HOOK_FPSAFE 1 /* rec_reserve's slow path through its fxsave thunk */
#include "libmcount/mcount_read.h"

#include "libmcount/internal.h"
#include "libmcount/mcount_filter.h"
#include "formats/uftrace/uftrace_format.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* the values each kind reads, in the order of uftrace's structs (utils/event.h) */
static const uint8_t mc_rd_nvals[MC_READ_KINDS] = { 3, 2, 2, 2, 2 };

/* one frame's reading: what its entry asked for and got */
struct mc_rdslot {
	uint32_t mask; /* MC_READ_* asked for at the entry (0: the slot is free) */
	uint32_t ok;   /* MC_READ_* read at the entry */
	uint64_t v[MC_READ_KINDS][3];
};
#define MC_RD_SLOT sizeof(struct mc_rdslot)

static __thread struct mc_rdslot *mc_rd_slots __attribute__((tls_model("initial-exec")));
static __thread size_t mc_rd_nslots __attribute__((tls_model("initial-exec")));
/* the thread's perf_event groups, one per pmu kind: 0 not opened yet, -1 refused, else the
 * descriptor + 1 in the helper's table (never the program's); opened for the thread
 * mc_rd_pmu_tid (a fork child's copy names the parent's helper's: forgotten, reopened) */
static __thread int mc_rd_pmu_fd[3][2] __attribute__((tls_model("initial-exec")));
static __thread pid_t mc_rd_pmu_tid __attribute__((tls_model("initial-exec")));
static int mc_rd_pmu_warned[3]; /* once per kind and process: plain stores, a second line at
				 * worst */

/* May this thread ask the helper? Not once the session has ended (a helper told to quit
 * answers no more asks) */
static int mc_rd_helper_ok(void)
{
	return __atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) == REC_SESSION_ACTIVE &&
	       !__atomic_load_n(&rec_sess.helper_quit, __ATOMIC_ACQUIRE);
}

int mc_read_parse_statm(const char *s, size_t n, uint64_t out[3])
{
	size_t i = 0;

	for (int k = 0; k < 3; k++) {
		uint64_t v = 0;
		size_t start;

		while (i < n && s[i] == ' ')
			i++;
		start = i;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			v = v * 10 + (uint64_t)(s[i++] - '0');
		if (i == start || (i < n && s[i] != ' ' && s[i] != '\n'))
			return -1;
		out[k] = v;
	}
	return 0;
}

uint32_t mc_read_event_id(uint32_t k, int diff, uint16_t *size)
{
	static const uint32_t ids[MC_READ_KINDS][2] = {
		{ MC_EVENT_READ_PROC_STATM, MC_EVENT_DIFF_PROC_STATM },
		{ MC_EVENT_READ_PAGE_FAULT, MC_EVENT_DIFF_PAGE_FAULT },
		{ MC_EVENT_READ_PMU_CYCLE, MC_EVENT_DIFF_PMU_CYCLE },
		{ MC_EVENT_READ_PMU_CACHE, MC_EVENT_DIFF_PMU_CACHE },
		{ MC_EVENT_READ_PMU_BRANCH, MC_EVENT_DIFF_PMU_BRANCH },
	};
	uint32_t i = (uint32_t)__builtin_ctz(k);

	if (i >= MC_READ_KINDS)
		return 0;
	*size = (uint16_t)(mc_rd_nvals[i] * sizeof(uint64_t));
	return ids[i][!!diff];
}

static void mc_rd_put(uint8_t *dst, const void *src, size_t n)
{
	const volatile uint8_t *s = src;

	for (size_t i = 0; i < n; i++)
		dst[i] = s[i];
}

static void mc_rd_zero(void *p, size_t n)
{
	volatile uint8_t *d = p;

	for (size_t i = 0; i < n; i++)
		d[i] = 0;
}

/* The helper's /proc/self/statm, opened once and read from offset 0 each time (the file's text
 * is made at each read): the descriptor + 1 in the helper's table, for the process
 * mc_rd_statm_pid (a fork child's helper has a table of its own: it opens its own). Only the
 * helper touches them, one request at a time. */
static int mc_rd_statm_fd;
static pid_t mc_rd_statm_pid;

struct mc_rd_statm_req {
	char buf[128];
	long n;
};

/* on the helper (rec_fd_call): read statm where the descriptor is ours alone */
static int mc_rd_statm_fds(void *arg)
{
	struct mc_rd_statm_req *r = arg;
	long fd;

	if (!rec_fd_private)
		return -1; /* run on the caller, in the program's table: not there */
	if (mc_rd_statm_fd > 0 && mc_rd_statm_pid != rec_sess.pid)
		mc_rd_statm_fd = 0; /* the parent's helper's number */
	if (mc_rd_statm_fd == 0) {
		fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/statm", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		mc_rd_statm_fd = (int)fd + 1;
		mc_rd_statm_pid = rec_sess.pid;
	}
	r->n = syscall(SYS_pread64, mc_rd_statm_fd - 1, r->buf, sizeof(r->buf), 0);
	return r->n > 0 ? 0 : -1;
}

/* /proc/self/statm in KB (uftrace keeps it so); it counts pages, 4 KiB on x86-64 (no libc
 * call here to ask: getauxval and sysconf may use vector registers) */
static int mc_rd_statm(uint64_t *v)
{
	struct mc_rd_statm_req r;
	const uint64_t kb = 4;

	if (!mc_rd_helper_ok() || rec_fd_call(mc_rd_statm_fds, &r) < 0 ||
	    mc_read_parse_statm(r.buf, (size_t)r.n, v) < 0)
		return -1;
	for (int i = 0; i < 3; i++)
		v[i] *= kb;
	return 0;
}

static int mc_rd_page_fault(uint64_t *v)
{
	struct rusage ru;

	if (syscall(SYS_getrusage, RUSAGE_SELF, &ru) < 0)
		return -1;
	v[0] = (uint64_t)ru.ru_majflt;
	v[1] = (uint64_t)ru.ru_minflt;
	return 0;
}

static void mc_rd_pmu_refused(int p, const char *name, int err)
{
	static const char head[] = "flightrec: libmcount: read=";
	static const char mid[] = ": the kernel refused perf_event_open (errno ";
	static const char tail[] = "): nothing of it is recorded\n";
	char msg[200], num[12];
	size_t n = 0, k = 0;

	if (mc_rd_pmu_warned[p])
		return;
	mc_rd_pmu_warned[p] = 1;
	do
		num[k++] = (char)('0' + err % 10);
	while ((err /= 10) > 0 && k < sizeof(num));
	mc_rd_put((uint8_t *)msg, head, sizeof(head) - 1);
	n = sizeof(head) - 1;
	for (; *name && n < 60; name++)
		msg[n++] = *name;
	mc_rd_put((uint8_t *)msg + n, mid, sizeof(mid) - 1);
	n += sizeof(mid) - 1;
	while (k)
		msg[n++] = num[--k];
	mc_rd_put((uint8_t *)msg + n, tail, sizeof(tail) - 1);
	n += sizeof(tail) - 1;
	syscall(SYS_write, STDERR_FILENO, msg, n);
}

/* A pmu ask to the helper: open kind P's group for thread TID, read it, or close it */
struct mc_rd_pmu_req {
	int op; /* 0 open, 1 read, 2 close */
	int p;
	pid_t tid;
	int fd[2]; /* the descriptors + 1 (open: out; read, close: in) */
	int err;   /* open: the kernel's errno */
	uint64_t buf[3];
};

/* on the helper (rec_fd_call): the thread's counters live in the helper's table; the
 * perf_event_open of another thread of the process (pid = its tid) counts that thread */
static int mc_rd_pmu_fds(void *arg)
{
	static const uint64_t cfg[3][2] = {
		{ PERF_COUNT_HW_CPU_CYCLES, PERF_COUNT_HW_INSTRUCTIONS },
		{ PERF_COUNT_HW_CACHE_REFERENCES, PERF_COUNT_HW_CACHE_MISSES },
		{ PERF_COUNT_HW_BRANCH_INSTRUCTIONS, PERF_COUNT_HW_BRANCH_MISSES },
	};
	struct mc_rd_pmu_req *r = arg;
	struct perf_event_attr attr;
	long fd[2];

	if (!rec_fd_private)
		return -1; /* run on the caller, in the program's table: not there */
	if (r->op == 1) {
		long n = syscall(SYS_read, r->fd[0] - 1, r->buf, sizeof(r->buf));

		return n == (long)sizeof(r->buf) ? 0 : -1;
	}
	if (r->op == 2) {
		for (int k = 0; k < 2; k++)
			syscall(SYS_close, r->fd[k] - 1);
		return 0;
	}
	for (int k = 0; k < 2; k++) {
		mc_rd_zero(&attr, sizeof(attr));
		attr.size = sizeof(attr);
		attr.type = PERF_TYPE_HARDWARE;
		attr.config = cfg[r->p][k];
		attr.exclude_kernel = 1;
		attr.read_format = PERF_FORMAT_GROUP;
		fd[k] = syscall(SYS_perf_event_open, &attr, r->tid, -1, k ? fd[0] : -1,
				PERF_FLAG_FD_CLOEXEC);
		if (fd[k] < 0) {
			r->err = errno;
			if (k)
				syscall(SYS_close, fd[0]);
			return -1;
		}
	}
	r->fd[0] = (int)fd[0] + 1;
	r->fd[1] = (int)fd[1] + 1;
	return 0;
}

/* the perf_event group of pmu kind P (0 cycle, 1 cache, 2 branch): two hardware counters of
 * this thread, user space only, read together (uftrace's pmu.c configuration) */
static int mc_rd_pmu(struct rec_thread *t, int p, uint64_t *v)
{
	static const char *const names[3] = { "pmu-cycle", "pmu-cache", "pmu-branch" };
	struct mc_rd_pmu_req r;

	if (mc_rd_pmu_tid != t->tid) {
		/* a fork child's copy names its parent's helper's descriptors, none of the
		 * child's tables has them (closing them here would close the program's): they
		 * are forgotten, its own are opened */
		for (int i = 0; i < 3; i++)
			for (int k = 0; k < 2; k++)
				mc_rd_pmu_fd[i][k] = 0;
		mc_rd_pmu_tid = t->tid;
	}
	if (mc_rd_pmu_fd[p][0] < 0 || !mc_rd_helper_ok())
		return -1;
	r.p = p;
	r.tid = t->tid;
	if (mc_rd_pmu_fd[p][0] == 0) {
		r.op = 0;
		r.err = 0;
		if (rec_fd_call(mc_rd_pmu_fds, &r) < 0) {
			mc_rd_pmu_fd[p][0] = -1;
			if (r.err)
				mc_rd_pmu_refused(p, names[p], r.err);
			return -1;
		}
		mc_rd_pmu_fd[p][0] = r.fd[0];
		mc_rd_pmu_fd[p][1] = r.fd[1];
	}
	r.op = 1;
	r.fd[0] = mc_rd_pmu_fd[p][0];
	if (rec_fd_call(mc_rd_pmu_fds, &r) < 0 || r.buf[0] != 2)
		return -1;
	v[0] = r.buf[1];
	v[1] = r.buf[2];
	return 0;
}

static int mc_rd_kind(struct rec_thread *t, uint32_t i, uint64_t *v)
{
	switch (i) {
	case 0:
		return mc_rd_statm(v);
	case 1:
		return mc_rd_page_fault(v);
	default:
		return mc_rd_pmu(t, (int)i - 2, v);
	}
}

/* one event record: uftrace's record_event */
static void mc_rd_event(struct rec_thread *t, uint32_t k, int diff, uint64_t time,
			const uint64_t *v)
{
	uint16_t size;
	uint32_t id = mc_read_event_id(k, diff, &size);
	size_t padded = ((size_t)size + 2 + 7) & ~(size_t)7;
	struct uftrace_record *r = rec_reserve(t, sizeof(*r) + padded);
	uint8_t *p;

	if (!r)
		return; /* dropped, counted */
	r->time = time;
	r->word = uftrace_record_word(UFTRACE_EVENT, 0, id) | 4; /* the `more` bit */
	p = (uint8_t *)(r + 1);
	p[0] = (uint8_t)size;
	p[1] = (uint8_t)(size >> 8);
	mc_rd_put(p + 2, v, size);
	mc_rd_zero(p + 2 + size, padded - 2 - size);
	rec_commit(t);
}

void mc_read_enter(struct rec_thread *t, uint32_t d, uint32_t mask)
{
	int saved = errno;
	struct mc_rdslot *s;

	if (!mc_rd_slots) {
		/* once per thread, like mcount_args' held arguments */
		size_t bytes = (size_t)mc_max_stack * MC_RD_SLOT;
		void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		if (p == MAP_FAILED) {
			errno = saved;
			return;
		}
		mc_rd_slots = p;
		mc_rd_nslots = mc_max_stack;
	}
	if (d >= mc_rd_nslots)
		goto out;
	s = &mc_rd_slots[d];
	s->mask = mask;
	s->ok = 0;
	for (uint32_t i = 0; i < MC_READ_KINDS; i++)
		if ((mask & (1u << i)) && mc_rd_kind(t, i, s->v[i]) == 0)
			s->ok |= 1u << i;
out:
	errno = saved;
}

void mc_read_write_entry(struct rec_thread *t, uint32_t d, uint64_t time)
{
	struct mc_rdslot *s;

	if (!mc_rd_slots || d >= mc_rd_nslots)
		return;
	s = &mc_rd_slots[d];
	for (uint32_t i = 0; i < MC_READ_KINDS; i++)
		if (s->ok & (1u << i))
			mc_rd_event(t, 1u << i, 0, time, s->v[i]);
}

void mc_read_exit(struct rec_thread *t, uint32_t d, uint64_t time, int write)
{
	int saved = errno;
	struct mc_rdslot *s;

	if (!mc_rd_slots || d >= mc_rd_nslots || !mc_rd_slots[d].mask)
		return;
	s = &mc_rd_slots[d];
	/* uftrace reads before its time filter decides; nothing of it shows when the frame is
	 * not written, so we do not read then */
	for (uint32_t i = 0; write && i < MC_READ_KINDS; i++) {
		uint64_t v[3];

		if (!(s->mask & (1u << i)) || mc_rd_kind(t, i, v) < 0)
			continue;
		if (s->ok & (1u << i)) {
			for (int k = 0; k < mc_rd_nvals[i]; k++)
				v[k] -= s->v[i][k];
		}
		mc_rd_event(t, 1u << i, !!(s->ok & (1u << i)), time, v);
	}
	s->mask = 0;
	errno = saved;
}

void mc_read_thread_exit(void)
{
	if (mc_rd_slots) {
		munmap(mc_rd_slots, mc_rd_nslots * MC_RD_SLOT);
		mc_rd_slots = NULL;
		mc_rd_nslots = 0;
	}
	for (int i = 0; i < 3; i++) {
		/* the helper's descriptors, closed there; not a fork child's copy of its
		 * parent's (another thread's numbers, in a table the child has not) */
		if (mc_rd_pmu_fd[i][0] > 0 && mc_rd_pmu_tid == rec_gettid() && mc_rd_helper_ok()) {
			struct mc_rd_pmu_req r;

			r.op = 2;
			r.fd[0] = mc_rd_pmu_fd[i][0];
			r.fd[1] = mc_rd_pmu_fd[i][1];
			rec_fd_call(mc_rd_pmu_fds, &r);
		}
		for (int k = 0; k < 2; k++)
			mc_rd_pmu_fd[i][k] = 0;
	}
}
