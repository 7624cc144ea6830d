/*
 * fuzz_uftrace: the uftrace.data reader (formats/uftrace/read_*.c) and the runtime's counters
 * (formats/common/rtstats.c), through `flightrec verify/dump/stats` of a whole directory, then the
 * parser of the file that was replaced, alone (strict and lenient), so a file is fuzzed past
 * an earlier file's error too.
 */
#include "fuzz/fuzz.h"
#include "cli/format.h"
#include "formats/common/rtstats.h"
#include "formats/uftrace/read_uftrace.h"

#include <stdlib.h>
#include <string.h>

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !strcmp(s + n - k, suffix);
}

void fuzz_target_run(const struct fuzz_template *t, const char *path, size_t f)
{
	const char *name = strrchr(t->files[f], '/');
	struct rd_buf buf;
	struct rd_error err;

	name = name ? name + 1 : t->files[f];
	fuzz_cli(&cli_format_uftrace, t->root);
	/* the whole directory, strict then lenient, through the reader's API */
	for (int flags = 0; flags <= UFR_OPEN_LENIENT; flags += UFR_OPEN_LENIENT) {
		struct ufr_data *d = NULL;
		struct ufr_counts total;
		int r;
		rd_error_clear(&err);
		r = ufr_open(t->root, flags, &d, &err);
		fuzz_check_error(r, &err, "ufr_open");
		if (d) {
			rd_error_clear(&err);
			fuzz_check_error(ufr_verify(d, &total, &err), &err, "ufr_verify");
			ufr_close(d);
		}
	}

	rd_error_clear(&err);
	if (rd_load_file(path, 64u << 20, &buf, 1, 2, &err) < 0)
		return;
	rd_error_clear(&err);
	if (!strcmp(name, "info")) {
		struct ufr_info info;
		memset(&info, 0, sizeof(info));
		fuzz_check_error(ufr_info_parse(buf.data, buf.len, path, &info, &err), &err,
				 "ufr_info_parse");
		ufr_info_free(&info);
	} else if (!strcmp(name, "task.txt")) {
		for (int lenient = 0; lenient < 2; lenient++) {
			struct ufr_tasks tasks = { 0 };
			rd_error_clear(&err);
			fuzz_check_error(ufr_tasks_parse(buf.data, buf.len, path, lenient, &tasks, &err),
					 &err, "ufr_tasks_parse");
			ufr_tasks_free(&tasks);
		}
	} else if (ends_with(name, ".map")) {
		for (int lenient = 0; lenient < 2; lenient++) {
			struct ufr_map map = { 0 };
			rd_error_clear(&err);
			int r = ufr_map_parse(buf.data, buf.len, path, lenient, &map, &err);
			fuzz_check_error(r, &err, "ufr_map_parse");
			if (r == 0)
				(void)ufr_map_find(&map, 0x555555555260ull);
			ufr_map_free(&map);
		}
	} else if (ends_with(name, ".sym")) {
		for (int lenient = 0; lenient < 2; lenient++) {
			struct ufr_symtab tab = { 0 };
			rd_error_clear(&err);
			int r = ufr_sym_parse(buf.data, buf.len, path, lenient, &tab, &err);
			fuzz_check_error(r, &err, "ufr_sym_parse");
			if (r == 0)
				(void)ufr_sym_find(&tab, 0x1260);
			ufr_sym_free(&tab);
		}
	} else if (ends_with(name, ".dat")) {
		struct ufr_check_cfg cfg = { .forked = true };
		struct ufr_counts c;
		fuzz_check_error(ufr_check_buffer(buf.data, buf.len, false, 0, NULL, &c, &err), &err,
				 "ufr_check_buffer");
		rd_error_clear(&err);
		fuzz_check_error(ufr_check_buffer(buf.data, buf.len, true,
						  UFR_FEAT_ARGUMENT | UFR_FEAT_RETVAL, &cfg, &c, &err),
				 &err, "ufr_check_buffer");
	} else if (!strncmp(name, "stats.", 6)) {
		struct rts_proc p;
		fuzz_check_error(rts_parse(buf.data, buf.len, path, &p, &err), &err, "rts_parse");
		rts_proc_free(&p);
	}
	rd_buf_free(&buf);
}
