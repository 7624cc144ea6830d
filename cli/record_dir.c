/*
 * record_dir: prepare and summarise the output directory of `flightrec record`
 * (see record_dir.h for the rules).
 */
#include "cli/record_dir.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "formats/common/rd_common.h"
#include "formats/common/rtstats.h"
#include "formats/uftrace/read_uftrace.h"

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n > k && !strcmp(s + n - k, suffix);
}

/* a name a uftrace or flightrec recording writes */
static bool trace_entry(const char *name)
{
	static const char *const names[] = { "info",	   "task.txt",	    "default.opts",
					     "kallsyms",   "kernel_header", ".channel",
					     ".flightrec", "ovni" };
	static const char *const suffixes[] = { ".dat", ".map",	  ".sym", ".dbg",  ".txt",
						".trace", ".tf", ".gdb", ".json", ".yaml" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
		if (has_suffix(name, suffixes[i]))
			return true;
	/* the XRay runtime's FDR logs */
	return !strncmp(name, "xray-log.", 9);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if ((flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT) {
		cli_err("cannot remove %s:", path);
		return -1;
	}
	return 0;
}

int recdir_prepare(const char *dir)
{
	bool empty = true, marker = false, foreign = false;
	const char *foreign_name = NULL;
	struct dirent *de;
	struct stat st;
	DIR *dp;

	if (stat(dir, &st) < 0) {
		if (errno != ENOENT) {
			cli_err("%s:", dir);
			return -1;
		}
		if (mkdir(dir, 0755) < 0) {
			cli_err("cannot create %s:", dir);
			return -1;
		}
		return 0;
	}
	if (!S_ISDIR(st.st_mode)) {
		cli_err("%s exists and is not a directory: not overwriting it", dir);
		return -1;
	}
	dp = opendir(dir);
	if (dp == NULL) {
		cli_err("%s:", dir);
		return -1;
	}
	while ((de = readdir(dp)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		empty = false;
		if (!strcmp(de->d_name, ".flightrec") || !strcmp(de->d_name, "info"))
			marker = true;
		if (!trace_entry(de->d_name) && !foreign) {
			foreign = true;
			foreign_name = strdup(de->d_name);
		}
	}
	closedir(dp);
	if (empty)
		return 0;
	if (!marker || foreign) {
		if (foreign)
			cli_err("%s is not empty and holds '%s', which no trace has: not removing it "
				"(choose another -d DIR)",
				dir, foreign_name ? foreign_name : "?");
		else
			cli_err("%s is not empty and does not look like a trace (no 'info' nor "
				"'.flightrec'): not removing it (choose another -d DIR)",
				dir);
		free((void *)foreign_name);
		return -1;
	}

	/* a previous trace: empty the directory (it may be a symlink the user keeps) */
	dp = opendir(dir);
	if (dp == NULL) {
		cli_err("%s:", dir);
		return -1;
	}
	while ((de = readdir(dp)) != NULL) {
		char *path;
		int ret;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		path = rd_path_join(dir, de->d_name);
		if (path == NULL) {
			closedir(dp);
			cli_err("out of memory");
			return -1;
		}
		ret = nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		free(path);
		if (ret != 0) {
			closedir(dp);
			return -1;
		}
	}
	closedir(dp);
	return 0;
}

/* without the runtime's counters: count what the .dat files hold */
static void scan_dat_files(const char *dir, struct recdir_summary *s)
{
	struct dirent *de;
	DIR *dp = opendir(dir);

	if (dp == NULL)
		return;
	while ((de = readdir(dp)) != NULL) {
		struct ufr_dat_iter it;
		struct ufr_rec rec;
		struct rd_error err;
		char *path;
		int64_t size;

		if (ufr_dat_file_tid(de->d_name) == 0)
			continue;
		path = rd_path_join(dir, de->d_name);
		if (path == NULL)
			break;
		size = rd_file_size(path);
		if (size >= 0) {
			s->threads++;
			s->bytes += (uint64_t)size;
		}
		rd_error_clear(&err);
		/* plain 16-byte records: a payload or a broken record ends the count */
		if (ufr_dat_iter_open(&it, path, false, 0, &err) == 0) {
			while (ufr_dat_next(&it, &rec, &err) > 0) {
				if (rec.type == UFR_LOST)
					s->lost += rec.addr;
				else
					s->events++;
			}
			ufr_dat_iter_close(&it);
		}
		free(path);
	}
	closedir(dp);
}

void recdir_summarize(const char *dir, struct recdir_summary *s)
{
	struct rts_set set;
	struct rd_error err;

	memset(s, 0, sizeof(*s));
	rd_error_clear(&err);
	if (rts_load(dir, &set, &err) == 0 && set.nr > 0) {
		for (size_t i = 0; i < set.nr; i++) {
			s->threads += set.procs[i].threads;
			s->events += set.procs[i].events;
			s->bytes += set.procs[i].bytes;
			s->lost += rts_lost(&set.procs[i]);
		}
		s->from_runtime = 1;
		rts_free(&set);
		return;
	}
	if (rd_error_isset(&err))
		rd_error_print(stderr, &err);
	scan_dat_files(dir, s);
}
