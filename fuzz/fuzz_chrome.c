/*
 * fuzz_chrome: the Chrome trace event JSON reader (formats/chrome/read_chrome.c, over
 * formats/common/rd_json.c) through `flightrec verify/dump/stats` of the file, then its event walk
 * with a callback that reads every event's name.
 */
#include "fuzz/fuzz.h"
#include "cli/format.h"
#include "formats/chrome/read_chrome.h"

#include <string.h>

static int touch(void *ctx, const struct ctr_event *ev)
{
	unsigned *sum = ctx;
	if (ev->name)
		*sum += (unsigned)strlen(ev->name);
	*sum += (unsigned)ev->pid + (unsigned)ev->tid + (unsigned char)ev->ph;
	return 0;
}

void fuzz_target_run(const struct fuzz_template *t, const char *path, size_t f)
{
	struct rd_error err;
	struct ctr_counts c;
	unsigned sum = 0;

	(void)t;
	(void)f;
	fuzz_cli(&cli_format_chrome, path);
	rd_error_clear(&err);
	memset(&c, 0, sizeof(c));
	fuzz_check_error(ctr_walk(path, &c, touch, &sum, &err), &err, "ctr_walk");
	/* the sum goes nowhere; volatile keeps the reads */
	*(volatile unsigned *)&sum = sum;
}
