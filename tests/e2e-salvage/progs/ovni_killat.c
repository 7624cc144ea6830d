/*
 * ovni_killat: an LD_PRELOAD shim for ovni_killme that SIGKILLs the process right after the
 * STEP-th file operation made for a worker thread's ovni_thread_init, so that every state a
 * kill can leave there is made on purpose, one per run, instead of by chance.
 *
 *   LD_PRELOAD=ovni_killat.so KILLAT_STEP=N KILLAT_MARK=FILE ovni_killme SIDE 1
 *
 * The operations counted: mkdir, mkdirat, open and openat with O_CREAT, rename and renameat,
 * whose path names the files of a thread other than the main one (the ovni tid is the
 * kernel's here: "thread.<tid>" in the trace, "ring.<pid>.<tid>.ovni[.tmp]" in .flightrec),
 * whoever makes them (ovni-rt's descriptor helper does, for the waiting worker). They are the
 * worker's ovni_thread_init and nothing after it: ovni_killme's workers never change their
 * metadata and the stream's appends open it without O_CREAT. Only one worker should run
 * (NTHREADS 1): then the N-th operation is the same one in every run. Before the kill, the
 * operation, its path and the tid go to FILE (one line: "N OP TID PATH"), so the runner
 * knows the shim fired and which thread it cut short; a run whose count never reaches N (past
 * the last step) writes nothing and goes on.
 *
 * Invariant: the real call is always made first and its result returned; the kill comes
 * after it, never instead of it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int ka_count;

/* the tid of the thread a path belongs to (its last "thread.<n>" or "ring.<pid>.<n>.ovni"),
 * or 0 */
static long ka_tid_of(const char *path)
{
	const char *p, *last = NULL, *base = strrchr(path, '/');
	char *end;
	long tid;

	base = base ? base + 1 : path;
	if (!strncmp(base, "ring.", 5) && strstr(base, ".ovni")) {
		strtol(base + 5, &end, 10);
		if (*end != '.')
			return 0;
		tid = strtol(end + 1, &end, 10);
		return !strncmp(end, ".ovni", 5) ? tid : 0;
	}
	for (p = path; (p = strstr(p, "thread.")); p++)
		last = p;
	if (!last)
		return 0;
	tid = strtol(last + 7, &end, 10);
	return end != last + 7 ? tid : 0;
}

static void ka_step(const char *op, const char *path)
{
	long tid = ka_tid_of(path);
	const char *mark = getenv("KILLAT_MARK");
	char line[4200];
	int n, fd;

	if (tid <= 0 || tid == getpid())
		return;
	if (__atomic_add_fetch(&ka_count, 1, __ATOMIC_ACQ_REL) !=
	    atoi(getenv("KILLAT_STEP") ?: "0"))
		return;
	if (mark) {
		/* the raw call: the shim's own open must not count */
		fd = (int)syscall(SYS_openat, AT_FDCWD, mark, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		n = snprintf(line, sizeof(line), "%d %s %ld %s\n", ka_count, op, tid, path);
		if (fd >= 0) {
			if (write(fd, line, (size_t)n) != n)
				n = -1;
			close(fd);
		}
	}
	kill(getpid(), SIGKILL);
}

#define KA_REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

int mkdir(const char *path, mode_t mode)
{
	int r = KA_REAL(mkdir)(path, mode);
	if (r == 0)
		ka_step("mkdir", path);
	return r;
}

int mkdirat(int dirfd, const char *path, mode_t mode)
{
	int r = KA_REAL(mkdirat)(dirfd, path, mode);
	if (r == 0)
		ka_step("mkdirat", path);
	return r;
}

int open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;
	int r;

	if (flags & (O_CREAT | O_TMPFILE)) {
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	r = KA_REAL(open)(path, flags, mode);
	if (r >= 0 && (flags & O_CREAT))
		ka_step("open", path);
	return r;
}

int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;
	int r;

	if (flags & (O_CREAT | O_TMPFILE)) {
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	r = KA_REAL(openat)(dirfd, path, flags, mode);
	if (r >= 0 && (flags & O_CREAT))
		ka_step("openat", path);
	return r;
}

int rename(const char *from, const char *to)
{
	int r = KA_REAL(rename)(from, to);
	if (r == 0)
		ka_step("rename", to);
	return r;
}

int renameat(int fromfd, const char *from, int tofd, const char *to)
{
	int r = KA_REAL(renameat)(fromfd, from, tofd, to);
	if (r == 0)
		ka_step("renameat", to);
	return r;
}
