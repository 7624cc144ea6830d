/*
 * mcount_dynstop: the program's other threads held still while -P writes code.
 *
 * -P rewrites a function's first bytes (a call over five one-byte nops, a jump over a
 * relocated prologue): a thread running there meanwhile could execute half an instruction,
 * and one stopped between two of the old instructions would resume inside the new one.
 * So the writes happen while every other thread of the program is stopped, and the caller
 * leaves alone a site where a stopped thread's instruction pointer lies strictly inside.
 *
 * A process cannot ptrace its own threads; a child can. mc_stop_others clones one (a raw
 * clone: no atfork handlers run, and no exit signal, so the program's SIGCHLD handler and its
 * wait(-1) never see it), which seizes and interrupts every thread but the caller and the
 * runtime's own (they never run the program's code), rescanning /proc/PID/task until no new
 * one appears, and reports where each stopped. A ptrace stop, unlike a signal, restarts an
 * interrupted system call transparently: the program sees no EINTR. mc_stop_resume has the
 * child detach (the threads resume through a kernel exit, which serializes their instruction
 * fetch with the new bytes) and reaps it.
 *
 * The two talk through a shared anonymous page and futexes: no descriptor of ours enters the
 * program's table. The child runs with every signal blocked, dies with its parent
 * (PR_SET_PDEATHSIG: a dead tracer's tracees are detached and go on), calls only system calls
 * (it is a copy of a multi-threaded process) and ends with exit_group. Under Yama's
 * ptrace_scope 1 it is made the process's ptracer for the time (PR_SET_PTRACER, reset to none
 * after). A process already traced (gdb, strace), not dumpable, or a stop that takes more than
 * 2 s fails with the reason: then nothing is stopped and the caller patches nothing.
 */
#include "libmcount/mcount_dynstop.h"
#include "librecord/rec_session.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PR_SET_PTRACER
#define PR_SET_PTRACER 0x59616d61
#endif

enum {
	STOP_GO = 1,	  /* parent: the child may seize (ptracer set) */
	STOP_HELD = 2,	  /* child: every thread stopped (or err set, none held) */
	STOP_RESUME = 3,  /* parent: the writes are done */
	STOP_DONE = 4,	  /* child: every thread detached */
};

struct mc_stop_page {
	int state;
	int err;	/* errno of the failure, 0 */
	int step;	/* what failed: 1 seize, 2 interrupt/wait, 3 too many threads, 4 /proc */
	pid_t parent, caller;
	size_t n;
	pid_t tid[MC_STOP_MAX];
	int sig[MC_STOP_MAX]; /* a signal the thread was stopped delivering: given back */
	uintptr_t ip[MC_STOP_MAX];
	uintptr_t to[MC_STOP_MAX]; /* where the thread resumes instead (the caller's say), or 0 */
};

static long stop_futex(int *addr, int op, int val, const struct timespec *ts)
{
	return syscall(SYS_futex, addr, op, val, ts, NULL, 0);
}

static void stop_set(struct mc_stop_page *p, int state)
{
	__atomic_store_n(&p->state, state, __ATOMIC_RELEASE);
	stop_futex(&p->state, FUTEX_WAKE, 1, NULL);
}

/* Wait until state >= want or the deadline (CLOCK_MONOTONIC) passes: 0, or -1. */
static int stop_wait(struct mc_stop_page *p, int want, const struct timespec *deadline)
{
	int now;

	while ((now = __atomic_load_n(&p->state, __ATOMIC_ACQUIRE)) < want) {
		struct timespec t, left;

		if (deadline) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			left.tv_sec = deadline->tv_sec - t.tv_sec;
			left.tv_nsec = deadline->tv_nsec - t.tv_nsec;
			if (left.tv_nsec < 0) {
				left.tv_sec--;
				left.tv_nsec += 1000000000L;
			}
			if (left.tv_sec < 0)
				return -1;
		}
		stop_futex(&p->state, FUTEX_WAIT, now, deadline ? &left : NULL);
	}
	return 0;
}

/* --- the child ------------------------------------------------------------------------ */

static int stop_known(const struct mc_stop_page *p, pid_t tid)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->tid[i] == tid)
			return 1;
	return 0;
}

/* Seize and stop TID: 1 held, 0 gone (it ended), -1 failed (p->err, p->step). */
static int stop_one(struct mc_stop_page *p, pid_t tid)
{
	struct user_regs_struct regs;
	int status, sig = 0;

	if (syscall(SYS_ptrace, PTRACE_SEIZE, tid, 0, 0) < 0) {
		if (errno == ESRCH)
			return 0;
		p->err = errno;
		p->step = 1;
		return -1;
	}
	if (syscall(SYS_ptrace, PTRACE_INTERRUPT, tid, 0, 0) < 0 && errno != ESRCH) {
		p->err = errno;
		p->step = 2;
		return -1;
	}
	for (;;) {
		if (syscall(SYS_wait4, tid, &status, __WALL, NULL) < 0) {
			if (errno == EINTR)
				continue;
			return 0; /* gone */
		}
		if (WIFEXITED(status) || WIFSIGNALED(status))
			return 0;
		if (!WIFSTOPPED(status))
			continue;
		if ((status >> 16) == PTRACE_EVENT_STOP)
			break;
		/* stopped delivering a signal: held so, and the signal given back at detach */
		sig = WSTOPSIG(status);
		break;
	}
	if (p->n >= MC_STOP_MAX) {
		syscall(SYS_ptrace, PTRACE_DETACH, tid, 0, sig);
		p->err = E2BIG;
		p->step = 3;
		return -1;
	}
	if (syscall(SYS_ptrace, PTRACE_GETREGS, tid, 0, &regs) < 0)
		regs.rip = 0;
	p->tid[p->n] = tid;
	p->sig[p->n] = sig;
	p->ip[p->n] = regs.rip;
	p->n++;
	return 1;
}

/* "/proc/PID/task" without stdio (the child may call system calls only) */
static void stop_task_path(char path[64], pid_t pid)
{
	char digits[16];
	int n = 0;
	char *o = path;

	do
		digits[n++] = (char)('0' + pid % 10);
	while ((pid /= 10) > 0);
	memcpy(o, "/proc/", 6);
	o += 6;
	while (n)
		*o++ = digits[--n];
	memcpy(o, "/task", 6);
}

/* One pass over /proc/PID/task: the number of threads newly held, or -1. */
static long stop_pass(struct mc_stop_page *p)
{
	char path[64], buf[4096];
	long got, added = 0;
	int fd;

	stop_task_path(path, p->parent);
	fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		p->err = errno;
		p->step = 4;
		return -1;
	}
	while ((got = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long o = 0; o < got;) {
			struct dirent64 {
				unsigned long long ino;
				long long off;
				unsigned short reclen;
				unsigned char type;
				char name[];
			} *d = (void *)(buf + o);
			pid_t tid = 0;
			int r;

			o += d->reclen;
			for (const char *c = d->name; *c >= '0' && *c <= '9'; c++)
				tid = tid * 10 + (*c - '0');
			if (tid <= 0 || tid == p->caller || rec_own_thread(tid) || stop_known(p, tid))
				continue;
			r = stop_one(p, tid);
			if (r < 0) {
				syscall(SYS_close, fd);
				return -1;
			}
			added += r;
		}
	}
	syscall(SYS_close, fd);
	return added;
}

static void stop_release(struct mc_stop_page *p)
{
	for (size_t i = 0; i < p->n; i++) {
		struct user_regs_struct regs;

		if (p->to[i] && syscall(SYS_ptrace, PTRACE_GETREGS, p->tid[i], 0, &regs) == 0 &&
		    regs.rip == p->ip[i]) {
			regs.rip = p->to[i];
			syscall(SYS_ptrace, PTRACE_SETREGS, p->tid[i], 0, &regs);
		}
		syscall(SYS_ptrace, PTRACE_DETACH, p->tid[i], 0, p->sig[i]);
	}
	p->n = 0;
}

__attribute__((noreturn)) static void stop_child(struct mc_stop_page *p)
{
	long r;

	syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (syscall(SYS_getppid) != p->parent)
		syscall(SYS_exit_group, 0);
	stop_wait(p, STOP_GO, NULL);
	while ((r = stop_pass(p)) > 0)
		;
	if (r < 0)
		stop_release(p);
	stop_set(p, STOP_HELD);
	stop_wait(p, STOP_RESUME, NULL);
	stop_release(p);
	stop_set(p, STOP_DONE);
	syscall(SYS_exit_group, 0);
	__builtin_unreachable();
}

/* --- the caller ----------------------------------------------------------------------- */

static int stop_yama_scope(void)
{
	char c = '0';
	int fd = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (read(fd, &c, 1) != 1)
			c = '0';
		close(fd);
	}
	return c - '0';
}

static void stop_reap(struct mc_stop *s)
{
	int status;

	while (syscall(SYS_wait4, s->pid, &status, __WALL, NULL) < 0 && errno == EINTR)
		;
}

int mc_stop_others(struct mc_stop *s, char *why, size_t len)
{
	static const char *const steps[] = {"", "ptrace seize", "ptrace interrupt",
					    "too many threads", "/proc/PID/task"};
	struct mc_stop_page *p;
	struct timespec deadline;
	sigset_t all, old;
	int yama = stop_yama_scope(), saved = errno;
	long pid;

	memset(s, 0, sizeof(*s));
	p = mmap(NULL, sizeof(*p), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		snprintf(why, len, "no memory for the stop: %s", strerror(errno));
		return -1;
	}
	p->parent = getpid();
	p->caller = (pid_t)syscall(SYS_gettid);
	(void)rec_own_thread(0); /* the runtime's threads have said their tids: the child need
				  * not wait for them (it sees a copy of our memory) */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = syscall(SYS_clone, 0 /* no exit signal */, NULL, NULL, NULL, NULL);
	if (pid == 0)
		stop_child(p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		snprintf(why, len, "cannot start the process that stops them: %s", strerror(errno));
		munmap(p, sizeof(*p));
		errno = saved;
		return -1;
	}
	s->page = p;
	s->pid = (int)pid;
	if (yama == 1)
		prctl(PR_SET_PTRACER, (unsigned long)pid, 0, 0, 0);
	stop_set(p, STOP_GO);
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += 2;
	if (stop_wait(p, STOP_HELD, &deadline) < 0 || p->err) {
		if (p->state < STOP_HELD)
			snprintf(why, len, "they could not be stopped within 2 s");
		else
			snprintf(why, len, "they cannot be stopped (%s: %s%s)", steps[p->step],
				 strerror(p->err),
				 p->err == EPERM ? "; traced by a debugger, or not dumpable?" : "");
		kill((pid_t)pid, SIGKILL); /* its tracees are detached and go on */
		stop_reap(s);
		if (yama == 1)
			prctl(PR_SET_PTRACER, 0, 0, 0, 0);
		munmap(p, sizeof(*p));
		memset(s, 0, sizeof(*s));
		errno = saved;
		return -1;
	}
	s->n = p->n;
	s->ip = p->ip;
	s->to = p->to;
	errno = saved;
	return 0;
}

void mc_stop_resume(struct mc_stop *s)
{
	int saved = errno;
	int yama;

	if (!s->page)
		return;
	stop_set(s->page, STOP_RESUME);
	stop_wait(s->page, STOP_DONE, NULL);
	stop_reap(s);
	yama = stop_yama_scope();
	if (yama == 1)
		prctl(PR_SET_PTRACER, 0, 0, 0, 0);
	munmap(s->page, sizeof(*s->page));
	memset(s, 0, sizeof(*s));
	errno = saved;
}
