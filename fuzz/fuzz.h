/*
 * fuzz.h: what the libFuzzer targets of fuzz/ share (fuzz_common.c).
 *
 * Every target fuzzes one reader the way a user reaches it: through the flightrec command's
 * own functions (verify, dump, stats of the format's cli_format entry; salvage), on real files.
 * It starts from template traces: FUZZ_TEMPLATES (set by fuzz/run) names a directory holding
 * one sub-directory per template (a real trace: a uftrace.data directory, an XRay log, ...),
 * copied at start-up into a private work directory under /dev/shm.
 *
 * An input is [template][file][content...]: byte 0 picks a template (modulo their number),
 * byte 1 one of its regular files (modulo; files sorted by path), and the rest replaces that
 * file's content. The target runs the reader on the template, then the file is put back. So
 * the seeds (fuzz/run writes one per template file) are real traces, and libFuzzer's mutations
 * land on one file at a time, with the rest of the trace intact and consistent.
 */
#ifndef FLIGHTREC_FUZZ_H
#define FLIGHTREC_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fuzz_template {
	char *name;   /* its directory name under FUZZ_TEMPLATES */
	char *root;   /* the work copy */
	char **files; /* relative paths of its regular files, sorted */
	uint8_t **data; /* their original contents */
	size_t *len;
	size_t nfiles;
};

/* The target's part: run the reader on template T, whose file F (relative path) now holds the
 * fuzzed content; PATH is root/F. */
void fuzz_target_run(const struct fuzz_template *t, const char *path, size_t f);

/* Set by a target that changes the work copy (salvage): the whole template is copied again
 * after each input instead of one file being put back. */
extern bool fuzz_restore_all;

/* "dir/name" in a static buffer (the targets are single-threaded) */
const char *fuzz_join(const char *dir, const char *name);

struct rd_error;
/* A reader that failed (RET < 0) must say which file, where and which rule: abort (a fuzz
 * failure) when ERR has no rule, no file name or no message. */
void fuzz_check_error(int ret, const struct rd_error *err, const char *what);

struct cli_format;
/* the flightrec commands on PATH as FMT reads it: sniff, verify, dump (plain, --offsets,
 * --headers), stats (plain, --calls), and the format detection of every command */
void fuzz_cli(const struct cli_format *fmt, const char *path);

#endif
