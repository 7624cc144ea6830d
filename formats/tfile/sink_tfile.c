/*
 * sink_tfile: the GDB trace file writer ("tfile", what gdb's `tsave` writes and `target tfile`
 * reads), fed by tracepoint hits (rec_tp.h), and the gdb script that opens it. The bytes of
 * both are tfile_encode.c's (shared with salvage); this file is the sink's life cycle.
 *
 * Files: <dir>/<program>.tf and <dir>/<program>.gdb (rec_outname.h: a fork child, or a process
 * that finds the name taken, adds .<pid>); the script loads the executable's symbols at its
 * load bias when it is PIE (symbol-file -o), every shared object at its own
 * (add-symbol-file -o) and opens the trace: `gdb -x prog.gdb prog`.
 *
 * Threads' hits go through their rings like any event; the flusher appends the ring
 * records as they are to .flightrec/tfile.<pid>.<session ns>.<tid>, and finish merges the
 * spools by time and encodes the frames (gdb numbers frames in file order, so they are
 * chronological whatever thread took them). finish may run in a fatal-signal handler: no
 * stdio, no malloc (mmap'ed buffers, write()).
 *
 * For salvage (formats/tfile/salvage_tfile.c), what the file's definitions need beyond the rings is in
 * .flightrec/tp.<pid>.<session ns> (tfile_defs.h), written whole under a temporary name and
 * renamed at session start (a fork child writes its own); the tracepoint table is then the
 * file's, mapped shared, so hit counts and hit addresses reach the page cache as they change
 * (no extra work per hit: the hit's one atomic add lands there). finish removes the file once
 * the trace file is published.
 */
#include "formats/tfile/sink_tfile.h"
#include "formats/xcode/fn_decode.h"
#include "librecord/rec_outname.h"
#include "librecord/rec_session.h"
#include "librecord/rec_symtab.h"
#include "librecord/rec_tp.h"
#include "librecord/rec_util.h"
#include "formats/tfile/tfile_defs.h"
#include "formats/tfile/tfile_encode.h"

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

static int tfile_forked;    /* this image is a fork child: its files get a .<pid> suffix */
static uint64_t tfile_lost; /* hits the rings dropped (lost_before/after), atomic */
static void *tfile_defs_map; /* the table's mapping of the definitions file, or NULL */
static size_t tfile_defs_map_size;

static size_t tfile_spool_name(char *buf, size_t size, const struct rec_session *s, pid_t tid)
{
	return rec_snprintf(buf, size, "tfile.%d.%llu.%d", (int)s->pid,
			    (unsigned long long)s->start_ns, (int)tid);
}

static void tfile_defs_name(char *buf, size_t size, const struct rec_session *s, int tmp)
{
	rec_snprintf(buf, size, "%stp.%d.%llu%s", tmp ? "." : "", (int)s->pid,
		     (unsigned long long)s->start_ns, tmp ? ".tmp" : "");
}

static uint64_t tfile_now(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_REALTIME at the CLOCK_MONOTONIC instant mono_ns, in us */
static uint64_t tfile_real_us(uint64_t mono_ns)
{
	uint64_t mono = rec_clock_ns(), real = tfile_now(CLOCK_REALTIME);

	return (real - (mono - mono_ns)) / 1000;
}

/*
 * Write .flightrec/tp.<pid>.<session ns> (tfile_defs.h) from the current table, map its table
 * region and make it the table. With zero_hits (a fork child), the copy's counters start at 0:
 * the table being copied is then the parent's mapping, which the child must never write.
 * 0, or -1 with the table left where it was.
 */
static int tfile_defs_create(struct rec_session *s, int zero_hits)
{
	struct tfile_defs_hdr *h;
	uint32_t table = tfile_defs_table_size(rec_ntp);
	size_t nmod = rec_symtab_nmodules(), off;
	char tmp[96], name[96];
	uint8_t page[TFILE_DEFS_HDR_SIZE];
	struct rec_tp *map;
	int fd;

	if (nmod > TFILE_DEFS_MAX_MODS)
		nmod = TFILE_DEFS_MAX_MODS;
	tfile_defs_name(tmp, sizeof(tmp), s, 1);
	tfile_defs_name(name, sizeof(name), s, 0);
	fd = openat(s->ringdirfd, tmp, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	off = TFILE_DEFS_HDR_SIZE + table;
	if (ftruncate(fd, (off_t)(off + nmod * sizeof(struct tfile_defs_module))) < 0)
		goto fail;
	memset(page, 0, sizeof(page));
	h = (struct tfile_defs_hdr *)page;
	memcpy(h->magic, TFILE_DEFS_MAGIC, sizeof(h->magic));
	h->version = TFILE_DEFS_VERSION;
	h->hdr_size = TFILE_DEFS_HDR_SIZE;
	h->pid = s->pid;
	h->ntp = rec_ntp;
	h->session_ns = s->start_ns;
	h->start_real_ns = tfile_real_us(s->start_ns) * 1000;
	h->tp_size = sizeof(struct rec_tp);
	h->table_size = table;
	h->nmod = (uint32_t)nmod;
	h->mod_size = sizeof(struct tfile_defs_module);
	h->forked = (uint32_t)tfile_forked;
	h->tp_stack = rec_tp_stack;
	h->max_frames = rec_tp_max_frames;
	rec_snprintf(h->exe, sizeof(h->exe), "%s", s->exe);
	if (rec_pwrite_all(fd, page, sizeof(page), 0) < 0)
		goto fail;
	for (size_t i = 0; i < nmod; i++) {
		const struct rec_module *m = rec_symtab_module_at(i);
		struct tfile_defs_module dm;
		memset(&dm, 0, sizeof(dm));
		rec_snprintf(dm.path, sizeof(dm.path), "%s", m->path);
		dm.bias = m->bias;
		dm.is_exe = (uint32_t)m->is_exe;
		dm.is_dyn = (uint32_t)m->is_dyn;
		if (rec_pwrite_all(fd, &dm, sizeof(dm), (off_t)(off + i * sizeof(dm))) < 0)
			goto fail;
	}
	map = mmap(NULL, table, PROT_READ | PROT_WRITE, MAP_SHARED, fd, TFILE_DEFS_HDR_SIZE);
	if (map == MAP_FAILED)
		goto fail;
	memcpy(map, rec_tps, rec_ntp * sizeof(*map));
	if (zero_hits)
		for (uint32_t i = 0; i < rec_ntp; i++)
			map[i].hits = 0;
	if (renameat(s->ringdirfd, tmp, s->ringdirfd, name) < 0) {
		munmap(map, table);
		goto fail;
	}
	close(fd);
	rec_tp_move(map);
	tfile_defs_map = map;
	tfile_defs_map_size = table;
	return 0;
fail:
	close(fd);
	unlinkat(s->ringdirfd, tmp, 0);
	return -1;
}

static int tfile_open_session(struct rec_session *s)
{
	int n = rec_tp_setup(s->cfg.tracepoints, s->cfg.tp_stack, s->cfg.tp_max_frames);

	if (n == 0)
		rec_warn("no tracepoint to record in %s (FLIGHTREC_TRACEPOINTS=%s)", s->exe,
			 s->cfg.tracepoints);
	if (tfile_defs_create(s, 0) < 0)
		rec_warn("cannot write %s/.flightrec/tp.%d.%llu (a trace this process does not "
			 "finish cannot be salvaged):",
			 s->dir, (int)s->pid, (unsigned long long)s->start_ns);
	return 0;
}

/* The child gets its own table and definitions file: its trace counts its own hits. */
static void tfile_fork_child(struct rec_session *s, pid_t ppid)
{
	void *parent = tfile_defs_map;
	size_t parent_size = tfile_defs_map_size;

	(void)ppid;
	tfile_forked = 1;
	tfile_lost = 0;
	tfile_defs_map = NULL;
	if (tfile_defs_create(s, 1) < 0) {
		if (parent) {
			/* a private copy: the parent's mapping is shared with the parent */
			struct rec_tp *copy = mmap(NULL, parent_size, PROT_READ | PROT_WRITE,
						   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (copy == MAP_FAILED)
				copy = NULL;
			if (copy) {
				memcpy(copy, rec_tps, rec_ntp * sizeof(*copy));
				rec_tp_move(copy);
			} else {
				rec_ntp = 0; /* the child cannot count without writing the parent's */
			}
		}
		for (uint32_t i = 0; i < rec_ntp; i++)
			rec_tps[i].hits = 0;
		rec_warn("cannot write %s/.flightrec/tp.%d.%llu (a trace this process does not "
			 "finish cannot be salvaged):",
			 s->dir, (int)s->pid, (unsigned long long)s->start_ns);
	}
	if (parent && rec_tps != parent)
		munmap(parent, parent_size);
}

/* The thread's spool for one write (rec_sink.thread_fd): no descriptor is kept per thread,
 * so threads do not eat the program's RLIMIT_NOFILE */
static int tfile_thread_fd(struct rec_session *s, struct rec_thread *t)
{
	char name[80];

	tfile_spool_name(name, sizeof(name), s, t->tid);
	return rec_spool_open(s, name);
}

static int tfile_open_thread(struct rec_session *s, struct rec_thread *t)
{
	char name[80];

	tfile_spool_name(name, sizeof(name), s, t->tid);
	if (rec_spool_create(s, name, "") < 0) /* each write opens it (tfile_thread_fd) */
		return -1;
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
	/* a write that fails (disk full) is cut back off: the spool ends on a whole frame */
	return rec_append_whole(t->sink_fd, data, len);
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

/* --- finish ---------------------------------------------------------------------------- */

struct tfile_spools {
	struct rec_session *s;
	struct tfile_spool *v;
	size_t max, n;
};

/* one spool: mapped when it holds data, removed when it is empty */
static int tfile_open_spool(void *arg, const char *name)
{
	struct tfile_spools *c = arg;
	struct tfile_spool *v = c->v;
	size_t n = c->n;
	struct stat st;
	int fd;

	if (n == c->max || strlen(name) >= sizeof(v[n].name))
		return 0;
	rec_snprintf(v[n].name, sizeof(v[n].name), "%s", name);
	fd = openat(c->s->ringdirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) == 0 && st.st_size > 0) {
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m != MAP_FAILED) {
			v[n].data = m;
			v[n].size = (size_t)st.st_size;
			v[n].pos = 0;
			c->n++;
		}
	} else {
		unlinkat(c->s->ringdirfd, name, 0);
	}
	close(fd);
	return 0;
}

/* this image's spools, mapped */
static size_t tfile_open_spools(struct rec_session *s, struct tfile_spool *v, size_t max)
{
	struct tfile_spools c = {s, v, max, 0};
	char prefix[64];
	size_t plen = rec_snprintf(prefix, sizeof(prefix), "tfile.%d.%llu.", (int)s->pid,
				   (unsigned long long)s->start_ns);

	rec_dir_each(s->ringdirfd, prefix, plen, tfile_open_spool, &c);
	return c.n;
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
	tfile_script_head(o, s->exe, s->pid, s->dir, name, "");
	for (size_t i = 0; i < n; i++) {
		const struct rec_module *m = rec_symtab_module_at(i);
		tfile_script_module(o, m->path, m->bias, m->is_exe, m->is_dyn);
	}
	tfile_script_tail(o, s->dir, tf);
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
	size_t total = vsize + fsize + TFILE_OUTBUF + tfile_frame_max();
	struct tfile_trace tr = {.tps = rec_tps, .ntp = rec_ntp, .stop_desc = TFILE_STOP_FINISHED};
	struct tfile_spool *v;
	struct tfile_out o = {.fd = -1};
	char tmp[600], name[600], base[560];
	uint64_t *scratch, frames;
	uint8_t *frame;
	size_t n;
	int fd;

	v = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (v == MAP_FAILED) {
		rec_warn("no memory to write the trace file");
		return;
	}
	scratch = (uint64_t *)((uint8_t *)v + vsize);
	o.buf = (uint8_t *)scratch + fsize;
	frame = o.buf + TFILE_OUTBUF;
	n = tfile_open_spools(s, v, TFILE_MAX_SPOOLS);

	tfile_tmp(s, ".tf", tmp, sizeof(tmp));
	fd = rec_open_write(s->dirfd, tmp, O_TRUNC);
	if (fd < 0) {
		rec_warn("cannot create %s/%s:", s->dir, tmp);
		goto out;
	}
	o.fd = fd;
	tr.start_us = tfile_real_us(s->start_ns);
	tr.stop_us = tfile_now(CLOCK_REALTIME) / 1000;
	frames = tfile_write_trace(&o, &tr, v, n, scratch, frame);
	for (size_t i = 0; i < n; i++)
		if (v[i].end != v[i].size)
			rec_warn("%s/.flightrec/%s: a broken record at offset %zu, the rest is "
				 "left out",
				 s->dir, v[i].name, v[i].end);
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
	/* the trace is out: salvage has nothing to rebuild for this image */
	tfile_defs_name(tmp, sizeof(tmp), s, 0);
	unlinkat(s->ringdirfd, tmp, 0);
out:
	for (size_t i = 0; i < n; i++)
		munmap((void *)v[i].data, v[i].size);
	munmap(v, total);
}

const struct rec_sink tfile_sink = {
	.name = "tfile",
	.encoding = REC_ENC_TP,
	.dir = ".",
	.open_session = tfile_open_session,
	.fork_child = tfile_fork_child,
	.open_thread = tfile_open_thread,
	.write_chunk = tfile_write_chunk,
	.close_thread = tfile_close_thread,
	.thread_fd = tfile_thread_fd,
	.finish = tfile_finish,
};
