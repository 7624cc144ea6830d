/*
 * salvage_xray: salvage for XRay FDR logs (xray-rt's rings, format "xray").
 *
 * What a dead xray-rt process image leaves in <dir>/.flightrec: a ring per thread not yet
 * closed, and a spool per thread, xray.<pid>.<session ns>.<tid> (".lossy" once its stream has
 * a gap), holding the chunks the flusher wrote; no log (finish assembles it from the spools).
 * Salvage, per image:
 *   1. per ring: the spool is cut back to write_pos when the kill came in the middle of a
 *      write, then every unwritten chunk's committed bytes are appended (each chunk starts
 *      with a NewCPUId, so the stream needs no repair at the seams); a chunk after lost
 *      events marks the spool .lossy, as the sink does;
 *   2. the log is assembled from every spool of the image, as the sink's finish does
 *      (formats/xray/sink_xray.c): a version-5 header with the image's calibrated TSC rate, one
 *      block per thread ordered by first TSC, the "flightrec: trace start" marker for the
 *      thread llvm-xray replays first when it is not the earliest (xray_order.h), lossy
 *      streams repaired (xray_repair.h); then the spools go.
 * Spools of an image that has no ring left (its threads all closed, the process killed
 * before finish) are assembled too, once the process is gone.
 * The log is <dir>/xray-log.salvaged-<pid>.<6 random characters> (the program's name is
 * not in the rings; llvm-xray does not care).
 */
#include "librecord/rec_clock.h"
#include "formats/salvagers.h"
#include "librecord/rec_salvage_spool.h"
#include "librecord/rec_config.h"
#include "librecord/rec_util.h"
#include "formats/xray/fdr_encode.h"
#include "formats/xray/xray_order.h"
#include "formats/xray/xray_repair.h"
#include "formats/xray/xray_logname.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define XS_LOSSY ".lossy"
#define XS_MARKER "flightrec: trace start"

/* one spool of an image */
struct xs_spool {
	char name[80];
	int32_t tid;
	int lossy;
	uint16_t cpu;
	uint64_t tsc, size, out_size;
};

/* one process image: its spools, and what the log needs */
struct xs_image {
	struct rec_salvage_image_id id; /* first: rec_salvage_image's key */
	uint64_t tsc_hz, buffer_size;
	struct rec_clock clock;
	int have_clock; /* from a ring of this image */
	struct xs_spool *spools;
	size_t n, cap;
};

/* function records (entries, exits) in an FDR stream's bytes */
static uint64_t xs_count(const uint8_t *p, size_t n)
{
	uint64_t events = 0;
	size_t pos = 0;

	while (pos < n) {
		if (!(p[pos] & 1)) {
			events++;
			pos += FDR_FN_SIZE;
			continue;
		}
		if (pos + FDR_META_SIZE > n)
			break;
		if ((p[pos] >> 1) == FDR_CUSTOM_EVENT) {
			int32_t size;
			memcpy(&size, p + pos + 1, 4);
			pos += size > 0 ? (size_t)size : 0;
		}
		pos += FDR_META_SIZE;
	}
	return events;
}

static void xs_spool_name(char *buf, size_t size, int pid, uint64_t ns, int tid, int lossy)
{
	snprintf(buf, size, "xray.%d.%llu.%d%s", pid, (unsigned long long)ns, tid,
		 lossy ? XS_LOSSY : "");
}

/* a gap (lost events before a chunk): the spool becomes .lossy, as the sink does */
struct xs_lossy {
	struct rec_salvage_ctx *ctx;
	const char *name, *lossy_name;
	int lossy;
};

static void xs_mark_lossy(void *arg, const struct rec_salvage_chunk *c)
{
	struct xs_lossy *l = arg;

	if (c->lost_before && !l->lossy &&
	    renameat(l->ctx->ringdirfd, l->name, l->ctx->ringdirfd, l->lossy_name) == 0)
		l->lossy = 1; /* a gap: exits without entries are left out at assembly */
}

static int xs_salvage_thread(struct rec_salvage_ctx *ctx, struct rec_salvage_ring *r)
{
	char name[80], lossy_name[80];
	struct xs_lossy l = {.ctx = ctx, .name = name, .lossy_name = lossy_name};
	const struct rec_salvage_spool sp = {
		.count = xs_count, .before_chunk = xs_mark_lossy, .arg = &l};

	xs_spool_name(name, sizeof(name), r->pid, r->session_ns, r->tid, 0);
	xs_spool_name(lossy_name, sizeof(lossy_name), r->pid, r->session_ns, r->tid, 1);
	if (faccessat(ctx->ringdirfd, lossy_name, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		l.lossy = 1;
	/* FDR has no loss record: the count is in the report (and the gap marks the stream);
	 * the log says the spool's first name, as it always has */
	return rec_salvage_spool_thread(ctx, r, l.lossy ? lossy_name : name, name, &sp);
}

/* --- the log ------------------------------------------------------------------------- */

static struct xs_image *xs_image(struct xs_image **v, size_t *n, int32_t pid, uint64_t ns)
{
	void *p = *v;
	bool added;
	ssize_t i = rec_salvage_image(&p, n, sizeof(**v), pid, ns, &added);

	*v = p;
	return i < 0 ? NULL : &(*v)[i];
}

/* every spool in .flightrec, grouped by image */
static int xs_scan(struct rec_salvage_ctx *ctx, struct xs_image **imgs, size_t *nimg)
{
	DIR *d = rec_opendir_at(ctx->ringdirfd); /* the core may be listing ringdirfd */
	struct dirent *de;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		long pid, tid;
		unsigned long long ns;
		int used = 0;
		char rest[16] = "";
		struct xs_image *im;
		struct xs_spool *sp;

		if (strncmp(de->d_name, "xray.", 5) != 0 || strlen(de->d_name) >= sizeof(sp->name))
			continue;
		if (sscanf(de->d_name, "xray.%ld.%llu.%ld%n", &pid, &ns, &tid, &used) != 3)
			continue;
		snprintf(rest, sizeof(rest), "%s", de->d_name + used);
		if (pid <= 0 || pid > 0x7fffffff || tid <= 0 || tid > 0x7fffffff ||
		    (rest[0] && strcmp(rest, XS_LOSSY)))
			continue;
		im = xs_image(imgs, nimg, (int32_t)pid, ns);
		if (!im)
			break;
		if (im->n == im->cap) {
			size_t cap = im->cap ? im->cap * 2 : 16;
			struct xs_spool *nv = realloc(im->spools, cap * sizeof(*nv));
			if (!nv)
				break;
			im->spools = nv;
			im->cap = cap;
		}
		sp = &im->spools[im->n++];
		memset(sp, 0, sizeof(*sp));
		snprintf(sp->name, sizeof(sp->name), "%s", de->d_name);
		sp->tid = (int32_t)tid;
		sp->lossy = rest[0] != '\0';
	}
	closedir(d);
	return 0;
}

/* map a spool (NULL for an empty one) */
static uint8_t *xs_map(struct rec_salvage_ctx *ctx, struct xs_spool *sp)
{
	int fd = openat(ctx->ringdirfd, sp->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	void *m;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	sp->size = (uint64_t)st.st_size;
	m = mmap(NULL, sp->size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	return m == MAP_FAILED ? NULL : m;
}

/* size and first record: 0 when the spool holds a stream that starts right */
static int xs_stat(struct rec_salvage_ctx *ctx, struct xs_spool *sp)
{
	uint8_t *m = xs_map(ctx, sp);
	int ok;

	if (!m)
		return -1;
	ok = sp->size >= FDR_META_SIZE + FDR_FN_SIZE && m[0] == (FDR_NEW_CPU << 1 | 1);
	if (ok) {
		memcpy(&sp->cpu, m + 1, 2);
		memcpy(&sp->tsc, m + 3, 8);
		sp->out_size = sp->size;
		if (sp->lossy) {
			/* exits whose entry a gap took are left out: told lost with the rest */
			int64_t r = xr_repair(m, sp->size, -1, &ctx->lost);
			ok = r >= FDR_META_SIZE + FDR_FN_SIZE;
			sp->out_size = ok ? (uint64_t)r : 0;
		}
	}
	munmap(m, sp->size);
	return ok ? 0 : -1;
}

static int xs_spool_cmp(const void *a, const void *b)
{
	const struct xs_spool *x = a, *y = b;
	if (x->tsc != y->tsc)
		return x->tsc > y->tsc ? 1 : -1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

static uint64_t xs_tsc_to_ns(const struct rec_clock *c, uint64_t tsc)
{
	if (!c->use_tsc)
		return tsc;
	return c->base_ns + (uint64_t)(((unsigned __int128)(tsc - c->base_tsc) * c->mult) >> 32);
}

static int xs_create_log(struct rec_salvage_ctx *ctx, int32_t pid, char *name, size_t size)
{
	for (int tries = 0; tries < 100; tries++) {
		char sfx[7];
		int fd;

		xray_log_suffix(sfx, tries);
		snprintf(name, size, "xray-log.salvaged-%d.%s", (int)pid, sfx);
		fd = openat(ctx->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0666);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	return -1;
}

static int xs_copy(int out, const uint8_t *m, uint64_t n)
{
	return rec_write_all(out, m, n);
}

/* assemble IM's log from its spools (stats filled by xs_stat); removes the spools */
static int xs_assemble(struct rec_salvage_ctx *ctx, struct xs_image *im)
{
	char name[128];
	uint8_t hdr[FDR_HEADER_SIZE];
	uint32_t *scratch;
	int32_t *tids;
	size_t k = 0, first;
	int fd, bad = 0;

	for (size_t i = 0; i < im->n; i++) {
		if (xs_stat(ctx, &im->spools[i]) == 0)
			im->spools[k++] = im->spools[i];
		else
			unlinkat(ctx->ringdirfd, im->spools[i].name, 0); /* empty: nothing to say */
	}
	im->n = k;
	if (im->n == 0)
		return 0;
	qsort(im->spools, im->n, sizeof(*im->spools), xs_spool_cmp);
	tids = calloc(im->n, sizeof(*tids));
	scratch = calloc(xr_llvm_scratch_words(im->n), sizeof(*scratch));
	if (!tids || !scratch) {
		free(tids);
		free(scratch);
		return -1;
	}
	for (size_t i = 0; i < im->n; i++)
		tids[i] = im->spools[i].tid;
	first = xr_llvm_first_key((uint64_t)im->id.pid, tids, im->n, scratch);
	free(tids);
	free(scratch);

	fd = xs_create_log(ctx, im->id.pid, name, sizeof(name));
	if (fd < 0) {
		rec_salvage_log(ctx, "%s/%s: %s", ctx->dir, name, strerror(errno));
		return -1;
	}
	fdr_put_header(hdr, FDR_VERSION, rec_clock_tsc_invariant() ? 3 : 0, im->tsc_hz,
		       im->buffer_size);
	bad = rec_write_all(fd, hdr, sizeof(hdr)) < 0;
	for (size_t i = 0; i < im->n && !bad; i++) {
		struct xs_spool *sp = &im->spools[i];
		int marker = i == first && sp->tsc > im->spools[0].tsc;
		size_t mlen = sizeof(XS_MARKER) - 1;
		uint64_t extent =
			3 * FDR_META_SIZE + sp->out_size + (marker ? 2 * FDR_META_SIZE + mlen : 0);
		uint64_t tsc = marker ? im->spools[0].tsc : sp->tsc;
		uint64_t ns = xs_tsc_to_ns(&im->clock, tsc);
		int64_t sec = (int64_t)(ns / 1000000000ull);
		int32_t usec = (int32_t)(ns % 1000000000ull / 1000), pid = im->id.pid;
		uint8_t m[4 * FDR_META_SIZE], pl[12];
		uint8_t *map;

		fdr_put_meta(m, FDR_BUFFER_EXTENTS, &extent, 8);
		fdr_put_meta(m + 16, FDR_NEW_BUFFER, &sp->tid, 4);
		memcpy(pl, &sec, 8);
		memcpy(pl + 8, &usec, 4);
		fdr_put_meta(m + 32, FDR_WALLCLOCK, pl, 12);
		fdr_put_meta(m + 48, FDR_PID, &pid, 4);
		bad = rec_write_all(fd, m, sizeof(m)) < 0;
		if (!bad && marker) {
			uint8_t mk[2 * FDR_META_SIZE];
			fdr_put_new_cpu(mk, im->spools[0].cpu, im->spools[0].tsc);
			fdr_put_custom_v5(mk + FDR_META_SIZE, (int32_t)mlen, 0);
			bad = rec_write_all(fd, mk, sizeof(mk)) < 0 ||
			      rec_write_all(fd, XS_MARKER, mlen) < 0;
		}
		map = bad ? NULL : xs_map(ctx, sp);
		if (!bad && (!map || (sp->lossy ? xr_repair(map, sp->size, fd, NULL) != (int64_t)sp->out_size
						: xs_copy(fd, map, sp->size) < 0)))
			bad = 1;
		if (map)
			munmap(map, sp->size);
	}
	if (close(fd) < 0)
		bad = 1;
	if (bad) {
		rec_salvage_log(ctx, "%s/%s: could not be written whole (removed; the spools are "
				"kept)", ctx->dir, name);
		unlinkat(ctx->dirfd, name, 0);
		return -1;
	}
	rec_salvage_log(ctx, "%s/%s: the XRay log of process %d, %zu threads", ctx->dir, name,
			(int)im->id.pid, im->n);
	for (size_t i = 0; i < im->n; i++)
		unlinkat(ctx->ringdirfd, im->spools[i].name, 0);
	return 0;
}

static int xs_salvage(struct rec_salvage_ctx *ctx, struct rec_salvage_ring **rings, size_t nr)
{
	struct xs_image *imgs = NULL;
	size_t nimg = 0;
	int ret = 0;

	for (size_t i = 0; i < nr; i++)
		if (xs_salvage_thread(ctx, rings[i]) < 0)
			ret = -1;
	if (xs_scan(ctx, &imgs, &nimg) < 0) {
		rec_salvage_log(ctx, "%s/.flightrec: cannot list the spools", ctx->dir);
		ret = -1;
	}
	/* the TSC rate and conversion of each image, from its rings */
	for (size_t i = 0; i < nr; i++) {
		struct rec_salvage_ring *r = rings[i];
		struct xs_image *im = xs_image(&imgs, &nimg, r->pid, r->session_ns);
		if (im && !im->have_clock) {
			im->clock = r->hdr->clock;
			im->tsc_hz = r->hdr->clock.tsc_hz;
			im->buffer_size = r->hdr->chunk_size - sizeof(struct rec_chunk);
			im->have_clock = 1;
		}
	}
	for (size_t i = 0; i < nimg; i++) {
		struct xs_image *im = &imgs[i];
		int mine = im->have_clock;
		if (!mine) {
			/* no ring of this image here: only when its process is gone, with the
			 * clock it would have had unknown (the TSC rate of a ring of another image
			 * is the machine's too) */
			if (kill(im->id.pid, 0) == 0 || errno != ESRCH)
				continue;
			for (size_t j = 0; j < nimg && !im->have_clock; j++)
				if (imgs[j].have_clock) {
					im->clock = imgs[j].clock;
					im->tsc_hz = imgs[j].tsc_hz;
					im->buffer_size = imgs[j].buffer_size;
					im->have_clock = 1;
				}
			if (!im->have_clock)
				continue;
		}
		if (xs_assemble(ctx, im) < 0)
			ret = -1;
	}
	for (size_t i = 0; i < nimg; i++)
		free(imgs[i].spools);
	free(imgs);
	for (size_t i = 0; i < nr; i++)
		rings[i]->ok = ret == 0;
	return ret;
}

const struct rec_salvage_format xray_salvager = {
	.name = "xray",
	.salvage = xs_salvage,
};
