/*
 * sink_tfile: the GDB trace file writer ("tfile", what gdb's `tsave` writes and `target tfile`
 * reads), fed by tracepoint hits (rec_tp.h), and the gdb script that opens it.
 *
 * What gdb 13 reads (shared/anchors/gdb-tfile.md, gdb/tracefile-tfile.c):
 *   "\x7fTRACE0\n", then definition lines, then an empty line, then frames
 *   {u16 tracepoint, u32 size, blocks}, then a u16 0 (we write u32 0, as gdb does). Blocks:
 *   'R' + the register block (size from the "R <hex>" line), 'M' + u64 address + u16 length +
 *   bytes, 'V' + i32 variable + i64 value. Numbers on definition lines are hex; a line is
 *   under 1000 bytes.
 * What we write:
 *   R 230          the 560-byte amd64-linux block (no tdesc line: gdb takes the program's)
 *   status 0;tstop:<"recording ended">:0;tframes:<frames>;tcreated:<hits>;starttime:..;
 *                  stoptime:..;notes:<"func: N hits, M frames; ...">  (tstatus prints these)
 *   tsv 1 tid, 2 ts_ns, 3 hits (the hit's ordinal among its tracepoint's hits), and one per
 *                  tracepoint, 16 + its number, hits_<function> with the tracepoint's hit
 *                  count as its initial value (`info tvariables` lists them all, when the
 *                  status notes have no room for every tracepoint)
 *   per tracepoint, numbers DESCENDING (gdb prepends each to its list; only then do its own
 *   numbers match ours, which `tfind tracepoint N` needs): T (enabled), Z at "*0x<addr>"
 *   (an address, so PIE symbols at any bias resolve it), Z cmd "collect $regs, $args, ..."
 *   (tdump prints that source form), V hit count and bytes used
 *   frames in time order over all threads: R, M [rsp, rsp + FLIGHTREC_TP_STACK), V tid,
 *   V ts_ns, V hits; then the end marker.
 * Files: <dir>/<program>.tf and <dir>/<program>.gdb (rec_outname.h: a fork child, or a process
 * that finds the name taken, adds .<pid>); the script
 * loads the executable's symbols at its load bias when it is PIE (symbol-file -o), every
 * shared object at its own (add-symbol-file -o) and opens the trace: `gdb -x prog.gdb prog`.
 *
 * Threads' hits go through their rings like any event; the flusher appends the ring
 * records as they are to .flightrec/tfile.<pid>.<session ns>.<tid>, and finish merges the
 * spools by time and encodes the frames (gdb numbers frames in file order, so they are
 * chronological whatever thread took them). finish may run in a fatal-signal handler: no
 * stdio, no malloc (mmap'ed buffers, write()).
 */
#include "librecord/sink_tfile.h"
#include "librecord/rec_decode.h"
#include "librecord/rec_outname.h"
#include "librecord/rec_session.h"
#include "librecord/rec_symtab.h"
#include "librecord/rec_tp.h"
#include "librecord/rec_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define TFILE_MAX_SPOOLS 4096
#define TFILE_OUTBUF	 (1u << 20)
#define TFILE_TSV_TID	 1
#define TFILE_TSV_TS	 2
#define TFILE_TSV_HITS	 3
#define TFILE_TSV_TP0	 16 /* + tracepoint number: hits_<function>, initial value = its hits */
#define TFILE_COLLECT	 "collect $regs, $args, $tid, $ts_ns, $hits"

static int tfile_forked;    /* this image is a fork child: its files get a .<pid> suffix */
static uint64_t tfile_lost; /* hits the rings dropped (lost_before/after), atomic */

static size_t tfile_spool_name(char *buf, size_t size, const struct rec_session *s, pid_t tid)
{
	return rec_snprintf(buf, size, "tfile.%d.%llu.%d", (int)s->pid,
			    (unsigned long long)s->start_ns, (int)tid);
}

static int tfile_open_session(struct rec_session *s)
{
	int n = rec_tp_setup(s->cfg.tracepoints, s->cfg.tp_stack, s->cfg.tp_max_frames);

	if (n == 0)
		rec_warn("no tracepoint to record in %s (FLIGHTREC_TRACEPOINTS=%s)", s->exe,
			 s->cfg.tracepoints);
	return 0;
}

static void tfile_fork_child(struct rec_session *s, pid_t ppid)
{
	(void)s;
	(void)ppid;
	tfile_forked = 1;
	tfile_lost = 0;
	for (uint32_t i = 0; i < rec_ntp; i++)
		rec_tps[i].hits = 0; /* the child's trace counts its own hits */
}

static int tfile_open_thread(struct rec_session *s, struct rec_thread *t)
{
	char name[80];

	tfile_spool_name(name, sizeof(name), s, t->tid);
	t->sink_fd = openat(s->ringdirfd, name,
			    O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (t->sink_fd < 0) {
		rec_warn("cannot create %s/.flightrec/%s:", s->dir, name);
		return -1;
	}
	/* A tracepoint hit is ~1 KB: a thread that hits one fills pages faster than the flusher
	 * faults them in one chunk ahead, and a first write into a page of the (file-backed)
	 * ring costs more than the hit. Fault the whole ring in now, at the thread's first hit
	 * (the thread is not published yet: the flusher does not look at `prefaulted`). */
	if (t->ring && madvise(t->ring, t->ring_size, MADV_POPULATE_WRITE) == 0)
		t->prefaulted = s->cfg.chunk_count;
	return 0;
}

static int tfile_write_chunk(struct rec_session *s, struct rec_thread *t, const uint8_t *data,
			     size_t len, uint64_t lost_before)
{
	(void)s;
	if (lost_before)
		__atomic_add_fetch(&tfile_lost, lost_before, __ATOMIC_RELAXED);
	if (t->sink_fd < 0)
		return -1;
	return rec_write_all(t->sink_fd, data, len);
}

static void tfile_close_thread(struct rec_session *s, struct rec_thread *t, uint64_t lost_after)
{
	(void)s;
	if (lost_after)
		__atomic_add_fetch(&tfile_lost, lost_after, __ATOMIC_RELAXED);
	if (t->sink_fd >= 0)
		close(t->sink_fd);
	t->sink_fd = -1;
}

/* --- frame encoding -------------------------------------------------------------------- */

size_t tfile_frame_size(const struct rec_tp_frame *f)
{
	return 6 + 1 + TFILE_REGBLOCK_SIZE + (f->stack_len ? 1 + 8 + 2 + f->stack_len : 0) +
	       3 * (1 + 4 + 8);
}

static uint8_t *tfile_put(uint8_t *p, const void *v, size_t n)
{
	memcpy(p, v, n);
	return p + n;
}

static uint8_t *tfile_put_tsv(uint8_t *p, int32_t num, int64_t v)
{
	*p++ = 'V';
	p = tfile_put(p, &num, 4);
	return tfile_put(p, &v, 8);
}

/* gdb's amd64-linux register block, remote `g' packet order */
static void tfile_regblock(const struct rec_tp_regs *r, uint8_t *b)
{
	uint32_t v32;
	uint64_t v64;

	memset(b, 0, TFILE_REGBLOCK_SIZE);
	memcpy(b, r->gpr, 16 * 8); /* rax .. r15 */
	memcpy(b + 128, &r->rip, 8);
	v32 = (uint32_t)r->eflags;
	memcpy(b + 136, &v32, 4);
	v32 = 0x33; /* cs, as on x86-64 Linux user space */
	memcpy(b + 140, &v32, 4);
	v32 = 0x2b; /* ss; ds es fs gs are 0 */
	memcpy(b + 144, &v32, 4);
	/* st0-7 at 164: empty at a function's entry (the ABI leaves the x87 stack empty) */
	v32 = r->fcw;
	memcpy(b + 244, &v32, 4);
	v32 = r->fsw;
	memcpy(b + 248, &v32, 4);
	v32 = 0xffff; /* ftag: every register empty */
	memcpy(b + 252, &v32, 4);
	memcpy(b + 276, r->xmm, 256); /* xmm0-15 */
	memcpy(b + 532, &r->mxcsr, 4);
	v64 = (uint64_t)-1; /* orig_rax: not in a system call */
	memcpy(b + 536, &v64, 8);
	memcpy(b + 544, &r->fs_base, 8);
	/* gs_base 0 */
}

size_t tfile_encode_frame(const struct rec_tp_frame *f, uint8_t *out)
{
	uint16_t tp = f->tpnum;
	uint32_t size = (uint32_t)(tfile_frame_size(f) - 6);
	uint8_t *p = out;

	p = tfile_put(p, &tp, 2);
	p = tfile_put(p, &size, 4);
	*p++ = 'R';
	tfile_regblock(&f->regs, p);
	p += TFILE_REGBLOCK_SIZE;
	if (f->stack_len) {
		uint64_t addr = f->regs.gpr[REC_TP_RSP];
		uint16_t len = (uint16_t)f->stack_len;
		*p++ = 'M';
		p = tfile_put(p, &addr, 8);
		p = tfile_put(p, &len, 2);
		p = tfile_put(p, f + 1, f->stack_len);
	}
	p = tfile_put_tsv(p, TFILE_TSV_TID, (int64_t)f->tid);
	p = tfile_put_tsv(p, TFILE_TSV_TS, (int64_t)f->ns);
	p = tfile_put_tsv(p, TFILE_TSV_HITS, (int64_t)f->hit);
	return (size_t)(p - out);
}

/* --- finish ---------------------------------------------------------------------------- */

struct tfile_spool {
	char name[80];
	const uint8_t *data;
	size_t size;
	size_t pos;  /* next record */
	uint64_t ns; /* of the record at pos */
};

/* Is there a whole, sane record at sp->pos? Sets sp->ns. */
static int tfile_spool_next(struct tfile_spool *sp)
{
	const struct rec_tp_frame *f;

	if (sp->size - sp->pos < sizeof(*f))
		return 0;
	f = (const struct rec_tp_frame *)(sp->data + sp->pos);
	if (f->magic != REC_TP_FRAME_MAGIC || f->size < sizeof(*f) ||
	    f->size > sp->size - sp->pos || f->size != rec_tp_frame_size(f->stack_len) ||
	    f->tpnum == 0 || f->tpnum > rec_ntp)
		return 0;
	sp->ns = f->ns;
	return 1;
}

struct tfile_dirent64 {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

/* this image's spools, mapped; getdents64, since opendir would malloc */
static size_t tfile_open_spools(struct rec_session *s, struct tfile_spool *v, size_t max)
{
	char prefix[64], buf[8192];
	size_t plen, n = 0;
	long got;
	int dfd = openat(s->ringdirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return 0;
	plen = rec_snprintf(prefix, sizeof(prefix), "tfile.%d.%llu.", (int)s->pid,
			    (unsigned long long)s->start_ns);
	while ((got = syscall(SYS_getdents64, dfd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < got;) {
			struct tfile_dirent64 *de = (struct tfile_dirent64 *)(buf + off);
			struct stat st;
			int fd;

			off += de->reclen;
			if (strncmp(de->name, prefix, plen) != 0 || n == max ||
			    strlen(de->name) >= sizeof(v[n].name))
				continue;
			rec_snprintf(v[n].name, sizeof(v[n].name), "%s", de->name);
			fd = openat(s->ringdirfd, de->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0)
				continue;
			if (fstat(fd, &st) == 0 && st.st_size > 0) {
				void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd,
					       0);
				if (m != MAP_FAILED) {
					v[n].data = m;
					v[n].size = (size_t)st.st_size;
					v[n].pos = 0;
					n++;
				}
			} else {
				unlinkat(s->ringdirfd, de->name, 0);
			}
			close(fd);
		}
	}
	close(dfd);
	return n;
}

struct tfile_out {
	int fd;
	int bad;
	uint8_t *buf;
	size_t len;
	uint64_t bytes;
};

static void tfile_flush(struct tfile_out *o)
{
	if (!o->bad && o->len && rec_write_all(o->fd, o->buf, o->len) < 0)
		o->bad = 1;
	o->bytes += o->len;
	o->len = 0;
}

static void tfile_emit(struct tfile_out *o, const void *p, size_t n)
{
	if (o->len + n > TFILE_OUTBUF)
		tfile_flush(o);
	if (n > TFILE_OUTBUF) {
		if (!o->bad && rec_write_all(o->fd, p, n) < 0)
			o->bad = 1;
		o->bytes += n;
		return;
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

static void tfile_line(struct tfile_out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void tfile_line(struct tfile_out *o, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	tfile_emit(o, line, (size_t)n);
}

/* hex of a string, as gdb's bin2hex; into out (room for 2 * strlen + 1) */
static char *tfile_hex(char *out, size_t size, const char *s)
{
	static const char digits[] = "0123456789abcdef";
	size_t i = 0;

	for (; *s && i + 2 < size; s++) {
		out[i++] = digits[(uint8_t)*s >> 4];
		out[i++] = digits[(uint8_t)*s & 15];
	}
	out[i] = '\0';
	return out;
}

static uint64_t tfile_real_us(uint64_t mono_ns, uint64_t now_mono)
{
	struct timespec ts;
	uint64_t now_real;

	clock_gettime(CLOCK_REALTIME, &ts);
	now_real = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	return (now_real - (now_mono - mono_ns)) / 1000;
}

/* hits_<function name>, made an identifier ([A-Za-z0-9_]); _<n> added to a name taken */
static void tfile_tsv_name(uint32_t i, char *out, size_t size)
{
	size_t n = rec_snprintf(out, size, "hits_%s", rec_tps[i].name);

	for (size_t k = 5; k < n; k++) {
		char c = out[k];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
			out[k] = '_';
	}
	for (uint32_t j = 0; j < i; j++)
		if (!strcmp(rec_tps[j].name, rec_tps[i].name)) {
			rec_snprintf(out + n, size - n, "_%u", rec_tps[i].num);
			break;
		}
}

static void tfile_definitions(struct tfile_out *o, const struct rec_session *s, uint64_t frames,
			      const uint64_t *tp_frames, const uint64_t *tp_bytes)
{
	char notes[360], hex[1000], src[64];
	uint64_t hits = 0, now = rec_clock_ns();
	size_t nl = 0;

	tfile_emit(o, "\x7fTRACE0\n", 8);
	tfile_line(o, "R %x\n", TFILE_REGBLOCK_SIZE);
	notes[0] = '\0';
	for (uint32_t i = 0; i < rec_ntp; i++) {
		const struct rec_tp *tp = &rec_tps[i];
		uint64_t h = __atomic_load_n(&tp->hits, __ATOMIC_RELAXED);
		size_t k;
		hits += h;
		k = rec_snprintf(notes + nl, sizeof(notes) - nl, "%s%s: %llu hits, %llu frames",
				 i ? "; " : "", tp->name, (unsigned long long)h,
				 (unsigned long long)tp_frames[i]);
		if (nl + k >= sizeof(notes) - 1) {
			rec_snprintf(notes + (nl < sizeof(notes) - 4 ? nl : sizeof(notes) - 4), 4,
				     "...");
			break;
		}
		nl += k;
	}
	tfile_line(o,
		   "status 0;tstop:%s:0;tframes:%llx;tcreated:%llx;starttime:%llx;stoptime:%llx;",
		   tfile_hex(hex, sizeof(hex), "recording ended"), (unsigned long long)frames,
		   (unsigned long long)(hits > frames ? hits : frames),
		   (unsigned long long)tfile_real_us(s->start_ns, now),
		   (unsigned long long)tfile_real_us(now, now));
	tfile_line(o, "notes:%s\n", tfile_hex(hex, sizeof(hex), notes));
	tfile_line(o, "tsv %x:0:0:%s\n", TFILE_TSV_TID, tfile_hex(hex, sizeof(hex), "tid"));
	tfile_line(o, "tsv %x:0:0:%s\n", TFILE_TSV_TS, tfile_hex(hex, sizeof(hex), "ts_ns"));
	tfile_line(o, "tsv %x:0:0:%s\n", TFILE_TSV_HITS, tfile_hex(hex, sizeof(hex), "hits"));
	for (uint32_t i = 0; i < rec_ntp; i++) {
		char name[REC_TP_NAME_MAX + 16];
		tfile_tsv_name(i, name, sizeof(name));
		tfile_line(o, "tsv %x:%llx:0:%s\n", TFILE_TSV_TP0 + rec_tps[i].num,
			   (unsigned long long)__atomic_load_n(&rec_tps[i].hits, __ATOMIC_RELAXED),
			   tfile_hex(hex, sizeof(hex), name));
	}
	for (uint32_t i = rec_ntp; i-- > 0;) {
		const struct rec_tp *tp = &rec_tps[i];
		unsigned long long a = (unsigned long long)(tp->pc ? tp->pc : tp->addr);
		rec_snprintf(src, sizeof(src), "*0x%llx", a);
		tfile_line(o, "tp T%x:%llx:E:0:0\n", tp->num, a);
		tfile_line(o, "tp Z%x:%llx:at:0:%zx:%s\n", tp->num, a, strlen(src),
			   tfile_hex(hex, sizeof(hex), src));
		tfile_line(o, "tp Z%x:%llx:cmd:0:%zx:%s\n", tp->num, a, strlen(TFILE_COLLECT),
			   tfile_hex(hex, sizeof(hex), TFILE_COLLECT));
		tfile_line(o, "tp V%x:%llx:%llx:%llx\n", tp->num, a,
			   (unsigned long long)__atomic_load_n(&tp->hits, __ATOMIC_RELAXED),
			   (unsigned long long)tp_bytes[i]);
	}
	tfile_emit(o, "\n", 1);
}

static const char *tfile_prog(const struct rec_session *s)
{
	const char *base = strrchr(s->exe, '/');

	base = base ? base + 1 : s->exe;
	return *base ? base : "trace";
}

/* .<program>.<pid><ext>.tmp: where a file is written before it gets its name */
static void tfile_tmp(const struct rec_session *s, const char *ext, char *out, size_t size)
{
	rec_snprintf(out, size, ".%s.%d%s.tmp", tfile_prog(s), (int)s->pid, ext);
}

/* <base>.gdb beside <base>.tf */
static int tfile_write_script(struct rec_session *s, struct tfile_out *o, const char *base)
{
	char tf[600], tmp[600], name[600];
	size_t n = rec_symtab_nmodules();
	int fd;

	rec_snprintf(tf, sizeof(tf), "%s.tf", base);
	rec_snprintf(name, sizeof(name), "%s.gdb", base);
	tfile_tmp(s, ".gdb", tmp, sizeof(tmp));
	fd = rec_open_write(s->dirfd, tmp, O_TRUNC);
	if (fd < 0)
		return -1;
	o->fd = fd;
	o->bad = 0;
	o->len = 0;
	tfile_line(o,
		   "# flightrec: the tracepoint hits of %s (pid %d), for gdb:\n"
		   "#   gdb -x %s/%s %s\n"
		   "# then: tstatus, tfind start, tfind N, tfind tracepoint N, tdump, bt, "
		   "info registers, print ARG\n",
		   s->exe, (int)s->pid, s->dir, name, s->exe);
	tfile_line(o, "set confirm off\n");
	for (size_t i = 0; i < n; i++) {
		const struct rec_module *m = rec_symtab_module_at(i);
		if (!m->path[0])
			continue;
		if (m->is_exe) {
			tfile_line(o, "exec-file %s\n", m->path);
			if (m->is_dyn)
				tfile_line(o, "symbol-file -o 0x%llx %s\n",
					   (unsigned long long)m->bias, m->path);
			else
				tfile_line(o, "symbol-file %s\n", m->path);
		} else {
			tfile_line(o, "add-symbol-file %s -o 0x%llx\n", m->path,
				   (unsigned long long)m->bias);
		}
	}
	tfile_line(o, "target tfile %s/%s\n", s->dir, tf);
	tfile_line(o, "set confirm on\n");
	tfile_flush(o);
	if (close(fd) < 0 || o->bad || renameat(s->dirfd, tmp, s->dirfd, name) < 0) {
		unlinkat(s->dirfd, tmp, 0);
		return -1;
	}
	return 0;
}

static void tfile_finish(struct rec_session *s)
{
	size_t vsize = TFILE_MAX_SPOOLS * sizeof(struct tfile_spool);
	size_t fsize = 2 * REC_TP_MAX * sizeof(uint64_t);
	size_t framebuf = tfile_frame_size(&(struct rec_tp_frame){.stack_len = 65535});
	size_t total = vsize + fsize + TFILE_OUTBUF + framebuf;
	struct tfile_spool *v;
	uint64_t *tp_frames, *tp_bytes, frames = 0;
	struct tfile_out o = {.fd = -1};
	char tmp[600], name[600], base[560];
	uint8_t *frame;
	size_t n;
	int fd;

	v = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (v == MAP_FAILED) {
		rec_warn("no memory to write the trace file");
		return;
	}
	tp_frames = (uint64_t *)((uint8_t *)v + vsize);
	tp_bytes = tp_frames + REC_TP_MAX;
	o.buf = (uint8_t *)tp_frames + fsize;
	frame = o.buf + TFILE_OUTBUF;
	n = tfile_open_spools(s, v, TFILE_MAX_SPOOLS);

	/* count what each tracepoint has */
	for (size_t i = 0; i < n; i++) {
		struct tfile_spool sp = v[i];
		while (tfile_spool_next(&sp)) {
			const struct rec_tp_frame *f = (const void *)(sp.data + sp.pos);
			tp_frames[f->tpnum - 1]++;
			tp_bytes[f->tpnum - 1] += tfile_frame_size(f);
			frames++;
			sp.pos += f->size;
		}
		if (sp.pos != sp.size)
			rec_warn("%s/.flightrec/%s: a broken record at offset %zu, the rest is "
				 "left out",
				 s->dir, v[i].name, sp.pos);
	}

	tfile_tmp(s, ".tf", tmp, sizeof(tmp));
	fd = rec_open_write(s->dirfd, tmp, O_TRUNC);
	if (fd < 0) {
		rec_warn("cannot create %s/%s:", s->dir, tmp);
		goto out;
	}
	o.fd = fd;
	tfile_definitions(&o, s, frames, tp_frames, tp_bytes);
	/* frames by time over all threads (a thread's own are in order already) */
	for (size_t i = 0; i < n; i++)
		if (!tfile_spool_next(&v[i]))
			v[i].pos = v[i].size;
	for (;;) {
		struct tfile_spool *best = NULL;
		const struct rec_tp_frame *f;
		for (size_t i = 0; i < n; i++)
			if (v[i].pos < v[i].size && (!best || v[i].ns < best->ns))
				best = &v[i];
		if (!best)
			break;
		f = (const void *)(best->data + best->pos);
		tfile_emit(&o, frame, tfile_encode_frame(f, frame));
		best->pos += f->size;
		if (!tfile_spool_next(best))
			best->pos = best->size;
	}
	tfile_emit(&o, "\0\0\0\0", 4); /* tracepoint 0: the end (gdb writes 4 bytes) */
	tfile_flush(&o);
	if (close(fd) < 0 || o.bad ||
	    rec_outname_publish(s->dirfd, tmp, tfile_prog(s), ".tf", tfile_forked, s->pid, base,
				sizeof(base)) < 0) {
		rec_warn("cannot write %s/%s.tf:", s->dir, tfile_prog(s));
		unlinkat(s->dirfd, tmp, 0);
		goto out;
	}
	rec_snprintf(name, sizeof(name), "%s.tf", base);
	if (tfile_write_script(s, &o, base) < 0)
		rec_warn("cannot write the gdb script beside %s/%s:", s->dir, name);
	if (tfile_lost)
		rec_warn("%s/%s: %llu tracepoint hits were lost (full buffers)", s->dir, name,
			 (unsigned long long)tfile_lost);
	rec_debug("wrote %s/%s: %llu frames", s->dir, name, (unsigned long long)frames);
	for (size_t i = 0; i < n; i++)
		unlinkat(s->ringdirfd, v[i].name, 0);
out:
	for (size_t i = 0; i < n; i++)
		munmap((void *)v[i].data, v[i].size);
	munmap(v, total);
}

const struct rec_sink rec_sink_tfile = {
	.name = "tfile",
	.encoding = REC_ENC_TP,
	.dir = ".",
	.open_session = tfile_open_session,
	.fork_child = tfile_fork_child,
	.open_thread = tfile_open_thread,
	.write_chunk = tfile_write_chunk,
	.close_thread = tfile_close_thread,
	.finish = tfile_finish,
};
