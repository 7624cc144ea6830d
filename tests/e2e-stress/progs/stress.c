/*
 * stress: the driver of the stress cases (not instrumented; the calls it makes are into
 * work.c and cxx.cc, which are). Every process image appends one line to $STRESS_OUT when it
 * is done, with one write:
 *   pid=P mode=M work=N leaf=N handler=N recurse=N jump=N cxx=N threads=N forks=N execs=N
 *   signals_sent=N
 * so the test can add up, over all processes, how many calls the trace must account for.
 *
 *   stress threads N K     N short-lived threads (at most 32 alive), K calls of work each;
 *                          with $STRESS_BARRIER set, each batch's threads make their first
 *                          call, then wait for one another (every thread is known to the
 *                          runtime before the bulk of the calls)
 *   stress forks N K       N forked children (at most 8 alive), K calls each; half end with
 *                          exit, half with _exit
 *   stress exec D K        K calls, then exec itself with D-1 (an exec chain D+1 images long)
 *   stress signals N       4 threads calling work in a loop, N SIGUSR1 sent to them round
 *                          robin; the handler calls handler_work (instrumented)
 *   stress longjmp N       4 threads, N longjmps each out of 3 instrumented frames
 *   stress except N        4 threads, N C++ exceptions each through 3 instrumented frames
 *   stress recurse D N     2 threads, N recursions D deep each
 *   stress fds K           as a daemon: the main thread makes K calls, closes every
 *                          descriptor above 2, opens 8 files of its own in $STRESS_FILES (9
 *                          bytes each), makes K calls, dup2s the first of them over every
 *                          other number from 3 to 63, starts 2 threads making K calls
 *                          each, makes K calls; then checks its descriptors: fds_bad =
 *                          those closed, or whose file is no longer its 9 bytes
 *   stress uneven N K      N threads one after the other (each joined before the next
 *                          starts), K calls each but the last, which makes 5 x K: the
 *                          threads' streams start in that order, the last is the largest
 *   stress mainexit K      a thread makes K calls and prints a line with printf, the main
 *                          thread prints one and leaves by pthread_exit: the process ends
 *                          when the thread does (glibc's exit(0)), whose stdio flush must
 *                          still reach the program's stdout (a pipe: fully buffered)
 *   stress rawexit K       the same, but the worker leaves by a raw exit syscall (no TSD
 *                          destructor, no stdio flush): the last thread gone, the process
 *                          ends; under the runtime too, whose flusher must see it alone
 *   stress hostile R K     as a hostile daemon: the main thread makes K calls, then a
 *                          thread loops over descriptors 3..63 and the top eighth of
 *                          RLIMIT_NOFILE (where the runtime keeps its own) until the process
 *                          is gone: closes each, dup2s a file of its own ($STRESS_FILES/own.N)
 *                          over it, writes a line of its own there when it finds it still
 *                          its own on its next round, closes it. Meanwhile R rounds of 4
 *                          threads making K calls each, started and joined, and K calls of
 *                          the main thread per round; then the report and exit, the hostile
 *                          thread still at it. A descriptor of its own found closed or
 *                          changed is said on stderr ("stress: descriptor N ... behind its
 *                          back"); the own.N files must hold only its lines
 *   stress nofile N K      N threads (at most 8) make K calls each, then each opens a file
 *                          and holds it until all have tried: files_opened = how many could
 *                          (under a small RLIMIT_NOFILE the runtime must leave room)
 *   stress fillinodes K [F]  K calls, then files made in $STRESS_FILES (empty, closed at
 *                          once) until the file system refuses one (its inodes all taken:
 *                          files_opened = how many), then K calls more: the trace's finish
 *                          finds no free inode. F = 1: first a forked child makes K calls
 *                          and exits (its finish writes info), waited for
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int work(int x);
int handler_work(int sig);
int recurse(int depth);
void jump_a(jmp_buf *env, int i);
int catcher(int i);
extern uint64_t n_work, n_leaf, n_handler, n_recurse, n_jump, n_cxx;

static const char *mode = "?";
static long nthreads, nforks, nexecs, fds_bad, files_opened = -1;
static uint64_t signals_sent;
static volatile int stop;

/* the report's descriptor, opened before a hostile thread starts, where it never goes */
static int report_fd = -1;

static void report(void)
{
	char line[512];
	int fd, n;
	const char *out = getenv("STRESS_OUT");

	n = snprintf(line, sizeof(line),
		     "pid=%d mode=%s work=%lu leaf=%lu handler=%lu recurse=%lu jump=%lu cxx=%lu "
		     "threads=%ld forks=%ld execs=%ld signals_sent=%lu fds_bad=%ld "
		     "files_opened=%ld\n",
		     (int)getpid(), mode, (unsigned long)n_work, (unsigned long)n_leaf,
		     (unsigned long)n_handler, (unsigned long)n_recurse, (unsigned long)n_jump,
		     (unsigned long)n_cxx, nthreads, nforks, nexecs, (unsigned long)signals_sent,
		     fds_bad, files_opened);
	if (report_fd >= 0) {
		if (write(report_fd, line, (size_t)n) != n)
			perror("stress: write");
		return;
	}
	fd = open(out ? out : "/dev/stdout", O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd >= 0) {
		if (write(fd, line, (size_t)n) != n)
			perror("stress: write");
		close(fd);
	}
}

struct job {
	long k;
	pthread_barrier_t *after_first; /* or NULL */
};

static void *calls(void *arg)
{
	struct job *j = arg;
	volatile int s = 0;
	for (long i = 0; i < j->k; i++) {
		s += work((int)i);
		if (i == 0 && j->after_first)
			pthread_barrier_wait(j->after_first);
	}
	return NULL;
}

static void run_threads(long n, long k)
{
	pthread_t t[32];
	pthread_barrier_t barrier;
	struct job j = { k, NULL };
	long started = 0;

	while (started < n) {
		int batch = n - started < 32 ? (int)(n - started) : 32;
		if (getenv("STRESS_BARRIER") && k > 0) {
			pthread_barrier_init(&barrier, NULL, (unsigned)batch);
			j.after_first = &barrier;
		}
		for (int i = 0; i < batch; i++)
			if (pthread_create(&t[i], NULL, calls, &j) != 0) {
				perror("stress: pthread_create");
				exit(2);
			}
		for (int i = 0; i < batch; i++)
			pthread_join(t[i], NULL);
		if (j.after_first)
			pthread_barrier_destroy(&barrier);
		started += batch;
		nthreads += batch;
	}
}

static void run_uneven(long n, long k)
{
	for (long i = 0; i < n; i++) {
		struct job j = { i == n - 1 ? 5 * k : k, NULL };
		pthread_t t;
		if (pthread_create(&t, NULL, calls, &j) != 0) {
			perror("stress: pthread_create");
			exit(2);
		}
		pthread_join(t, NULL);
		nthreads++;
	}
}

static pthread_barrier_t mainexit_barrier;

static void *mainexit_worker(void *arg)
{
	pthread_barrier_wait(&mainexit_barrier);
	calls(arg);
	nthreads = 1;
	printf("mainexit: the worker made its calls\n"); /* no fflush: exit's flush writes it */
	report();
	return NULL;
}

/* WORKER makes K calls while the main thread leaves by pthread_exit (saying SAY first) */
static void run_main_leaves(long k, void *(*worker)(void *), const char *say)
{
	static struct job j;
	pthread_t t;

	j.k = k;
	pthread_barrier_init(&mainexit_barrier, NULL, 2);
	if (pthread_create(&t, NULL, worker, &j) != 0)
		exit(2);
	if (say)
		printf("%s\n", say);
	pthread_barrier_wait(&mainexit_barrier);
	pthread_exit(NULL);
}

static void *rawexit_worker(void *arg)
{
	pthread_barrier_wait(&mainexit_barrier);
	calls(arg);
	nthreads = 1;
	report();
	syscall(SYS_exit, 0); /* no pthread_exit: no TSD destructor runs */
	return NULL;
}

static void run_forks(long n, long k)
{
	long alive = 0, done = 0;
	int status;

	for (long i = 0; i < n; i++) {
		if (alive == 8) {
			if (wait(&status) > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
				done++;
			alive--;
		}
		pid_t pid = fork();
		if (pid < 0) {
			perror("stress: fork");
			exit(2);
		}
		if (pid == 0) {
			struct job j = { k };
			mode = "fork-child";
			nforks = 0;
			calls(&j);
			report();
			if (i & 1)
				_exit(0);
			exit(0);
		}
		alive++;
		nforks++;
	}
	while (alive-- > 0)
		if (wait(&status) > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
			done++;
	if (done != n) {
		fprintf(stderr, "stress: %ld of %ld children failed\n", n - done, n);
		exit(3);
	}
}

static pthread_t sig_workers[4];

static void on_usr1(int sig)
{
	int saved = errno;
	handler_work(sig);
	errno = saved;
}

static void *sig_worker(void *arg)
{
	volatile int s = 0;
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		s += work(s);
		for (volatile int k = 0; k < 2000; k++) /* keeps the trace small */
			;
	}
	return NULL;
}

static void run_signals(long n)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 0; i < 4; i++)
		pthread_create(&sig_workers[i], NULL, sig_worker, NULL);
	for (long i = 0; i < n; i++) {
		if (pthread_kill(sig_workers[i % 4], SIGUSR1) == 0)
			signals_sent++;
		if (i % 64 == 63)
			sched_yield();
	}
	/* let the last ones land before the workers stop */
	struct timespec ts = { 0, 20000000 };
	nanosleep(&ts, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 4; i++)
		pthread_join(sig_workers[i], NULL);
	nthreads = 4;
}

static void *jumper(void *arg)
{
	long n = (long)arg;
	for (volatile long i = 0; i < n; i++) {
		jmp_buf env;
		volatile long got = setjmp(env);
		if (got == 0)
			jump_a(&env, (int)i);
		else if (got != (long)(int)i + 1)
			abort();
	}
	return NULL;
}

static void *excepter(void *arg)
{
	long n = (long)arg;
	for (long i = 0; i < n; i++)
		if (catcher((int)i) != 1)
			abort();
	return NULL;
}

static void *recurser(void *arg)
{
	long *a = arg;
	for (long i = 0; i < a[1]; i++)
		if (recurse((int)a[0]) != (int)a[0])
			abort();
	return NULL;
}

/* is FD open, on a file holding exactly the 9 bytes the program wrote? */
static int fd_intact(int fd)
{
	char buf[32];
	struct stat st;

	if (fcntl(fd, F_GETFD) < 0 || fstat(fd, &st) < 0 || st.st_size != 9)
		return 0;
	return pread(fd, buf, sizeof(buf), 0) == 9 && !memcmp(buf, "precious\n", 9);
}

static void run_fds(long k)
{
	const char *dir = getenv("STRESS_FILES");
	struct job j = { k };
	pthread_t t[2];
	int own[8], is_own[64] = { 0 };
	char path[4096];

	if (!dir)
		exit(2);
	calls(&j);
	for (int fd = 3; fd < 1024; fd++) /* what daemons do */
		close(fd);
	for (int i = 0; i < 8; i++) {
		snprintf(path, sizeof(path), "%s/file%d", dir, i);
		own[i] = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (own[i] < 0 || own[i] >= 64 || write(own[i], "precious\n", 9) != 9) {
			fprintf(stderr, "stress: %s (descriptor %d): %s\n", path, own[i],
				strerror(errno));
			exit(2);
		}
		is_own[own[i]] = 1;
	}
	calls(&j);
	for (int fd = 3; fd < 64; fd++) /* ... and whatever the runtime opened since is ours */
		while (!is_own[fd] && dup2(own[0], fd) < 0)
			if (errno != EBUSY) { /* another thread's open() is taking it: retry */
				fprintf(stderr, "stress: dup2(%d, %d): %s\n", own[0], fd,
					strerror(errno));
				exit(2);
			}
	/* new threads: the runtime attaches them with the descriptors it has left */
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, calls, &j);
	calls(&j);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	nthreads = 2;
	for (int fd = 3; fd < 64; fd++)
		if (!fd_intact(fd)) {
			fds_bad++;
			fprintf(stderr, "stress: descriptor %d closed or changed\n", fd);
		}
}

static pthread_barrier_t nofile_barrier;

static void *nofile_worker(void *arg)
{
	struct job *j = arg;
	int fd;

	calls(j);
	fd = open("/dev/null", O_RDONLY);
	if (fd >= 0)
		__atomic_fetch_add(&files_opened, 1, __ATOMIC_RELAXED);
	pthread_barrier_wait(&nofile_barrier);
	if (fd >= 0)
		close(fd);
	return NULL;
}

static void run_nofile(long n, long k)
{
	struct job j = { k };
	pthread_t t[8];

	if (n < 1 || n > 8)
		exit(2);
	files_opened = 0;
	pthread_barrier_init(&nofile_barrier, NULL, (unsigned)n);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, nofile_worker, &j) != 0)
			exit(2);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	nthreads = n;
}

#define HOSTILE_MAX 1024
static struct {
	int held;
	dev_t dev;
	ino_t ino;
} hostile_own[HOSTILE_MAX];

/* the number FD taken for a file of the program's own (STRESS_FILES/own.FD, appended) */
static void hostile_take(const char *dir, int fd)
{
	char path[4096];
	struct stat st;
	int f;

	snprintf(path, sizeof(path), "%s/own.%d", dir, fd);
	f = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (f < 0)
		return;
	if (f != fd) {
		int ok = dup2(f, fd) == fd;
		close(f);
		if (!ok)
			return;
	}
	if (fstat(fd, &st) == 0) {
		hostile_own[fd].held = 1;
		hostile_own[fd].dev = st.st_dev;
		hostile_own[fd].ino = st.st_ino;
	}
}

static void *hostile(void *arg)
{
	const char *dir = arg;
	static const char mine[] = "program\n";
	struct rlimit rl;
	int top = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < HOSTILE_MAX
			  ? (int)rl.rlim_cur
			  : HOSTILE_MAX;

	for (;;) { /* until the process is gone */
		for (int fd = 3; fd < top; fd++) {
			struct stat st;
			if (fd == 64)
				fd = top - top / 8 > 64 ? top - top / 8 : 64;
			if (fd == report_fd)
				continue;
			if (!hostile_own[fd].held) {
				close(fd); /* whatever is there: the runtime's, maybe */
				hostile_take(dir, fd);
				continue;
			}
			hostile_own[fd].held = 0;
			if (fstat(fd, &st) < 0 || st.st_dev != hostile_own[fd].dev ||
			    st.st_ino != hostile_own[fd].ino) {
				char msg[96];
				int n = snprintf(msg, sizeof(msg), "stress: descriptor %d closed or "
						 "changed behind its back\n", fd);
				(void)!write(STDERR_FILENO, msg, (size_t)n);
				__atomic_fetch_add(&fds_bad, 1, __ATOMIC_RELAXED);
				continue;
			}
			if (write(fd, mine, sizeof(mine) - 1) != sizeof(mine) - 1)
				__atomic_fetch_add(&fds_bad, 1, __ATOMIC_RELAXED);
			close(fd);
		}
	}
	return NULL;
}

static void run_hostile(long rounds, long k)
{
	const char *dir = getenv("STRESS_FILES"), *out = getenv("STRESS_OUT");
	struct job j = { k };
	pthread_t h, t[4];
	int fd;

	if (!dir || !out)
		exit(2);
	calls(&j); /* the runtime starts before the hostile thread */
	fd = open(out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || (report_fd = fcntl(fd, F_DUPFD_CLOEXEC, 100)) < 0 || report_fd >= 200)
		exit(2);
	close(fd);
	if (pthread_create(&h, NULL, hostile, (void *)dir) != 0)
		exit(2);
	for (long r = 0; r < rounds; r++) {
		for (int i = 0; i < 4; i++)
			if (pthread_create(&t[i], NULL, calls, &j) != 0)
				exit(2);
		calls(&j);
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		nthreads += 4;
	}
	/* main returns: exit and the runtime's finish with the hostile thread still at it */
}

static void run_fillinodes(long k, long fork_first)
{
	const char *dir = getenv("STRESS_FILES");
	struct job j = { k };
	char name[4096];
	pid_t pid;
	int fd;

	calls(&j);
	if (fork_first) {
		pid = fork();
		if (pid == 0) {
			mode = "fillinodes-child";
			n_work = n_leaf = 0; /* its own calls: the parent's are in the parent's line */
			calls(&j);
			report();
			exit(0);
		}
		if (pid < 0 || waitpid(pid, NULL, 0) != pid)
			perror("stress: fork");
		else
			nforks = 1;
	}
	files_opened = 0;
	for (;;) {
		snprintf(name, sizeof(name), "%s/f.%ld", dir ? dir : ".", files_opened);
		fd = open(name, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0)
			break;
		close(fd);
		files_opened++;
	}
	if (errno != ENOSPC)
		perror("stress: fillinodes");
	calls(&j);
}

static void run_in_threads(int n, void *(*fn)(void *), void *arg)
{
	pthread_t t[8];
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, fn, arg);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	nthreads += n;
}

int main(int argc, char **argv)
{
	long a = argc > 2 ? atol(argv[2]) : 0, b = argc > 3 ? atol(argv[3]) : 0;

	if (argc < 3) {
		fprintf(stderr, "usage: stress MODE N [K]\n");
		return 2;
	}
	mode = argv[1];
	if (!strcmp(mode, "threads")) {
		run_threads(a, b);
	} else if (!strcmp(mode, "forks")) {
		run_forks(a, b);
	} else if (!strcmp(mode, "exec")) {
		struct job j = { b };
		calls(&j);
		nexecs = 1;
		report();
		if (a > 0) {
			char d[32];
			snprintf(d, sizeof(d), "%ld", a - 1);
			execl("/proc/self/exe", argv[0], "exec", d, argv[3], (char *)NULL);
			perror("stress: exec");
			return 2;
		}
		return 0;
	} else if (!strcmp(mode, "signals")) {
		run_signals(a);
	} else if (!strcmp(mode, "longjmp")) {
		run_in_threads(4, jumper, (void *)a);
	} else if (!strcmp(mode, "except")) {
		run_in_threads(4, excepter, (void *)a);
	} else if (!strcmp(mode, "fds")) {
		run_fds(a);
	} else if (!strcmp(mode, "mainexit")) {
		run_main_leaves(a, mainexit_worker, "mainexit: the main thread leaves");
	} else if (!strcmp(mode, "rawexit")) {
		run_main_leaves(a, rawexit_worker, NULL);
	} else if (!strcmp(mode, "uneven")) {
		run_uneven(a, b);
	} else if (!strcmp(mode, "nofile")) {
		run_nofile(a, b);
	} else if (!strcmp(mode, "fillinodes")) {
		run_fillinodes(a, b);
	} else if (!strcmp(mode, "hostile")) {
		run_hostile(a, b);
	} else if (!strcmp(mode, "recurse")) {
		long args[2] = { a, b };
		run_in_threads(2, recurser, args);
	} else {
		fprintf(stderr, "stress: unknown mode %s\n", mode);
		return 2;
	}
	report();
	return 0;
}
