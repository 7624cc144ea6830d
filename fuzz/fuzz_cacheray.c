/*
 * fuzz_cacheray: the Cacheray trace reader (formats/cacheray/read_cacheray.c) through `flightrec
 * verify/dump/stats` of the trace file, then its record walk over the bytes in memory with a
 * callback that reads every name byte.
 */
#include "fuzz/fuzz.h"
#include "cli/format.h"
#include "formats/cacheray/read_cacheray.h"

static int touch(void *ctx, const struct crt_rec *r)
{
	unsigned *sum = ctx;
	for (uint32_t i = 0; i < r->name_len; i++)
		*sum += r->name[i];
	(void)crt_kind_name(r->kind);
	return 0;
}

void fuzz_target_run(const struct fuzz_template *t, const char *path, size_t f)
{
	struct rd_buf buf;
	struct rd_error err;
	struct crt_counts c;
	volatile unsigned sum = 0;

	(void)f;
	(void)t;
	fuzz_cli(&cli_format_cacheray, path);
	rd_error_clear(&err);
	if (rd_load_file(path, 64u << 20, &buf, 1, 2, &err) < 0)
		return;
	rd_error_clear(&err);
	fuzz_check_error(crt_walk_buf((const uint8_t *)buf.data, buf.len, path, &c, touch,
				      (void *)&sum, &err),
			 &err, "crt_walk_buf");
	rd_buf_free(&buf);
}
