/*
 * fuzz_salvage: `flightrec salvage` (librecord/rec_salvage*.c) on a trace directory whose
 * ring files (.flightrec/ring.<pid>.<tid>) or native files are damaged, then the reader on
 * what salvage left (uftrace.data, XRay logs, GDB trace files). Salvage changes the directory, so the whole template is copied again
 * after each input.
 */
#include "fuzz/fuzz.h"
#include "cli/format.h"
#include "cli/salvage.h"

#include <stdio.h>

__attribute__((constructor)) static void fuzz_salvage_init(void)
{
	fuzz_restore_all = true;
}

void fuzz_target_run(const struct fuzz_template *t, const char *path, size_t f)
{
	(void)path;
	(void)f;
	(void)cli_salvage(t->root, NULL, stdout, true, true, false, NULL); /* dry run first */
	(void)cli_salvage(t->root, "prog --fuzz", stdout, true, false, false, NULL);
	fuzz_cli(&cli_format_uftrace, t->root);
	fuzz_cli(&cli_format_xray, t->root);
	fuzz_cli(&cli_format_tfile, t->root);
}
