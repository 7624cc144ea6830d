/*
 * sink_uftrace: the uftrace.data writer (the rules uftrace 0.13 enforces are in
 * shared/anchors/uftrace.md).
 *
 * Files and who writes them:
 *   sid-<sid>.map  open_session: /proc/self/maps, one line per file-backed module (start of
 *                  its first mapping, end of its last) plus the [stack] line uftrace needs
 *   <exe>.sym      open_session: the executable's functions (old format, sorted); a library
 *                  a front end records loaded with the program gets its own
 *                  (uftrace_note_module), a dlopen'ed one with its DLOP line. With
 *                  FLIGHTREC_WITH_SYMS=DIR (uftrace record --with-syms), none of these:
 *                  DIR's *.sym and *.dbg files are copied at open_session instead
 *   task.txt       SESS at open_session, TASK at open_thread, FORK in a fork child (and at
 *                  open_thread of a vfork child's state, rec_thread.h), DLOP at a
 *                  dlopen (uftrace_note_dlopen); each line
 *                  is one O_APPEND write, so processes sharing the directory never interleave
 *   <tid>.dat      the chunks' records verbatim, a LOST record before a chunk (or at close)
 *                  whenever events were lost; O_APPEND so an exec'ed image continues the file;
 *                  removed at close if still empty (a task without records has none)
 *                  opened for each chunk's write and closed after (thread_fd): no descriptor
 *                  per thread is kept, so a program with many threads keeps its RLIMIT_NOFILE
 *                  and one that closes every descriptor never has ours written into its files
 *   info           finish (uftrace_info.c, shared with salvage): header + sections; rewritten
 *                  by every finishing process under flock(dir), listing every non-empty
 *                  <tid>.dat, so the last one is complete. Its inode is reserved at
 *                  open_session (.flightrec/info.spare, taken by the first finisher; a
 *                  session that cannot have it, or info, starts no trace): out of inodes,
 *                  a thread's <tid>.dat is refused (lost_dead), never info
 * Timestamps everywhere come from rec_clock_ns(), the same clock as the records, so a SESS or
 * TASK line is never later than the first record it covers.
 *
 * Any function hook into uftrace's format: when the front end's rings hold another encoding
 * (xray-rt's FDR records, fn_decode.h), write_chunk decodes each chunk and writes uftrace
 * records instead of copying it: the time in ns (the TSC converted), the function's address
 * from the XRay id, the call depth from the thread's open frames; frames deeper than uftrace's
 * 10-bit depth field are left out and counted in a LOST record, as libmcount does with its
 * 1024-frame shadow stack; what the front end lost is a LOST record as usual. An XRay
 * log-args entry's argument becomes the entry's payload, laid out by the spec the front end
 * gives for info (uftrace_argspec: "arg1", 8 bytes), so uftrace replays it as bs_arg(10).
 */
#include "formats/uftrace/sink_uftrace.h"
#include "librecord/rec_session.h"
#include "librecord/rec_util.h"
#include "formats/uftrace/uftrace_format.h"
#include "formats/uftrace/uftrace_info.h"
#include "formats/uftrace/uftrace_sym.h"
#include "formats/xcode/xcode.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static pid_t uftrace_forked_tid; /* the fork child's first thread: FORK line, no TASK */

/* Append one line to task.txt with a single write. */
static void uftrace_append_task(const char *line, size_t len)
{
	int fd = rec_open_write_kept(rec_sess.dirfd, "task.txt", O_APPEND);
	if (fd < 0) {
		rec_warn("cannot open %s/task.txt:", rec_sess.dir);
		return;
	}
	rec_write_all(fd, line, len);
	close(fd);
}

static void uftrace_make_sid(char sid[17])
{
	uint8_t r[8];
	if (getrandom(r, sizeof(r), GRND_NONBLOCK) != sizeof(r)) {
		uint64_t x = rec_clock_tsc() ^ ((uint64_t)getpid() << 32);
		memcpy(r, &x, sizeof(r));
	}
	for (int i = 0; i < 8; i++)
		rec_snprintf(sid + 2 * i, 3, "%02x", r[i]);
}

/* "start-end prot offset dev inode   path" of /proc/self/maps: 0 and its fields, or -1 */
static int uftrace_parse_maps_line(char *line, unsigned long long *start, unsigned long long *end,
				   char prot[5], const char **path)
{
	char *p = line, *q;
	int field;

	*start = strtoull(p, &q, 16);
	if (q == p || *q != '-')
		return -1;
	p = q + 1;
	*end = strtoull(p, &q, 16);
	if (q == p || *q != ' ' || strlen(q + 1) < 4)
		return -1;
	memcpy(prot, q + 1, 4);
	prot[4] = '\0';
	p = q + 5;
	/* offset, dev and inode, then the path (absent for anonymous memory) */
	for (field = 0; field < 3; field++) {
		while (*p == ' ')
			p++;
		while (*p && *p != ' ')
			p++;
	}
	while (*p == ' ')
		p++;
	*path = p;
	return 0;
}

/*
 * One line per module: what uftrace's map reader wants (and libmcount 0.13 writes). Read and
 * written with read/write and fixed buffers: this runs in the session start, where stdio
 * would call the program's malloc (rec_util.h).
 */
static int uftrace_write_map(void)
{
	char name[64], line[REC_PATH_MAX + 256];
	char cur_path[REC_PATH_MAX] = "", cur_prot[5] = "";
	unsigned long long cur_start = 0, cur_end = 0;
	struct rec_lines in;
	struct rec_out out;
	int ifd, fd;

	rec_snprintf(name, sizeof(name), "sid-%s.map", rec_sess.sid);
	/* thread-self: once the main thread has gone through pthread_exit, /proc/self (the main
	 * thread's) has no map; a process attached to then (record -p) still has one */
	ifd = open("/proc/thread-self/maps", O_RDONLY | O_CLOEXEC);
	if (ifd < 0)
		ifd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (ifd < 0)
		return -1;
	fd = rec_open_write(rec_sess.dirfd, name, O_TRUNC);
	if (fd < 0) {
		close(ifd);
		return -1;
	}
	rec_lines_init(&in, ifd);
	rec_out_init(&out, fd);
	while (rec_lines_next(&in, line, sizeof(line)) >= 0) {
		unsigned long long start, end;
		const char *path;
		char prot[5];

		if (uftrace_parse_maps_line(line, &start, &end, prot, &path) < 0)
			continue;
		if ((path[0] != '/' && strcmp(path, "[stack]") != 0) ||
		    strlen(path) >= sizeof(cur_path))
			continue;
		if (cur_path[0] && strcmp(path, cur_path) == 0) {
			cur_end = end;
			if (prot[2] == 'x')
				memcpy(cur_prot, prot, sizeof(cur_prot));
			continue;
		}
		if (cur_path[0])
			rec_out_printf(&out, "%llx-%llx %s %08x %s %u %-26s %s\n", cur_start,
				       cur_end, cur_prot, 0, "00:00", 0, "", cur_path);
		rec_snprintf(cur_path, sizeof(cur_path), "%s", path);
		memcpy(cur_prot, prot, sizeof(cur_prot));
		cur_start = start;
		cur_end = end;
	}
	if (cur_path[0])
		rec_out_printf(&out, "%llx-%llx %s %08x %s %u %-26s %s\n", cur_start, cur_end,
			       cur_prot, 0, "00:00", 0, "", cur_path);
	close(ifd);
	return rec_out_close(&out);
}

static size_t uftrace_stamp(char *buf, size_t size, uint64_t ns)
{
	return rec_snprintf(buf, size, "%llu.%09llu", (unsigned long long)(ns / 1000000000ull),
			    (unsigned long long)(ns % 1000000000ull));
}

/* uftrace record --with-syms DIR (FLIGHTREC_WITH_SYMS): the symbol files are DIR's, none of
 * our own (uftrace's write_symbol_files copies DIR's .sym and .dbg files instead of saving any) */
static const char *uftrace_symdir(void)
{
	const char *d = rec_getenv("FLIGHTREC_WITH_SYMS");

	return d && *d ? d : NULL;
}

struct uftrace_symcopy {
	int from, to;
};

/* DIR's NAME into the trace, if it is a .sym or .dbg file (0: go on with the walk) */
static int uftrace_copy_symfile(void *arg, const char *name)
{
	const struct uftrace_symcopy *c = arg;
	size_t len = strlen(name);
	char buf[8192];
	ssize_t n;
	int in, out;

	if (len < 5 || (strcmp(name + len - 4, ".sym") && strcmp(name + len - 4, ".dbg")))
		return 0;
	in = openat(c->from, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0)
		return 0;
	out = rec_open_write(c->to, name, O_TRUNC);
	if (out >= 0) {
		while ((n = read(in, buf, sizeof(buf))) > 0 &&
		       rec_write_all(out, buf, (size_t)n) == 0)
			;
		close(out);
	}
	close(in);
	return 0;
}

static void uftrace_copy_symdir(struct rec_session *s, const char *dir)
{
	struct uftrace_symcopy c = { open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), s->dirfd };
	struct stat a, b;

	if (c.from < 0) {
		rec_warn("--with-syms %s: cannot open it (the trace has no symbol files):", dir);
		return;
	}
	/* the trace's own directory: its files are the ones wanted already */
	if (fstat(c.from, &a) == 0 && fstat(s->dirfd, &b) == 0 &&
	    (a.st_dev != b.st_dev || a.st_ino != b.st_ino))
		rec_dir_each(c.from, "", 0, uftrace_copy_symfile, &c);
	close(c.from);
}

/* PATH's functions as <last component of PATH>.sym, where readers look a module up */
static void uftrace_write_module_sym(int dirfd, const char *path)
{
	char symname[REC_PATH_MAX];
	const char *base = strrchr(path, '/');

	if (uftrace_symdir())
		return; /* DIR's, copied at the session's start */
	rec_snprintf(symname, sizeof(symname), "%s.sym", base ? base + 1 : path);
	if (uftrace_sym_write(dirfd, path, symname) < 0)
		rec_debug("no symbols written for %s (uftrace reads the ELF file instead)", path);
}

static int uftrace_xcoding(void);

/* libmcount's -A/-R specs (mcount_args.c) as the environment gave them (with -T's argument
 * actions), "" as none; -a. A front end whose records the sink transcodes gives its own
 * (xray-rt: log-args entries) */
static void uftrace_specs(const char **arg, const char **ret, const char **patt, int *autoa)
{
	const char *a = rec_getenv("FLIGHTREC_AUTO_ARGS");

	if (uftrace_xcoding()) {
		*arg = rec_sess.fe->uftrace_argspec ? rec_sess.fe->uftrace_argspec() : NULL;
		*ret = NULL;
		*patt = *arg ? "regex" : NULL;
		*autoa = 0;
		return;
	}
	*autoa = a && *a && strcmp(a, "0");
	*arg = rec_getenv("FLIGHTREC_ARGUMENT");
	*ret = rec_getenv("FLIGHTREC_RETVAL");
	/* libmcount: -T's argument actions (a plain LD_PRELOAD's FLIGHTREC_TRIGGER) too */
	if (rec_sess.fe && rec_sess.fe->uftrace_argspec)
		*arg = rec_sess.fe->uftrace_argspec();
	if (rec_sess.fe && rec_sess.fe->uftrace_retspec)
		*ret = rec_sess.fe->uftrace_retspec();
	*patt = rec_getenv("FLIGHTREC_MATCH");
	*arg = *arg && **arg ? *arg : NULL;
	*ret = *ret && **ret ? *ret : NULL;
	*patt = *patt && **patt ? *patt : NULL;
}

/* kept for salvage from the start: a trace with payloads is unreadable without them */
static void uftrace_save_spec(struct rec_session *s)
{
	const char *arg, *ret, *patt;
	int autoa;

	uftrace_specs(&arg, &ret, &patt, &autoa);
	if (uftrace_info_save_spec(s->ringdirfd, arg, ret, patt, autoa) < 0)
		rec_warn("cannot write %s/.flightrec/%s:", s->dir, UFTRACE_SPEC_FILE);
}

static int uftrace_open_session(struct rec_session *s)
{
	char line[REC_PATH_MAX + 128], ts[32];
	size_t n;

	uftrace_make_sid(s->sid);
	/* first: no trace is begun that could end without the inode its info needs */
	if (uftrace_info_reserve(s->dirfd, s->ringdirfd) < 0)
		return -1;
	if (uftrace_write_map() < 0)
		return -1; /* the session says so, once */
	uftrace_stamp(ts, sizeof(ts), s->start_ns);
	n = rec_snprintf(line, sizeof(line), "SESS timestamp=%s pid=%d sid=%s exename=\"%s\"\n", ts,
			 (int)s->pid, s->sid, s->exe);
	uftrace_append_task(line, n);
	if (uftrace_symdir())
		uftrace_copy_symdir(s, uftrace_symdir());
	else
		uftrace_write_module_sym(s->dirfd, s->exe);
	uftrace_save_spec(s);
	return 0;
}

static int uftrace_note_module_fds(void *arg)
{
	rec_session_fds_check();
	uftrace_write_module_sym(rec_sess.dirfd, arg);
	return 0;
}

void uftrace_note_module(const char *path)
{
	if (rec_sess.sink != &uftrace_sink || !path || !path[0] ||
	    __atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) != REC_SESSION_ACTIVE ||
	    getpid() != rec_sess.pid)
		return;
	/* the program may close or reuse any number meanwhile: written by the fd helper */
	rec_fd_call(uftrace_note_module_fds, (void *)path);
}

struct uftrace_dlop {
	const char *line;
	size_t len;
	const char *libname;
};

static int uftrace_note_dlopen_fds(void *arg)
{
	const struct uftrace_dlop *d = arg;

	rec_session_fds_check();
	uftrace_append_task(d->line, d->len);
	uftrace_write_module_sym(rec_sess.dirfd, d->libname);
	return 0;
}

void uftrace_note_dlopen(const char *libname, uintptr_t base)
{
	char line[REC_PATH_MAX + 160], ts[32];
	size_t n;

	if (rec_sess.sink != &uftrace_sink || !libname || !libname[0] ||
	    __atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) != REC_SESSION_ACTIVE ||
	    getpid() != rec_sess.pid)
		return;
	uftrace_stamp(ts, sizeof(ts), rec_clock_ns());
	n = rec_snprintf(line, sizeof(line), "DLOP timestamp=%s tid=%d sid=%s base=%llx libname=\"%s\"\n",
			 ts, (int)rec_gettid(), rec_sess.sid, (unsigned long long)base, libname);
	struct uftrace_dlop d = { line, n, libname };
	/* the program may close or reuse any number meanwhile: written on the flusher */
	rec_fd_call(uftrace_note_dlopen_fds, &d);
}

static void uftrace_fork_child(struct rec_session *s, pid_t ppid)
{
	char line[128], ts[32];
	size_t n;

	uftrace_forked_tid = s->pid;
	uftrace_stamp(ts, sizeof(ts), s->start_ns);
	n = rec_snprintf(line, sizeof(line), "FORK timestamp=%s pid=%d ppid=%d\n", ts, (int)s->pid,
			 (int)ppid);
	uftrace_append_task(line, n);
}

/* the rings hold another front end's encoding: decode and re-encode (see the top) */
#define UFTRACE_XCODE_BUF (256u << 10)
#define UFTRACE_XCODE_FRAMES 65536u

static int uftrace_xcoding(void)
{
	return rec_sess.fe && rec_sess.fe->encoding != REC_ENC_UFTRACE &&
	       rec_sess.fe->encoding != REC_ENC_NONE;
}

static void uftrace_xcode_lost(struct xcode *x, uint64_t lost)
{
	struct uftrace_record r = { 0, uftrace_record_word(UFTRACE_LOST, 0, lost) };
	uint8_t *p = xcode_room(x, sizeof(r));

	memcpy(p, &r, sizeof(r));
	x->len += sizeof(r);
}

/* Frames deeper than the 10-bit depth field can say are left out, as libmcount leaves them
 * (its shadow stack holds 1024 frames), and told as a LOST record where the stream goes on. */
static void uftrace_xcode_put(struct xcode *x, unsigned type, uint32_t depth, uint64_t addr,
			      uint64_t ns, const uint64_t *arg)
{
	struct uftrace_record r = { ns, uftrace_record_word(type, depth, addr) };
	uint8_t *p;

	if (depth > UFTRACE_DEPTH_MAX) {
		x->dropped++;
		return;
	}
	if (x->dropped) {
		uftrace_xcode_lost(x, x->dropped);
		x->dropped = 0;
	}
	/* an XRay log-args entry: its argument as the payload of uftrace's "arg1" (8 bytes, the
	 * `more` bit set), which info's argspec lays out (uftrace_specs) */
	if (arg)
		r.word |= UFTRACE_RECORD_MORE;
	p = xcode_room(x, sizeof(r) + (arg ? 8 : 0));
	memcpy(p, &r, sizeof(r));
	if (arg)
		memcpy(p + sizeof(r), arg, 8);
	x->len += sizeof(r) + (arg ? 8 : 0);
	x->events++;
}

static void uftrace_xcode_ev(void *arg, const struct fn_ev *ev)
{
	struct xcode *x = arg;
	uintptr_t addr = ev->addr;

	if (ev->kind == FN_ENTRY) {
		if (x->depth < x->cap)
			x->stack[x->depth] = addr;
		if (addr)
			uftrace_xcode_put(x, UFTRACE_ENTRY, x->depth, addr, ev->ns,
					  ev->has_arg ? &ev->arg : NULL);
		x->depth++;
	} else if (x->depth) {
		x->depth--;
		if (x->depth < x->cap)
			addr = x->stack[x->depth]; /* the entry's: uftrace pairs them by depth */
		if (addr)
			uftrace_xcode_put(x, UFTRACE_EXIT, x->depth, addr, ev->ns, NULL);
	}
	/* an exit with no open frame (its entry before a gap) is left out */
}

/* <tid>.dat for one write (rec_sink.thread_fd), -1 if it cannot be opened. Without O_CREAT
 * first: it is there once open_thread made it, and an O_CREAT open locks the directory for
 * writing even when the file exists, so the flusher's opens and the helper's creations of
 * new threads' files (O_CREAT) waited for each other, spinning (a sixth of the CPU of 1000
 * short threads). Made when it is not there (removed behind our back, an exec'ed image). */
static int uftrace_thread_fd(struct rec_session *s, struct rec_thread *t)
{
	char name[32];
	int fd;

	rec_snprintf(name, sizeof(name), "%d.dat", (int)t->tid);
	fd = rec_openat_kept(s->dirfd, name, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0 && errno == ENOENT)
		fd = rec_open_write_kept(s->dirfd, name, O_APPEND);
	return fd;
}

static int uftrace_open_thread(struct rec_session *s, struct rec_thread *t)
{
	char line[128], ts[32], name[32];
	size_t n;

	/* created now (it says the thread exists), written by each chunk's write. With O_CREAT
	 * at once: it is not there yet but for an exec'ed image of the same thread, which
	 * appends (uftrace_thread_fd's open without it first was one failed lookup per thread) */
	rec_snprintf(name, sizeof(name), "%d.dat", (int)t->tid);
	t->sink_room = 0;
	t->sink_fd = rec_open_write_kept(s->dirfd, name, O_APPEND);
	if (t->sink_fd < 0) {
		rec_warn("cannot open %s/%d.dat:", s->dir, (int)t->tid);
		return -1;
	}
	/* the room of the LOST record that closes it, even on a full disk (see write_chunk);
	 * without it the first failed write says so */
	(void)rec_room_claim(t->sink_fd, sizeof(struct uftrace_record));
	close(t->sink_fd);
	t->sink_fd = -1;
	if (uftrace_xcoding() && xcode_attach(t, UFTRACE_XCODE_FRAMES, UFTRACE_XCODE_BUF,
						  "no memory for a thread's transcoding state") < 0)
		return -1;
	if (t->tid == uftrace_forked_tid)
		return 0; /* the FORK line stands for it, as uftrace writes it */
	/* late_open: a drainer may open the thread after its first records; the line is stamped
	 * when it attached, never later than them */
	uftrace_stamp(ts, sizeof(ts), t->attach_ns ? t->attach_ns : rec_clock_ns());
	if (t->vfork_pid) {
		/* a vfork child (rec_thread.h): a process of its own, as uftrace's setup_vfork
		 * says it (its FORK messages) */
		n = rec_snprintf(line, sizeof(line), "FORK timestamp=%s pid=%d ppid=%d\n", ts,
				 (int)t->vfork_pid, (int)s->pid);
		uftrace_append_task(line, n);
		return 0;
	}
	n = rec_snprintf(line, sizeof(line), "TASK timestamp=%s tid=%d pid=%d\n", ts, (int)t->tid,
			 (int)s->pid);
	uftrace_append_task(line, n);
	return 0;
}

/*
 * Room on disk for LEN more bytes of <tid>.dat, taken ahead in steps (the size unchanged,
 * FALLOC_FL_KEEP_SIZE): one fallocate per step instead of one per chunk. Steps grow with the
 * file (half of what is there, at least 2 MiB, at most 64 MiB, as ovni-rt's); close_thread,
 * and salvage after a kill, give back what is left past the end. t->sink_room is where the
 * room the writes took ends (0: none). Another image appending to the same file (exec, vfork)
 * may use some of it: then a write may find the disk full, and is cut back and counted lost
 * as any. When a step cannot be had (a full disk) only LEN is asked for, exactly as before:
 * a chunk without room is never written, so the LOST record's room stays.
 */
static int uftrace_room(struct rec_thread *t, off_t end, size_t len)
{
	uint64_t step;

	/* a vfork child's file is its next image's too, and its close gives nothing back
	 * (uftrace_close_thread): exactly LEN, as before the steps (a child that _exits kept
	 * 2 MiB for 128 bytes; e2e libcall/vfork-exit) */
	if (end < 0 || t->vfork_pid)
		return rec_room_ahead(t->sink_fd, len);
	if ((uint64_t)end + len <= t->sink_room)
		return 0;
	/* an exited thread's last writes: exactly LEN. A step would be given back at the
	 * close just after (a thread of one chunk paid a fallocate, a hole punched and a
	 * truncate for it) */
	if (__atomic_load_n(&t->exited, __ATOMIC_ACQUIRE))
		step = len;
	else {
		step = (uint64_t)end / 2;
		step = step < (2u << 20) ? (2u << 20) : step > (64u << 20) ? (64u << 20) : step;
		step = (step + len + 4095) & ~(uint64_t)4095;
	}
	if (fallocate(t->sink_fd, FALLOC_FL_KEEP_SIZE, end, (off_t)step) == 0) {
		t->sink_room = (uint64_t)end + step;
		return 0;
	}
	/* exactly LEN, at the size (the end: O_APPEND); the room taken before stays where it
	 * ends, and the next write asks for a step again */
	if (rec_room_ahead(t->sink_fd, len) < 0)
		return -1;
	t->sink_room = (uint64_t)end + len;
	return 0;
}

static int uftrace_write_chunk(struct rec_session *s, struct rec_thread *t, const uint8_t *data,
			       size_t len, uint64_t lost_before)
{
	struct uftrace_record lost = { 0, uftrace_record_word(UFTRACE_LOST, 0, lost_before) };
	struct iovec iov[2];
	int n = 0;

	(void)s;
	if (t->sink_fd < 0)
		return -1;
	if (uftrace_xcoding() && t->sink_priv) {
		struct xcode *x = t->sink_priv;
		x->fd = t->sink_fd;
		if (lost_before)
			uftrace_xcode_lost(x, lost_before);
		fn_decode(&x->dec, data, len, uftrace_xcode_ev, x);
		return xcode_flush(x);
	}
	if (lost_before) {
		iov[n].iov_base = &lost;
		iov[n++].iov_len = sizeof(lost);
	}
	iov[n].iov_base = (void *)data;
	iov[n++].iov_len = len;
	/* O_APPEND, one writev per chunk. A write that fails (disk full) is cut back off: the
	 * file ends on a whole record, and the drainer counts the chunk lost and tells it in the
	 * next LOST record. Room for the chunk and one LOST record past it is taken first: a
	 * chunk the disk has no room for is never written, so the room a LOST record needs is
	 * always there, up to the last one, which close_thread writes. */
	size_t total = (lost_before ? sizeof(lost) : 0) + len;
	off_t end = lseek(t->sink_fd, 0, SEEK_END); /* O_APPEND: where the write goes */
	if (uftrace_room(t, end, total + sizeof(lost)) < 0)
		return -1;
	return rec_appendv_whole_at(t->sink_fd, iov, n, end);
}

/* A task with no record at all (a fork child that execs before any traced call) leaves no
 * <tid>.dat, as uftrace leaves none: info lists only non-empty files, and an unlisted file
 * is one uftrace ignores. Still empty at close means no image of this tid wrote to it (they
 * append, one after the other), so nothing is lost; an exec'ed image creates it again. */
static void uftrace_drop_if_empty(struct rec_session *s, struct rec_thread *t)
{
	struct stat st;
	char name[32];

	/* by name: the file is opened for each write (thread_fd) and closed by now */
	rec_snprintf(name, sizeof(name), "%d.dat", (int)t->tid);
	if (fstatat(s->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size != 0)
		return;
	unlinkat(s->dirfd, name, 0);
}

/* Can room taken for T reach past the block that holds byte SIZE - 1 of its file? */
static int uftrace_room_past(const struct rec_thread *t, uint64_t size)
{
	uint64_t room = size + sizeof(struct uftrace_record); /* open_thread's, at worst */

	if (t->sink_room > room)
		room = t->sink_room;
	return room > ((size + 511) & ~(uint64_t)511);
}

static void uftrace_close_thread(struct rec_session *s, struct rec_thread *t, uint64_t lost_after)
{
	off_t size = -1;

	/* for its LOST record, and to give back the room past its end; never made here for a
	 * thread open_thread could not open (a file without its TASK line) */
	if (t->sink_fd < 0 && !t->open_failed)
		t->sink_fd = uftrace_thread_fd(s, t);
	if (uftrace_xcoding() && t->sink_priv) {
		struct xcode *x = t->sink_priv;
		x->fd = t->sink_fd;
		if (t->sink_fd >= 0 && lost_after + x->dropped)
			uftrace_xcode_lost(x, lost_after + x->dropped);
		if (t->sink_fd >= 0)
			xcode_flush(x);
		xcode_free(x);
		t->sink_priv = NULL;
		lost_after = 0;
	}
	if (t->sink_fd >= 0) {
		if (lost_after) {
			struct uftrace_record lost = {
				0, uftrace_record_word(UFTRACE_LOST, 0, lost_after)
			};
			(void)rec_append_whole(t->sink_fd, &lost, sizeof(lost)); /* no torn record */
		}
		/* a vfork child's file is its next image's too, which may be appending right now:
		 * a trim (fstat, then truncate to that size) could cut what it wrote between
		 * them; that image trims it at its own close. Room that ends in the block that
		 * holds the file's end (an exited thread's exact room, open_thread's record at
		 * most a record past the size it found) holds no block past it: nothing to give
		 * back (the trim is three syscalls). Blocks of 512 bytes at least */
		size = lseek(t->sink_fd, 0, SEEK_END);
		if (!t->vfork_pid && (size < 0 || uftrace_room_past(t, (uint64_t)size)))
			rec_room_trim(t->sink_fd);
		close(t->sink_fd);
		t->sink_fd = -1;
	}
	if (size <= 0) /* by name: known not empty otherwise */
		uftrace_drop_if_empty(s, t);
}

/* --- info (uftrace_info.c, shared with salvage) ------------------------------------------ */

static void uftrace_finish(struct rec_session *s)
{
	struct uftrace_info_desc d = { 0 };
	char exe[REC_PATH_MAX], tmp[64], cmdline[8192];
	uint64_t now = rec_clock_ns();
	int *tids = NULL, ntids, fd;
	ssize_t n;

	/* serialise finishing processes: the last to take the lock sees every .dat */
	flock(s->dirfd, LOCK_EX);
	ntids = uftrace_info_scan_tids(s->dirfd, &tids);
	if (ntids <= 0) {
		flock(s->dirfd, LOCK_UN);
		rec_mem_free(tids);
		return;
	}
	/* the program the user recorded, even after exec */
	if (uftrace_info_first_exename(s->dirfd, exe, sizeof(exe)) < 0)
		rec_snprintf(exe, sizeof(exe), "%s", s->exe);
	fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, cmdline, sizeof(cmdline) - 1) : -1;
	if (fd >= 0)
		close(fd);
	d.exename = exe;
	d.cmdline = cmdline;
	d.cmdline_len = n > 0 ? (size_t)n : 0;
	d.tids = tids;
	d.ntids = ntids;
	d.date = time(NULL);
	d.elapsed_ns = now - s->start_ns;
	d.max_stack = s->cfg.max_stack;
	/* libmcount's -A/-R (mcount_args.c), as uftrace record saves them */
	uftrace_specs(&d.argspec, &d.retspec, &d.pattern_type, &d.auto_args);
	rec_snprintf(tmp, sizeof(tmp), ".info.%d.tmp", (int)s->pid);
	if (uftrace_info_put(s->dirfd, s->ringdirfd, tmp, &d) < 0)
		rec_warn("cannot write %s/info:", s->dir);
	flock(s->dirfd, LOCK_UN);
	rec_mem_free(tids);
}

const struct rec_sink uftrace_sink = {
	.name = "uftrace",
	.dir = "uftrace.data",
	.encoding = REC_ENC_UFTRACE,
	.open_session = uftrace_open_session,
	.fork_child = uftrace_fork_child,
	.open_thread = uftrace_open_thread,
	/* salvage_uftrace makes a <tid>.dat and a TASK line a killed process did not write */
	.late_open = 1,
	.write_chunk = uftrace_write_chunk,
	.close_thread = uftrace_close_thread,
	.finish = uftrace_finish,
	.thread_fd = uftrace_thread_fd,
};
