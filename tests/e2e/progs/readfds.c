/*
 * readfds.c - a program that leans on its own descriptor table while rd_work is traced with
 * read= (tests/e2e/run's filter/read-fds): the runtime must hold no descriptor in it across
 * the program's code, nor take a number the program is given.
 * - "pipe": calls rd_work, closes 3..63 (its closefrom(3)), makes a pipe, writes 37 bytes into
 *   it, calls rd_work again, then reads the pipe: it must get its 37 bytes back.
 * - "nofile": RLIMIT_NOFILE 16, 6 threads each call rd_work then open /dev/null at once: all 6
 *   must succeed, as untraced.
 * - "statm": a thread calls rd_work in a loop while the main thread, all its descriptors
 *   closed (the daemon's close-everything), opens /dev/null over and over: each open must
 *   give 0, the lowest free number, never another (one of ours held 0 meanwhile).
 * Prints one line saying what it saw; stdout is kept at a high number in "statm".
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "e2e.h"

E2E_SINK_DEFINE;

FN void rd_work(int x)
{
	e2e_sink += x;
}

static int rd_pipe(void)
{
	int p[2];
	char buf[64] = { 0 };
	ssize_t n;

	rd_work(1);
	for (int fd = 3; fd < 64; fd++)
		close(fd);
	if (pipe(p) < 0)
		return 1;
	if (write(p[1], "0123456789abcdefghijklmnopqrstuvwxyz\n", 37) != 37)
		return 1;
	rd_work(2);
	n = read(p[0], buf, sizeof(buf) - 1);
	printf("pipe: read %zd bytes\n", n);
	return 0;
}

#define RD_N 6
static pthread_barrier_t rd_bar;
static int rd_opened;
static pthread_mutex_t rd_lock = PTHREAD_MUTEX_INITIALIZER;

static void *rd_thr(void *a)
{
	int fd;

	(void)a;
	rd_work(3);
	pthread_barrier_wait(&rd_bar);
	fd = open("/dev/null", O_RDONLY);
	pthread_mutex_lock(&rd_lock);
	rd_opened += fd >= 0;
	pthread_mutex_unlock(&rd_lock);
	pthread_barrier_wait(&rd_bar);
	return NULL;
}

static int rd_nofile(void)
{
	struct rlimit rl = { 16, 16 };
	pthread_t t[RD_N];

	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1;
	pthread_barrier_init(&rd_bar, NULL, RD_N);
	for (int i = 0; i < RD_N; i++)
		pthread_create(&t[i], NULL, rd_thr, NULL);
	for (int i = 0; i < RD_N; i++)
		pthread_join(t[i], NULL);
	printf("nofile: %d of %d opened\n", rd_opened, RD_N);
	return 0;
}

static volatile int rd_stop;

static void *rd_loop(void *a)
{
	(void)a;
	while (!rd_stop)
		rd_work(4);
	return NULL;
}

static int rd_statm(void)
{
	int out = dup2(1, 900), other = 0, n = 0;
	pthread_t t;
	struct timespec t0, now;
	char line[64];

	if (out < 0 || pthread_create(&t, NULL, rd_loop, NULL) != 0)
		return 1;
	for (int fd = 0; fd < 900; fd++)
		close(fd);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		int fd = open("/dev/null", O_RDONLY);

		other += fd != 0;
		if (fd >= 0)
			close(fd);
		n++;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - t0.tv_sec) * 1000000000L + now.tv_nsec - t0.tv_nsec < 500000000L);
	rd_stop = 1;
	pthread_join(t, NULL);
	snprintf(line, sizeof(line), "statm: %d of %d opens not at 0\n", n ? other : -1, n);
	if (write(out, line, strlen(line)) < 0)
		return 1;
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (!strcmp(mode, "pipe"))
		return rd_pipe();
	if (!strcmp(mode, "nofile"))
		return rd_nofile();
	if (!strcmp(mode, "statm"))
		return rd_statm();
	fprintf(stderr, "readfds: pipe, nofile or statm\n");
	return 2;
}
