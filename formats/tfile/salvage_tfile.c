/*
 * salvage_tfile: salvage for GDB trace files (tracepoints, rings of format "tfile").
 *
 * What a dead process image that recorded tracepoints leaves in <dir>/.flightrec: a ring per
 * thread not yet closed; a spool per thread, tfile.<pid>.<session ns>.<tid>, holding the ring
 * records the flusher wrote, as they are; and the definitions file tp.<pid>.<session ns>
 * (tfile_defs.h: the tracepoint table with its hit counters, the modules, the program). No
 * trace file: finish writes it whole from the spools.
 * Salvage, per image:
 *   1. per ring: the spool is cut back to write_pos when the kill came in the middle of a
 *      write, then every unwritten chunk's committed bytes are appended (whole records: a
 *      chunk holds whole records, and the rest of one finish wrote in part starts at one);
 *   2. the definitions file is checked (below);
 *   3. the trace file is written by the code finish uses (tfile_encode.c): the same
 *      definitions, with the hit counts the table held when the process died, tstatus saying
 *      it was salvaged and stopping at the last frame's time; the frames of every spool merged
 *      by time; the end marker. It is published under the name finish would have given it
 *      (<program>.tf; <program>.<pid>.tf for a fork child or when the name is taken), the gdb
 *      script beside it; then the spools and the definitions file go.
 * Spools of an image that has no ring here are assembled too, once its process is gone; an
 * image with a ring a live process still holds (a fork child that has not closed its copy
 * yet) waits for the salvage that gets that ring. An
 * image without a usable definitions file cannot be rebuilt (the tracepoints' addresses and
 * names are nowhere else): its rings and spools are left in place, and that is said.
 * The definitions file is trusted for nothing: sizes against the file's, every number in
 * range, every string terminated, names and paths printable (paths go into a gdb script, one
 * per line), and the file owned by the owner of the rings (or, with no ring, of .flightrec).
 * Only records that are whole and sane become frames (tfile_spool_next); a spool's records
 * after a broken one are left out, and said.
 */
#include "formats/salvagers.h"
#include "librecord/rec_salvage_spool.h"
#include "librecord/rec_outname.h"
#include "librecord/rec_util.h"
#include "formats/tfile/tfile_defs.h"
#include "formats/tfile/tfile_encode.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define TS_STOP_DESC "the process died; salvaged by flightrec"

/* one process image: its spools and whether a ring of it is being salvaged */
struct ts_image {
	struct rec_salvage_image_id id; /* first: rec_salvage_image's key */
	bool has_ring;
	bool failed;
	uid_t owner; /* of its rings */
	char (*spools)[80];
	size_t n, cap;
};

/* the checked definitions file of an image */
struct ts_defs {
	struct tfile_defs_hdr hdr;
	struct rec_tp *tps;
	struct tfile_defs_module *mods;
	char prog[256]; /* the executable's base name: the trace file's */
};

/* records in a chunk's bytes (whole, sane ones: what the assembly will take) */
static uint64_t ts_count(const uint8_t *p, size_t n)
{
	struct tfile_spool sp = {.data = p, .size = n};
	uint64_t events = 0;

	while (tfile_spool_next(&sp, REC_TP_MAX)) {
		const struct rec_tp_frame *f = (const void *)(p + sp.pos);
		sp.pos += f->size;
		events++;
	}
	return events;
}

static void ts_spool_name(char *buf, size_t size, int pid, uint64_t ns, int tid)
{
	snprintf(buf, size, "tfile.%d.%llu.%d", pid, (unsigned long long)ns, tid);
}

static void ts_defs_name(char *buf, size_t size, int pid, uint64_t ns)
{
	snprintf(buf, size, "tp.%d.%llu", pid, (unsigned long long)ns);
}

/* step 1: the ring's unwritten chunks onto its thread's spool */
static int ts_salvage_thread(struct rec_salvage_ctx *ctx, struct rec_salvage_ring *r)
{
	const struct rec_salvage_spool sp = {.count = ts_count};
	char name[80];

	ts_spool_name(name, sizeof(name), r->pid, r->session_ns, r->tid);
	/* a tfile has no loss record: the count is in the report */
	return rec_salvage_spool_thread(ctx, r, name, name, &sp);
}

/* --- the images ------------------------------------------------------------------------ */

static struct ts_image *ts_image(struct ts_image **v, size_t *n, int32_t pid, uint64_t ns)
{
	void *p = *v;
	bool added;
	ssize_t i = rec_salvage_image(&p, n, sizeof(**v), pid, ns, &added);

	*v = p;
	if (i < 0)
		return NULL;
	if (added)
		(*v)[i].owner = (uid_t)-1;
	return &(*v)[i];
}

/* every spool and definitions file in .flightrec, grouped by image */
static int ts_scan(struct rec_salvage_ctx *ctx, struct ts_image **imgs, size_t *nimg)
{
	DIR *d = rec_opendir_at(ctx->ringdirfd);
	struct dirent *de;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		long pid, tid = 0;
		unsigned long long ns;
		int used = 0, spool;
		struct ts_image *im;
		char canon[80];

		spool = !strncmp(de->d_name, "tfile.", 6);
		if (spool ? sscanf(de->d_name, "tfile.%ld.%llu.%ld%n", &pid, &ns, &tid, &used) != 3
			  : sscanf(de->d_name, "tp.%ld.%llu%n", &pid, &ns, &used) != 2)
			continue;
		if (de->d_name[used] || pid <= 0 || pid > 0x7fffffff ||
		    (spool && (tid <= 0 || tid > 0x7fffffff)))
			continue;
		/* the exact names the runtime writes, nothing that merely scans alike */
		if (spool)
			ts_spool_name(canon, sizeof(canon), (int)pid, ns, (int)tid);
		else
			ts_defs_name(canon, sizeof(canon), (int)pid, ns);
		if (strcmp(canon, de->d_name))
			continue;
		im = ts_image(imgs, nimg, (int32_t)pid, ns);
		if (!im)
			break;
		if (!spool)
			continue;
		if (im->n == im->cap) {
			size_t cap = im->cap ? im->cap * 2 : 16;
			char(*nv)[80] = realloc(im->spools, cap * sizeof(*nv));
			if (!nv)
				break;
			im->spools = nv;
			im->cap = cap;
		}
		memcpy(im->spools[im->n++], canon, sizeof(canon)); /* = d_name */
	}
	closedir(d);
	return 0;
}

/* Is a ring of process PID, other than those being salvaged, held by a live process (a fork
 * child that has not closed its copy yet)? Its chunks would be missing from the trace. */
static bool ts_ring_busy(struct rec_salvage_ctx *ctx, int32_t pid, struct rec_salvage_ring **rings,
			 size_t nr)
{
	DIR *d = rec_opendir_at(ctx->ringdirfd);
	struct dirent *de;
	bool busy = false;
	char prefix[32];
	size_t plen;

	if (rec_salvage_pid_live(ctx->ringdirfd, pid))
		return true;
	if (!d)
		return false;
	plen = (size_t)snprintf(prefix, sizeof(prefix), "ring.%d.", (int)pid);
	while (!busy && (de = readdir(d))) {
		bool ours = false;
		int fd;

		if (strncmp(de->d_name, prefix, plen) != 0)
			continue;
		for (size_t i = 0; i < nr && !ours; i++)
			ours = !strcmp(rings[i]->name, de->d_name);
		if (ours)
			continue;
		fd = openat(ctx->ringdirfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue;
		busy = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
		close(fd);
	}
	closedir(d);
	return busy;
}

/* --- the definitions file -------------------------------------------------------------- */

/* a string of buf[size] that ends within it and holds printable characters only */
static bool ts_text_ok(const char *s, size_t size)
{
	const char *end = memchr(s, '\0', size);

	if (!end)
		return false;
	for (; s < end; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

static void ts_defs_free(struct ts_defs *df)
{
	free(df->tps);
	free(df->mods);
	df->tps = NULL;
	df->mods = NULL;
}

#define TS_WHY(...)                                                                        \
	do {                                                                               \
		snprintf(why, why_size, __VA_ARGS__);                                      \
		goto fail;                                                                 \
	} while (0)

static int ts_defs_load(struct rec_salvage_ctx *ctx, const struct ts_image *im,
			struct ts_defs *df, char *why, size_t why_size)
{
	struct tfile_defs_hdr *h = &df->hdr;
	char name[80];
	struct stat st;
	uint64_t want;
	const char *base;
	int fd;

	memset(df, 0, sizeof(*df));
	ts_defs_name(name, sizeof(name), im->id.pid, im->id.session_ns);
	fd = openat(ctx->ringdirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		TS_WHY(".flightrec/%s: %s (the tracepoints' definitions are nowhere else)", name,
		       strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		TS_WHY(".flightrec/%s: not a regular file", name);
	if (st.st_uid != im->owner)
		TS_WHY(".flightrec/%s: not owned by the owner of the rings", name);
	if ((uint64_t)st.st_size < TFILE_DEFS_HDR_SIZE ||
	    pread(fd, h, sizeof(*h), 0) != (ssize_t)sizeof(*h))
		TS_WHY(".flightrec/%s: %lld bytes, shorter than its header (%u)", name,
		       (long long)st.st_size, TFILE_DEFS_HDR_SIZE);
	if (memcmp(h->magic, TFILE_DEFS_MAGIC, sizeof(h->magic)))
		TS_WHY(".flightrec/%s: offset 0x0: bad magic", name);
	if (h->version != TFILE_DEFS_VERSION)
		TS_WHY(".flightrec/%s: offset 0x8: version %u, this salvage reads %u", name,
		       h->version, TFILE_DEFS_VERSION);
	if (h->hdr_size != TFILE_DEFS_HDR_SIZE || h->tp_size != sizeof(struct rec_tp) ||
	    h->mod_size != sizeof(struct tfile_defs_module))
		TS_WHY(".flightrec/%s: header, tracepoint or module size differs from this "
		       "salvage's (%u, %u, %u)",
		       name, h->hdr_size, h->tp_size, h->mod_size);
	if (h->pid != im->id.pid || h->session_ns != im->id.session_ns)
		TS_WHY(".flightrec/%s: pid/session %d/%llu differ from the file name's", name,
		       (int)h->pid, (unsigned long long)h->session_ns);
	if (h->ntp > REC_TP_MAX || h->table_size != tfile_defs_table_size(h->ntp))
		TS_WHY(".flightrec/%s: %u tracepoints in a %u-byte table", name, h->ntp,
		       h->table_size);
	if (h->nmod > TFILE_DEFS_MAX_MODS)
		TS_WHY(".flightrec/%s: %u modules (at most %u)", name, h->nmod,
		       TFILE_DEFS_MAX_MODS);
	want = (uint64_t)TFILE_DEFS_HDR_SIZE + h->table_size +
	       (uint64_t)h->nmod * sizeof(struct tfile_defs_module);
	if ((uint64_t)st.st_size != want)
		TS_WHY(".flightrec/%s: %lld bytes, the header says %llu", name,
		       (long long)st.st_size, (unsigned long long)want);
	if (!ts_text_ok(h->exe, sizeof(h->exe)))
		TS_WHY(".flightrec/%s: the program's path is not terminated or not printable", name);
	if (h->forked > 1)
		TS_WHY(".flightrec/%s: forked is %u", name, h->forked);

	df->tps = aligned_alloc(64, h->table_size);
	df->mods = calloc(h->nmod ? h->nmod : 1, sizeof(*df->mods));
	if (!df->tps || !df->mods)
		TS_WHY(".flightrec/%s: out of memory", name);
	if (pread(fd, df->tps, h->table_size, TFILE_DEFS_HDR_SIZE) != (ssize_t)h->table_size ||
	    (h->nmod && pread(fd, df->mods, h->nmod * sizeof(*df->mods),
			      (off_t)(TFILE_DEFS_HDR_SIZE + h->table_size)) !=
				(ssize_t)(h->nmod * sizeof(*df->mods))))
		TS_WHY(".flightrec/%s: cannot read it: %s", name, strerror(errno));
	for (uint32_t i = 0; i < h->ntp; i++) {
		const struct rec_tp *tp = &df->tps[i];
		if (tp->num != i + 1 || !ts_text_ok(tp->name, sizeof(tp->name)) || !tp->name[0])
			TS_WHY(".flightrec/%s: tracepoint %u: a bad number or name", name, i + 1);
	}
	for (uint32_t i = 0; i < h->nmod; i++) {
		struct tfile_defs_module *m = &df->mods[i];
		if (!ts_text_ok(m->path, sizeof(m->path)) || m->is_exe > 1 || m->is_dyn > 1) {
			rec_salvage_log(ctx, "%s/.flightrec/%s: module %u is malformed: left out of "
					"the gdb script", ctx->dir, name, i);
			m->path[0] = '\0';
		}
	}
	/* the trace's name: the program's, as finish names it (a safe file name, else "trace") */
	base = strrchr(h->exe, '/');
	base = base ? base + 1 : h->exe;
	if (!*base || !strcmp(base, ".") || !strcmp(base, "..") ||
	    strlen(base) >= sizeof(df->prog) - 64)
		base = "trace";
	snprintf(df->prog, sizeof(df->prog), "%s", base);
	close(fd);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	ts_defs_free(df);
	return -1;
}

/* --- assembly -------------------------------------------------------------------------- */

/* the gdb script beside BASE.tf, as finish writes it */
static int ts_write_script(struct rec_salvage_ctx *ctx, const struct ts_defs *df,
			   const char *base, uint8_t *buf)
{
	char absdir[PATH_MAX], tmp[400], name[420], tf[420];
	struct tfile_out o = {.buf = buf};
	int fd;

	if (!realpath(ctx->dir, absdir))
		snprintf(absdir, sizeof(absdir), "%s", ctx->dir);
	snprintf(tf, sizeof(tf), "%s.tf", base);
	snprintf(name, sizeof(name), "%s.gdb", base);
	snprintf(tmp, sizeof(tmp), ".%s.%d.gdb.tmp", df->prog, (int)df->hdr.pid);
	fd = rec_open_write(ctx->dirfd, tmp, O_TRUNC);
	if (fd < 0)
		return -1;
	o.fd = fd;
	tfile_script_head(&o, df->hdr.exe, df->hdr.pid, absdir, name,
			  ", salvaged after it died");
	for (uint32_t i = 0; i < df->hdr.nmod; i++)
		tfile_script_module(&o, df->mods[i].path, df->mods[i].bias, (int)df->mods[i].is_exe,
				    (int)df->mods[i].is_dyn);
	tfile_script_tail(&o, absdir, tf);
	if (close(fd) < 0 || o.bad || renameat(ctx->dirfd, tmp, ctx->dirfd, name) < 0) {
		unlinkat(ctx->dirfd, tmp, 0);
		return -1;
	}
	return 0;
}

/* step 3 for IM: its trace file and script from its spools; removes the spools and the
 * definitions file */
static int ts_assemble(struct rec_salvage_ctx *ctx, struct ts_image *im)
{
	struct tfile_spool *v = NULL;
	struct tfile_trace tr;
	struct tfile_out o = {.fd = -1};
	struct ts_defs df;
	uint64_t *scratch = NULL, frames, last_ns = 0;
	uint8_t *frame = NULL;
	char why[PATH_MAX + 128], tmp[400], base[400], defs[80];
	size_t n = 0;
	int ret = -1;

	if (ts_defs_load(ctx, im, &df, why, sizeof(why)) < 0) {
		rec_salvage_log(ctx, "%s/%s; the trace of process %d cannot be rebuilt (its "
				"rings and spools are left in place)",
				ctx->dir, why, (int)im->id.pid);
		return -1;
	}
	v = calloc(im->n ? im->n : 1, sizeof(*v));
	scratch = calloc(2 * REC_TP_MAX, sizeof(*scratch));
	o.buf = malloc(TFILE_OUTBUF);
	frame = malloc(tfile_frame_max());
	if (!v || !scratch || !o.buf || !frame)
		goto out;
	for (size_t i = 0; i < im->n; i++) {
		int fd = openat(ctx->ringdirfd, im->spools[i], O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		void *m;

		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
			if (fd >= 0)
				close(fd);
			continue; /* empty: nothing to say (removed with the others) */
		}
		m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		close(fd);
		if (m == MAP_FAILED) {
			rec_salvage_log(ctx, "%s/.flightrec/%s: mmap: %s", ctx->dir, im->spools[i],
					strerror(errno));
			goto out;
		}
		snprintf(v[n].name, sizeof(v[n].name), "%s", im->spools[i]);
		v[n].data = m;
		v[n].size = (size_t)st.st_size;
		/* the stop time: the last frame's */
		while (tfile_spool_next(&v[n], df.hdr.ntp)) {
			const struct rec_tp_frame *f = (const void *)(v[n].data + v[n].pos);
			if (f->ns > last_ns)
				last_ns = f->ns;
			v[n].pos += f->size;
		}
		v[n].pos = 0;
		n++;
	}

	tr.tps = df.tps;
	tr.ntp = df.hdr.ntp;
	tr.stop_desc = TS_STOP_DESC;
	tr.start_us = df.hdr.start_real_ns / 1000;
	tr.stop_us = (df.hdr.start_real_ns +
		      (last_ns > df.hdr.session_ns ? last_ns - df.hdr.session_ns : 0)) /
		     1000;
	snprintf(tmp, sizeof(tmp), ".%s.%d.tf.tmp", df.prog, (int)df.hdr.pid);
	o.fd = rec_open_write(ctx->dirfd, tmp, O_TRUNC);
	if (o.fd < 0) {
		rec_salvage_log(ctx, "%s/%s: %s", ctx->dir, tmp, strerror(errno));
		goto out;
	}
	frames = tfile_write_trace(&o, &tr, v, n, scratch, frame);
	if (close(o.fd) < 0 || o.bad ||
	    rec_outname_publish(ctx->dirfd, tmp, df.prog, ".tf", (int)df.hdr.forked, df.hdr.pid,
				base, sizeof(base)) < 0) {
		rec_salvage_log(ctx, "%s/%s.tf: could not be written whole: %s (the spools are "
				"kept)", ctx->dir, df.prog, strerror(errno));
		unlinkat(ctx->dirfd, tmp, 0);
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (v[i].end != v[i].size)
			rec_salvage_log(ctx, "%s/.flightrec/%s: a broken record at offset %zu, the "
					"rest is left out",
					ctx->dir, v[i].name, v[i].end);
	if (ts_write_script(ctx, &df, base, o.buf) < 0)
		rec_salvage_log(ctx, "%s/%s.gdb: could not be written: %s", ctx->dir, base,
				strerror(errno));
	rec_salvage_log(ctx, "%s/%s.tf: the GDB trace file of process %d, %llu frames of %zu "
			"threads",
			ctx->dir, base, (int)im->id.pid, (unsigned long long)frames, n);
	for (size_t i = 0; i < im->n; i++)
		unlinkat(ctx->ringdirfd, im->spools[i], 0);
	ts_defs_name(defs, sizeof(defs), im->id.pid, im->id.session_ns);
	unlinkat(ctx->ringdirfd, defs, 0);
	ret = 0;
out:
	for (size_t i = 0; i < n; i++)
		munmap((void *)v[i].data, v[i].size);
	free(v);
	free(scratch);
	free(o.buf);
	free(frame);
	ts_defs_free(&df);
	return ret;
}

static int ts_salvage(struct rec_salvage_ctx *ctx, struct rec_salvage_ring **rings, size_t nr)
{
	struct ts_image *imgs = NULL;
	bool *thread_ok = calloc(nr ? nr : 1, sizeof(*thread_ok));
	struct stat st;
	uid_t dir_owner = fstat(ctx->ringdirfd, &st) == 0 ? st.st_uid : (uid_t)-1;
	size_t nimg = 0;
	int ret = 0;

	if (!thread_ok)
		return -1;
	for (size_t i = 0; i < nr; i++) {
		thread_ok[i] = ts_salvage_thread(ctx, rings[i]) == 0;
		if (!thread_ok[i])
			ret = -1;
	}
	if (ts_scan(ctx, &imgs, &nimg) < 0) {
		rec_salvage_log(ctx, "%s/.flightrec: cannot list the spools", ctx->dir);
		ret = -1;
	}
	for (size_t i = 0; i < nr; i++) {
		struct ts_image *im = ts_image(&imgs, &nimg, rings[i]->pid, rings[i]->session_ns);
		if (im && !im->has_ring && fstat(rings[i]->fd, &st) == 0) {
			im->has_ring = true;
			im->owner = st.st_uid;
		}
		/* a spool short of its ring's chunks is not assembled: the rings stay, and a
		 * later salvage finishes the job */
		if (im && !thread_ok[i])
			im->failed = true;
	}
	for (size_t i = 0; i < nimg; i++) {
		struct ts_image *im = &imgs[i];
		if (im->failed)
			continue;
		if (ts_ring_busy(ctx, im->id.pid, rings, nr)) {
			/* its rings' chunks are on the spools now; the trace is written once the
			 * last ring can be salvaged too */
			rec_salvage_log(ctx, "the trace of process %d waits for its rings a live "
					"process holds", (int)im->id.pid);
			continue;
		}
		if (!im->has_ring) {
			/* no ring of this image here: only once its process is gone */
			if (kill(im->id.pid, 0) == 0 || errno != ESRCH)
				continue;
			im->owner = dir_owner;
		}
		if (ts_assemble(ctx, im) < 0) {
			im->failed = true;
			ret = -1;
		}
	}
	for (size_t i = 0; i < nr; i++) {
		struct ts_image *im = ts_image(&imgs, &nimg, rings[i]->pid, rings[i]->session_ns);
		rings[i]->ok = thread_ok[i] && im && !im->failed;
	}
	for (size_t i = 0; i < nimg; i++)
		free(imgs[i].spools);
	free(imgs);
	free(thread_ok);
	return ret;
}

const struct rec_salvage_format tfile_salvager = {
	.name = "tfile",
	.salvage = ts_salvage,
};
