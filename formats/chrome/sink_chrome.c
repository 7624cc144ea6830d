/*
 * sink_chrome: the Chrome trace event JSON writer (the format chrome://tracing, Perfetto and
 * `uftrace dump --chrome` use), fed by any function hook's rings (fn_decode.h).
 *
 * Output: <dir>/<program>.json (rec_outname.h: a fork child, or a process that finds the name
 * taken, adds .<pid>), one object:
 *   {"traceEvents":[
 *   {"name":"f","ph":"B","ts":12.345,"pid":P,"tid":T},     a function's entry (an XRay
 *                                  log-args one: its argument in "args":{"arguments":"(7)"})
 *   {"name":"f","ph":"E","ts":12.400,"pid":P,"tid":T},     its exit (the innermost open B,
 *                                                          named as speedscope wants it)
 *   {"name":"flightrec: N events lost","ph":"i","s":"t",...} where the ring lost events
 *   {"name":"thread_name","ph":"M",...} {"name":"process_name","ph":"M",...}
 *   ],"displayTimeUnit":"ns","otherData":{"clock":"CLOCK_MONOTONIC","recorder":"flightrec"}}
 * ts is in microseconds with nanosecond digits (CLOCK_MONOTONIC). Functions are named from
 * the modules' symbol tables (rec_symtab), "0x<address>" when no symbol holds the address.
 * The frames still open when a thread's stream ends get their E then, so every B has its E.
 *
 * Threads' events go through their rings like any event; the flusher decodes each chunk and
 * appends JSON lines (each ending with ",\n") to .flightrec/chrome.<pid>.<session ns>.<tid>;
 * finish concatenates the spools and closes the array with the metadata events. finish may
 * run in a fatal-signal handler: no stdio, no malloc there.
 */
#include "formats/chrome/sink_chrome.h"
#include "librecord/rec_outname.h"
#include "librecord/rec_session.h"
#include "librecord/rec_symtab.h"
#include "librecord/rec_util.h"
#include "formats/xcode/xcode.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CHROME_BUF	  (256u << 10)
#define CHROME_FRAMES	  65536u
#define CHROME_EVENT_MAX  1400 /* the longest event line (a name is cut at 1024 bytes) */
#define CHROME_MAX_SPOOLS 4096

static int chrome_forked;

static size_t chrome_spool_name(char *buf, size_t size, const struct rec_session *s, pid_t tid)
{
	return rec_snprintf(buf, size, "chrome.%d.%llu.%d", (int)s->pid,
			    (unsigned long long)s->start_ns, (int)tid);
}

static int chrome_open_session(struct rec_session *s)
{
	(void)s;
	if (rec_symtab_load() < 0)
		rec_warn("chrome: cannot read the program's symbols: functions are named by "
			 "address");
	return 0;
}

static void chrome_fork_child(struct rec_session *s, pid_t ppid)
{
	(void)s;
	(void)ppid;
	chrome_forked = 1;
}

/* The thread's spool for one write (rec_sink.thread_fd): no descriptor is kept per thread,
 * so threads do not eat the program's RLIMIT_NOFILE */
static int chrome_thread_fd(struct rec_session *s, struct rec_thread *t)
{
	char name[80];

	chrome_spool_name(name, sizeof(name), s, t->tid);
	return rec_spool_open(s, name);
}

static int chrome_open_thread(struct rec_session *s, struct rec_thread *t)
{
	char name[80];

	chrome_spool_name(name, sizeof(name), s, t->tid);
	if (rec_spool_create(s, name, "") < 0) /* each write opens it (chrome_thread_fd) */
		return -1;
	return xcode_attach(t, CHROME_FRAMES, CHROME_BUF,
				"chrome: no memory for a thread's state");
}

/* name as a JSON string body (quotes and backslashes escaped, control bytes as \u00XX) */
static size_t chrome_json_str(char *out, size_t size, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	for (; *s && n + 7 < size; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			out[n++] = '\\';
			out[n++] = (char)c;
		} else if (c < 0x20) {
			memcpy(out + n, "\\u00", 4);
			out[n + 4] = hex[c >> 4];
			out[n + 5] = hex[c & 15];
			n += 6;
		} else {
			out[n++] = (char)c;
		}
	}
	out[n] = '\0';
	return n;
}

struct chrome_arg {
	struct xcode *x;
	int pid, tid;
};

static void chrome_line(struct xcode *x, const char *line, size_t n)
{
	uint8_t *p = xcode_room(x, n);

	if (p) {
		memcpy(p, line, n);
		x->len += n;
	}
}

/* the function at ADDR as a JSON string's contents ("0x<addr>" with no symbol) */
static void chrome_name(char *out, size_t size, uintptr_t addr)
{
	const struct rec_module *m;
	struct rec_sym *sym = addr ? rec_symtab_find(addr, &m) : NULL;
	char raw[1024];

	if (sym)
		rec_snprintf(raw, sizeof(raw), "%s", rec_symtab_name(m, sym));
	else
		rec_snprintf(raw, sizeof(raw), "0x%llx", (unsigned long long)addr);
	chrome_json_str(out, size, raw);
}

/*
 * An XRay log-args entry's argument as the B's args, the way `uftrace dump --chrome` writes an
 * "arg1" (uftrace's auto format of a long: decimal, hex past +-100000, a negative int held in
 * 4 bytes in decimal): ,"args":{"arguments":"(-10)"}; "" for an entry without one.
 */
static void chrome_arg_text(char *out, size_t size, const struct fn_ev *ev)
{
	uint64_t v = ev->arg;
	long long sv = (long long)v;

	if (!ev->has_arg)
		out[0] = '\0';
	else if ((sv > 100000 || sv < -100000) && v > 0xffff0000ull && v <= 0xffffffffull)
		rec_snprintf(out, size, ",\"args\":{\"arguments\":\"(%d)\"}", (int)(uint32_t)v);
	else if (sv > 100000 || sv < -100000)
		rec_snprintf(out, size, ",\"args\":{\"arguments\":\"(0x%llx)\"}",
			     (unsigned long long)v);
	else
		rec_snprintf(out, size, ",\"args\":{\"arguments\":\"(%lld)\"}", sv);
}

static void chrome_ev(void *arg, const struct fn_ev *ev)
{
	struct chrome_arg *a = arg;
	struct xcode *x = a->x;
	char line[CHROME_EVENT_MAX], name[1100], args[64];
	unsigned long long us = ev->ns / 1000, frac = ev->ns % 1000;
	size_t n;

	x->last_ns = ev->ns;
	if (ev->kind == FN_ENTRY) {
		chrome_name(name, sizeof(name), ev->addr);
		chrome_arg_text(args, sizeof(args), ev);
		n = rec_snprintf(line, sizeof(line),
				 "{\"name\":\"%s\",\"ph\":\"B\",\"ts\":%llu.%03llu,\"pid\":%d,"
				 "\"tid\":%d%s},\n",
				 name, us, frac, a->pid, a->tid, args);
		if (x->depth < x->cap)
			x->stack[x->depth] = ev->addr;
		x->depth++;
	} else {
		if (!x->depth)
			return; /* its entry came before a gap */
		x->depth--;
		/* the E names its B: the format does not ask it, but speedscope's import ignores
		 * an E whose name is not its B's (every frame then stayed open to the end) */
		if (x->depth < x->cap) {
			chrome_name(name, sizeof(name), x->stack[x->depth]);
			n = rec_snprintf(line, sizeof(line),
					 "{\"name\":\"%s\",\"ph\":\"E\",\"ts\":%llu.%03llu,"
					 "\"pid\":%d,\"tid\":%d},\n",
					 name, us, frac, a->pid, a->tid);
		} else {
			n = rec_snprintf(line, sizeof(line),
					 "{\"ph\":\"E\",\"ts\":%llu.%03llu,\"pid\":%d,"
					 "\"tid\":%d},\n",
					 us, frac, a->pid, a->tid);
		}
	}
	chrome_line(x, line, n);
	x->events++;
}

static void chrome_lost(struct xcode *x, int pid, int tid, uint64_t lost)
{
	char line[256];
	size_t n =
		rec_snprintf(line, sizeof(line),
			     "{\"name\":\"flightrec: %llu events lost\",\"ph\":\"i\",\"s\":\"t\","
			     "\"ts\":%llu.%03llu,\"pid\":%d,\"tid\":%d},\n",
			     (unsigned long long)lost, (unsigned long long)(x->last_ns / 1000),
			     (unsigned long long)(x->last_ns % 1000), pid, tid);
	chrome_line(x, line, n);
}

static int chrome_write_chunk(struct rec_session *s, struct rec_thread *t, const uint8_t *data,
			      size_t len, uint64_t lost_before)
{
	struct xcode *x = t->sink_priv;
	struct chrome_arg a = {x, (int)s->pid, (int)t->tid};

	if (t->sink_fd < 0 || !x)
		return -1;
	x->fd = t->sink_fd;
	if (lost_before)
		chrome_lost(x, a.pid, a.tid, lost_before);
	fn_decode(&x->dec, data, len, chrome_ev, &a);
	return xcode_flush(x);
}

static void chrome_close_thread(struct rec_session *s, struct rec_thread *t, uint64_t lost_after)
{
	struct xcode *x = t->sink_priv;

	if (x && t->sink_fd < 0)
		t->sink_fd = chrome_thread_fd(s, t);
	if (x)
		x->fd = t->sink_fd;
	if (x && t->sink_fd >= 0) {
		struct chrome_arg a = {x, (int)s->pid, (int)t->tid};
		struct fn_ev ev = {.ns = x->last_ns, .kind = FN_EXIT};
		if (lost_after)
			chrome_lost(x, a.pid, a.tid, lost_after);
		while (x->depth) /* what is still open ends with the stream */
			chrome_ev(&a, &ev);
		xcode_flush(x);
	}
	if (t->sink_fd >= 0)
		close(t->sink_fd);
	t->sink_fd = -1;
	xcode_free(x);
	t->sink_priv = NULL;
}

/* --- finish ---------------------------------------------------------------------------- */

static const char *chrome_prog(const struct rec_session *s)
{
	const char *base = strrchr(s->exe, '/');
	base = base ? base + 1 : s->exe;
	return *base ? base : "trace";
}

/* append spool `name` to out; its tid in *tid; 0 on success */
static int chrome_copy(struct rec_session *s, const char *name, int out, uint8_t *buf,
		       size_t bufsize)
{
	int in = openat(s->ringdirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), bad = 0;
	ssize_t n;

	if (in < 0)
		return -1;
	while ((n = read(in, buf, bufsize)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			bad = 1;
			break;
		}
		if (rec_write_all(out, buf, (size_t)n) < 0) {
			bad = 1;
			break;
		}
	}
	close(in);
	return bad ? -1 : 0;
}

struct chrome_spools {
	struct rec_session *s;
	int fd;
	uint8_t *buf;
	size_t bufsize, plen;
	int32_t *tids;
	size_t ntids;
};

/* one spool: its tid noted, its events appended, the file removed; 1 when the copy failed */
static int chrome_take_spool(void *arg, const char *name)
{
	struct chrome_spools *c = arg;
	int bad;

	if (c->ntids < CHROME_MAX_SPOOLS)
		c->tids[c->ntids++] = (int32_t)strtol(name + c->plen, NULL, 10);
	bad = chrome_copy(c->s, name, c->fd, c->buf, c->bufsize) < 0;
	unlinkat(c->s->ringdirfd, name, 0);
	return bad;
}

static void chrome_finish(struct rec_session *s)
{
	char prefix[64], tmp[600], path[600], line[1400], prog[1100];
	size_t bufsize = 1 << 20, size;
	struct chrome_spools c;
	int32_t *tids;
	uint8_t *buf;
	int fd, bad = 0;

	size = bufsize + CHROME_MAX_SPOOLS * sizeof(*tids);
	buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		rec_warn("chrome: no memory to write the trace");
		return;
	}
	tids = (int32_t *)(buf + bufsize);
	rec_snprintf(tmp, sizeof(tmp), ".%s.%d.json.tmp", chrome_prog(s), (int)s->pid);
	fd = rec_open_write(s->dirfd, tmp, O_TRUNC);
	if (fd < 0) {
		rec_warn("chrome: cannot create %s/%s:", s->dir, tmp);
		goto out;
	}
	bad = rec_write_all(fd, "{\"traceEvents\":[\n", 17) < 0;
	c = (struct chrome_spools){s, fd, buf, bufsize, 0, tids, 0};
	c.plen = chrome_spool_name(prefix, sizeof(prefix), s, 0) - 1; /* without the "0" */
	if (!bad && rec_dir_each(s->ringdirfd, prefix, c.plen, chrome_take_spool, &c) > 0)
		bad = 1;
	chrome_json_str(prog, sizeof(prog), chrome_prog(s));
	for (size_t i = 0; i < c.ntids && !bad; i++) {
		size_t n =
			rec_snprintf(line, sizeof(line),
				     "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
				     "\"args\":{\"name\":\"%s\"}},\n",
				     (int)s->pid, (int)tids[i], prog);
		bad = rec_write_all(fd, line, n) < 0;
	}
	if (!bad) {
		size_t n = rec_snprintf(
			line, sizeof(line),
			"{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
			"\"args\":{\"name\":\"%s\"}}\n],\"displayTimeUnit\":\"ns\",\"otherData\":{"
			"\"clock\":\"CLOCK_MONOTONIC\",\"recorder\":\"flightrec\"}}\n",
			(int)s->pid, (int)s->pid, prog);
		bad = rec_write_all(fd, line, n) < 0;
	}
	if (close(fd) < 0 || bad ||
	    rec_outname_publish(s->dirfd, tmp, chrome_prog(s), ".json", chrome_forked, s->pid, path,
				sizeof(path)) < 0) {
		rec_warn("chrome: cannot write %s/%s.json:", s->dir, chrome_prog(s));
		unlinkat(s->dirfd, tmp, 0);
	}
out:
	munmap(buf, size);
}

const struct rec_sink chrome_sink = {
	.name = "chrome",
	.dir = ".",
	.open_session = chrome_open_session,
	.fork_child = chrome_fork_child,
	.open_thread = chrome_open_thread,
	.write_chunk = chrome_write_chunk,
	.close_thread = chrome_close_thread,
	.thread_fd = chrome_thread_fd,
	.finish = chrome_finish,
};
