/*
 * fuzz_uftrace: the uftrace.data reader (readers/uftrace_*.c) and the runtime's counters
 * (readers/rtstats.c), through `flightrec verify/dump/stats` of a whole directory, then the
 * parser of the file that was replaced, alone (strict and lenient), so a file is fuzzed past
 * an earlier file's error too.
 */
#include "fuzz/fuzz.h"
#include "cli/format.h"
#include "readers/rtstats.h"
#include "readers/uftrace_reader.h"

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

	rd_error_clear(&err);
	if (rd_load_file(path, 64u << 20, &buf, 1, 2, &err) < 0)
		return;
	rd_error_clear(&err);
	if (!strcmp(name, "info")) {
		struct ufr_info info;
		memset(&info, 0, sizeof(info));
		(void)ufr_info_parse(buf.data, buf.len, path, &info, &err);
		ufr_info_free(&info);
	} else if (!strcmp(name, "task.txt")) {
		for (int lenient = 0; lenient < 2; lenient++) {
			struct ufr_tasks tasks = { 0 };
			rd_error_clear(&err);
			(void)ufr_tasks_parse(buf.data, buf.len, path, lenient, &tasks, &err);
			ufr_tasks_free(&tasks);
		}
	} else if (ends_with(name, ".map")) {
		for (int lenient = 0; lenient < 2; lenient++) {
			struct ufr_map map = { 0 };
			rd_error_clear(&err);
			if (ufr_map_parse(buf.data, buf.len, path, lenient, &map, &err) == 0)
				(void)ufr_map_find(&map, 0x555555555260ull);
			ufr_map_free(&map);
		}
	} else if (ends_with(name, ".sym")) {
		for (int lenient = 0; lenient < 2; lenient++) {
			struct ufr_symtab tab = { 0 };
			rd_error_clear(&err);
			if (ufr_sym_parse(buf.data, buf.len, path, lenient, &tab, &err) == 0)
				(void)ufr_sym_find(&tab, 0x1260);
			ufr_sym_free(&tab);
		}
	} else if (ends_with(name, ".dat")) {
		struct ufr_check_cfg cfg = { .forked = true };
		struct ufr_counts c;
		(void)ufr_check_buffer(buf.data, buf.len, false, 0, NULL, &c, &err);
		rd_error_clear(&err);
		(void)ufr_check_buffer(buf.data, buf.len, true, UFR_FEAT_ARGUMENT | UFR_FEAT_RETVAL,
				       &cfg, &c, &err);
	} else if (!strncmp(name, "stats.", 6)) {
		struct rts_proc p;
		(void)rts_parse(buf.data, buf.len, path, &p, &err);
	}
	rd_buf_free(&buf);
}
