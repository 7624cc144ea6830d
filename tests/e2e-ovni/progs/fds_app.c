/*
 * fds_app: ovni threads next to a program that uses descriptors hard.
 *
 * usage: fds_app nofile N K    N workers (at most 8): ovni_thread_init, OHx, K marks, then
 *                              each opens /dev/null and holds it until all did, OHe,
 *                              ovni_thread_free. Run under a small RLIMIT_NOFILE: the
 *                              runtime's descriptors must not grow with the threads and take
 *                              the program's room. Prints "OPENED <n>" (files the workers
 *                              could open) and "DESCRIPTORS <n>" (the process's open
 *                              descriptors while every worker holds its file and stream,
 *                              the fewest of 20 looks).
 *        fds_app hostile N K   N workers (ovni_thread_init and OHx done first) emit K marks
 *                              each (ovni_flush every 1000) while a hostile thread loops over
 *                              descriptors 3..63 and the top eighth of RLIMIT_NOFILE (where
 *                              the runtime keeps its own): closes them, dup2s a file of its
 *                              own over them; it stops before the workers' OHe and
 *                              ovni_thread_free. The program's files (one per descriptor
 *                              number it took) must hold only what it wrote: prints
 *                              "FOREIGN <bytes>" (bytes in its files it did not write) and
 *                              "CLOSED <n>" (times a descriptor it holds was found closed or
 *                              changed behind its back).
 *        fds_app churn R K     the hostile thread of `hostile`, started once the main thread
 *                              is traced, never stops (the process exits under it), while R
 *                              rounds of 4 workers each do ovni_thread_init, OHx, K marks
 *                              (ovni_flush every 1000), OHe, ovni_thread_free, and exit. A
 *                              descriptor of its own found closed or changed is said on
 *                              stderr ("... behind its back"); its files are checked by the
 *                              caller once the process is gone.
 * All print "EMITTED <pid> <tid> <events>" per thread, as mt_app does. FDS_DIR: where the
 * hostile thread's files go.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <ovni.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ovni_test.h"

static pthread_barrier_t barrier;
static long n_marks;
static int opened, stop, churn;

static void report(long events)
{
	char line[96];
	int n = snprintf(line, sizeof(line), "EMITTED %d %d %ld\n", (int)getpid(), (int)gettid(),
			 events);
	if (write(STDOUT_FILENO, line, (size_t)n) != n)
		_exit(3);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own */
}

static void *nofile_worker(void *arg)
{
	int fd;

	(void)arg;
	ovni_thread_init(gettid());
	test_emit_ohx();
	for (long i = 1; i <= n_marks; i++)
		ovni_mark_set(1, i);
	fd = open("/dev/null", O_RDONLY);
	if (fd >= 0)
		__atomic_fetch_add(&opened, 1, __ATOMIC_RELAXED);
	pthread_barrier_wait(&barrier); /* every worker holds its file (and stream) */
	pthread_barrier_wait(&barrier); /* main counted the descriptors */
	if (fd >= 0)
		close(fd);
	test_emit0("OHe");
	report(n_marks + 2);
	ovni_thread_free();
	return NULL;
}

static void *hostile_worker(void *arg)
{
	(void)arg;
	ovni_thread_init(gettid());
	test_emit_ohx();
	pthread_barrier_wait(&barrier); /* every worker started: the hostile thread starts */
	for (long i = 1; i <= n_marks; i++) {
		ovni_mark_set(1, i);
		if (i % 1000 == 0)
			ovni_flush();
	}
	pthread_barrier_wait(&barrier); /* every worker done: the hostile thread stops */
	pthread_barrier_wait(&barrier);
	test_emit0("OHe");
	report(n_marks + 2); /* the flush markers are the runtime's, not counted */
	ovni_thread_free();
	return NULL;
}

static void *churn_worker(void *arg)
{
	(void)arg;
	ovni_thread_init(gettid());
	test_emit_ohx();
	for (long i = 1; i <= n_marks; i++) {
		ovni_mark_set(1, i);
		if (i % 1000 == 0)
			ovni_flush();
	}
	test_emit0("OHe");
	report(n_marks + 2);
	ovni_thread_free();
	return NULL;
}

/* the hostile thread's own descriptors: the number it holds and what it wrote there */
#define FDS_MAX 1024
static struct {
	int held;
	dev_t dev;
	ino_t ino;
} own[FDS_MAX];
static long changed;

static int own_file(const char *dir, int fd)
{
	char path[4096];
	struct stat st;
	int f;

	snprintf(path, sizeof(path), "%s/own.%d", dir, fd);
	f = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (f < 0)
		return -1;
	if (f != fd) {
		if (dup2(f, fd) < 0) {
			close(f);
			return -1;
		}
		close(f);
	}
	if (fstat(fd, &st) < 0)
		return -1;
	own[fd].held = 1;
	own[fd].dev = st.st_dev;
	own[fd].ino = st.st_ino;
	return 0;
}

static void *hostile(void *arg)
{
	const char *dir = arg;
	static const char mine[] = "program\n";
	struct rlimit rl;
	int top = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < FDS_MAX ? (int)rl.rlim_cur
									       : FDS_MAX;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		for (int fd = 3; fd < top; fd++) {
			struct stat st;
			if (fd == 64)
				fd = top - top / 8 > 64 ? top - top / 8 : 64;
			if (own[fd].held) {
				/* still ours? then it gets a line of the program's own */
				if (fstat(fd, &st) < 0 || st.st_dev != own[fd].dev ||
				    st.st_ino != own[fd].ino) {
					char msg[96];
					int n = snprintf(msg, sizeof(msg), "fds_app: descriptor %d "
							 "closed or changed behind its back\n", fd);
					if (churn) /* no one counts after the exit */
						(void)!write(STDERR_FILENO, msg, (size_t)n);
					changed++;
					own[fd].held = 0;
					continue;
				}
				if (write(fd, mine, sizeof(mine) - 1) < 0)
					changed++;
				close(fd);
				own[fd].held = 0;
			} else {
				/* whatever is there (the runtime's, maybe): closed, and the
				 * number taken for a file of the program's */
				close(fd);
				own_file(dir, fd);
			}
		}
	}
	for (int fd = 3; fd < top; fd++)
		if (own[fd].held)
			close(fd);
	return NULL;
}

/* bytes in the program's own files that are not lines it wrote */
static long foreign_bytes(const char *dir)
{
	char path[4096], buf[4096];
	long bad = 0;
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		FILE *f;
		if (strncmp(e->d_name, "own.", 4))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(buf, sizeof(buf), f))
			if (strcmp(buf, "program\n"))
				bad += (long)strlen(buf);
		fclose(f);
	}
	closedir(d);
	return bad;
}

int main(int argc, char **argv)
{
	pthread_t t[8], h;
	int n = argc > 2 ? atoi(argv[2]) : 0;
	const char *dir = getenv("FDS_DIR");

	if (argc < 4 || n < 1 || (n > 8 && strcmp(argv[1], "churn"))) {
		fprintf(stderr, "usage: fds_app nofile|hostile|churn N K\n");
		return 2;
	}
	n_marks = atol(argv[3]);
	ovni_version_check();
	ovni_proc_init(1, "fds-loom", getpid());
	ovni_thread_init(gettid());
	ovni_add_cpu(0, 0);
	test_emit_ohx();
	ovni_mark_type(1, 0, "steps");
	if (!strcmp(argv[1], "nofile")) {
		pthread_barrier_init(&barrier, NULL, (unsigned)n + 1);
		for (int i = 0; i < n; i++)
			if (pthread_create(&t[i], NULL, nofile_worker, NULL) != 0)
				return 2;
		pthread_barrier_wait(&barrier);
		/* the fewest of a few looks: a write of the runtime's opens a descriptor for
		 * a moment */
		int least = count_fds();
		for (int i = 0; i < 20 && least >= 0; i++) {
			int now = count_fds();
			least = now < least ? now : least;
			usleep(2000);
		}
		printf("DESCRIPTORS %d\n", least);
		fflush(stdout);
		pthread_barrier_wait(&barrier);
		for (int i = 0; i < n; i++)
			pthread_join(t[i], NULL);
		printf("OPENED %d\n", opened);
	} else if (!strcmp(argv[1], "hostile") && dir) {
		pthread_barrier_init(&barrier, NULL, (unsigned)n + 1);
		for (int i = 0; i < n; i++)
			if (pthread_create(&t[i], NULL, hostile_worker, NULL) != 0)
				return 2;
		pthread_barrier_wait(&barrier);
		if (pthread_create(&h, NULL, hostile, (void *)dir) != 0)
			return 2;
		pthread_barrier_wait(&barrier);
		__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
		pthread_join(h, NULL);
		pthread_barrier_wait(&barrier);
		for (int i = 0; i < n; i++)
			pthread_join(t[i], NULL);
		printf("FOREIGN %ld\nCLOSED %ld\n", foreign_bytes(dir), changed);
	} else if (!strcmp(argv[1], "churn") && dir) {
		churn = 1;
		if (pthread_create(&h, NULL, hostile, (void *)dir) != 0)
			return 2;
		for (int r = 0; r < n; r++) {
			for (int i = 0; i < 4; i++)
				if (pthread_create(&t[i], NULL, churn_worker, NULL) != 0)
					return 2;
			for (int i = 0; i < 4; i++)
				pthread_join(t[i], NULL);
		}
	} else {
		return 2;
	}
	fflush(stdout);
	test_emit0("OHe");
	report(2);
	ovni_thread_free();
	ovni_proc_fini();
	return 0;
}
