/*
 * reccli.c - the program of the `flightrec record` command-line cases (record-cli/... in
 * tests/e2e/run): not one of the count-compared programs, so it has no .expect file.
 *
 *   reccli busy MS          calls rc_tick() for MS milliseconds, then prints "ticks N"
 *   reccli daemon MS FILE   calls rc_parent() once, daemon(1, 0)s, and the daemon child calls
 *                           rc_tick() for MS milliseconds, then writes "N\n" to FILE (through
 *                           FILE.tmp and a rename, so FILE is whole when it appears) and exits
 * Every run first calls rc_early() once from the program's .preinit_array, before libc has
 * set `environ` (the first hook then starts the session: uftrace's t119-t121 do this).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "e2e.h"

E2E_SINK_DEFINE;

FN void rc_tick(void)
{
	e2e_sink++;
}

FN void rc_parent(void)
{
	e2e_sink += 2;
}

FN void rc_early(void)
{
	e2e_sink += 3;
}

NOTRACE static void preinit(void)
{
	rc_early();
}

__attribute__((used, section(".preinit_array"))) static void (*const rc_preinit[])(void) = {
	preinit,
};

NOTRACE static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* rc_tick() for MS milliseconds; the number of calls */
NOTRACE static long busy(long ms)
{
	double end = now_ms() + ms;
	long n = 0;

	do {
		for (int i = 0; i < 1000; i++, n++)
			rc_tick();
	} while (now_ms() < end);
	return n;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "busy")) {
		printf("ticks %ld\n", busy(atol(argv[2])));
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "daemon")) {
		char tmp[4096];
		FILE *f;
		long n;

		rc_parent();
		if (daemon(1, 0) < 0) {
			perror("daemon");
			return 1;
		}
		n = busy(atol(argv[2]));
		snprintf(tmp, sizeof(tmp), "%s.tmp", argv[3]);
		f = fopen(tmp, "w");
		if (f == NULL || fprintf(f, "%ld\n", n) < 0 || fclose(f) != 0 ||
		    rename(tmp, argv[3]) < 0)
			return 1;
		return 0;
	}
	fprintf(stderr, "usage: reccli busy MS | reccli daemon MS FILE\n");
	return 2;
}
