/*
 * rec_salvage: the format-neutral core of salvage (see rec_salvage.h): find the ring files,
 * leave those of live processes alone, check each one and work out which committed bytes were
 * never written, hand them to the format's salvager, and remove the rings it completed.
 *
 * Invariants:
 *  - nothing read from a ring is trusted: geometry against the file size, every chunk's magic,
 *    state, seq and length; a bad chunk is skipped and counted, a bad header leaves the ring
 *    in place (evidence) and is reported;
 *  - a ring is salvaged only while salvage holds its flock, so two salvages never write the
 *    same ring's chunks, and a live process's rings are never touched;
 *  - progress goes into the ring header with the runtime's own protocol, so running salvage
 *    again after it was interrupted writes nothing twice.
 */
#include "librecord/rec_salvage.h"
#include "librecord/rec_util.h"

#include <dirent.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

bool rec_salvage_pid_live(int ringdirfd, pid_t pid)
{
	char name[32];
	bool live;
	int fd;

	snprintf(name, sizeof(name), "live.%d", (int)pid);
	fd = openat(ringdirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	live = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	return live;
}

static int rsv_live_one(void *arg, const char *name)
{
	char *end;
	long pid = strtol(name + 5, &end, 10);

	return *end == '\0' && pid > 0 && rec_salvage_pid_live(*(const int *)arg, (pid_t)pid);
}

bool rec_salvage_any_live(int ringdirfd)
{
	/* a directory that cannot be read says nothing: taken for live, nothing is written */
	return rec_dir_each(ringdirfd, "live.", 5, rsv_live_one, &ringdirfd) != 0;
}

#define RSV_MIN_CHUNK 4096u
#define RSV_MAX_CHUNK (256u << 20)
#define RSV_MAX_CHUNKS 4096u

void rec_salvage_log(const struct rec_salvage_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	if (!ctx->opts->log)
		return;
	fputs("flightrec: salvage: ", ctx->opts->log);
	va_start(ap, fmt);
	vfprintf(ctx->opts->log, fmt, ap);
	va_end(ap);
	fputc('\n', ctx->opts->log);
}

void rec_salvage_chunk_begin(struct rec_salvage_ring *r, const struct rec_salvage_chunk *c,
			     int64_t pos)
{
	__atomic_store_n(&r->hdr->write_len, c->len - c->off, __ATOMIC_RELEASE);
	__atomic_store_n(&r->hdr->write_pos, pos, __ATOMIC_RELEASE);
	__atomic_store_n(&r->hdr->write_seq, c->seq, __ATOMIC_RELEASE);
}

void rec_salvage_chunk_done(struct rec_salvage_ring *r, const struct rec_salvage_chunk *c)
{
	if (c->tells_overwritten)
		__atomic_store_n(&r->hdr->overwritten_told, r->hdr->overwritten, __ATOMIC_RELEASE);
	__atomic_store_n(&r->hdr->done_len, c->len, __ATOMIC_RELEASE);
	__atomic_store_n(&r->hdr->done_seq, c->seq, __ATOMIC_RELEASE);
}

void rec_salvage_tail_done(struct rec_salvage_ring *r)
{
	__atomic_store_n(&r->hdr->overwritten_told, r->hdr->overwritten, __ATOMIC_RELEASE);
	__atomic_store_n(&r->hdr->lost_pending, 0, __ATOMIC_RELEASE);
}

/* "ring.<pid>.<tid>", both canonical positive decimals; 0 if NAME is anything else */
static int rsv_parse_name(const char *name, pid_t *pid, pid_t *tid)
{
	long v[2];
	const char *p;

	if (strncmp(name, "ring.", 5) != 0)
		return 0;
	p = name + 5;
	for (int i = 0; i < 2; i++) {
		long n = 0;
		const char *s = p;
		if (*p < '1' || *p > '9')
			return 0;
		while (*p >= '0' && *p <= '9' && p - s < 10) {
			n = n * 10 + (*p - '0');
			p++;
		}
		if (n <= 0 || n > 0x7fffffff)
			return 0;
		v[i] = n;
		if (i == 0 && *p++ != '.')
			return 0;
	}
	if (*p != '\0')
		return 0;
	*pid = (pid_t)v[0];
	*tid = (pid_t)v[1];
	return 1;
}

/* "pool.<pid>.<n>": a spare ring (rec_ringpool.h), nothing in it to salvage; 0 otherwise */
static int rsv_parse_pool(const char *name, pid_t *pid)
{
	long n = 0;
	const char *p = name + 5;

	if (strncmp(name, "pool.", 5) != 0 || *p < '1' || *p > '9')
		return 0;
	for (; *p >= '0' && *p <= '9' && n <= 0x7fffffff; p++)
		n = n * 10 + (*p - '0');
	if (n > 0x7fffffff || *p != '.' || p[1] < '0' || p[1] > '9')
		return 0;
	*pid = (pid_t)n;
	return 1;
}

/* The thread a spare ring's header names: one took it on its own (rec_ringpool_claim) and
 * recorded into it under its pool name, so it is that thread's ring; 0: a spare nobody took
 * (made, or back from an ended thread), nothing in it to salvage. */
static pid_t rsv_pool_owner(int ringdirfd, const char *name)
{
	struct rec_ring_hdr h;
	int fd = openat(ringdirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	ssize_t got;

	if (fd < 0)
		return 0;
	got = pread(fd, &h, sizeof(h), 0);
	close(fd);
	if (got != (ssize_t)sizeof(h) || memcmp(h.magic, REC_RING_MAGIC, sizeof(h.magic)) != 0)
		return 0;
	return h.tid > 0 ? h.tid : 0;
}

static int rsv_seq_cmp(const void *a, const void *b)
{
	const struct rec_salvage_chunk *x = a, *y = b;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

#define RSV_WHY(...)                                                                       \
	do {                                                                               \
		snprintf(why, why_size, __VA_ARGS__);                                      \
		goto fail;                                                                 \
	} while (0)

int rec_salvage_ring_load(int fd, const char *name, bool writable, struct rec_salvage_ring *r,
			  char *why, size_t why_size)
{
	struct rec_ring_hdr h;
	struct stat st;
	uint64_t cap, done, done_len, wseq, next, untold;
	size_t n = 0;
	ssize_t got;
	bool pool;

	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->cut_pos = -1;
	snprintf(r->name, sizeof(r->name), "%s", name);
	/* pool.<pid>.<n>: a spare a thread took (rsv_pool_owner), its tid in the header */
	pool = !rsv_parse_name(name, &r->pid, &r->tid);
	if (pool && !rsv_parse_pool(name, &r->pid))
		RSV_WHY("not a ring file name");
	if (fstat(fd, &st) < 0)
		RSV_WHY("fstat: %s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		RSV_WHY("not a regular file");
	/* killed while the ring was being created: nothing was recorded into it */
	if (st.st_size == 0)
		return 1;
	if ((uint64_t)st.st_size < REC_RING_HDR_SIZE)
		RSV_WHY("%lld bytes, shorter than the ring header (%u)", (long long)st.st_size,
			REC_RING_HDR_SIZE);
	got = pread(fd, &h, sizeof(h), 0);
	if (got != (ssize_t)sizeof(h))
		RSV_WHY("cannot read the ring header");
	if (!memcmp(h.magic, "\0\0\0\0\0\0\0\0", sizeof(h.magic)))
		return 1; /* sized, header not written yet: nothing recorded either */
	if (memcmp(h.magic, REC_RING_MAGIC, sizeof(h.magic)) != 0)
		RSV_WHY("offset 0x0: bad ring magic");
	if (h.version != REC_RING_VERSION)
		RSV_WHY("offset 0x8: ring version %u, this salvage reads %u", h.version,
			REC_RING_VERSION);
	if (h.hdr_size != REC_RING_HDR_SIZE)
		RSV_WHY("offset 0xc: header size %u, expected %u", h.hdr_size, REC_RING_HDR_SIZE);
	if (h.chunk_size < RSV_MIN_CHUNK || h.chunk_size > RSV_MAX_CHUNK || h.chunk_size % 4096)
		RSV_WHY("offset 0x10: chunk size %llu is not a multiple of 4096 in [4096, 256M]",
			(unsigned long long)h.chunk_size);
	if (h.chunk_count < 2 || h.chunk_count > RSV_MAX_CHUNKS)
		RSV_WHY("offset 0x18: chunk count %u is not in [2, %u]", h.chunk_count,
			RSV_MAX_CHUNKS);
	if ((uint64_t)st.st_size != REC_RING_HDR_SIZE + h.chunk_size * h.chunk_count)
		RSV_WHY("file size %lld, the header says %llu", (long long)st.st_size,
			(unsigned long long)(REC_RING_HDR_SIZE + h.chunk_size * h.chunk_count));
	if (pool) {
		if (h.tid <= 0)
			return 1; /* no thread's: nothing recorded into it */
		r->tid = h.tid;
	}
	if (h.pid != r->pid || h.tid != r->tid)
		RSV_WHY("offset 0x1c: pid/tid %d/%d differ from the file name's", (int)h.pid,
			(int)h.tid);
	if (memchr(h.format, '\0', sizeof(h.format)) == NULL || h.format[0] == '\0')
		RSV_WHY("offset 0x28: format name is empty or not terminated");
	memcpy(r->format, h.format, sizeof(r->format));
	if (memchr(h.out_path, '\0', sizeof(h.out_path)) == NULL)
		RSV_WHY("offset 0x%zx: output path not terminated",
			offsetof(struct rec_ring_hdr, out_path));
	r->session_ns = h.session_ns;
	done = h.done_seq;
	done_len = h.done_len;
	wseq = h.write_seq;
	if (wseq < done)
		RSV_WHY("write_seq %llu is below done_seq %llu", (unsigned long long)wseq,
			(unsigned long long)done);
	cap = h.chunk_size - sizeof(struct rec_chunk);
	if (done_len > cap)
		RSV_WHY("done_len %llu is larger than a chunk", (unsigned long long)done_len);

	r->size = (size_t)st.st_size;
	r->map = mmap(NULL, r->size, PROT_READ | PROT_WRITE, writable ? MAP_SHARED : MAP_PRIVATE, fd,
		      0);
	if (r->map == MAP_FAILED) {
		r->map = NULL;
		RSV_WHY("mmap: %s", strerror(errno));
	}
	r->hdr = (struct rec_ring_hdr *)r->map;
	r->chunks = calloc(h.chunk_count, sizeof(*r->chunks));
	if (!r->chunks)
		RSV_WHY("out of memory");
	if (wseq > done) {
		r->cut = true;
		r->cut_pos = h.write_pos;
		r->cut_len = h.write_len;
	}

	for (uint32_t i = 0; i < h.chunk_count; i++) {
		struct rec_chunk *c = (struct rec_chunk *)(r->map + REC_RING_HDR_SIZE +
							   (size_t)i * h.chunk_size);
		struct rec_salvage_chunk *sc;
		uint32_t state = c->state;
		uint64_t seq = c->seq, len = c->committed, off = 0;

		if (c->magic == 0 && state == REC_CHUNK_FREE && seq == 0 && len == 0)
			continue; /* never taken: the ring file's zeroes (rec_ring_create) */
		if (c->magic != REC_CHUNK_MAGIC ||
		    (state != REC_CHUNK_FREE && state != REC_CHUNK_FILLING &&
		     state != REC_CHUNK_FULL)) {
			r->bad_chunks++;
			continue;
		}
		if (state == REC_CHUNK_FREE)
			continue;
		if (seq == 0 || len > cap) {
			r->bad_chunks++;
			continue;
		}
		/* the overwrite policy was reusing it: its events are in `overwritten` */
		if (state == REC_CHUNK_FULL && h.overwritten_seq && seq == h.overwritten_seq)
			continue;
		if (r->cut && seq == wseq) {
			off = 0; /* the write was cut short: again, whole */
		} else if (seq < done) {
			continue;
		} else if (seq == done) {
			if (len <= done_len)
				continue;
			off = done_len; /* finish wrote it in part; the thread went on */
		}
		sc = &r->chunks[n++];
		sc->idx = i;
		sc->state = state;
		sc->seq = seq;
		sc->off = off;
		sc->len = len;
		sc->lost_before = off ? 0 : c->lost_before;
		sc->events = state == REC_CHUNK_FULL && !off ? c->events : 0;
		sc->data = (const uint8_t *)(c + 1);
	}
	qsort(r->chunks, n, sizeof(*r->chunks), rsv_seq_cmp);
	/* duplicates: a broken ring; keep the first of each seq */
	{
		size_t keep = 0;
		for (size_t i = 0; i < n; i++) {
			if (keep && r->chunks[keep - 1].seq == r->chunks[i].seq) {
				r->bad_chunks++;
				continue;
			}
			r->chunks[keep++] = r->chunks[i];
		}
		n = keep;
	}
	r->nr_chunks = n;

	/* what the gaps say: reused chunks (overwrite) before the oldest left, else unknown */
	untold = h.overwritten > h.overwritten_told ? h.overwritten - h.overwritten_told : 0;
	next = r->cut ? wseq : done + 1;
	for (size_t i = 0; i < n; i++) {
		struct rec_salvage_chunk *sc = &r->chunks[i];
		if (sc->seq > next) {
			if (untold) {
				sc->lost_before += untold;
				sc->tells_overwritten = true;
				untold = 0;
			} else {
				r->gaps += sc->seq - next;
			}
		}
		next = sc->seq + 1;
	}
	if (untold && n) {
		r->chunks[0].lost_before += untold;
		r->chunks[0].tells_overwritten = true;
	} else if (untold) {
		r->lost_tail = untold;
	}
	r->lost_earlier = h.lost_written;
	/* events lost after the last chunk taken (the kill came before a next one told them) */
	if (h.lost_for_seq && h.lost_pending && done < h.lost_for_seq) {
		bool taken = false;
		for (size_t i = 0; i < n; i++)
			taken |= r->chunks[i].seq == h.lost_for_seq;
		for (uint32_t i = 0; i < h.chunk_count && !taken; i++) {
			struct rec_chunk *c = (struct rec_chunk *)(r->map + REC_RING_HDR_SIZE +
								   (size_t)i * h.chunk_size);
			taken = c->state != REC_CHUNK_FREE && c->seq == h.lost_for_seq;
		}
		if (!taken)
			r->lost_tail += h.lost_pending;
	}
	return 0;
fail:
	rec_salvage_ring_free(r);
	r->fd = fd;
	return -1;
}

void rec_salvage_ring_free(struct rec_salvage_ring *r)
{
	if (r->map)
		munmap(r->map, r->size);
	r->map = NULL;
	r->hdr = NULL;
	free(r->chunks);
	r->chunks = NULL;
	r->nr_chunks = 0;
}

bool rec_salvage_needed(const char *dir)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rfd;
	struct dirent *de;
	bool found = false;
	pid_t pid, tid;
	DIR *d;

	if (dfd < 0)
		return false;
	rfd = openat(dfd, ".flightrec", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	if (rfd < 0 || !(d = fdopendir(rfd))) {
		if (rfd >= 0)
			close(rfd);
		return false;
	}
	while (!found && (de = readdir(d)))
		found = rsv_parse_name(de->d_name, &pid, &tid) ||
			(rsv_parse_pool(de->d_name, &pid) && rsv_pool_owner(rfd, de->d_name));
	closedir(d);
	return found;
}

static int rsv_ring_cmp(const void *a, const void *b)
{
	const struct rec_salvage_ring *x = *(struct rec_salvage_ring *const *)a;
	const struct rec_salvage_ring *y = *(struct rec_salvage_ring *const *)b;
	if (x->pid != y->pid)
		return (x->pid > y->pid) - (x->pid < y->pid);
	return (x->tid > y->tid) - (x->tid < y->tid);
}

static int rsv_pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

int rec_salvage_dir(const char *dir, const struct rec_salvage_format *const *formats,
		    const struct rec_salvage_opts *o, struct rec_salvage_report *rep)
{
	struct rec_salvage_ctx ctx = { .dir = dir, .dirfd = -1, .ringdirfd = -1, .opts = o };
	struct rec_salvage_ring **rings = NULL, **sel = NULL;
	size_t nr = 0, cap = 0;
	struct dirent *de;
	pid_t *pids = NULL;
	unsigned spares = 0;
	int ret = 0, dfd;
	DIR *d;

	memset(rep, 0, sizeof(*rep));
	ctx.dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ctx.dirfd < 0) {
		rec_salvage_log(&ctx, "%s: %s", dir, strerror(errno));
		return -1;
	}
	ctx.ringdirfd = openat(ctx.dirfd, ".flightrec", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
							    O_CLOEXEC);
	if (ctx.ringdirfd < 0) {
		if (errno == ENOENT) { /* nothing was ever recorded there, or all is finished */
			close(ctx.dirfd);
			return 0;
		}
		rec_salvage_log(&ctx, "%s/.flightrec: %s", dir, strerror(errno));
		close(ctx.dirfd);
		return -1;
	}
	dfd = dup(ctx.ringdirfd);
	if (dfd < 0 || !(d = fdopendir(dfd))) {
		rec_salvage_log(&ctx, "%s/.flightrec: %s", dir, strerror(errno));
		if (dfd >= 0)
			close(dfd);
		ret = -1;
		goto out;
	}
	while ((de = readdir(d))) {
		struct rec_salvage_ring *r;
		char why[256];
		pid_t pid, tid = 0;
		int fd;

		if (rsv_parse_pool(de->d_name, &pid)) {
			/* a dead process's spare ring: its chunks were written before it was
			 * pooled (or it never had any); only its disk space is left to give back.
			 * One whose header names a thread is that thread's ring: salvaged below */
			if (rec_salvage_pid_live(ctx.ringdirfd, pid))
				continue;
			tid = rsv_pool_owner(ctx.ringdirfd, de->d_name);
			if (!tid) {
				if (!o->dry_run && !o->keep_rings &&
				    unlinkat(ctx.ringdirfd, de->d_name, 0) == 0)
					spares++;
				continue;
			}
		} else if (!rsv_parse_name(de->d_name, &pid, &tid)) {
			continue;
		}
		rep->rings++;
		fd = openat(ctx.ringdirfd, de->d_name,
			    (o->dry_run ? O_RDONLY : O_RDWR) | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0) {
			rec_salvage_log(&ctx, "%s/.flightrec/%s: %s", dir, de->d_name,
					strerror(errno));
			rep->bad++;
			ret = -1;
			continue;
		}
		/* ... or by the live process its thread became: a vfork child (its tid is its
		 * pid) that exec'ed a traced program, its parent killed before it closed the
		 * child's ring. That process appends to the same per-thread file now; salvaging
		 * the ring meanwhile wrote at the end it was writing at, and cut it back (review:
		 * 311000 calls, 180883 in the trace, verify 'ok, 0 lost') */
		if (flock(fd, LOCK_EX | LOCK_NB) < 0 || rec_salvage_pid_live(ctx.ringdirfd, pid) ||
		    (tid != pid && tid > 0 && rec_salvage_pid_live(ctx.ringdirfd, tid))) {
			rec_salvage_log(&ctx, "%s/.flightrec/%s: in use by a live process, left alone",
					dir, de->d_name);
			rep->busy++;
			ctx.busy++;
			close(fd);
			continue;
		}
		if (nr == cap) {
			cap = cap ? cap * 2 : 16;
			struct rec_salvage_ring **nv = realloc(rings, cap * sizeof(*rings));
			if (!nv) {
				close(fd);
				ret = -1;
				break;
			}
			rings = nv;
		}
		r = calloc(1, sizeof(*r));
		if (!r) {
			close(fd);
			ret = -1;
			break;
		}
		int got = rec_salvage_ring_load(fd, de->d_name, !o->dry_run, r, why, sizeof(why));
		if (got < 0) {
			rec_salvage_log(&ctx, "%s/.flightrec/%s: %s (left in place)", dir, de->d_name,
					why);
			rep->bad++;
			ret = -1;
			close(fd);
			free(r);
			continue;
		}
		if (got > 0) {
			rec_salvage_log(&ctx, "%s: killed while it was being created, nothing in it%s",
					de->d_name, o->dry_run || o->keep_rings ? "" : " (removed)");
			rep->unborn++;
			if (!o->dry_run && !o->keep_rings)
				unlinkat(ctx.ringdirfd, de->d_name, 0);
			close(fd);
			free(r);
			continue;
		}
		rings[nr++] = r;
	}
	closedir(d);
	if (spares)
		rec_salvage_log(&ctx, "%u spare rings of dead processes removed (nothing to salvage "
				"in them)", spares);
	if (nr)
		qsort(rings, nr, sizeof(*rings), rsv_ring_cmp);

	sel = calloc(nr ? nr : 1, sizeof(*sel));
	pids = calloc(nr ? nr : 1, sizeof(*pids));
	if (!sel || !pids) {
		ret = -1;
		goto out;
	}
	/* per format, every ring of it at once: metadata is written once per directory */
	for (size_t f = 0; formats[f]; f++) {
		size_t k = 0;
		for (size_t i = 0; i < nr; i++)
			if (!strcmp(rings[i]->format, formats[f]->name))
				sel[k++] = rings[i];
		if (o->dry_run)
			continue;
		if (!k) {
			if (formats[f]->ringless && formats[f]->ringless(&ctx) < 0)
				ret = -1;
			continue;
		}
		if (formats[f]->salvage(&ctx, sel, k) < 0)
			ret = -1;
	}
	for (size_t i = 0; i < nr; i++) {
		struct rec_salvage_ring *r = rings[i];
		bool known = false;

		for (size_t f = 0; formats[f]; f++)
			known |= !strcmp(r->format, formats[f]->name);
		if (!known) {
			rec_salvage_log(&ctx, "%s/.flightrec/%s: format '%s' cannot be salvaged "
					"(left in place)", dir, r->name, r->format);
			rep->bad++;
			ret = -1;
			continue;
		}
		if (o->dry_run) {
			uint64_t bytes = 0, events = 0;
			for (size_t c = 0; c < r->nr_chunks; c++) {
				bytes += r->chunks[c].len - r->chunks[c].off;
				events += r->chunks[c].events;
			}
			rec_salvage_log(&ctx, "%s (%s): would write %zu chunks, %llu bytes%s", r->name,
					r->format, r->nr_chunks, (unsigned long long)bytes,
					r->cut ? ", after undoing a cut-short write" : "");
			rep->chunks += r->nr_chunks;
			rep->bytes += bytes;
			rep->events += events;
			continue;
		}
		if (!r->ok) {
			rep->bad++;
			continue;
		}
		rep->salvaged++;
		rep->chunks += r->nr_chunks;
		rep->bytes += r->bytes;
		rep->events += r->events;
		rep->lost += r->lost + r->lost_earlier;
		rep->gaps += r->gaps;
		pids[rep->processes++] = r->pid;
		rec_salvage_log(&ctx, "%s (%s): %zu chunks, %llu bytes, %llu events, %llu lost%s%s",
				r->name, r->format, r->nr_chunks, (unsigned long long)r->bytes,
				(unsigned long long)r->events,
				(unsigned long long)(r->lost + r->lost_earlier),
				r->cut ? ", a cut-short write undone" : "",
				r->gaps ? ", chunks missing (events lost, number unknown)" : "");
		if (r->bad_chunks)
			rec_salvage_log(&ctx, "%s: %llu malformed chunks skipped", r->name,
					(unsigned long long)r->bad_chunks);
		if (!o->keep_rings)
			unlinkat(ctx.ringdirfd, r->name, 0);
	}
	/* what the format salvagers left out of what they assembled */
	if (ctx.lost) {
		rep->lost += ctx.lost;
		rec_salvage_log(&ctx, "%llu events left out at assembly (told lost)",
				(unsigned long long)ctx.lost);
	}
	/* distinct processes */
	if (rep->processes) {
		size_t k = 1;
		qsort(pids, rep->processes, sizeof(*pids), rsv_pid_cmp);
		for (size_t i = 1; i < rep->processes; i++)
			if (pids[i] != pids[k - 1])
				pids[k++] = pids[i];
		rep->processes = (unsigned)k;
	}
out:
	for (size_t i = 0; i < nr; i++) {
		int fd = rings[i]->fd;
		rec_salvage_ring_free(rings[i]);
		close(fd); /* drops the lock */
		free(rings[i]);
	}
	free(rings);
	free(sel);
	free(pids);
	if (ctx.ringdirfd >= 0)
		close(ctx.ringdirfd);
	if (ctx.dirfd >= 0)
		close(ctx.dirfd);
	return ret;
}
