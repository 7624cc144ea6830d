/*
 * format: the table of trace formats and the sniffing that picks one for a path.
 *
 * Invariant: formats are tried in table order and the first whose sniff() accepts the path
 * wins, so a more specific format goes before a more general one.
 */
#include "cli/format.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"

static const struct cli_format *const formats[] = {
	&cli_format_uftrace,
	&cli_format_xray,
	&cli_format_ovni,
	&cli_format_cacheray,
	&cli_format_tfile,
	&cli_format_chrome,
};

const struct cli_format *cli_format_detect(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		cli_err("%s:", path);
		return NULL;
	}
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (formats[i]->sniff(path))
			return formats[i];

	if (S_ISDIR(st.st_mode))
		cli_err("%s: not a trace this tool reads (a uftrace.data directory has an 'info' "
			"and a 'task.txt' file)",
			path);
	else
		cli_err("%s: not a trace this tool reads (expected %s)", path,
			cli_format_uftrace.what);
	return NULL;
}
