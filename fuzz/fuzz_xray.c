/*
 * fuzz_xray: the XRay FDR reader (formats/xray/read_xray.c, versions 1 to 5) through `flightrec
 * verify/dump/stats` of the log file, then its record walk over the bytes in memory with a
 * callback that reads every payload byte (so a payload past the end is caught by ASan).
 */
#include "fuzz/fuzz.h"
#include "cli/format.h"
#include "formats/xray/read_xray.h"

#include <stdlib.h>

static int touch(void *ctx, const struct xfr_header *h, const struct xfr_rec *r)
{
	unsigned *sum = ctx;
	(void)h;
	for (size_t i = 0; i < r->payload_len; i++)
		*sum += r->payload[i];
	(void)xfr_kind_name(r->kind);
	(void)xfr_fn_type_name(r->fn_type);
	return 0;
}

void fuzz_target_run(const struct fuzz_template *t, const char *path, size_t f)
{
	struct rd_buf buf;
	struct rd_error err;
	struct xfr_header h;
	struct xfr_counts c;
	volatile unsigned sum = 0;

	(void)f;
	fuzz_cli(&cli_format_xray, path);
	fuzz_cli(&cli_format_xray, t->root); /* the directory form */
	rd_error_clear(&err);
	if (rd_load_file(path, 64u << 20, &buf, 1, 2, &err) < 0)
		return;
	rd_error_clear(&err);
	fuzz_check_error(xfr_walk_buf((const uint8_t *)buf.data, buf.len, path, &h, &c, touch,
				      (void *)&sum, &err),
			 &err, "xfr_walk_buf");
	rd_buf_free(&buf);
}
