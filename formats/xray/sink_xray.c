/*
 * sink_xray: the XRay FDR log writer, one log per process image, as llvm-xray 14 reads them.
 *
 * The stream of each thread (what the hooks put in its ring: NewCPUId, TSCWrap, function,
 * CallArgument and custom-event records, every chunk starting with a NewCPUId) is appended by
 * the flusher to a spool file, <dir>/.flightrec/xray.<pid>.<session ns>.<tid>, opened for each
 * chunk's write and closed after (rec_sink.thread_fd: no descriptor is kept per thread). At
 * finish the log is assembled from the spools, each thread as ONE block of version 5:
 *   header (32 bytes: version 5, type 1, {constant,nonstop}_tsc, the calibrated TSC rate)
 *   per thread: BufferExtents(n) NewBuffer(tid) WallClock(first event) Pid(pid) <stream>
 * One block per thread keeps llvm-xray away from its block-sorting bug (it sorts a thread's
 * blocks with a comparator that is not a strict weak order: past 16 blocks the order breaks)
 * at any trace size; BufferExtents counts 64 bits.
 *
 * A thread whose stream has a gap (a chunk the overwrite policy reused, or a failed write: the
 * flusher reports `lost_before`) may have exit records whose entries are gone, which
 * llvm-xray's account and stack reject. Its spool is renamed <name>.lossy at the first gap, and
 * at assembly such exits are left out, their TSC deltas carried to the next record (a TSCWrap
 * when the sum overflows). Streams without a gap are balanced by construction (xray_hooks.c)
 * and copied as they are.
 *
 * Threads are written by their first TSC. `llvm-xray account` checks every record against the
 * first record it replays, taken from the thread its block index iterates first
 * (xray_order.h); when that thread does not hold the log's earliest record, its block starts
 * with a custom event "flightrec: trace start" stamped with the earliest TSC, so that account
 * accepts the log (the event is the only record flightrec adds to a program's trace).
 *
 * The log is named as compiler-rt names it: <base><program>.<6 random characters>, where
 * <base> is XRAY_OPTIONS' xray_logfile_base when given, else <FLIGHTREC_DIR>/xray-log.
 * With xr_log_announce (compiler-rt's verbosity=1, a logging mode current) its creation is
 * said on stderr in compiler-rt's words.
 *
 * Any function hook into XRay's format: when the front end's rings hold another encoding
 * (libmcount's uftrace records, fn_decode.h), write_chunk decodes each chunk and writes FDR
 * records to the spool instead of copying it: function ids are rec_symtab's (one per
 * function of every loaded module), the "TSC" is the records' nanoseconds (the header says
 * 1 GHz, as compiler-rt's FDR mode does without a TSC), every chunk starts with a NewCPUId
 * (CPU 0), and the frames still open when a thread's stream ends get their exits then (as
 * xray-rt gives its own at finish). Beside the log, <log>.yaml is the instrumentation map of
 * the functions seen, in `llvm-xray extract`'s YAML (file addresses for the executable), which
 * llvm-xray's --instr_map accepts (it names functions @(address) from a YAML map).
 * xray-rt's own log gets one too when shared objects had sleds (rec_frontend.instr_map): their
 * functions' ids carry an object id that no single ELF map names.
 * When compiler-rt's basic mode was chosen (xb_log.path set, sink_xray_basic.c), finish
 * transcodes the spools into that basic log instead of assembling an FDR log.
 * No log is written for a process that recorded nothing (llvm-xray rejects a log without a
 * block). finish may run in a fatal-signal handler: it uses no stdio and no malloc.
 */
#include "formats/xray/sink_xray.h"
#include "formats/xray/sink_xray_basic.h"
#include "formats/xray/fdr_encode.h"
#include "formats/xray/xray_order.h"
#include "formats/xray/xray_repair.h"
#include "formats/xray/xray_logname.h"
#include "formats/xcode/xcode.h"
#include "librecord/rec_clock.h"
#include "librecord/rec_session.h"
#include "librecord/rec_stats.h"
#include "librecord/rec_symtab.h"
#include "librecord/rec_thread.h"
#include "librecord/rec_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

char xr_logfile_base[REC_PATH_MAX];
const char *xr_log_dropped_why;
int xr_log_announce;
char xr_logfile_base_given[REC_PATH_MAX];
static char xr_prog[256];

#define XR_MARKER "flightrec: trace start"
#define XR_LOSSY ".lossy"

struct xr_spool {
	int32_t tid;
	int lossy;	   /* the stream has gaps: leave out exits without their entry */
	uint16_t cpu;	   /* of the stream's first record */
	uint64_t tsc;	   /* the stream's first TSC */
	uint64_t size;	   /* bytes of stream */
	uint64_t out_size; /* bytes of it that go in the log */
	uint64_t left_out; /* exits without their entry it leaves out (lossy): counted lost */
	char name[64];
};

static size_t xr_spool_name(char *buf, size_t size, const struct rec_session *s, pid_t tid)
{
	return rec_snprintf(buf, size, "xray.%d.%llu.%d", (int)s->pid,
			    (unsigned long long)s->start_ns, (int)tid);
}

/* the program's name as compiler-rt takes it: argv[0] after its last '/' */
static void xr_read_prog(void)
{
	char buf[4096];
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	const char *base;

	if (fd >= 0)
		close(fd);
	if (n <= 0) {
		base = strrchr(rec_sess.exe, '/');
		base = base ? base + 1 : rec_sess.exe;
	} else {
		buf[n] = '\0';
		base = strrchr(buf, '/');
		base = base ? base + 1 : buf;
	}
	rec_snprintf(xr_prog, sizeof(xr_prog), "%s", *base ? base : "unknown");
}

/* the rings hold another front end's encoding: decode and re-encode (see the top) */
static int xr_xcoding;
#define XR_XCODE_BUF (256u << 10)
#define XR_XCODE_FRAMES 16384u

static int xray_open_session(struct rec_session *s)
{
	(void)s;
	xr_read_prog();
	xr_xcoding = rec_sess.fe && rec_sess.fe->encoding != REC_ENC_FDR;
	if (xr_xcoding && rec_symtab_load() < 0)
		rec_warn("xray: cannot read the program's symbols: no function ids");
	return 0;
}

/* the XRay id of the function holding addr (rec_symtab's numbering), 0 if none */
static uint32_t xr_xcode_fid(uintptr_t addr)
{
	struct rec_sym *sym = rec_symtab_find(addr, NULL);

	if (!sym || sym->id > FDR_FID_MASK)
		return 0;
	sym->used = 1;
	return sym->id;
}

struct xr_xcode_arg {
	struct xcode *x;
	int based; /* this chunk's NewCPUId is written */
};

static void xr_xcode_put(struct xr_xcode_arg *a, unsigned type, uint32_t fid, uint64_t time)
{
	struct xcode *x = a->x;
	uint8_t *p = xcode_room(x, FDR_META_SIZE + FDR_FN_SIZE);
	uint64_t d = time - x->last_time;

	if (!a->based) {
		fdr_put_new_cpu(p, 0, time);
		p += FDR_META_SIZE;
		x->len += FDR_META_SIZE;
		a->based = 1;
		d = 0;
	} else if (d > FDR_DELTA_MAX) {
		fdr_put_tsc_wrap(p, time);
		p += FDR_META_SIZE;
		x->len += FDR_META_SIZE;
		d = 0;
	}
	fdr_put_fn(p, type, fid, (uint32_t)d);
	x->len += FDR_FN_SIZE;
	x->last_time = time;
	x->events++;
}

static void xr_xcode_ev(void *arg, const struct fn_ev *ev)
{
	struct xr_xcode_arg *a = arg;
	struct xcode *x = a->x;
	uint32_t fid;

	if (ev->kind == FN_ENTRY) {
		fid = xr_xcode_fid(ev->addr);
		if (x->depth < x->cap)
			x->stack[x->depth] = fid;
		x->depth++;
	} else if (x->depth) {
		/* the exit of the frame on top: the entry's id, so the stream stays balanced */
		x->depth--;
		fid = x->depth < x->cap ? (uint32_t)x->stack[x->depth] : xr_xcode_fid(ev->addr);
	} else {
		fid = xr_xcode_fid(ev->addr); /* after a gap: repaired at assembly */
	}
	if (fid)
		xr_xcode_put(a, ev->kind == FN_ENTRY ? FDR_ENTER : FDR_EXIT, fid, ev->time);
}

/* Is the thread's spool renamed .lossy (a gap in its stream)? */
static int xr_spool_lossy(struct rec_thread *t)
{
	struct xcode *x = xr_xcoding ? t->sink_priv : NULL;

	return x ? x->lossy : t->sink_priv != NULL;
}

/* The thread's spool for one write (rec_sink.thread_fd): no descriptor is kept per thread,
 * so threads do not eat the program's RLIMIT_NOFILE, nor leave the program's close-all a
 * number of ours to take */
static int xray_thread_fd(struct rec_session *s, struct rec_thread *t)
{
	char name[80];
	size_t n = xr_spool_name(name, sizeof(name), s, t->tid);

	if (xr_spool_lossy(t))
		rec_snprintf(name + n, sizeof(name) - n, "%s", XR_LOSSY);
	return rec_spool_open(s, name);
}

static int xray_open_thread(struct rec_session *s, struct rec_thread *t)
{
	char name[64];

	xr_spool_name(name, sizeof(name), s, t->tid);
	if (rec_spool_create(s, name, "xray-rt: ") < 0) /* each write opens it (xray_thread_fd) */
		return -1;
	if (xr_xcoding)
		return xcode_attach(t, XR_XCODE_FRAMES, XR_XCODE_BUF,
					"xray: no memory for a thread's transcoding state");
	return 0;
}

static int xray_write_chunk(struct rec_session *s, struct rec_thread *t, const uint8_t *data,
			    size_t len, uint64_t lost_before)
{
	struct xcode *x = xr_xcoding ? t->sink_priv : NULL;

	/* FDR has no loss record (losses are in the runtime's stats file), but a gap in the
	 * stream marks the spool for repair at assembly; sink_priv (or the transcoding state)
	 * remembers it is marked */
	if (lost_before && !(x ? x->lossy : t->sink_priv != NULL)) {
		char name[64], lossy[80];
		xr_spool_name(name, sizeof(name), s, t->tid);
		rec_snprintf(lossy, sizeof(lossy), "%s" XR_LOSSY, name);
		if (renameat(s->ringdirfd, name, s->ringdirfd, lossy) == 0) {
			if (x)
				x->lossy = 1;
			else
				t->sink_priv = (void *)1;
		}
	}
	if (t->sink_fd < 0)
		return -1;
	if (x) {
		struct xr_xcode_arg a = { x, 0 };
		x->fd = t->sink_fd;
		fn_decode(&x->dec, data, len, xr_xcode_ev, &a);
		return xcode_flush(x);
	}
	/* a write that fails (disk full) is cut back off, so the spool ends on a whole record;
	 * the drainer counts the chunk lost and its lost_before marks the spool lossy */
	return rec_append_whole(t->sink_fd, data, len);
}

static void xray_close_thread(struct rec_session *s, struct rec_thread *t, uint64_t lost_after)
{
	struct xcode *x = xr_xcoding ? t->sink_priv : NULL;

	(void)lost_after;
	if (x && t->sink_fd < 0 && x->events)
		t->sink_fd = xray_thread_fd(s, t); /* for the exits of the frames still open */
	if (x)
		x->fd = t->sink_fd;
	if (!xr_xcoding && __atomic_load_n(&t->exited, __ATOMIC_ACQUIRE) && s->fe &&
	    s->fe->owed_at_close)
		/* exits still owed when the thread ended (its ring stayed full): lost after all
		 * (not counted when they failed, since a later hook usually writes them) */
		t->lost[REC_LOST_FULL] += s->fe->owed_at_close(t);
	if (x && t->sink_fd >= 0 && x->events) {
		/* the frames still open end with the stream, as xray-rt's own do at finish */
		struct xr_xcode_arg a = { x, 1 };
		while (x->depth) {
			x->depth--;
			if (x->depth < x->cap && x->stack[x->depth])
				xr_xcode_put(&a, FDR_EXIT, (uint32_t)x->stack[x->depth],
					     x->last_time);
		}
		xcode_flush(x);
	}
	if (t->sink_fd >= 0)
		close(t->sink_fd);
	t->sink_fd = -1;
	if (x) {
		xcode_free(x);
		t->sink_priv = NULL;
	}
}

/* --- finish: assemble the log -------------------------------------------------------- */

struct xr_spools {
	struct xr_spool *out;
	size_t max, n, plen;
};

static int xr_scan_spool(void *arg, const char *name)
{
	struct xr_spools *c = arg;
	struct xr_spool *out = c->out;
	size_t n = c->n;

	if (out && n < c->max) {
		char *end;
		long tid = strtol(name + c->plen, &end, 10);
		int lossy = strcmp(end, XR_LOSSY) == 0;
		if ((*end && !lossy) || tid <= 0 || strlen(name) >= sizeof(out[n].name))
			return 0;
		out[n].tid = (int32_t)tid;
		out[n].lossy = lossy;
		rec_snprintf(out[n].name, sizeof(out[n].name), "%s", name);
	}
	c->n++;
	return 0;
}

/* The spools of this image: how many there are; the first max valid ones in out (if any). */
static size_t xr_scan_spools(struct rec_session *s, struct xr_spool *out, size_t max)
{
	struct xr_spools c = {out, max, 0, 0};
	char prefix[64];

	c.plen = rec_snprintf(prefix, sizeof(prefix), "xray.%d.%llu.", (int)s->pid,
			      (unsigned long long)s->start_ns);
	rec_dir_each(s->ringdirfd, prefix, c.plen, xr_scan_spool, &c);
	return c.n;
}

static int64_t xr_repair_spool(struct rec_session *s, const struct xr_spool *sp, int out,
			       uint64_t *left_out);

/* Size and first record of a spool; 0 when it holds a stream that starts right. */
static int xr_spool_stat(struct rec_session *s, struct xr_spool *sp)
{
	uint8_t first[FDR_META_SIZE];
	struct stat st;
	int fd = openat(s->ringdirfd, sp->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	int ok;

	if (fd < 0)
		return -1;
	ok = fstat(fd, &st) == 0 && st.st_size >= FDR_META_SIZE + FDR_FN_SIZE &&
	     pread(fd, first, sizeof(first), 0) == (ssize_t)sizeof(first) &&
	     first[0] == (FDR_NEW_CPU << 1 | 1);
	close(fd);
	if (!ok)
		return -1;
	sp->size = (uint64_t)st.st_size;
	memcpy(&sp->cpu, first + 1, 2);
	memcpy(&sp->tsc, first + 3, 8);
	sp->out_size = sp->size;
	sp->left_out = 0;
	if (sp->lossy) {
		int64_t r = xr_repair_spool(s, sp, -1, &sp->left_out);
		if (r < FDR_META_SIZE + FDR_FN_SIZE)
			return -1;
		sp->out_size = (uint64_t)r;
	}
	return 0;
}

/* by first TSC, then tid: a shell sort (qsort may allocate) */
static void xr_sort_spools(struct xr_spool *v, size_t n)
{
	for (size_t gap = n / 2; gap > 0; gap /= 2)
		for (size_t i = gap; i < n; i++) {
			struct xr_spool x = v[i];
			size_t j = i;
			while (j >= gap && (v[j - gap].tsc > x.tsc ||
					    (v[j - gap].tsc == x.tsc && v[j - gap].tid > x.tid))) {
				v[j] = v[j - gap];
				j -= gap;
			}
			v[j] = x;
		}
}

static int xr_put_block_head(int fd, const struct rec_session *s, int32_t tid, uint64_t tsc,
			     uint64_t extent)
{
	uint8_t m[4 * FDR_META_SIZE], pl[12];
	uint64_t ns = xr_xcoding ? tsc : rec_clock_tsc_to_ns(tsc); /* transcoded: ns already */
	int64_t sec = (int64_t)(ns / 1000000000ull);
	int32_t usec = (int32_t)(ns % 1000000000ull / 1000), pid = (int32_t)s->pid;

	fdr_put_meta(m, FDR_BUFFER_EXTENTS, &extent, 8);
	fdr_put_meta(m + 16, FDR_NEW_BUFFER, &tid, 4);
	memcpy(pl, &sec, 8);
	memcpy(pl + 8, &usec, 4);
	fdr_put_meta(m + 32, FDR_WALLCLOCK, pl, 12);
	fdr_put_meta(m + 48, FDR_PID, &pid, 4);
	return rec_write_all(fd, m, sizeof(m));
}

/*
 * How many blocks, in order, the log's file system has room for (the spool of each removed
 * once its block is in; 16 KiB kept for the metadata and stats written after). The blocks
 * past them are cut before the first write, so the thread llvm-xray account replays first,
 * which gets the marker, is one the log holds: with the marker in a thread cut off, account
 * refused the log. A file system that says nothing: all n; a write that finds less room
 * (another writer took it) still cuts the log there.
 */
static size_t xr_blocks_that_fit(int fd, const struct xr_spool *v, size_t n)
{
	struct statvfs sv;
	uint64_t bs, room, log = FDR_HEADER_SIZE, mark = 2 * FDR_META_SIZE + sizeof(XR_MARKER) - 1;

	if (fstatvfs(fd, &sv) < 0 || !sv.f_frsize)
		return n;
	bs = sv.f_frsize;
	/* root may use the blocks ext4 keeps for it */
	room = (geteuid() == 0 ? sv.f_bfree : sv.f_bavail) * bs;
	if (room < (16u << 10))
		return 0;
	room -= 16u << 10;
	for (size_t i = 0; i < n; i++) {
		uint64_t grown = log + 4 * FDR_META_SIZE + v[i].out_size + mark;
		uint64_t need = ((grown + bs - 1) / bs - (log + bs - 1) / bs) * bs;
		if (need > room)
			return i;
		room += (v[i].size + bs - 1) / bs * bs - need;
		log = grown;
	}
	return n;
}

/* Run xr_repair over a spool (mapped); the output size, or -1. LEFT_OUT (if not NULL) gets
 * the exits it leaves out. */
static int64_t xr_repair_spool(struct rec_session *s, const struct xr_spool *sp, int out,
			       uint64_t *left_out)
{
	int fd = openat(s->ringdirfd, sp->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	void *m;
	int64_t r;

	if (fd < 0)
		return -1;
	m = mmap(NULL, sp->size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -1;
	r = xr_repair(m, sp->size, out, left_out);
	munmap(m, sp->size);
	return r;
}

/* The events of a spool (function records, custom events: one each for the runtime's count)
 * that could not go into the log: counted lost for the thread (rec_stats_unwritten); the
 * number, 0 when it cannot be read. Walks our own encoding, as xr_repair does. */
static uint64_t xr_spool_cut(struct rec_session *s, const struct xr_spool *sp)
{
	int fd = openat(s->ringdirfd, sp->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	uint64_t events = 0, pos = 0;
	const uint8_t *d;
	void *m;

	if (fd < 0)
		return 0;
	m = mmap(NULL, sp->size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return 0;
	d = m;
	while (pos < sp->size) {
		uint64_t size = FDR_META_SIZE;
		if (!(d[pos] & 1)) {
			size = FDR_FN_SIZE;
			events++;
		} else if ((d[pos] >> 1) == FDR_CUSTOM_EVENT && pos + FDR_META_SIZE <= sp->size) {
			int32_t esize;
			memcpy(&esize, d + pos + 1, 4);
			size += esize > 0 ? (uint64_t)esize : 0;
			events++;
		}
		pos += size;
	}
	munmap(m, sp->size);
	rec_stats_unwritten(sp->tid, events);
	return events;
}

static int xr_copy_spool(struct rec_session *s, const struct xr_spool *sp, int out, uint8_t *buf,
			 size_t bufsize)
{
	int in;
	uint64_t left = sp->size;
	loff_t off = 0;
	int fast = 1;

	if (sp->lossy)
		return xr_repair_spool(s, sp, out, NULL) == (int64_t)sp->out_size ? 0 : -1;
	in = openat(s->ringdirfd, sp->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return -1;
	while (left > 0) {
		ssize_t n = -1;
		if (fast) {
			n = copy_file_range(in, &off, out, NULL, left, 0);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				fast = 0; /* other file system, old kernel: copy by hand */
				continue;
			}
		} else {
			n = pread(in, buf, left < bufsize ? (size_t)left : bufsize, off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0 || rec_write_all(out, buf, (size_t)n) < 0)
				break;
			off += n;
		}
		left -= (uint64_t)n;
	}
	close(in);
	return left == 0 ? 0 : -1;
}

/* verbosity=1: the message compiler-rt's LogWriter::Open prints (its sanitizer Report():
 * "==<pid>==" first); no stdio, as finish may run in a signal handler */
static void xr_say_log(const struct rec_session *s, const char *path, const char *name,
		       const char *sfx)
{
	char msg[REC_PATH_MAX + 400];
	size_t n;

	if (!xr_log_announce)
		return;
	if (xr_logfile_base[0])
		n = rec_snprintf(msg, sizeof(msg), "==%d==XRay: Log file in '%s%s.%s'\n",
				 (int)getpid(), xr_logfile_base_given, xr_prog, sfx);
	else if (strcmp(s->dir, ".") == 0 || !rec_getenv("FLIGHTREC_DIR"))
		/* the start-up directory, compiler-rt's: its default base "xray-log." */
		n = rec_snprintf(msg, sizeof(msg), "==%d==XRay: Log file in '%s'\n",
				 (int)getpid(), name);
	else
		n = rec_snprintf(msg, sizeof(msg), "==%d==XRay: Log file in '%s'\n",
				 (int)getpid(), path);
	if (n >= sizeof(msg))
		n = sizeof(msg) - 1;
	rec_stderr_write(msg, n); /* finish may run on the helper (rec_fd_call) */
}

/* The log file, created with a fresh random suffix; its path in `path`. */
static int xr_create_log(struct rec_session *s, char *path, size_t size)
{
	for (int tries = 0; tries < 100; tries++) {
		char sfx[7];
		int fd;

		xray_log_suffix(sfx, tries);
		char name[512];

		rec_snprintf(name, sizeof(name), "xray-log.%s.%s", xr_prog, sfx);
		if (xr_logfile_base[0]) {
			rec_snprintf(path, size, "%s%s.%s", xr_logfile_base, xr_prog, sfx);
			fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		} else {
			rec_snprintf(path, size, "%s/%s", s->dir, name);
			fd = openat(s->dirfd, name,
				    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		}
		if (fd >= 0)
			xr_say_log(s, path, name, sfx);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	return -1;
}

static void *xr_mmap(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* A function name as a YAML single-quoted scalar ('' for '); false if it does not fit */
size_t xr_yaml_name(char *out, size_t size, const char *name)
{
	size_t n = 0;

	if (size < 3)
		return 0;
	out[n++] = '\'';
	for (; *name && n + 3 < size; name++) {
		if (*name == '\'')
			out[n++] = '\'';
		out[n++] = (unsigned char)*name < 0x20 ? '?' : *name;
	}
	out[n++] = '\'';
	out[n] = '\0';
	return n;
}

/* <log>.yaml: the functions the transcoded log names, as `llvm-xray extract` writes a map */
static int xr_write_map(const char *log)
{
	char path[REC_PATH_MAX + 320], line[1200], name[900];
	size_t nmod = rec_symtab_nmodules();
	int fd, bad;

	rec_snprintf(path, sizeof(path), "%s.yaml", log);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd < 0)
		return -1;
	bad = rec_write_all(fd, "---\n", 4) < 0;
	for (size_t i = 0; i < nmod && !bad; i++) {
		const struct rec_module *m = rec_symtab_module_at(i);
		for (size_t k = 0; k < m->nsyms && !bad; k++) {
			const struct rec_sym *sym = &m->syms[k];
			unsigned long long a;
			if (!sym->used || (k > 0 && m->syms[k - 1].addr == sym->addr))
				continue;
			a = (unsigned long long)(m->is_exe ? sym->addr - m->bias : sym->addr);
			xr_yaml_name(name, sizeof(name), rec_symtab_name(m, sym));
			for (int kind = 0; kind < 2 && !bad; kind++) {
				size_t len = rec_snprintf(
					line, sizeof(line),
					"- { id: %u, address: 0x%llX, function: 0x%llX, kind: %s, "
					"always-instrument: false, function-name: %s, version: 2 }\n",
					sym->id, a, a, kind ? "function-exit" : "function-enter", name);
				bad = rec_write_all(fd, line, len) < 0;
			}
		}
	}
	if (!bad)
		bad = rec_write_all(fd, "...\n", 4) < 0;
	if (close(fd) < 0)
		bad = 1;
	return bad ? -1 : 0;
}

int xr_log_create(char *path, size_t size)
{
	return xr_create_log(&rec_sess, path, size);
}

/* --- compiler-rt's basic log (sink_xray_basic.c) -------------------------------------- */

int xb_log_create(const struct xb_options *o, uint64_t tsc_hz, uint32_t tsc_bits)
{
	uint8_t hdr[XB_HEADER_SIZE];
	char path[sizeof(xb_log.path)];
	int fd;

	if (xb_log.path[0])
		return 0; /* one log per process tree, as compiler-rt's (fork children append) */
	fd = xr_create_log(&rec_sess, path, sizeof(path));
	if (fd < 0) {
		rec_warn("xray-rt: cannot create the XRay basic log %s:", path);
		return -1;
	}
	xb_put_header(hdr, tsc_hz, tsc_bits);
	if (rec_write_all(fd, hdr, sizeof(hdr)) < 0) {
		rec_warn("xray-rt: cannot write the XRay basic log %s (removed):", path);
		close(fd);
		unlink(path);
		return -1;
	}
	close(fd);
	xb_log.opt = *o;
	xb_log.threshold_ticks = (uint64_t)((unsigned __int128)tsc_hz * o->threshold_us / 1000000);
	rec_snprintf(xb_log.path, sizeof(xb_log.path), "%s", path);
	return 0;
}

/* every thread's stream, transcoded, appended to the basic log; the spools are removed */
static void xr_basic_finish(struct rec_session *s, const struct xr_spool *v, size_t n)
{
	struct xb_work w = {0};
	size_t cap = xb_log.opt.buffer_size < 2 ? 2 : xb_log.opt.buffer_size;
	size_t size;
	uint8_t *mem;
	size_t done = 0;

	if (cap > (1u << 20))
		cap = 1u << 20; /* the write size only: records are the same */
	w.stack_cap = xb_log.opt.max_depth < (1u << 16) ? xb_log.opt.max_depth : (1u << 16);
	size = cap * XB_RECORD_SIZE + w.stack_cap * sizeof(*w.stack);
	mem = xr_mmap(size);
	w.fd = open(xb_log.path, O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
	/* one appender at a time: the processes of the tree share the log */
	if (w.fd >= 0)
		while (flock(w.fd, LOCK_EX) < 0 && errno == EINTR)
			;
	if (!mem || w.fd < 0) {
		uint64_t cut = 0;
		for (size_t i = 0; i < n; i++)
			cut += xr_spool_cut(s, &v[i]);
		rec_warn("xray-rt: cannot append to the XRay basic log %s (the spools are left in "
			 "%s/.flightrec; %llu events counted lost):", xb_log.path, s->dir,
			 (unsigned long long)cut);
		goto out;
	}
	w.out = mem;
	w.cap = cap;
	w.stack = (struct xb_frame *)(mem + cap * XB_RECORD_SIZE);
	for (size_t i = 0; i < n; i++) {
		int fd = openat(s->ringdirfd, v[i].name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		void *m = fd >= 0 ? mmap(NULL, v[i].size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
		int r = -1;

		if (fd >= 0)
			close(fd);
		if (m && m != MAP_FAILED) {
			w.depth = 0;
			w.n = 0;
			/* thread_buffer_size=0: compiler-rt keeps no buffer, records nothing */
			r = xb_log.opt.buffer_size == 0 ?
				    0 :
				    xb_transcode(&w, &xb_log.opt, xb_log.threshold_ticks, m,
						 v[i].size, (uint32_t)v[i].tid, (uint32_t)s->pid);
			if (r == 0)
				r = xb_flush(&w);
			munmap(m, v[i].size);
		}
		if (r < 0) {
			rec_warn("xray-rt: cannot write thread %d's records to the XRay basic log %s "
				 "(its spool is left in %s/.flightrec; %llu events counted lost):",
				 (int)v[i].tid, xb_log.path, s->dir,
				 (unsigned long long)xr_spool_cut(s, &v[i]));
			continue;
		}
		unlinkat(s->ringdirfd, v[i].name, 0);
		done++;
	}
	if (xb_order_runs(w.fd) < 0)
		rec_warn("xray-rt: cannot put the processes of the XRay basic log %s in time order "
			 "(llvm-xray account may reject it):", xb_log.path);
	rec_debug("xray-rt: appended %zu threads, %llu records to %s (%llu left out by the "
		  "basic mode's filters)", done, (unsigned long long)w.written, xb_log.path,
		  (unsigned long long)w.filtered);
out:
	if (w.fd >= 0)
		close(w.fd);
	if (mem)
		munmap(mem, size);
}

static void xray_finish(struct rec_session *s)
{
	char path[REC_PATH_MAX + 300];
	size_t n, cap, first, vsize, scratch_size, bufsize = 1 << 20;
	struct xr_spool *v;
	uint32_t *scratch;
	int32_t *tids;
	uint8_t hdr[FDR_HEADER_SIZE], *buf;
	size_t written = 0, fit = 0;
	uint64_t cut = 0;
	int fd, bad = 0;

	n = xr_scan_spools(s, NULL, 0);
	if (n == 0)
		return;
	cap = n + 16; /* room for threads that appear while we look (they are not written) */
	vsize = cap * (sizeof(*v) + sizeof(*tids));
	scratch_size = xr_llvm_scratch_words(cap) * sizeof(uint32_t);
	v = xr_mmap(vsize + scratch_size + bufsize);
	if (!v) {
		rec_warn("xray-rt: no memory to assemble the XRay log");
		return;
	}
	tids = (int32_t *)(v + cap);
	scratch = (uint32_t *)((uint8_t *)v + vsize);
	buf = (uint8_t *)scratch + scratch_size;
	n = xr_scan_spools(s, v, cap);
	if (n > cap)
		n = cap;
	/* keep the spools with a stream; drop (and delete) empty ones */
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (xr_spool_stat(s, &v[i]) == 0)
			v[k++] = v[i];
		else
			unlinkat(s->ringdirfd, v[i].name, 0);
	}
	n = k;
	if (n == 0)
		goto out;
	if (xr_log_dropped_why) {
		uint64_t bytes = 0;
		for (size_t i = 0; i < n; i++) {
			bytes += v[i].out_size;
			unlinkat(s->ringdirfd, v[i].name, 0);
		}
		rec_debug("xray-rt: no XRay log written, %zu threads' %llu bytes of records dropped: "
			  "%s", n, (unsigned long long)bytes, xr_log_dropped_why);
		goto out;
	}
	xr_sort_spools(v, n);
	if (xb_log.path[0] && !xr_xcoding) {
		xr_basic_finish(s, v, n);
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		tids[i] = v[i].tid;

	fd = xr_create_log(s, path, sizeof(path));
	if (fd >= 0)
		fit = xr_blocks_that_fit(fd, v, n);
	first = xr_llvm_first_key((uint64_t)s->pid, tids, fit, scratch);
	if (fd < 0) {
		for (size_t i = 0; i < n; i++)
			cut += xr_spool_cut(s, &v[i]);
		rec_warn("xray-rt: cannot create the XRay log %s (%llu events counted lost):", path,
			 (unsigned long long)cut);
		goto out;
	}
	fdr_put_header(hdr, FDR_VERSION, xr_xcoding || rec_clock_tsc_invariant() ? 3 : 0,
		       xr_xcoding ? 1000000000ull : rec_clock_g.tsc_hz,
		       s->cfg.chunk_size - sizeof(struct rec_chunk));
	bad = rec_write_all(fd, hdr, sizeof(hdr)) < 0;
	/* each thread's block whole or not at all: a block that cannot be written (disk full) is
	 * cut off and the log ends with the threads before it (it was removed altogether). The
	 * spool of a thread written is removed at once, which frees the room the next needs. */
	for (size_t i = 0; i < fit && !bad; i++) {
		const struct xr_spool *sp = &v[i];
		off_t block = lseek(fd, 0, SEEK_CUR);
		/* the thread account replays first must not start later than the log does */
		int marker = i == first && sp->tsc > v[0].tsc;
		size_t mlen = sizeof(XR_MARKER) - 1;
		uint64_t extent =
			3 * FDR_META_SIZE + sp->out_size + (marker ? 2 * FDR_META_SIZE + mlen : 0);

		bad = xr_put_block_head(fd, s, sp->tid, marker ? v[0].tsc : sp->tsc, extent) < 0;
		if (!bad && marker) {
			uint8_t m[2 * FDR_META_SIZE];
			fdr_put_new_cpu(m, v[0].cpu, v[0].tsc);
			fdr_put_custom_v5(m + FDR_META_SIZE, (int32_t)mlen, 0);
			bad = rec_write_all(fd, m, sizeof(m)) < 0 ||
			      rec_write_all(fd, XR_MARKER, mlen) < 0;
		}
		if (!bad)
			bad = xr_copy_spool(s, sp, fd, buf, bufsize) < 0;
		if (!bad) {
			unlinkat(s->ringdirfd, sp->name, 0);
			written++;
			/* exits whose entries a reused chunk took: the runtime counted them
			 * written, the log does not have them (salvage counts them the same
			 * way). Not counted, a thread whose kept chunks began two exits into a
			 * call said 502 events for the log's 500 (e2e-stress
			 * accounting/xray/overwrite, 1 run in 25) */
			if (sp->left_out)
				rec_stats_unwritten(sp->tid, sp->left_out);
		} else if (block > 0) {
			int err = errno;
			(void)!ftruncate(fd, block);
			errno = err;
		}
	}
	if (close(fd) < 0 && !bad)
		bad = 1, written = 0;
	if (!bad && written < n) {
		bad = 1; /* the blocks there was no room for */
		errno = ENOSPC;
	}
	/* the threads cut off (all of them when the log goes): their events counted lost. The
	 * blocks went in sorted order, so they are those from `written` on. A close that fails
	 * after blocks went in removes the log with spools already gone: those are not counted */
	for (size_t i = bad ? written : n; i < n; i++)
		cut += xr_spool_cut(s, &v[i]);
	if (bad && !written) {
		rec_warn("xray-rt: cannot write the XRay log %s (removed; %llu events counted "
			 "lost):", path, (unsigned long long)cut);
		unlink(path);
		goto out;
	}
	if (bad)
		rec_warn("xray-rt: the XRay log %s holds %zu of %zu threads, the others could not "
			 "be written (their spools are left in %s/.flightrec; %llu events counted "
			 "lost):", path, written, n, s->dir, (unsigned long long)cut);
	if (xr_xcoding && xr_write_map(path) < 0)
		rec_warn("xray: cannot write the instrumentation map %s.yaml:", path);
	else if (!xr_xcoding && s->fe && s->fe->instr_map && s->fe->instr_map(path) < 0)
		rec_warn("xray-rt: cannot write the instrumentation map %s.yaml:", path);
	rec_debug("xray-rt: wrote %s (%zu threads)", path, written);
out:
	munmap(v, vsize + scratch_size + bufsize);
}

const struct rec_sink xray_sink = {
	.name = "xray",
	.encoding = REC_ENC_FDR,
	.open_session = xray_open_session,
	.open_thread = xray_open_thread,
	.write_chunk = xray_write_chunk,
	.close_thread = xray_close_thread,
	.finish = xray_finish,
	.thread_fd = xray_thread_fd,
};
