/*
 * rec_salvage_cacheray: salvage for Cacheray traces (cacheray-rt's rings, format "cacheray").
 *
 * Every thread of every process of a recording appends whole chunks to ONE trace file (no
 * header), named in each ring's header (out_path). A dead process leaves its rings; the trace
 * holds what its flusher wrote, possibly ending with the part of a chunk a kill cut short.
 * Salvage, per trace file, while it holds flock(LOCK_EX) on it (every live process of the
 * recording holds LOCK_SH: a trace still in use is left for later):
 *   1. the trace is cut at its last whole record (the torn end of a write);
 *   2. when a ring's write was cut short (write_seq > done_seq), the whole records of that chunk
 *      that did reach the trace are its last bytes: found by comparing the trace's end with
 *      the chunk's record boundaries, they are not written twice;
 *   3. each ring's unwritten chunks are appended whole, ring after ring (records of different
 *      threads interleave only at chunk boundaries, as when the flusher writes them).
 * The format has no loss record: losses are in salvage's report.
 * The trace file is trusted only if it is a regular file (no link followed) owned by the
 * owner of the rings and made of Cacheray records: anything else is left alone.
 */
#include "librecord/rec_salvage.h"
#include "librecord/rec_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Cacheray's records (shared/formats/cacheray.md): tag u8 (type in the low 6 bits), then
 * READ/WRITE addr u64, size u8, tid u64 (18 bytes); RTTA_ADD addr, tid, elemsize u32,
 * elemcount u32, name length u32, name (29 + length); RTTA_REMOVE addr, tid (17). */
#define CS_ADD_FIXED 29u

/* the length of the record at p (n bytes left), 0 when it is cut short or not a record */
static uint64_t cs_len(const uint8_t *p, uint64_t n)
{
	uint64_t len;
	uint32_t name;

	switch (p[0] & 0x3f) {
	case 0:
	case 1: len = 18; break;
	case 3: len = 17; break;
	case 2:
		if (n < CS_ADD_FIXED)
			return 0;
		memcpy(&name, p + 25, 4);
		len = CS_ADD_FIXED + (uint64_t)name;
		break;
	default: return 0;
	}
	return len <= n ? len : 0;
}

struct cs_walk {
	uint64_t end;     /* end of the last whole record */
	uint64_t records;
	int bad;          /* stopped at something that is not a record (not just cut short) */
	uint64_t *bounds; /* record ends, when collected */
	size_t nb, cap;
};

static void cs_walk(const uint8_t *p, uint64_t n, struct cs_walk *w)
{
	uint64_t pos = 0;

	while (pos < n) {
		uint64_t len = cs_len(p + pos, n - pos);
		if (!len) {
			unsigned t = p[pos] & 0x3f;
			/* a known type that does not fit is the torn end of a write */
			w->bad = t > 3 || (t == 2 && n - pos >= CS_ADD_FIXED);
			break;
		}
		pos += len;
		w->end = pos;
		w->records++;
		if (w->bounds) {
			if (w->nb == w->cap) {
				uint64_t *nv = realloc(w->bounds, w->cap * 2 * sizeof(*nv));
				if (!nv)
					break;
				w->bounds = nv;
				w->cap *= 2;
			}
			w->bounds[w->nb++] = pos;
		}
	}
}

/* how many leading bytes of chunk C are already the trace's last bytes (a write cut short) */
static uint64_t cs_prefix_done(const uint8_t *trace, uint64_t size, const uint8_t *c,
			       uint64_t len)
{
	struct cs_walk w = { 0 };
	uint64_t done = 0;

	w.cap = 1024;
	w.bounds = malloc(w.cap * sizeof(*w.bounds));
	if (!w.bounds)
		return 0;
	cs_walk(c, len, &w);
	for (size_t i = w.nb; i-- > 0;) {
		uint64_t k = w.bounds[i];
		if (k <= size && memcmp(trace + size - k, c, k) == 0) {
			done = k;
			break;
		}
	}
	free(w.bounds);
	return done;
}

static int cs_path_cmp(const void *a, const void *b)
{
	const struct rec_salvage_ring *x = *(struct rec_salvage_ring *const *)a;
	const struct rec_salvage_ring *y = *(struct rec_salvage_ring *const *)b;
	int c = strcmp(x->hdr->out_path, y->hdr->out_path);
	if (c)
		return c;
	if (x->pid != y->pid)
		return (x->pid > y->pid) - (x->pid < y->pid);
	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* salvage rings[0..n), all of one trace file */
static int cs_salvage_trace(struct rec_salvage_ctx *ctx, struct rec_salvage_ring **rings,
			    size_t n)
{
	const char *path = rings[0]->hdr->out_path;
	struct cs_walk w = { 0 };
	struct stat st;
	uint8_t *m = NULL;
	uint64_t size;
	int fd;

	if (path[0] != '/') {
		rec_salvage_log(ctx, "%s: the ring names no trace file", rings[0]->name);
		return -1;
	}
	fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		rec_salvage_log(ctx, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	{
		/* the trace belongs to whoever wrote the rings: a forged ring cannot make salvage
		 * (often run as root) append to someone else's file */
		struct stat rs;
		if (fstat(rings[0]->fd, &rs) < 0 || (S_ISREG(st.st_mode) && rs.st_uid != st.st_uid)) {
			rec_salvage_log(ctx, "%s: not owned by the owner of %s: left alone", path,
					rings[0]->name);
			close(fd);
			return -1;
		}
	}
	if (!S_ISREG(st.st_mode)) { /* /dev/null, a pipe: nothing can be added there */
		close(fd);
		for (size_t i = 0; i < n; i++)
			rings[i]->ok = true;
		return 0;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		rec_salvage_log(ctx, "%s: still open in a live process of the recording, its rings "
				"are left for a later salvage", path);
		close(fd);
		return -1;
	}
	/* 1. whole records only */
	size = (uint64_t)st.st_size;
	if (size) {
		m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED) {
			rec_salvage_log(ctx, "%s: mmap: %s", path, strerror(errno));
			close(fd);
			return -1;
		}
		cs_walk(m, size, &w);
		if (w.bad) {
			rec_salvage_log(ctx, "%s: offset 0x%llx: not a record (a damaged trace: "
					"left as it is)", path, (unsigned long long)w.end);
			munmap(m, size);
			close(fd);
			return -1;
		}
		if (w.end < size)
			rec_salvage_log(ctx, "%s: %llu bytes of a record cut short removed", path,
					(unsigned long long)(size - w.end));
	}
	/* 2. what a cut-short write already put there */
	for (size_t i = 0; i < n; i++) {
		struct rec_salvage_ring *r = rings[i];
		for (size_t k = 0; r->cut && k < r->nr_chunks && m; k++) {
			struct rec_salvage_chunk *c = &r->chunks[k];
			if (c->seq != r->hdr->write_seq || c->off)
				continue;
			uint64_t done = cs_prefix_done(m, w.end, c->data, c->len);
			if (done) {
				/* those records stay where they are, once */
				c->off = done;
				rec_salvage_log(ctx, "%s: %llu bytes of chunk %llu were written "
						"before the kill", r->name, (unsigned long long)done,
						(unsigned long long)c->seq);
			}
		}
	}
	if (m)
		munmap(m, size);
	if (w.end < size && ftruncate(fd, (off_t)w.end) < 0) {
		rec_salvage_log(ctx, "%s: cannot cut it: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	/* 3. the rest, chunk by chunk */
	lseek(fd, 0, SEEK_END);
	for (size_t i = 0; i < n; i++) {
		struct rec_salvage_ring *r = rings[i];
		for (size_t k = 0; k < r->nr_chunks; k++) {
			const struct rec_salvage_chunk *c = &r->chunks[k];
			struct cs_walk cw = { 0 };
			uint64_t len = c->len - c->off;

			rec_salvage_chunk_begin(r, c, -1);
			if (len && rec_write_all(fd, c->data + c->off, len) < 0) {
				rec_salvage_log(ctx, "%s: write: %s", path, strerror(errno));
				close(fd);
				return -1;
			}
			rec_salvage_chunk_done(r, c);
			cs_walk(c->data + c->off, len, &cw);
			r->events += cw.records;
			r->bytes += len;
			r->lost += c->lost_before;
		}
		r->lost += r->lost_tail;
		if (r->lost_tail)
			rec_salvage_tail_done(r);
		r->ok = true;
	}
	if (close(fd) < 0)
		return -1;
	return 0;
}

static int cs_salvage(struct rec_salvage_ctx *ctx, struct rec_salvage_ring **rings, size_t nr)
{
	int ret = 0;

	qsort(rings, nr, sizeof(*rings), cs_path_cmp);
	for (size_t i = 0; i < nr;) {
		size_t j = i + 1;
		while (j < nr && !strcmp(rings[j]->hdr->out_path, rings[i]->hdr->out_path))
			j++;
		if (cs_salvage_trace(ctx, rings + i, j - i) < 0)
			ret = -1;
		i = j;
	}
	return ret;
}

const struct rec_salvage_format rec_salvage_cacheray = {
	.name = "cacheray",
	.salvage = cs_salvage,
};
