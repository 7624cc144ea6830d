/*
 * salvage_cacheray: salvage for Cacheray traces (cacheray-rt's rings, format "cacheray").
 *
 * Every thread of every process of a recording appends whole chunks to ONE trace file (no
 * header), named in each ring's header (out_path), under the sink's append lock
 * (formats/cacheray/sink_cacheray.c): a chunk's offset is taken and recorded in its ring's header
 * (write_pos, write_len) before its write, and the write recorded done before the lock goes.
 * A dead process leaves its rings; the trace holds what it wrote, possibly with the part of a
 * chunk a kill cut short, exactly at that ring's write_pos. Salvage, per trace file, while it
 * holds flock(LOCK_EX) on it (every live process of the recording holds LOCK_SH: a trace still
 * in use is left for later):
 *   1. each ring whose write was cut short (write_seq > done_seq) says where its chunk went:
 *      nowhere yet (write_pos -1: killed before it had a place: written whole, later), or
 *      write_len bytes at write_pos. Those bytes are checked against the chunk, at that place
 *      only (never searched for), last place first:
 *        - the trace ends within them and they are the chunk's first bytes: the write was cut
 *          short (or killed before done_seq): the trace is cut back to write_pos, the chunk
 *          written again whole;
 *        - all of them are there and the trace goes on (another process appended after):
 *          the write was whole, the chunk is done;
 *        - something else is there from the first record on (the kill came before the
 *          write, another process appended there): the chunk is written whole, later;
 *        - the chunk's first records and then something else: a torn write another process
 *          appended after (which the journal prevents, below): reported, the trace left as
 *          it is;
 *   2. what is left must be made of whole records, but for a torn end, which is cut (a
 *      write no ring accounts for);
 *   3. the trace is cut back to the first place steps 1 and 2 chose;
 *   4. each ring's unwritten chunks are appended whole, ring after ring (records of different
 *      threads interleave only at chunk boundaries, as when the runtime writes them), each
 *      with the same protocol in the ring header, so an interrupted salvage is run again.
 * A torn chunk never has another process's chunk after it: the next writer, in whatever
 * process, cuts it off first (the runtime's append journal), so a claim's place holds the
 * chunk's first bytes up to the end, all of it, or someone else's records; when it holds
 * something else (the journal missing: another ring directory, no POSIX locks) salvage stops.
 * The journal itself is removed once the trace is salvaged.
 * The format has no loss record: losses are in salvage's report.
 * The trace file is trusted only if it is a regular file (no link followed) owned by the
 * owner of the rings and made of Cacheray records: anything else is left alone.
 */
#include "formats/salvagers.h"
#include "librecord/rec_util.h"

#include <errno.h>
#include <stddef.h>
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

/* a cut-short write's claim on the trace: write_len bytes of chunk c at write_pos */
struct cs_claim {
	struct rec_salvage_ring *r;
	struct rec_salvage_chunk *c; /* NULL: the ring no longer holds it */
	uint64_t pos, len;
};

static int cs_claim_cmp(const void *a, const void *b)
{
	const struct cs_claim *x = a, *y = b;
	return (x->pos < y->pos) - (x->pos > y->pos); /* last place first */
}

/*
 * Step 2 for one claim, with the trace's first *end bytes at m: 0, or -1 when the trace
 * cannot be mended (said on the log). *end becomes write_pos when the claim is the trace's
 * tail (cut there); a chunk found whole gets off = its length.
 */
static int cs_claim_check(struct rec_salvage_ctx *ctx, const char *path, const uint8_t *m,
			  uint64_t *end, struct cs_claim *k)
{
	struct rec_salvage_ring *r = k->r;
	struct rec_salvage_chunk *c = k->c;
	uint64_t have, same = 0, first;

	if (!c) {
		rec_salvage_log(ctx, "%s: chunk %llu, written at offset %llu of %s when the process "
				"died, is not in the ring: the trace is left as it is", r->name,
				(unsigned long long)r->hdr->write_seq, (unsigned long long)k->pos,
				path);
		return -1;
	}
	if (k->len > c->len) {
		rec_salvage_log(ctx, "%s: header offset 0x%zx: write_len %llu is larger than chunk "
				"%llu (%llu bytes): the trace is left as it is", r->name,
				offsetof(struct rec_ring_hdr, write_len), (unsigned long long)k->len,
				(unsigned long long)c->seq, (unsigned long long)c->len);
		return -1;
	}
	if (k->pos > *end) {
		/* the trace was cut or replaced since: nothing of it can be there */
		rec_salvage_log(ctx, "%s: chunk %llu was to go at offset %llu, past the end of %s "
				"(%llu bytes): written whole", r->name, (unsigned long long)c->seq,
				(unsigned long long)k->pos, path, (unsigned long long)*end);
		return 0;
	}
	have = *end - k->pos < k->len ? *end - k->pos : k->len;
	while (same < have && m[k->pos + same] == c->data[same])
		same++;
	if (same == have && *end - k->pos <= k->len) {
		/* the trace's tail: cut short (or whole, killed before done_seq) */
		rec_salvage_log(ctx, "%s: chunk %llu, cut short at offset %llu of %s (%llu of its "
				"%llu bytes there): cut back, written again whole", r->name,
				(unsigned long long)c->seq, (unsigned long long)k->pos, path,
				(unsigned long long)have, (unsigned long long)k->len);
		*end = k->pos;
		return 0;
	}
	if (same == have) {
		/* whole, and another process appended after it */
		c->off = k->len;
		c->lost_before = 0; /* as for any chunk the runtime wrote */
		__atomic_store_n(&r->hdr->done_len, k->len, __ATOMIC_RELEASE);
		__atomic_store_n(&r->hdr->done_seq, c->seq, __ATOMIC_RELEASE);
		rec_salvage_log(ctx, "%s: chunk %llu was written whole at offset %llu of %s before "
				"the kill", r->name, (unsigned long long)c->seq,
				(unsigned long long)k->pos, path);
		return 0;
	}
	first = cs_len(c->data, c->len);
	if (same < first || !first) {
		/* another process's records from the first byte on: ours never got there */
		rec_salvage_log(ctx, "%s: chunk %llu was to go at offset %llu of %s, another "
				"process's records are there: written whole", r->name,
				(unsigned long long)c->seq, (unsigned long long)k->pos, path);
		return 0;
	}
	rec_salvage_log(ctx, "%s: offset %llu: chunk %llu of %s begins there, cut short by the "
			"kill, and other writes follow within its %llu bytes: the trace cannot be "
			"mended and is left as it is", path, (unsigned long long)k->pos,
			(unsigned long long)c->seq, r->name, (unsigned long long)k->len);
	return -1;
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
	struct cs_claim *claims = NULL;
	struct cs_walk w = { 0 };
	struct stat st;
	uint8_t *m = NULL;
	uint64_t size, end;
	size_t nc = 0;
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
	size = end = (uint64_t)st.st_size;
	if (size) {
		m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED) {
			rec_salvage_log(ctx, "%s: mmap: %s", path, strerror(errno));
			close(fd);
			return -1;
		}
	}
	/* 1. where the cut-short writes went, last place first (each may cut the tail back) */
	claims = calloc(n ? n : 1, sizeof(*claims));
	if (!claims) {
		rec_salvage_log(ctx, "%s: out of memory", path);
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		struct rec_salvage_ring *r = rings[i];
		struct cs_claim *k = &claims[nc];

		if (!r->cut || r->cut_pos < 0)
			continue; /* nothing of it written, or killed before its place was known */
		k->r = r;
		k->pos = (uint64_t)r->cut_pos;
		k->len = r->cut_len;
		for (size_t j = 0; j < r->nr_chunks; j++)
			if (r->chunks[j].seq == r->hdr->write_seq && !r->chunks[j].off)
				k->c = &r->chunks[j];
		nc++;
	}
	qsort(claims, nc, sizeof(*claims), cs_claim_cmp);
	for (size_t i = 0; i < nc; i++)
		if (cs_claim_check(ctx, path, m, &end, &claims[i]) < 0)
			goto fail;
	/* 2. whole records only, but for a torn end no ring accounts for */
	cs_walk(m ? m : (const uint8_t *)"", end, &w);
	if (w.bad) {
		rec_salvage_log(ctx, "%s: offset 0x%llx: not a record (a damaged trace: "
				"left as it is)", path, (unsigned long long)w.end);
		goto fail;
	}
	if (w.end < end) {
		rec_salvage_log(ctx, "%s: %llu bytes of a record cut short removed", path,
				(unsigned long long)(end - w.end));
		end = w.end;
	}
	free(claims);
	claims = NULL;
	if (m)
		munmap(m, size);
	m = NULL;
	/* 3. */
	if (end < size && ftruncate(fd, (off_t)end) < 0) {
		rec_salvage_log(ctx, "%s: cannot cut it: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	/* 4. the rest, chunk by chunk; each write's place in the ring header first */
	for (size_t i = 0; i < n; i++) {
		struct rec_salvage_ring *r = rings[i];
		for (size_t k = 0; k < r->nr_chunks; k++) {
			const struct rec_salvage_chunk *c = &r->chunks[k];
			struct cs_walk cw = { 0 };
			uint64_t len = c->len - c->off;

			rec_salvage_chunk_begin(r, c, c->off ? -1 : (int64_t)end);
			if (len && rec_pwrite_all(fd, c->data + c->off, len, (off_t)end) < 0) {
				rec_salvage_log(ctx, "%s: write: %s", path, strerror(errno));
				close(fd);
				return -1;
			}
			end += len;
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
	/* the runtime's append journal of this trace (formats/cacheray/sink_cacheray.c): no process
	 * appends any more (the lock above), nothing in it is needed */
	if (ctx->ringdirfd >= 0) {
		char jname[64];
		snprintf(jname, sizeof(jname), "append.%llx.%llx", (unsigned long long)st.st_dev,
			 (unsigned long long)st.st_ino);
		unlinkat(ctx->ringdirfd, jname, 0);
	}
	if (close(fd) < 0)
		return -1;
	return 0;
fail:
	free(claims);
	if (m)
		munmap(m, size);
	close(fd);
	return -1;
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

const struct rec_salvage_format cacheray_salvager = {
	.name = "cacheray",
	.salvage = cs_salvage,
};
