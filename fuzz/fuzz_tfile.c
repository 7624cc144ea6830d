/*
 * fuzz_tfile: the GDB trace file reader (formats/tfile/read_tfile.c) through `flightrec verify/dump/stats`
 * of the file, then its own walk with callbacks that read every block byte and register.
 */
#include "fuzz/fuzz.h"
#include "cli/format.h"
#include "formats/tfile/read_tfile.h"

static volatile unsigned fuzz_sink;

static int on_block(void *arg, const struct tfr_frame *fr, const struct tfr_block *b)
{
	const struct tfr_file *f = arg;
	uint64_t v;

	(void)fr;
	if (b->type == 'M' || b->type == 'R')
		for (uint32_t i = 0; i < b->len; i++)
			fuzz_sink += b->data[i];
	if (b->type == 'R')
		for (unsigned slot = 0; slot < 24; slot++)
			if (tfr_amd64_reg(f, b, slot, &v))
				fuzz_sink += (unsigned)v;
	if (b->type == 'V')
		(void)tfr_find_tsv(f, (uint32_t)b->tsv);
	return 0;
}

static int on_frame(void *arg, const struct tfr_frame *fr)
{
	(void)tfr_find_tp(arg, fr->tpnum);
	for (uint32_t i = 0; fr->blocks && i < fr->size; i++)
		fuzz_sink += fr->blocks[i];
	return 0;
}

void fuzz_target_run(const struct fuzz_template *t, const char *path, size_t f)
{
	struct tfr_file tf;
	struct rd_error err;

	(void)t;
	(void)f;
	fuzz_cli(&cli_format_tfile, path);
	rd_error_clear(&err);
	int r = tfr_open(path, &tf, &err);
	fuzz_check_error(r, &err, "tfr_open");
	if (r == 0) {
		rd_error_clear(&err);
		fuzz_check_error(tfr_walk(&tf, on_frame, on_block, &tf, &err), &err, "tfr_walk");
	}
	tfr_close(&tf); /* also after a failed open: it frees what was parsed */
}
