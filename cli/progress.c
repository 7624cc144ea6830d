/*
 * progress: the progress line of a command that reads a trace for a while, on a terminal
 * only: "flightrec verify: 45% (230 of 512 MB, 1210 MB/s)" on stderr, redrawn at most 4
 * times a second once the command has run FLIGHTREC_PROGRESS_AFTER seconds (default 1), and
 * erased when the command ends or prints an error. Never when stderr is not a terminal
 * (pipes, files, tests), nor for output that goes to the terminal itself (dump to a tty:
 * the records are the progress).
 *
 * Invariants: the readers report bytes through rd_progress (formats/common/rd_common.h), per
 * window read, from any thread: the count is an atomic add and one thread at a time draws
 * (the others skip). While the line is shown, stdout (a terminal too) is fully buffered, so
 * that the results are written after the line is erased, not across it.
 */
#include "cli/progress.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "formats/common/rd_common.h"

static struct {
	const char *what;
	uint64_t total; /* bytes of the trace's files */
	uint64_t done;	/* bytes read (atomic) */
	double start, after, last;
	int drawing; /* a thread is drawing (atomic) */
	bool shown;  /* the line is on the terminal */
} pg;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* the bytes of PATH's regular files, one directory down (a trace's files; not .flightrec/) */
static uint64_t trace_bytes(const char *path)
{
	struct stat st;
	uint64_t sum = 0;
	DIR *d;
	struct dirent *e;

	if (stat(path, &st) != 0)
		return 0;
	if (!S_ISDIR(st.st_mode))
		return S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL) {
		char *p;

		if (e->d_name[0] == '.')
			continue;
		p = rd_path_join(path, e->d_name);
		if (p && stat(p, &st) == 0 && S_ISREG(st.st_mode))
			sum += (uint64_t)st.st_size;
		free(p);
	}
	closedir(d);
	return sum;
}

static void progress_clear(void)
{
	if (!pg.shown)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	pg.shown = false;
}

static void progress_add(uint64_t bytes)
{
	uint64_t done = __atomic_add_fetch(&pg.done, bytes, __ATOMIC_RELAXED);
	double t = now(), secs = t - pg.start;
	unsigned pct;

	if (secs < pg.after || __atomic_exchange_n(&pg.drawing, 1, __ATOMIC_ACQUIRE))
		return;
	if (pg.shown && t - pg.last < 0.25) {
		__atomic_store_n(&pg.drawing, 0, __ATOMIC_RELEASE);
		return;
	}
	/* a file read twice (verify's second pass) goes past the total: 99% until the end */
	pct = pg.total ? (unsigned)(done * 100 / pg.total) : 0;
	if (pct > 99)
		pct = 99;
	fprintf(stderr, "\rflightrec %s: %u%% (%llu of %llu MB, %.0f MB/s)\033[K", pg.what, pct,
		(unsigned long long)(done >> 20), (unsigned long long)(pg.total >> 20),
		secs > 0 ? (double)done / secs / 1e6 : 0.0);
	fflush(stderr);
	pg.shown = true;
	pg.last = t;
	__atomic_store_n(&pg.drawing, 0, __ATOMIC_RELEASE);
}

void cli_progress_begin(const char *what, const char *path, bool stdout_is_output)
{
	const char *env = getenv("FLIGHTREC_PROGRESS_AFTER");

	if (!isatty(STDERR_FILENO))
		return;
	if (stdout_is_output && isatty(STDOUT_FILENO))
		return;
	memset(&pg, 0, sizeof(pg));
	pg.what = what;
	pg.total = trace_bytes(path);
	pg.after = 1.0;
	if (env && *env) {
		char *end;
		double v = strtod(env, &end);
		if (!*end && v >= 0)
			pg.after = v;
	}
	pg.start = now();
	if (isatty(STDOUT_FILENO))
		setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	rd_progress.clear = progress_clear;
	rd_progress.add = progress_add;
}

void cli_progress_end(void)
{
	rd_progress.add = NULL;
	rd_progress.clear = NULL;
	progress_clear();
	fflush(stdout);
}
