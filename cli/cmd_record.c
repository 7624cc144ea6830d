/*
 * cmd_record: `flightrec record [-d DIR] [--hook=TYPE] [--] PROG [ARGS...]`.
 *
 * Role: run PROG with the recording runtime its instrumentation needs LD_PRELOADed, then
 * summarise what was recorded. Steps:
 *   1. find PROG like execvp does (a name with '/' is used as is, else each $PATH entry);
 *   2. pick the runtime from PROG's ELF symbols (hook_detect.c), or --hook; a statically
 *      linked PROG is refused (LD_PRELOAD cannot reach it), and so is one whose exec is
 *      AT_SECURE (set-user-ID, set-group-ID, file capabilities: ld.so ignores LD_PRELOAD);
 *   3. find the runtime next to this binary: dirname(realpath(/proc/self/exe))/../lib/flightrec/
 *      (build/bin -> build/lib in the tree, PREFIX/bin -> PREFIX/lib once installed);
 *   4. prepare DIR (record_dir.c: locked for the whole record, then created, or a previous
 *      trace of ours emptied, or refused);
 *   5. FLIGHTREC_DIR=<absolute DIR>, LD_PRELOAD=<runtime>[:<previous LD_PRELOAD>], fork, exec;
 *      the options meant for the runtime go as its variables (--format: FLIGHTREC_FORMAT; the
 *      record-time filters and triggers -F/-N/-T/-C/-D/-t/-Z/--match/--disable/--signal/
 *      --max-stack: FLIGHTREC_FILTER/_TRIGGER/_CALLER/_DEPTH/_TIME_FILTER/_MIN_SIZE/_MATCH/
 *      _DISABLED/_SIGNAL/_MAX_STACK (-H is checked, then dropped, as uftrace record does),
 *      checked first with the runtime's own parser, libmcount/mcount_filter.c; -A/-R:
 *      FLIGHTREC_ARGUMENT/_RETVAL, checked with libmcount/mcount_argspec.c);
 *   6. wait, forwarding SIGINT/SIGTERM/SIGHUP sent to flightrec itself to the child (a signal
 *      the terminal sends reaches the child directly, as it is in the same process group, so
 *      kernel-generated ones are not sent twice);
 *      then, as PROG's subreaper, wait for every process it left that holds the runtime (a
 *      daemon() child), until the last one is gone or such a signal comes;
 *   7. if PROG died by a signal, or any process left ring files (it died without finishing),
 *      salvage DIR (cmd_salvage.c) and print its summary line;
 *   8. one line on stderr:
 *        flightrec: recorded N threads, N events, N bytes, N lost in X.XXX s -> DIR
 *      from the runtime's .flightrec/stats.<pid> files (else from scanning the .dat files);
 *      (DIR/default.opts is written before PROG runs, as uftrace record writes it: "-t TIME"
 *      or empty, for uftrace's analysis commands);
 *   9. list what DIR holds in DIR/.flightrec/record.list (record_dir.c: what the next record
 *      may remove), and exit with PROG's status (128+signal when it was killed).
 * The runtime writes the trace's `info` itself (exit_status is its business); record does not
 * rewrite any trace file. Setup failures exit 2 before PROG runs; an exec failure exits 127
 * (126 when PROG is not executable), like a shell.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/attach.h"
#include "cli/hook_detect.h"
#include "cli/record_dir.h"
#include "cli/salvage.h"
#include "libmcount/mcount_filter.h"
#include "libmcount/mcount_argspec.h"
#include "libmcount/mcount_dynsel.h"
#include "librecord/rec_salvage.h"

static const char usage[] =
	"usage: flightrec record [-d DIR] [--hook=mcount|xray|cacheray] [--format=FORMAT]\n"
	"                        [--tracepoint=FUNC[,FUNC...]] [--tp-stack=BYTES]\n"
	"                        [--tp-max-frames=N] [-F REGEX]... [-N REGEX]... [-D N]\n"
	"                        [-t TIME] [--match=regex|glob] [-A SPEC]... [-R SPEC]...\n"
	"                        [--no-libcall] [--nest-libcall] [--no-pltbind] [--srcline]\n"
	"                        [-L FILE[@hide]]... [--with-syms=DIR]\n"
	"                        [--] PROG [ARGS...]\n"
	"       flightrec record -p PID [--duration T] [-d DIR] [mcount hook options]\n"
	"  Run PROG with the recording runtime LD_PRELOADed and write its trace to DIR.\n"
	"  -d, --dir=DIR   output directory (default uftrace.data, or FORMAT.data with\n"
	"                  --format); a previous trace there is replaced, anything else is left\n"
	"                  alone and record refuses\n"
	"  --hook=TYPE     runtime to use instead of the one PROG's symbols call for\n"
	"  --format=F      what to write, whatever the hook (function hooks: mcount, xray):\n"
	"                  uftrace (uftrace.data), xray (an XRay FDR log and its YAML\n"
	"                  instrumentation map), chrome (Chrome trace JSON), tfile (GDB trace\n"
	"                  file of tracepoint hits, with a gdb script: gdb -x DIR/PROG.gdb PROG)\n"
	"  --tracepoint=FUNC[,FUNC...]  functions whose entries are tracepoints (tfile; implies\n"
	"                  --format=tfile; may be repeated)\n"
	"  --tp-stack=N    bytes of stack kept per hit, from the entry stack pointer (512)\n"
	"  --tp-max-frames=N  frames kept per tracepoint; later hits are only counted (1000)\n"
	"Record-time filters of the mcount hook, as `uftrace record` takes them:\n"
	"  -F, --filter=REGEX    record only the matching functions and what they call\n"
	"  -N, --notrace=REGEX   do not record the matching functions nor what they call\n"
	"                  (both repeatable, or ';'-separated; for a function several patterns\n"
	"                  match, the last one decides; PATTERN@MODULE and PATTERN@ACTIONS\n"
	"                  as for -T, filter actions only; PATTERN@PLT: library calls only)\n"
	"  -T, --trigger=PATTERN@ACTION[,ACTION...]  depth=N time=TIME size=N filter notrace\n"
	"                  trace trace_on trace_off finish recover caller (backtrace hide color=\n"
	"                  are replay's: accepted, nothing recorded differs; arg fparg retval\n"
	"                  auto-args go to -A/-R as uftrace's do), read=WHAT: proc/statm,\n"
	"                  page-fault, pmu-cycle, pmu-cache or pmu-branch as events after the\n"
	"                  entry and their differences before the exit, as uftrace's\n"
	"  -E, --Event=read:*|diff:*  accepted (the read= events are recorded anyway); any\n"
	"                  other event (SDT probes, linux:*) is not implemented\n"
	"  -C, --caller-filter=REGEX  record only the matching functions and their callers\n"
	"  -H, --hide=REGEX  checked and accepted; as with uftrace record, it changes nothing\n"
	"                  recorded (give it to uftrace replay)\n"
	"  -Z, --size-filter=N  do not record functions smaller than N bytes (symbol size)\n"
	"  --disable       start with tracing off (a trace_on trigger or signal turns it on)\n"
	"  --signal=SIG@ACTION  trace_on, trace_off or finish when SIG comes\n"
	"  --max-stack=N   record calls up to N frames deep (1 to 1024; FLIGHTREC_MAX_STACK)\n"
	"  -D, --depth=N   record N levels of calls (from the top, or from an -F function)\n"
	"  -t, --time-filter=TIME  do not record functions that run TIME or less (e.g. 10us;\n"
	"                  units ns us ms s m, ns without one)\n"
	"  -A, --argument=FUNC@arg1[,arg2/s,fparg1,...]  record the arguments of the matching\n"
	"                  functions (uftrace's argspec: argN fpargN, /i8../u64 /x /s /c /f32\n"
	"                  /f64 /f80 /p /S /e:NAME /tSIZE, %REG %stackN, @MODULE, @PLT; -pg and\n"
	"                  -pg -mfentry functions, and library calls)\n"
	"  -R, --retval=FUNC@retval[/FMT]  record their return values (-A FUNC, -R FUNC: the\n"
	"                  DWARF of a -g program, else the prototype of -a's table)\n"
	"  -a, --auto-args  record the arguments and return values of the well-known library\n"
	"                  functions (malloc, strlen, open, mmap, ...) by their prototypes, enum\n"
	"                  flags by name, and of a -g program's functions by their DWARF (libdw)\n"
	"                  (FLIGHTREC_AUTO_ARGS=1)\n"
	"  --match=TYPE    the patterns are POSIX extended regexes searched in the name (regex,\n"
	"                  the default) or globs matched against it (glob); a pattern without\n"
	"                  any of .?*+-^$|()[]{} is compared whole\n"
	"  --demangle=HOW  the C++ names the patterns see: simple (uftrace's: no parameters,\n"
	"                  template arguments or return type; the default), full (as c++filt\n"
	"                  prints them) or no (mangled) (FLIGHTREC_DEMANGLE)\n"
	"  --with-syms=DIR  the functions of each module are those of DIR/<module>.sym (the\n"
	"                  trace of an earlier record, e.g. of PROG before it was stripped): the\n"
	"                  patterns resolve names from them, and DIR's .sym and .dbg files are\n"
	"                  the trace's symbol files (FLIGHTREC_WITH_SYMS, an absolute path)\n"
	"Library calls (mcount hook, uftrace format): every call the program makes through its\n"
	"PLT is recorded, as uftrace records it, unless:\n"
	"  --no-libcall    do not record library calls (FLIGHTREC_NO_LIBCALL=1)\n"
	"  --nest-libcall  also the calls the libraries make through their own PLTs, but those\n"
	"                  of libc, libm, libgcc_s, libpthread, libdl (FLIGHTREC_NEST_LIBCALL=1)\n"
	"  --no-pltbind    do not let the dynamic loader bind PLT slots (LD_BIND_NOT=1)\n"
	"  --srcline       record the source file and line of the functions of every module\n"
	"                  built with -g, from their DWARF (libdw), as uftrace's <module>.dbg:\n"
	"                  uftrace replay --srcline and -L/--loc-filter read them\n"
	"                  (FLIGHTREC_SRCLINE=1)\n"
	"  -L, --loc-filter=FILE[@hide]  record only the functions whose source file (DWARF)\n"
	"                  matches FILE (a path, or a regex/glob as --match), or with @hide all\n"
	"                  but those; their calls are checked on their own; writes the .dbg\n"
	"                  files as --srcline (FLIGHTREC_LOC_FILTER, '!' for @hide)\n"
	"Dynamic patching (mcount hook), as `uftrace record -P/-U`: programs and libraries built\n"
	"with -fpatchable-function-entry=5 or -pg [-mfentry] -mnop-mcount have nops where a\n"
	"call would be; the selected functions get the call at start-up, the others keep the\n"
	"nops and cost nothing (FLIGHTREC_PATCH, uftrace's \"a;!b\" string; FLIGHTREC_DEBUG=1\n"
	"names each selected function that cannot be patched, and why):\n"
	"  -P, --patch=FUNC    patch the matching functions (regex or glob as --match; \".\"\n"
	"                  for all; FUNC@MODULE for a library whose file name starts with MODULE)\n"
	"  -U, --unpatch=FUNC  do not patch them (for a function several -P/-U match, the last\n"
	"                  one decides; only -U: everything else in the program)\n"
	"Attaching to a running process (mcount hook: -pg, -pg -mfentry, -finstrument-functions,\n"
	"XRay sleds, the libraries' too; with -P/-U also patchable nops or none):\n"
	"  -p, --pid=PID   load the runtime into process PID with ptrace and record it until\n"
	"                  --duration has passed, SIGINT/SIGTERM/SIGHUP comes or PID ends; then\n"
	"                  put its hooks, PLT slots and -P's code back and let it go on (again\n"
	"                  as often as wanted)\n"
	"  --duration=T    seconds to record (e.g. 2 or 0.5s)\n"
	"Options of uftrace record not listed here are refused, saying so.\n"
	"The runtime is taken from <flightrec's dir>/../lib/flightrec/. Exit status: PROG's\n"
	"(128+N if killed by signal N); 2 when recording cannot start.\n";

/* the child, for the signal forwarder; 0 when there is none */
static volatile sig_atomic_t child_pid;
/* a forwarded signal came after the child exited: stop waiting for its descendants */
static volatile sig_atomic_t stop_waiting;

static void forward_signal(int sig, siginfo_t *si, void *uctx)
{
	(void)uctx;
	if (child_pid <= 0) {
		stop_waiting = 1;
		return;
	}
	/* SI_KERNEL: sent by the terminal to the whole process group, the child has it too */
	if (si->si_code != SI_KERNEL)
		kill((pid_t)child_pid, sig);
}

/* PROG resolved like execvp: OUT gets a path to a regular executable file */
static int find_program(const char *prog, char *out, size_t len)
{
	const char *path, *p;
	struct stat st;

	if (strchr(prog, '/') != NULL) {
		if (stat(prog, &st) < 0) {
			cli_err("%s:", prog);
			return -1;
		}
		if (!S_ISREG(st.st_mode) || access(prog, X_OK) < 0) {
			cli_err("%s: not an executable file", prog);
			return -1;
		}
		snprintf(out, len, "%s", prog);
		return 0;
	}
	path = getenv("PATH");
	if (path == NULL || *path == '\0')
		path = "/usr/local/bin:/bin:/usr/bin";
	for (p = path;; p++) {
		const char *end = strchr(p, ':');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		/* an empty entry means the current directory */
		if ((size_t)snprintf(out, len, "%.*s%s%s", (int)n, p, n ? "/" : "", prog) < len &&
		    stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
			return 0;
		if (end == NULL)
			break;
		p = end;
	}
	cli_err("%s: command not found in PATH", prog);
	return -1;
}

/*
 * Does exec give PROG AT_SECURE (then ld.so ignores LD_PRELOAD, and no runtime is loaded)?
 * The kernel sets it when the exec changes the effective uid or gid (a set-user-ID file owned
 * by another user than ours, a set-group-ID file of another group) or grants capabilities
 * (file capabilities, for anyone but root); none of that happens on a nosuid mount. WHY gets
 * the reason.
 */
static bool secure_exec(const char *prog, char *why, size_t len)
{
	struct statvfs vfs;
	struct stat st;

	if (stat(prog, &st) < 0 || (statvfs(prog, &vfs) == 0 && (vfs.f_flag & ST_NOSUID)))
		return false;
	if ((st.st_mode & S_ISUID) && st.st_uid != getuid()) {
		snprintf(why, len, "set-user-ID (owner uid %u)", (unsigned)st.st_uid);
		return true;
	}
	/* set-group-ID without group execute is mandatory locking, not a gid change */
	if ((st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP) && st.st_gid != getgid()) {
		snprintf(why, len, "set-group-ID (group gid %u)", (unsigned)st.st_gid);
		return true;
	}
	if (getuid() != 0 && getxattr(prog, "security.capability", NULL, 0) > 0) {
		snprintf(why, len, "given file capabilities");
		return true;
	}
	return false;
}

/* <dirname(realpath(/proc/self/exe))>/../lib/flightrec/<library>, canonical */
static int find_runtime(enum hook_kind kind, char *out, size_t len)
{
	char self[PATH_MAX], *slash, guess[PATH_MAX + 64];

	if (realpath("/proc/self/exe", self) == NULL) {
		cli_err("cannot find my own path (/proc/self/exe):");
		return -1;
	}
	slash = strrchr(self, '/');
	if (slash != NULL)
		*slash = '\0';
	snprintf(guess, sizeof(guess), "%s/../lib/flightrec/%s", self, hook_library(kind));
	if (realpath(guess, out) == NULL || access(out, R_OK) < 0) {
		cli_err("%s not installed (no %s)", hook_runtime_name(kind), guess);
		return -1;
	}
	(void)len;
	/* ld.so splits LD_PRELOAD at spaces and colons */
	if (strpbrk(out, " :") != NULL) {
		cli_err("%s: the runtime's path has a space or ':', LD_PRELOAD cannot name it",
			out);
		return -1;
	}
	return 0;
}

/* --format and the tracepoint options, for the runtime (FLIGHTREC_FORMAT, ...) */
struct record_fmt {
	const char *format;     /* NULL: the runtime's own */
	char *tracepoints;      /* comma-separated, malloc'ed; NULL: none */
	const char *tp_stack;
	const char *tp_max_frames;
	char *filter;           /* -F/-N, uftrace's filter string ("a;!b"), malloc'ed */
	const char *depth;      /* -D */
	const char *time;       /* -t */
	const char *match;      /* --match */
	char *trigger;          /* -T, ';'-joined, malloc'ed */
	char *caller;           /* -C, ';'-joined, malloc'ed */
	char *hide;             /* -H: checked, then nothing (uftrace's record ignores it too) */
	char *signal;           /* --signal, ';'-joined, malloc'ed */
	const char *min_size;   /* -Z */
	const char *max_stack;  /* --max-stack */
	bool disable;           /* --disable */
	bool no_libcall;        /* --no-libcall */
	bool nest_libcall;      /* --nest-libcall */
	bool no_pltbind;        /* --no-pltbind */
	char *args;             /* -A, ';'-joined as uftrace joins them, malloc'ed */
	char *retval;           /* -R */
	bool auto_args;         /* -a/--auto-args */
	bool srcline;           /* --srcline */
	const char *demangle;   /* --demangle: no, simple, full */
	char *with_syms;        /* --with-syms: DIR, absolute, malloc'ed */
	char *loc;              /* -L, ';'-joined, "!FILE" for FILE@hide, malloc'ed */
};

static int setup_format_env(const struct record_fmt *f)
{
	if ((f->format && setenv("FLIGHTREC_FORMAT", f->format, 1) < 0) ||
	    (f->tracepoints && setenv("FLIGHTREC_TRACEPOINTS", f->tracepoints, 1) < 0) ||
	    (f->tp_stack && setenv("FLIGHTREC_TP_STACK", f->tp_stack, 1) < 0) ||
	    (f->tp_max_frames && setenv("FLIGHTREC_TP_MAX_FRAMES", f->tp_max_frames, 1) < 0) ||
	    (f->filter && setenv("FLIGHTREC_FILTER", f->filter, 1) < 0) ||
	    (f->depth && setenv("FLIGHTREC_DEPTH", f->depth, 1) < 0) ||
	    (f->time && setenv("FLIGHTREC_TIME_FILTER", f->time, 1) < 0) ||
	    (f->match && setenv("FLIGHTREC_MATCH", f->match, 1) < 0) ||
	    (f->trigger && setenv("FLIGHTREC_TRIGGER", f->trigger, 1) < 0) ||
	    (f->caller && setenv("FLIGHTREC_CALLER", f->caller, 1) < 0) ||
	    (f->signal && setenv("FLIGHTREC_SIGNAL", f->signal, 1) < 0) ||
	    (f->min_size && setenv("FLIGHTREC_MIN_SIZE", f->min_size, 1) < 0) ||
	    (f->max_stack && setenv("FLIGHTREC_MAX_STACK", f->max_stack, 1) < 0) ||
	    (f->disable && setenv("FLIGHTREC_DISABLED", "1", 1) < 0) ||
	    (f->no_libcall && setenv("FLIGHTREC_NO_LIBCALL", "1", 1) < 0) ||
	    (f->nest_libcall && setenv("FLIGHTREC_NEST_LIBCALL", "1", 1) < 0) ||
	    (f->no_pltbind && setenv("LD_BIND_NOT", "1", 1) < 0) ||
	    (f->args && setenv("FLIGHTREC_ARGUMENT", f->args, 1) < 0) ||
	    (f->retval && setenv("FLIGHTREC_RETVAL", f->retval, 1) < 0) ||
	    (f->auto_args && setenv("FLIGHTREC_AUTO_ARGS", "1", 1) < 0) ||
	    (f->srcline && setenv("FLIGHTREC_SRCLINE", "1", 1) < 0) ||
	    (f->demangle && setenv("FLIGHTREC_DEMANGLE", f->demangle, 1) < 0) ||
	    (f->with_syms && setenv("FLIGHTREC_WITH_SYMS", f->with_syms, 1) < 0) ||
	    (f->loc && setenv("FLIGHTREC_LOC_FILTER", f->loc, 1) < 0)) {
		cli_err("setenv:");
		return -1;
	}
	return 0;
}

/* ---- -P/-U (libmcount/mcount_dynamic.c): their own block ---- */

/* uftrace's UFTRACE_PATCH: -P and -U ('!') patterns, ';'-joined in command-line order */
static char *dyn_patch;

static int dyn_option(int c, const char *arg)
{
	char *s;

	if (*arg == '\0')
		return cli_usage_error(usage, "record: empty %s pattern",
				       c == 'P' ? "--patch" : "--unpatch");
	if (asprintf(&s, "%s%s%s%s", dyn_patch ? dyn_patch : "", dyn_patch ? ";" : "",
		     c == 'U' ? "!" : "", arg) < 0) {
		cli_err("out of memory");
		return CLI_USAGE;
	}
	free(dyn_patch);
	dyn_patch = s;
	return 0;
}

/* the patterns checked as the runtime will take them */
static int dyn_check(const char *match)
{
	static struct mc_dyn_spec spec; /* large: not on the stack */
	char err[400];

	if (!dyn_patch)
		return 0;
	if (mc_dyn_parse(&spec, dyn_patch, NULL, match && !strcmp(match, "glob"), err,
			 sizeof(err)) < 0)
		return cli_usage_error(usage, "record: --patch/--unpatch: %s", err);
	return 0;
}

/* FLIGHTREC_PATCH for the runtime */
static int dyn_setenv(void)
{
	if (dyn_patch && setenv("FLIGHTREC_PATCH", dyn_patch, 1) < 0) {
		cli_err("setenv:");
		return -1;
	}
	return 0;
}

static bool is_number(const char *s, unsigned long max)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return false;
	v = strtoul(s, &end, 10);
	return *end == '\0' && v <= max;
}

static int setup_env(const char *lib, const char *dir)
{
	const char *old = getenv("LD_PRELOAD");
	char absdir[PATH_MAX];
	char *preload;
	int ret;

	if (realpath(dir, absdir) == NULL) {
		cli_err("%s:", dir);
		return -1;
	}
	if (old != NULL && *old != '\0')
		ret = asprintf(&preload, "%s:%s", lib, old);
	else
		ret = asprintf(&preload, "%s", lib);
	if (ret < 0) {
		cli_err("out of memory");
		return -1;
	}
	/* absolute: the program may chdir, fork and exec before the runtime starts again */
	if (setenv("FLIGHTREC_DIR", absdir, 1) < 0 || setenv("LD_PRELOAD", preload, 1) < 0) {
		cli_err("setenv:");
		free(preload);
		return -1;
	}
	free(preload);
	return 0;
}

static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP };

/* PID has the file LIB mapped (a process of the recording: the runtime is in it) */
static bool maps_runtime(pid_t pid, const char *lib)
{
	char path[64], *line = NULL;
	size_t cap = 0, len = strlen(lib);
	bool found = false;
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return false; /* gone, or another user's: the runtime is not loaded there */
	while (!found && (n = getline(&line, &cap, f)) > 0) {
		if (n > 0 && line[n - 1] == '\n')
			line[--n] = '\0';
		found = (size_t)n >= len && !strcmp(line + n - len, lib);
	}
	free(line);
	fclose(f);
	return found;
}

struct proc_link {
	pid_t pid, ppid;
};

static int proc_link_cmp(const void *a, const void *b)
{
	pid_t x = ((const struct proc_link *)a)->pid, y = ((const struct proc_link *)b)->pid;

	return (x > y) - (x < y);
}

/* PID is below SELF in the process tree V (sorted by pid, N entries) */
static bool below(const struct proc_link *v, size_t n, pid_t pid, pid_t self)
{
	/* a bounded walk up: pids are reused, so a loop is not impossible in a racy snapshot */
	for (int depth = 0; depth < 4096; depth++) {
		struct proc_link key = { .pid = pid }, *p;

		p = bsearch(&key, v, n, sizeof(*v), proc_link_cmp);
		if (p == NULL || p->ppid <= 1)
			return false;
		if (p->ppid == self)
			return true;
		pid = p->ppid;
	}
	return false;
}

/*
 * The live processes below us that hold the runtime LIB: how many, and one of them in *ANY.
 * We are their subreaper, so every descendant is a child of ours or below one.
 */
static unsigned count_recording(const char *lib, pid_t *any)
{
	struct proc_link *v = NULL;
	size_t nr = 0, cap = 0;
	pid_t self = getpid();
	unsigned count = 0;
	struct dirent *de;
	DIR *d = opendir("/proc");

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		char path[64], buf[512], *rp;
		long pid = atol(de->d_name), pp;
		ssize_t n;
		int fd;

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		/* "pid (comm) state ppid ...": comm may hold anything, so from the last ')' */
		rp = strrchr(buf, ')');
		if (rp == NULL || sscanf(rp + 1, " %*c %ld", &pp) != 1)
			continue;
		if (nr == cap) {
			size_t nc = cap ? cap * 2 : 256;
			struct proc_link *nv = realloc(v, nc * sizeof(*v));

			if (nv == NULL)
				break;
			v = nv;
			cap = nc;
		}
		v[nr].pid = (pid_t)pid;
		v[nr++].ppid = (pid_t)pp;
	}
	closedir(d);
	if (nr)
		qsort(v, nr, sizeof(*v), proc_link_cmp);
	for (size_t i = 0; i < nr; i++) {
		if (below(v, nr, v[i].pid, self) && maps_runtime(v[i].pid, lib) && count++ == 0)
			*any = v[i].pid;
	}
	free(v);
	return count;
}

/*
 * PROG has exited; processes it left (a daemon() child, a background job) may still be
 * recording. Like uftrace, which waits until every traced task is gone, wait for every
 * descendant that holds the runtime, reaping the ones reparented to us; a forwarded signal
 * (Ctrl-C, SIGTERM) stops the wait, and their rings are then left to them.
 */
static void wait_recording(const char *prog, const char *lib)
{
	struct timespec step = { 0, 20 * 1000000L }, start, now;
	bool told = false;
	unsigned n;
	pid_t any = 0;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		n = count_recording(lib, &any);
		if (n == 0)
			return;
		if (stop_waiting) {
			cli_err("stopped waiting: %u process%s of the recording still run%s "
				"(pid %d); what they record is theirs to finish",
				n, n > 1 ? "es" : "", n > 1 ? "" : "s", (int)any);
			return;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (!told && now.tv_sec - start.tv_sec >= 2) {
			cli_err("%s has exited; waiting for the %u process%s it left recording "
				"(pid %d; Ctrl-C stops waiting)",
				prog, n, n > 1 ? "es" : "", (int)any);
			told = true;
		}
		nanosleep(&step, NULL);
	}
}

/*
 * fork and exec PATH with ARGV; returns the wait status, or -1 when it could not run (the
 * reason printed, *EXEC_ERRNO set when exec itself failed).
 */
static int run_child(const char *path, char **argv, const char *lib, int *exec_errno)
{
	struct sigaction sa, old[3];
	bool installed[3] = { false, false, false };
	sigset_t block, saved;
	int pipefd[2], status = -1, err = 0;
	ssize_t n;
	pid_t pid;

	*exec_errno = 0;
	/* the child reports a failed exec through a close-on-exec pipe */
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		cli_err("pipe:");
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigemptyset(&block);
	for (size_t i = 0; i < 3; i++) {
		/* an ignored signal stays ignored, for us and (through exec) for the child */
		if (sigaction(forwarded[i], NULL, &old[i]) == 0 && old[i].sa_handler != SIG_IGN) {
			sigaction(forwarded[i], &sa, NULL);
			installed[i] = true;
		}
		sigaddset(&block, forwarded[i]);
	}
	sigprocmask(SIG_BLOCK, &block, &saved);
	/* the processes PROG leaves behind (daemon(), double forks) become our children, so
	 * wait_recording can tell when the last of them is done */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		cli_err("prctl(PR_SET_CHILD_SUBREAPER) (processes PROG leaves behind may be cut "
			"off):");

	pid = fork();
	if (pid < 0) {
		cli_err("fork:");
		sigprocmask(SIG_SETMASK, &saved, NULL);
		close(pipefd[0]);
		close(pipefd[1]);
		return -1;
	}
	if (pid == 0) {
		/* our handlers must not run here: back to the dispositions we were given */
		for (size_t i = 0; i < 3; i++)
			if (installed[i])
				sigaction(forwarded[i], &old[i], NULL);
		sigprocmask(SIG_SETMASK, &saved, NULL);
		close(pipefd[0]);
		execv(path, argv);
		err = errno;
		if (write(pipefd[1], &err, sizeof(err)) < 0) {
			/* nothing more to say */
		}
		_exit(127);
	}
	child_pid = pid;
	sigprocmask(SIG_SETMASK, &saved, NULL);
	close(pipefd[1]);
	do {
		n = read(pipefd[0], &err, sizeof(err));
	} while (n < 0 && errno == EINTR);
	close(pipefd[0]);

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			cli_err("waitpid:");
			status = -1;
			break;
		}
	}
	child_pid = 0;
	if (status >= 0 && n != (ssize_t)sizeof(err))
		wait_recording(path, lib);
	for (size_t i = 0; i < 3; i++)
		if (installed[i])
			sigaction(forwarded[i], &old[i], NULL);
	if (n == (ssize_t)sizeof(err)) {
		*exec_errno = err;
		errno = err;
		cli_err("cannot execute %s:", path);
		return -1;
	}
	return status;
}

/* flightrec salvage DIR, with the command line the trace's metadata wants; what it salvaged
 * in *REP */
static void record_salvage(const char *dir, int argc, char **argv,
			   struct rec_salvage_report *rep)
{
	size_t len = 0;
	char *cmdline;

	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	cmdline = calloc(1, len + 1);
	for (int i = 0; cmdline && i < argc; i++)
		strcat(strcat(cmdline, i ? " " : ""), argv[i]);
	memset(rep, 0, sizeof(*rep));
	cli_salvage(dir, cmdline, stderr, false, false, false, rep);
	free(cmdline);
}

static double elapsed(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* The summary line: what DIR holds, with what the salvage SALV found added where the runtime's
 * counters leave it out (processes that never finished: killed, or gone through glibc's
 * internal _exit, as daemon()'s parent is), then TAIL. */
static void print_summary(const char *dir, const struct rec_salvage_report *salv, double secs,
			  const char *tail)
{
	struct recdir_summary sum;

	recdir_summarize(dir, &sum);
	if (sum.from_runtime) {
		sum.threads += salv->salvaged;
		sum.events += salv->events;
		sum.bytes += salv->bytes;
		sum.lost += salv->lost;
	}
	fprintf(stderr,
		"flightrec: recorded %llu threads, %llu events, %llu bytes, %llu lost in %.3f s "
		"-> %s%s\n",
		(unsigned long long)sum.threads, (unsigned long long)sum.events,
		(unsigned long long)sum.bytes, (unsigned long long)sum.lost, secs, dir, tail);
}

/* -F/-N/-T/-C/-H/--signal: PATTERN (PREFIX "!" for -N) appended to a ';'-separated list */
static int add_filter(char **list, const char *prefix, const char *pattern)
{
	char *s;

	if (asprintf(&s, "%s%s%s%s", *list ? *list : "", *list ? ";" : "", prefix, pattern) < 0) {
		cli_err("out of memory");
		return -1;
	}
	free(*list);
	*list = s;
	return 0;
}

/* the options that make libmcount take its filtering hooks */
static bool any_filter(const struct record_fmt *f)
{
	return f->filter || f->depth || f->time || f->trigger || f->caller || f->signal ||
	       f->min_size || f->disable || f->loc;
}

/* *LIST += ";" ITEM */
static int add_spec(char **list, const char *item)
{
	char *s;

	if (asprintf(&s, "%s%s%s", *list ? *list : "", *list ? ";" : "", item) < 0) {
		cli_err("out of memory");
		return -1;
	}
	free(*list);
	*list = s;
	return 0;
}

/*
 * -T's argument actions (argN, fpargN, retval, auto-args), taken out of the triggers into -A
 * and -R as uftrace 0.13's extract_trigger_args puts them into its argspec/retspec, by the
 * rule a plain preload's FLIGHTREC_TRIGGER uses (mc_trigger_split), the triggers' specs before
 * -A's and -R's. 0, or -1 (no memory).
 */
static int split_trigger_args(struct record_fmt *f)
{
	/* every output is at most each entry's name twice and its actions, plus "@retval" */
	size_t size = f->trigger ? 4 * strlen(f->trigger) + 64 : 0;
	char *rest = NULL, *args = NULL, *rets = NULL;

	if (!f->trigger)
		return 0;
	rest = malloc(size);
	args = malloc(size);
	rets = malloc(size);
	if (!rest || !args || !rets || mc_trigger_split(f->trigger, rest, args, rets, size) < 0)
		goto out;
	/* an empty list is none */
	if (!args[0]) {
		free(args);
		args = NULL;
	}
	if (!rets[0]) {
		free(rets);
		rets = NULL;
	}
	if (!rest[0]) {
		free(rest);
		rest = NULL;
	}
	if ((f->args && add_spec(&args, f->args) < 0) ||
	    (f->retval && add_spec(&rets, f->retval) < 0))
		goto out;
	free(f->args);
	free(f->retval);
	free(f->trigger);
	f->args = args;
	f->retval = rets;
	f->trigger = rest;
	return 0;
out:
	free(rest);
	free(args);
	free(rets);
	cli_err("out of memory, or a -T entry's actions over 1 KiB");
	return -1;
}

/* The filters checked as the runtime will take them, so that a mistake is said now */
static int check_filters(const struct record_fmt *f)
{
	static struct mc_filter_spec spec; /* large: not on the stack */
	uint64_t ns;
	char err[512];

	if (f->depth && (!is_number(f->depth, 65535) || !strtoul(f->depth, NULL, 10)))
		return cli_usage_error(usage, "record: --depth takes 1 to 65535, not '%s'",
				       f->depth);
	if (f->time && mc_parse_time(f->time, &ns) < 0)
		return cli_usage_error(usage, "record: --time-filter takes a time such as 10us "
				       "(units ns us ms s m), not '%s'", f->time);
	if (f->match && strcmp(f->match, "regex") && strcmp(f->match, "glob"))
		return cli_usage_error(usage, "record: --match takes regex or glob, not '%s'",
				       f->match);
	int glob = f->match && !strcmp(f->match, "glob"), sigs[8];
	uint32_t acts[8];

	spec.n = 0;
	if (f->filter && mc_filter_parse_more(&spec, f->filter, MC_LIST_FILTER, glob, err,
					      sizeof(err)) < 0)
		return cli_usage_error(usage, "record: --filter/--notrace: %s", err);
	if (f->trigger && mc_filter_parse_more(&spec, f->trigger, MC_LIST_TRIGGER, glob, err,
					       sizeof(err)) < 0)
		return cli_usage_error(usage, "record: --trigger: %s", err);
	if (f->caller && mc_filter_parse_more(&spec, f->caller, MC_LIST_CALLER, glob, err,
					      sizeof(err)) < 0)
		return cli_usage_error(usage, "record: --caller-filter: %s", err);
	spec.n = 0;
	if (f->hide && mc_filter_parse_more(&spec, f->hide, MC_LIST_CALLER, glob, err,
					    sizeof(err)) < 0)
		return cli_usage_error(usage, "record: --hide: %s", err);
	if (f->signal && mc_signal_parse(f->signal, sigs, acts, 8, err, sizeof(err)) < 0)
		return cli_usage_error(usage, "record: --signal: %s", err);
	if (f->loc) {
		static struct mc_pattern loc[MC_LOC_MAX]; /* large: not on the stack */

		if (mc_loc_parse(loc, MC_LOC_MAX, f->loc, glob, err, sizeof(err)) < 0)
			return cli_usage_error(usage, "record: --loc-filter: %s", err);
	}
	if (f->min_size && !is_number(f->min_size, UINT32_MAX))
		return cli_usage_error(usage, "record: --size-filter takes a size in bytes, not "
				       "'%s'", f->min_size);
	if (f->max_stack && (!is_number(f->max_stack, 1024) || !strtoul(f->max_stack, NULL, 10)))
		return cli_usage_error(usage, "record: --max-stack takes 1 to 1024, not '%s'",
				       f->max_stack);
	if (f->args || f->retval) {
		static struct mc_argspec_set set; /* large: not on the stack */

		set.n = 0;
		if (f->args && mc_argspec_parse(&set, f->args, MC_AR_ARG, glob, err,
						sizeof(err)) < 0)
			return cli_usage_error(usage, "record: --argument: %s", err);
		if (f->retval && mc_argspec_parse(&set, f->retval, MC_AR_RET, glob, err,
						  sizeof(err)) < 0)
			return cli_usage_error(usage, "record: --retval: %s", err);
		if (f->format && strcmp(f->format, "uftrace"))
			return cli_usage_error(usage, "record: -A/-R are recorded in the uftrace "
					       "format only, not --format=%s", f->format);
	}
	if (f->auto_args && f->format && strcmp(f->format, "uftrace"))
		return cli_usage_error(usage, "record: -a/--auto-args is recorded in the uftrace "
				       "format only, not --format=%s", f->format);
	if (f->with_syms && f->format && strcmp(f->format, "uftrace"))
		return cli_usage_error(usage, "record: --with-syms names uftrace .sym files: the "
				       "uftrace format only, not --format=%s", f->format);
	if (f->srcline && f->format && strcmp(f->format, "uftrace"))
		return cli_usage_error(usage, "record: --srcline is recorded in the uftrace "
				       "format only, not --format=%s", f->format);
	if (any_filter(f) && f->format && !strcmp(f->format, "tfile"))
		return cli_usage_error(usage, "record: the filters and triggers do not apply to "
				       "tracepoints (--format=tfile)");
	return 0;
}

/* uftrace record's DIR/default.opts, which its analysis commands read as options: "-t TIME"
 * when -t was given (replay hides the functions under it again), else empty */
static void write_default_opts(int ringfd, const struct record_fmt *f)
{
	int fd = openat(ringfd, "../default.opts",
			O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	char line[128];
	int n = f->time ? snprintf(line, sizeof(line), "-t %s\n", f->time) : 0;

	if (fd < 0 || (n > 0 && write(fd, line, (size_t)n) != n))
		cli_err("cannot write default.opts:");
	if (fd >= 0)
		close(fd);
}

/*
 * The options of uftrace 0.13's record that flightrec record does not take (uftrace.c's option
 * table, those record reads): said as such, never taken and ignored. Only an option getopt
 * does not know comes here, so one implemented later simply stops being listed.
 */
static int unknown_option(const char *arg, int shopt)
{
	static const char *const names[] = {
		"no-args", "v", "debug",
		"verbose", "debug-domain", "force", "b", "buffer",
		"logfile", "nop", "time", "host", "port", "num-thread",
		"libmcount-single", "rt-prio", "k", "kernel", "K", "kernel-depth", "kernel-buffer",
		"kernel-skip-out", "kernel-full", "kernel-only", "E", "event", "no-event",
		"no-sched", "no-sched-preempt", "list-event", "run-cmd", "opt-file", "keep-pid",
		"S", "script", "event-full", "l", "libname",
		"no-randomize-addr", "W", "watch", "loc-filter-warning",
		"clock", "e", "estimate-return", "g", "agent",
		"p", "pid", "libmcount-path", "library-path", "no-pager", "color",
	};
	char name[64] = "";

	if (arg[0] == '-' && arg[1] == '-') {
		size_t n = strcspn(arg + 2, "=");
		snprintf(name, sizeof(name), "%.*s", (int)(n < sizeof(name) ? n : sizeof(name) - 1),
			 arg + 2);
	} else if (shopt > 0 && shopt < 128) {
		name[0] = (char)shopt;
	}
	for (size_t i = 0; name[0] && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return cli_usage_error(usage, "record: %s%s is an option of uftrace record "
					       "that flightrec record does not implement",
					       name[1] ? "--" : "-", name);
	if (shopt > 0 && shopt < 128 && arg[0] == '-' && arg[1] != '-')
		return cli_usage_error(usage, "record: unknown option '-%c'", shopt);
	return cli_usage_error(usage, "record: unknown option '%s'", arg);
}

/* ---- -p PID: attach to a running process (attach.c) ---- */

static volatile sig_atomic_t attach_stop_sig;

static void attach_on_signal(int sig)
{
	attach_stop_sig = sig;
}

/* the block the process's dlopen sees as its environment: our FLIGHTREC_* (those the
 * options set, --no-libcall among them, and the user's own) and FLIGHTREC_ATTACH=1 */
static char **attach_env(void)
{
	extern char **environ;
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 3, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!strncmp(environ[i], "FLIGHTREC_", 10) &&
		    strncmp(environ[i], "FLIGHTREC_ATTACH=", 17))
			env[k++] = environ[i];
	env[k++] = "FLIGHTREC_ATTACH=1";
	return env;
}

/*
 * record -p PID: stop the process, load libmcount into it and route its hooks there
 * (attach.c), let it run until --duration has passed, SIGINT/SIGTERM/SIGHUP comes or it
 * ends, then stop it again, put everything back and have it finish the trace. The process
 * is touched only once DIR is ready. Exit status: 0 (the process is not ours), 2 when the
 * attach failed (nothing of ours left in the process).
 */
static int record_attach(pid_t pid, double duration, const char *dir,
			 const struct record_fmt *fmt)
{
	static struct attach a;
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa, old[3];
	struct rec_salvage_report salv = { 0 };
	struct timespec t0, t1;
	char lib[PATH_MAX], why[512] = "", exe[PATH_MAX] = "", link[64];
	char **env;
	int dirfd, ret = CLI_OK, patching;
	bool gone = false;
	ssize_t n;

	if (find_runtime(HOOK_MCOUNT, lib, sizeof(lib)) < 0)
		return CLI_USAGE;
	/* -P/-U, or the user's own FLIGHTREC_PATCH/_UNPATCH, which the runtime reads too */
	patching = dyn_patch || getenv("FLIGHTREC_PATCH") || getenv("FLIGHTREC_UNPATCH");
	if (attach_open(&a, pid, lib, patching, why, sizeof(why)) < 0) {
		cli_err("record -p %d: %s", (int)pid, why);
		return CLI_USAGE;
	}
	/* an XRay program calling no hook: its functions are those of its sleds, patched as
	 * -P . patches them, in the executable and in each library with sleds (a.xray_pat) */
	if (!patching && a.nhooks == 0 && a.xray) {
		if (a.xray_left)
			fprintf(stderr,
				"flightrec: record -p %d: %zu modules with XRay sleds not "
				"recorded (the first %d are)\n",
				(int)pid, a.xray_left, ATTACH_MAX_XRAY_PAT);
		dyn_patch = strdup(a.xray_pat);
		if (!dyn_patch) {
			cli_err("out of memory");
			return CLI_USAGE;
		}
		a.patching = patching = 1;
	}
	/* the program, for the tfile hint at the end (the process may be gone by then) */
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = attach_on_signal; /* no SA_RESTART: the sleeps below end early */
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &old[i]);
	if (attach_stop_all(&a, why, sizeof(why)) < 0) {
		cli_err("record -p %d: %s", (int)pid, why);
		return CLI_USAGE;
	}
	dirfd = recdir_prepare(dir);
	if (dirfd < 0) {
		attach_resume_all(&a);
		return CLI_USAGE;
	}
	if (setup_env(lib, dir) < 0 || setup_format_env(fmt) < 0 || dyn_setenv() < 0 ||
	    (env = attach_env()) == NULL) {
		attach_resume_all(&a);
		recdir_finish(dirfd, dir);
		return CLI_USAGE;
	}
	if (fmt->format ? !strcmp(fmt->format, "uftrace") : true)
		write_default_opts(dirfd, fmt);
	if (attach_inject(&a, env, why, sizeof(why)) < 0) {
		attach_resume_all(&a);
		cli_err("record -p %d: %s", (int)pid, why);
		free(env);
		recdir_finish(dirfd, dir);
		return CLI_USAGE;
	}
	free(env);
	attach_resume_all(&a);
	/* --duration counts from here, the process running with its hooks on: the injection
	 * (the loader's dlopen, symbols, the PLT) can take longer than a short --duration on a
	 * loaded machine */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	fprintf(stderr, "flightrec: attached to process %d (%zu hook slots)%s\n", (int)pid,
		a.nslot, duration > 0 ? "" : "; Ctrl-C detaches");

	while (!attach_stop_sig) {
		struct timespec step = { 0, 20 * 1000000L };
		if (!attach_alive(pid)) {
			gone = true;
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (duration > 0 && elapsed(&t0, &t1) >= duration)
			break;
		nanosleep(&step, NULL);
	}
	if (!gone && attach_stop_all(&a, why, sizeof(why)) == 0 &&
	    attach_detach(&a, why, sizeof(why)) < 0) {
		cli_err("record -p %d: detach: %s", (int)pid, why);
		ret = CLI_BAD_TRACE;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &old[i], NULL);

	/* a process killed while recorded left its rings */
	if (rec_salvage_needed(dir)) {
		char *cmd[] = { (char *)"attached", NULL };
		record_salvage(dir, 1, cmd, &salv);
	}
	print_summary(dir, &salv, elapsed(&t0, &t1), gone ? " (the process ended)" : "");
	if (fmt->format && !strcmp(fmt->format, "tfile") && *exe) {
		const char *base = strrchr(exe, '/');
		fprintf(stderr, "flightrec: open it with: gdb -x %s/%s.gdb %s\n", dir,
			base ? base + 1 : exe, exe);
	}
	recdir_finish(dirfd, dir);
	return ret;
}

enum { OPT_HOOK = 256, OPT_FORMAT, OPT_TRACEPOINT, OPT_TP_STACK, OPT_TP_MAX_FRAMES, OPT_MATCH,
       OPT_DISABLE, OPT_SIGNAL, OPT_MAX_STACK, OPT_UFTRACE_ONLY, OPT_NO_LIBCALL, OPT_NEST_LIBCALL,
       OPT_NO_PLTBIND, OPT_DURATION, OPT_SRCLINE, OPT_DEMANGLE, OPT_WITH_SYMS };

int cmd_record(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "hook", required_argument, NULL, OPT_HOOK },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "tracepoint", required_argument, NULL, OPT_TRACEPOINT },
		{ "tp-stack", required_argument, NULL, OPT_TP_STACK },
		{ "tp-max-frames", required_argument, NULL, OPT_TP_MAX_FRAMES },
		{ "filter", required_argument, NULL, 'F' },
		{ "notrace", required_argument, NULL, 'N' },
		{ "depth", required_argument, NULL, 'D' },
		{ "time-filter", required_argument, NULL, 't' },
		{ "match", required_argument, NULL, OPT_MATCH },
		{ "trigger", required_argument, NULL, 'T' },
		{ "caller-filter", required_argument, NULL, 'C' },
		{ "hide", required_argument, NULL, 'H' },
		{ "size-filter", required_argument, NULL, 'Z' },
		{ "disable", no_argument, NULL, OPT_DISABLE },
		{ "signal", required_argument, NULL, OPT_SIGNAL },
		{ "max-stack", required_argument, NULL, OPT_MAX_STACK },
		{ "patch", required_argument, NULL, 'P' },
		{ "unpatch", required_argument, NULL, 'U' },
		/* uftrace's --time, not an abbreviation of --time-filter */
		{ "time", no_argument, NULL, OPT_UFTRACE_ONLY },
		{ "no-libcall", no_argument, NULL, OPT_NO_LIBCALL },
		{ "nest-libcall", no_argument, NULL, OPT_NEST_LIBCALL },
		{ "no-pltbind", no_argument, NULL, OPT_NO_PLTBIND },
		{ "srcline", no_argument, NULL, OPT_SRCLINE },
		{ "demangle", required_argument, NULL, OPT_DEMANGLE },
		{ "Event", required_argument, NULL, 'E' },
		{ "event", required_argument, NULL, 'E' },
		{ "with-syms", required_argument, NULL, OPT_WITH_SYMS },
		{ "loc-filter", required_argument, NULL, 'L' },
		{ "argument", required_argument, NULL, 'A' },
		{ "retval", required_argument, NULL, 'R' },
		{ "auto-args", no_argument, NULL, 'a' },
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = NULL;
	struct record_fmt fmt = { 0 };
	char defdir[64];
	enum hook_kind kind = HOOK_NONE, found;
	bool forced = false, dynamic;
	char prog[PATH_MAX], lib[PATH_MAX], why[256];
	struct rec_salvage_report salv = { 0 };
	struct timespec t0, t1;
	int c, status, exec_errno, dirfd;
	pid_t attach_pid = 0;
	double duration = 0;

	optind = 1;
	opterr = 0;
	/* '+': options end at PROG, whose own options are its business */
	while ((c = getopt_long(argc, argv, "+:d:hF:N:D:t:T:C:H:Z:A:R:aP:U:p:L:E:", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 'p':
			if (!is_number(optarg, INT32_MAX) || !strcmp(optarg, "0"))
				return cli_usage_error(usage, "record: -p takes a process id, not "
						       "'%s'", optarg);
			attach_pid = (pid_t)atol(optarg);
			break;
		case OPT_DURATION: {
			char *end;
			errno = 0;
			duration = strtod(optarg, &end);
			if (end != optarg && *end == 's')
				end++;
			if (errno || end == optarg || *end || !(duration > 0) || duration > 1e7)
				return cli_usage_error(usage, "record: --duration takes seconds "
						       "(e.g. 2 or 0.5s), not '%s'", optarg);
			break;
		}
		case 'F':
		case 'N':
			if (*optarg == '\0')
				return cli_usage_error(usage, "record: empty %s pattern",
						       c == 'F' ? "--filter" : "--notrace");
			if (add_filter(&fmt.filter, c == 'N' ? "!" : "", optarg) < 0)
				return CLI_USAGE;
			break;
		case 'T':
		case 'C':
		case 'H':
		case OPT_SIGNAL:
			if (*optarg == '\0')
				return cli_usage_error(usage, "record: empty %s", argv[optind - 1]);
			if (add_filter(c == 'T' ? &fmt.trigger : c == 'C' ? &fmt.caller :
				       c == 'H' ? &fmt.hide : &fmt.signal, "", optarg) < 0)
				return CLI_USAGE;
			break;
		case 'E':
			/* uftrace record's -E names events to record: read:* and diff:* are the
			 * read= triggers' own (recorded with them whatever -E says); the others
			 * (SDT probes, linux:*) we do not record */
			if (strncmp(optarg, "read:", 5) && strncmp(optarg, "diff:", 5))
				return cli_usage_error(usage, "record: -E %s: -E is an option of "
						       "uftrace record that flightrec record does "
						       "not implement but for read:* and diff:* (the "
						       "events of read= triggers)", optarg);
			break;
		case 'Z':
			fmt.min_size = optarg;
			break;
		case 'L': {
			/* uftrace: FILE@hide is "!FILE", whatever follows @hide dropped */
			char *hide = strstr(optarg, "@hide");

			if (hide)
				*hide = '\0';
			if (*optarg == '\0')
				return cli_usage_error(usage, "record: empty --loc-filter");
			if (add_filter(&fmt.loc, hide ? "!" : "", optarg) < 0)
				return CLI_USAGE;
			break;
		}
		case OPT_DISABLE:
			fmt.disable = true;
			break;
		case OPT_MAX_STACK:
			fmt.max_stack = optarg;
			break;
		case 'A':
		case 'R':
			if (*optarg == '\0')
				return cli_usage_error(usage, "record: empty %s", c == 'A' ?
						       "--argument" : "--retval");
			if (add_spec(c == 'A' ? &fmt.args : &fmt.retval, optarg) < 0)
				return CLI_USAGE;
			break;
		case 'a':
			/* the table's prototypes (formats/uftrace/uftrace_autoargs.c) */
			fmt.auto_args = true;
			break;
		case 'D':
			fmt.depth = optarg;
			break;
		case 'P':
		case 'U':
			if (dyn_option(c, optarg) != 0)
				return CLI_USAGE;
			break;
		case 't':
			fmt.time = optarg;
			break;
		case OPT_MATCH:
			fmt.match = optarg;
			break;
		case OPT_NO_LIBCALL:
			fmt.no_libcall = true;
			break;
		case OPT_NEST_LIBCALL:
			fmt.nest_libcall = true;
			break;
		case OPT_NO_PLTBIND:
			fmt.no_pltbind = true;
			break;
		case OPT_SRCLINE:
			fmt.srcline = true;
			break;
		case OPT_DEMANGLE:
			if (strcmp(optarg, "no") && strcmp(optarg, "simple") && strcmp(optarg, "full"))
				return cli_usage_error(usage, "record: --demangle takes no, simple or "
						       "full, not '%s'",
						       optarg);
			fmt.demangle = optarg;
			break;
		case OPT_WITH_SYMS: {
			struct stat st;

			/* absolute: the program may chdir, and its exec'ed images get it too */
			free(fmt.with_syms);
			fmt.with_syms = realpath(optarg, NULL);
			if (!fmt.with_syms || stat(fmt.with_syms, &st) < 0 || !S_ISDIR(st.st_mode))
				return cli_usage_error(usage, "record: --with-syms: %s is not a "
						       "directory", optarg);
			break;
		}
		case OPT_HOOK:
			kind = hook_from_name(optarg);
			if (kind == HOOK_NONE)
				return cli_usage_error(usage, "record: unknown hook type '%s'",
						       optarg);
			forced = true;
			break;
		case OPT_FORMAT:
			if (strcmp(optarg, "uftrace") && strcmp(optarg, "xray") &&
			    strcmp(optarg, "chrome") && strcmp(optarg, "tfile"))
				return cli_usage_error(usage, "record: unknown format '%s' (uftrace, "
						       "xray, chrome, tfile)", optarg);
			fmt.format = optarg;
			break;
		case OPT_TRACEPOINT: {
			char *tp;
			if (*optarg == '\0')
				return cli_usage_error(usage, "record: empty --tracepoint");
			if (asprintf(&tp, "%s%s%s", fmt.tracepoints ? fmt.tracepoints : "",
				     fmt.tracepoints ? "," : "", optarg) < 0) {
				cli_err("out of memory");
				return CLI_USAGE;
			}
			free(fmt.tracepoints);
			fmt.tracepoints = tp;
			break;
		}
		case OPT_TP_STACK:
			if (!is_number(optarg, 65535))
				return cli_usage_error(usage, "record: --tp-stack takes 0 to 65535 "
						       "bytes, not '%s'", optarg);
			fmt.tp_stack = optarg;
			break;
		case OPT_TP_MAX_FRAMES:
			if (!is_number(optarg, 1ul << 30) || !strcmp(optarg, "0"))
				return cli_usage_error(usage, "record: --tp-max-frames takes 1 to "
						       "2^30, not '%s'", optarg);
			fmt.tp_max_frames = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return CLI_OK;
		case ':':
			return cli_usage_error(usage, "record: option '%s' needs an argument",
					       argv[optind - 1]);
		case OPT_UFTRACE_ONLY:
		default:
			return unknown_option(argv[optind - 1], c == OPT_UFTRACE_ONLY ? 0 : optopt);
		}
	}
	if (attach_pid && optind < argc)
		return cli_usage_error(usage, "record: -p PID records a running process: no "
				       "PROG with it");
	if (duration > 0 && !attach_pid)
		return cli_usage_error(usage, "record: --duration is for -p PID");
	if (optind >= argc && !attach_pid)
		return cli_usage_error(usage, "record: expected a program to run");
	if (fmt.tracepoints && !fmt.format)
		fmt.format = "tfile";
	if (fmt.format && !strcmp(fmt.format, "tfile") && !fmt.tracepoints)
		return cli_usage_error(usage, "record: --format=tfile needs --tracepoint=FUNC");
	if (fmt.tracepoints && strcmp(fmt.format, "tfile"))
		return cli_usage_error(usage, "record: --tracepoint writes --format=tfile, not %s",
				       fmt.format);
	if (split_trigger_args(&fmt) < 0)
		return CLI_USAGE;
	c = check_filters(&fmt);
	if (c == 0)
		c = dyn_check(fmt.match);
	if (c != 0)
		return c;
	if (!dir) {
		snprintf(defdir, sizeof(defdir), "%s.data", fmt.format ? fmt.format : "uftrace");
		dir = defdir;
	}
	if (*dir == '\0')
		return cli_usage_error(usage, "record: empty -d DIR");

	if (attach_pid) {
		if ((forced && kind != HOOK_MCOUNT) || fmt.signal || fmt.no_pltbind)
			return cli_usage_error(usage, "record: -p PID takes the mcount hook's "
					       "options but --hook, --signal and --no-pltbind");
		return record_attach(attach_pid, duration, dir, &fmt);
	}
	if (find_program(argv[optind], prog, sizeof(prog)) < 0)
		return CLI_USAGE;
	if (hook_detect(prog, &found, &dynamic, why, sizeof(why)) < 0) {
		cli_err("%s: %s", prog, why);
		return CLI_USAGE;
	}
	if (!dynamic) {
		cli_err("%s is statically linked: LD_PRELOAD cannot load a runtime into it", prog);
		return CLI_USAGE;
	}
	if (secure_exec(prog, why, sizeof(why))) {
		cli_err("%s is %s: the dynamic loader ignores LD_PRELOAD for it (AT_SECURE), so "
			"no runtime can record it; record a copy without that bit",
			prog, why);
		return CLI_USAGE;
	}
	if (!forced) {
		kind = found;
		/* -P: a program with patchable nops imports no hook; XRay sleds are patched
		 * into libmcount's hooks, written as uftrace.data (as uftrace -P does) */
		if ((kind == HOOK_NONE || kind == HOOK_XRAY) && dyn_patch)
			kind = HOOK_MCOUNT;
		if (kind == HOOK_NONE) {
			cli_err("%s: no instrumentation found (build it with -pg, -pg -mfentry, "
				"-finstrument-functions, -fxray-instrument or -fsanitize=thread; or "
				"force one with --hook)",
				prog);
			return CLI_USAGE;
		}
	}
	if (dyn_patch && kind != HOOK_MCOUNT) {
		cli_err("%s: -P/-U patch functions for the mcount hook; the %s runtime does not "
			"take them", prog, hook_runtime_name(kind));
		return CLI_USAGE;
	}
	if ((any_filter(&fmt) || fmt.match || fmt.hide || fmt.max_stack || fmt.args ||
	     fmt.retval || fmt.auto_args || fmt.srcline || fmt.with_syms) && kind != HOOK_MCOUNT) {
		cli_err("%s: the filters and triggers (-F -N -T -C -H -D -t -Z --match --disable "
			"--signal --max-stack), -A/-R/-a, --srcline and --with-syms are for the "
			"mcount hook (-pg, -finstrument-functions); the %s runtime does not take "
			"them",
			prog, hook_runtime_name(kind));
		return CLI_USAGE;
	}
	if (fmt.format && kind != HOOK_MCOUNT && kind != HOOK_XRAY) {
		cli_err("%s: --format is for function hooks (mcount, xray); the %s runtime writes "
			"its own format only",
			prog, hook_runtime_name(kind));
		return CLI_USAGE;
	}
	if (find_runtime(kind, lib, sizeof(lib)) < 0)
		return CLI_USAGE;
	dirfd = recdir_prepare(dir);
	if (dirfd < 0)
		return CLI_USAGE;
	if (setup_env(lib, dir) < 0 || setup_format_env(&fmt) < 0 || dyn_setenv() < 0)
		return CLI_USAGE;
	if (fmt.format ? !strcmp(fmt.format, "uftrace") : kind == HOOK_MCOUNT)
		write_default_opts(dirfd, &fmt);
	free(fmt.tracepoints);
	free(fmt.filter);
	free(fmt.trigger);
	free(fmt.caller);
	free(fmt.hide);
	free(fmt.loc);
	free(fmt.signal);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	status = run_child(prog, argv + optind, lib, &exec_errno);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (status < 0) {
		recdir_finish(dirfd, dir);
		return exec_errno == EACCES || exec_errno == ENOEXEC ? 126 : 127;
	}

	/* a process that died without finishing (SIGKILL, ...) left its rings: salvage them */
	if (WIFSIGNALED(status) || rec_salvage_needed(dir))
		record_salvage(dir, argc - optind, argv + optind, &salv);
	print_summary(dir, &salv, elapsed(&t0, &t1), "");
	if (fmt.format && !strcmp(fmt.format, "tfile")) {
		const char *base = strrchr(prog, '/');
		fprintf(stderr, "flightrec: open it with: gdb -x %s/%s.gdb %s\n", dir,
			base ? base + 1 : prog, prog);
	}
	recdir_finish(dirfd, dir);

	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return CLI_BAD_TRACE;
}
