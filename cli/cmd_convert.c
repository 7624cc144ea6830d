/*
 * cmd_convert: `flightrec convert [--to=FORMAT] [-o OUT] PATH`.
 *
 * Role: recognise PATH's format, and stream its function entries and exits, instants and
 * counters (formats/common/conv.h) into a viewer's format: Chrome trace-event JSON,
 * speedscope's JSON, or folded stacks. A trace with nothing but instants and counters
 * (Cacheray) is refused, before anything is written, by a format that holds only frames.
 * OUT is written as OUT.tmp and renamed when complete, so a failed conversion never leaves
 * half a file under the name asked for.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "cli/format.h"
#include "formats/common/conv.h"

static const char usage[] =
	"usage: flightrec convert [--to=chrome|speedscope|folded|uftrace] [-o OUT] [-m FILE] PATH\n"
	"  Convert the trace at PATH for a viewer, streaming: memory grows with the distinct\n"
	"  functions and call stacks, not with the events. Frames a trace leaves open (lost\n"
	"  events, a thread that never returned) end at their thread's last time.\n"
	"  --to=F          chrome: Chrome trace-event JSON (Perfetto, chrome://tracing; the\n"
	"                  default); speedscope: speedscope's JSON, one evented profile per\n"
	"                  thread; folded: folded stacks for flame graphs, weighted by self time\n"
	"                  in ns; uftrace: a uftrace.data directory (-o DIR), each function\n"
	"                  named in DIR/EXE.sym (EXE: -m's file, else PATH)\n"
	"  -o, --output=OUT  the file to write (default: standard output)\n"
	"  -m, --instr-map=FILE  XRay: the executable (or llvm-xray's YAML map) that names\n"
	"                  the function ids (default: LOG.yaml beside the log, if any)\n"
	"PATH is a uftrace.data directory, an XRay log (or a directory of them), a Chrome\n"
	"trace, an ovni trace (thread and CPU tracks) or a Cacheray trace (accesses per\n"
	"thread, chrome only); a GDB trace says it cannot be converted yet. Instants and\n"
	"counters, which speedscope and folded cannot hold, are left out and counted.\n"
	"Exit status: 0 converted, 1 a trace that cannot be read (what could be read is\n"
	"converted) or OUT that cannot be written, 2 usage or a trace F cannot hold.\n";

/* DIR and what a directory writer put in it (files only) removed */
static void convert_rmdir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (d) {
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
	}
	rmdir(dir);
}

/* --to=uftrace: OUT.tmp made, written, renamed OUT; removed on any failure */
static int convert_dir(const struct cli_format *fmt, const struct conv_writer *wr,
		       const char *path, const char *outpath, const struct cli_convert_opts *o,
		       struct conv_stream *cs)
{
	size_t n = strlen(outpath) + 5;
	char *tmp = malloc(n);
	int ret;

	if (!tmp) {
		cli_err("convert: out of memory");
		return CLI_BAD_TRACE;
	}
	snprintf(tmp, n, "%s.tmp", outpath);
	if (mkdir(tmp, 0755) < 0) {
		cli_err("convert: cannot create the directory %s:", tmp);
		free(tmp);
		return CLI_BAD_TRACE;
	}
	if (conv_open_dir(cs, wr, tmp, o->instr_map ? o->instr_map : path) < 0) {
		cli_err("convert: cannot open %s:", tmp);
		convert_rmdir(tmp);
		free(tmp);
		return CLI_BAD_TRACE;
	}
	ret = fmt->convert(path, o, cs);
	if (conv_finish(cs) < 0) {
		cli_err("convert: cannot write %s:", tmp);
		ret = CLI_BAD_TRACE;
		convert_rmdir(tmp);
	} else if (rename(tmp, outpath) < 0) {
		cli_err("convert: cannot rename %s to %s:", tmp, outpath);
		ret = CLI_BAD_TRACE;
		convert_rmdir(tmp);
	}
	free(tmp);
	return ret;
}

int cmd_convert(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "to", required_argument, NULL, 't' },
		{ "output", required_argument, NULL, 'o' },
		{ "instr-map", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct conv_writer *wr = &conv_chrome;
	const struct cli_format *fmt;
	const char *outpath = NULL;
	struct cli_convert_opts copts = { 0 };
	char *tmp = NULL;
	struct conv_stream cs;
	FILE *out = stdout;
	int c, ret, wret;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "ho:m:", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			wr = conv_writer_find(optarg);
			if (!wr)
				return cli_usage_error(usage, "convert: no format '%s' to convert to",
						       optarg);
			break;
		case 'o':
			outpath = strcmp(optarg, "-") ? optarg : NULL;
			break;
		case 'm':
			copts.instr_map = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return CLI_OK;
		default:
			return cli_usage_error(usage, "convert: unknown option '%s'",
					       argv[optind - 1]);
		}
	}
	if (argc - optind != 1)
		return cli_usage_error(usage, "convert: expected one PATH");
	fmt = cli_format_detect(argv[optind]);
	if (fmt == NULL)
		return CLI_BAD_TRACE;
	if (!fmt->convert) {
		cli_err("convert: %s (%s) cannot be converted yet", argv[optind], fmt->what);
		return CLI_BAD_TRACE;
	}
	if (fmt->convert_points && !conv_holds_points(wr)) {
		/* an empty profile would say nothing: refuse with the reason */
		cli_err("convert: %s (%s): %s; %s holds only timed frames: use --to=chrome",
			argv[optind], fmt->what, fmt->convert_points, wr->name);
		return CLI_USAGE;
	}
	if (wr->open_dir && !outpath)
		return cli_usage_error(usage, "convert: --to=%s writes a directory: -o DIR",
				       wr->name);
	cli_progress_begin("convert", argv[optind], !outpath);
	if (wr->open_dir) {
		ret = convert_dir(fmt, wr, argv[optind], outpath, &copts, &cs);
		goto said;
	}
	if (outpath) {
		size_t n = strlen(outpath) + 5;
		tmp = malloc(n);
		if (!tmp) {
			cli_progress_end();
			cli_err("convert: out of memory");
			return CLI_BAD_TRACE;
		}
		snprintf(tmp, n, "%s.tmp", outpath);
		out = fopen(tmp, "w");
		if (!out) {
			cli_progress_end();
			cli_err("convert: cannot create %s:", tmp);
			free(tmp);
			return CLI_BAD_TRACE;
		}
	}
	if (conv_open(&cs, wr, out, argv[optind]) < 0) {
		cli_err("convert: out of memory");
		ret = CLI_BAD_TRACE;
		wret = -1;
	} else {
		ret = fmt->convert(argv[optind], &copts, &cs);
		wret = conv_finish(&cs);
	}
	if (fflush(out) != 0)
		wret = -1;
	if (outpath) {
		if (fclose(out) != 0)
			wret = -1;
		if (wret < 0 || rename(tmp, outpath) < 0) {
			cli_err("convert: cannot write %s:", wret < 0 ? tmp : outpath);
			unlink(tmp);
			ret = CLI_BAD_TRACE;
		}
		free(tmp);
	} else if (wret < 0) {
		cli_err("convert: cannot write the standard output:");
		ret = CLI_BAD_TRACE;
	}
said:
	cli_progress_end();
	if (cs.left_out)
		fprintf(stderr,
			"flightrec: convert: %llu instants and counter samples left out: %s holds "
			"only frames (--to=chrome holds them)\n",
			(unsigned long long)cs.left_out, wr->name);
	if (cs.dropped_exits || cs.closed_at_end)
		fprintf(stderr,
			"flightrec: convert: %llu exits without their entry left out, %llu frames "
			"ended at their thread's last time\n",
			(unsigned long long)cs.dropped_exits, (unsigned long long)cs.closed_at_end);
	return ret;
}
