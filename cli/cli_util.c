/*
 * cli_util: diagnostics of the flightrec tool (see cli.h for the contract), and the list of
 * trace files a format's PATH stands for.
 *
 * Invariant: errno is read before anything else can change it.
 */
#include "cli/cli.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/common/rd_common.h"

static void vmsg(const char *fmt, va_list ap, int saved_errno)
{
	size_t n = strlen(fmt);

	if (rd_progress.clear) /* the progress line (cli/progress.c) goes first */
		rd_progress.clear();
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

void cli_print_quoted(const void *p, size_t n, char quote)
{
	const unsigned char *b = p;

	putchar(quote);
	for (size_t i = 0; i < n; i++) {
		if (b[i] == (unsigned char)quote || b[i] == '\\')
			printf("\\%c", b[i]);
		else if (b[i] >= 0x20 && b[i] < 0x7f)
			putchar(b[i]);
		else
			printf("\\x%02x", b[i]);
	}
	putchar(quote);
}

unsigned cli_jobs(unsigned jobs)
{
	cpu_set_t set;
	int n;

	if (jobs)
		return jobs;
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 1;
	n = CPU_COUNT(&set);
	return n > 0 ? (unsigned)n : 1;
}

unsigned cli_parse_jobs(const char *arg)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v < 1 || v > 1024)
		return 0;
	return (unsigned)v;
}

bool cli_has_suffix(const char *name, const char *suffix)
{
	size_t n = strlen(name), k = strlen(suffix);

	return n > k && !strcmp(name + n - k, suffix);
}

/* a directory entry that may be a trace: not hidden, and MATCH (if any) accepts its name */
static bool trace_name(const char *name, bool (*match)(const char *name))
{
	return name[0] != '.' && (!match || match(name));
}

char **cli_trace_paths(const char *path, bool (*match)(const char *name),
		       bool (*sniff)(const char *file), const char *what, size_t *n)
{
	struct dirent **names = NULL;
	struct stat st;
	char **v = NULL;
	int k;

	*n = 0;
	if (stat(path, &st) < 0) {
		cli_err("%s:", path);
		return NULL;
	}
	if (!S_ISDIR(st.st_mode)) {
		v = malloc(sizeof(*v));
		if (v && (v[0] = strdup(path))) {
			*n = 1;
			return v;
		}
		free(v);
		return NULL;
	}
	k = scandir(path, &names, NULL, alphasort);
	for (int i = 0; i < k; i++) {
		char *p = rd_path_join(path, names[i]->d_name);
		if (p && trace_name(names[i]->d_name, match) && sniff(p)) {
			char **nv = realloc(v, (*n + 1) * sizeof(*v));
			if (nv) {
				v = nv;
				v[(*n)++] = p;
				p = NULL;
			}
		}
		free(p);
		free(names[i]);
	}
	free(names);
	if (*n == 0)
		cli_err("%s: no %s in this directory", path, what); /* and v is NULL */
	return v;
}

void cli_free_paths(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

bool cli_sniff_traces(const char *path, bool (*match)(const char *name),
		      bool (*sniff)(const char *file))
{
	struct stat st;
	struct dirent *de;
	bool found = false;
	DIR *d;

	if (stat(path, &st) < 0)
		return false;
	if (!S_ISDIR(st.st_mode))
		return sniff(path);
	d = opendir(path);
	while (d && !found && (de = readdir(d))) {
		char *p;
		if (!trace_name(de->d_name, match) || !(p = rd_path_join(path, de->d_name)))
			continue;
		found = sniff(p);
		free(p);
	}
	if (d)
		closedir(d);
	return found;
}
