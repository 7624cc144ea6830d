/*
 * cli_util: diagnostics of the flightrec tool (see cli.h for the contract).
 *
 * Invariant: errno is read before anything else can change it.
 */
#include "cli/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

static void vmsg(const char *fmt, va_list ap, int saved_errno)
{
	size_t n = strlen(fmt);

	fputs("flightrec: ", stderr);
	vfprintf(stderr, fmt, ap);
	if (n > 0 && fmt[n - 1] == ':')
		fprintf(stderr, " %s", strerror(saved_errno));
	fputc('\n', stderr);
}

void cli_err(const char *fmt, ...)
{
	int saved_errno = errno;
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap, saved_errno);
	va_end(ap);
}

int cli_usage_error(const char *usage, const char *fmt, ...)
{
	int saved_errno = errno;
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap, saved_errno);
	va_end(ap);
	fputs(usage, stderr);
	return CLI_USAGE;
}
