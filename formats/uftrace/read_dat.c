/*
 * read_dat: the <tid>.dat record stream and the per-thread rules.
 *
 * Role: decode 16-byte records (u64 time, u64 word: type:2 more:1 magic:3 depth:10 addr:48)
 * with their optional payloads, and check one thread's stream:
 *   - magic is 5 in every record; the stream ends on a record boundary;
 *   - the payload bit only where a payload can be: EVENT (u16 length + data, padded to 8),
 *     ENTRY with the ARGUMENT feature, EXIT with RETVAL (sized by an argspec callback);
 *   - time never decreases (LOST records carry no time and are exempt);
 *   - the first timed record is not earlier than its session (a forked child's is its
 *     parent's) nor, for a thread, than its TASK line;
 *   - nesting: an ENTRY opens a frame at most one level above the open ones; an EXIT closes
 *     the frame open at its own depth, and when that is the innermost frame it has the same
 *     address. Frames above the one an ENTRY or EXIT lands on were left without an EXIT
 *     (longjmp, exception unwinding: uftrace 0.13 writes such traces itself) and are dropped;
 *     such a non-local EXIT may carry the address of setjmp rather than of the frame. A forked child's file may start inside
 *     frames its parent entered (even with EXITs), and after a LOST record the nesting is
 *     re-learnt from the next record; at an exec (a later session of the same pid) the new
 *     image starts with no frames. Unmatched ENTRYs at the end are fine (0.13 accepts them).
 *
 * Invariants: the file source reads through a fixed window (UFR_ITER_WINDOW), so memory is
 * bounded whatever the file size; the depth stack has UFR_MAX_DEPTH entries, the most the
 * 10-bit depth field can address; no payload length is followed past the bytes present.
 */
#include "formats/uftrace/read_uftrace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void ufr_rec_decode(const uint8_t raw[UFR_RECORD_SIZE], bool big, struct ufr_rec *rec)
{
	uint64_t w = rd_get64(raw + 8, big);

	rec->time = rd_get64(raw, big);
	rec->type = (unsigned)(w & 3);
	rec->more = (w >> 2) & 1;
	rec->magic = (unsigned)((w >> 3) & 7);
	rec->depth = (unsigned)((w >> 6) & 0x3ff);
	rec->addr = w >> 16;
	rec->payload = NULL;
	rec->payload_len = 0;
}

const char *ufr_rec_type_name(unsigned type)
{
	static const char *const names[] = { "entry", "exit", "lost", "event" };

	return names[type & 3];
}

int ufr_event_format(const struct ufr_rec *rec, bool big, char *out, size_t len)
{
	/* uftrace 0.13's EVENT_ID_READ_* / EVENT_ID_DIFF_* (100001 on) and utils/event.c's
	 * field names and units */
	static const struct {
		const char *name, *unit;
		const char *field[3];
	} kinds[] = {
		{ "proc/statm", "KB", { "vmsize", "vmrss", "shared" } },
		{ "page-fault", "", { "major", "minor", NULL } },
		{ "pmu-cycle", "", { "cycles", "instructions", NULL } },
		{ "pmu-cache", "", { "refers", "misses", NULL } },
		{ "pmu-branch", "", { "branch", "misses", NULL } },
	};
	/* id - 100001: the kind and whether it is a diff */
	static const uint8_t kind_of[10] = { 0, 1, 0, 1, 2, 2, 3, 3, 4, 4 };
	static const uint8_t diff_of[10] = { 0, 0, 1, 1, 0, 1, 0, 1, 0, 1 };
	size_t n = 0, nv, used;
	unsigned k, diff;

	if (len)
		out[0] = '\0';
	if (rec->type != UFR_EVENT || rec->addr < 100001 || rec->addr > 100010 || !rec->more ||
	    rec->payload_len < 2)
		return -1;
	k = kind_of[rec->addr - 100001];
	diff = diff_of[rec->addr - 100001];
	nv = kinds[k].field[2] ? 3 : 2;
	if (rd_get16(rec->payload, big) != nv * 8 || rec->payload_len < 2 + nv * 8)
		return -1;
	used = (size_t)snprintf(out, len, "%s:%s", diff ? "diff" : "read", kinds[k].name);
	for (size_t i = 0; i < nv && used < len; i++) {
		uint64_t v = rd_get64(rec->payload + 2 + 8 * i, big);

		n = diff ? (size_t)snprintf(out + used, len - used, " %s=%+" PRId64 "%s",
					    kinds[k].field[i], (int64_t)v, kinds[k].unit) :
			   (size_t)snprintf(out + used, len - used, " %s=%" PRIu64 "%s",
					    kinds[k].field[i], v, kinds[k].unit);
		used += n;
	}
	return used < len ? 0 : -1;
}

void ufr_dat_iter_mem(struct ufr_dat_iter *it, const void *buf, size_t len, const char *file,
		      bool big, uint64_t feat_mask)
{
	memset(it, 0, sizeof(*it));
	it->file = file;
	it->big = big;
	it->feat_mask = feat_mask;
	it->mem = buf;
	it->mem_len = len;
	it->fd = -1;
	it->eof = true;
}

int ufr_dat_iter_open(struct ufr_dat_iter *it, const char *path, bool big, uint64_t feat_mask,
		      struct rd_error *err)
{
	memset(it, 0, sizeof(*it));
	it->file = path;
	it->big = big;
	it->feat_mask = feat_mask;
	it->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (it->fd < 0)
		return rd_error_set(err, UFR_E_IO, path, -1, "cannot open: %s", strerror(errno));
	it->win = malloc(UFR_ITER_WINDOW);
	if (it->win == NULL) {
		close(it->fd);
		it->fd = -1;
		return rd_error_set(err, UFR_E_IO, path, -1, "out of memory");
	}
	return 0;
}

void ufr_dat_iter_close(struct ufr_dat_iter *it)
{
	if (it->fd >= 0)
		close(it->fd);
	free(it->win);
	it->fd = -1;
	it->win = NULL;
}

/* make up to WANT bytes contiguous at the cursor; returns how many are available */
static size_t iter_fill(struct ufr_dat_iter *it, size_t want, const uint8_t **p,
			struct rd_error *err, bool *failed)
{
	*failed = false;
	if (it->mem != NULL) {
		size_t avail = it->mem_len - (size_t)it->offset;

		*p = it->mem + it->offset;
		return avail;
	}
	if (it->fd < 0) {
		*p = NULL;
		return 0;
	}
	if (want > UFR_ITER_WINDOW)
		want = UFR_ITER_WINDOW;
	if (it->win_len - it->win_pos < want && !it->eof) {
		memmove(it->win, it->win + it->win_pos, it->win_len - it->win_pos);
		it->win_len -= it->win_pos;
		it->win_pos = 0;
		while (it->win_len < want && !it->eof) {
			ssize_t n =
				read(it->fd, it->win + it->win_len, UFR_ITER_WINDOW - it->win_len);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				rd_error_set(err, UFR_E_IO, it->file, (int64_t)it->offset,
					     "read error: %s", strerror(errno));
				*failed = true;
				return 0;
			}
			if (n == 0)
				it->eof = true;
			it->win_len += (size_t)n;
			rd_progress_add((uint64_t)n);
		}
	}
	*p = it->win + it->win_pos;
	return it->win_len - it->win_pos;
}

static void iter_advance(struct ufr_dat_iter *it, size_t n)
{
	if (it->mem == NULL)
		it->win_pos += n;
	it->offset += n;
}

/* bytes of payload after REC, or -1 with ERR set */
static long payload_size(struct ufr_dat_iter *it, const struct ufr_rec *rec, const uint8_t *p,
			 size_t avail, struct rd_error *err)
{
	switch (rec->type) {
	case UFR_LOST:
		return rd_error_set(err, UFR_E_REC_TYPE, it->file, (int64_t)rec->offset,
				    "LOST record has the payload bit set");
	case UFR_EVENT: {
		size_t n;

		if (avail < 2)
			return rd_error_set(err, UFR_E_REC_PAYLOAD, it->file, (int64_t)rec->offset,
					    "EVENT payload length runs past the end of the file");
		n = rd_get16(p, it->big);
		n = (n + 2 + 7) & ~(size_t)7;
		if (n > avail)
			return rd_error_set(err, UFR_E_REC_PAYLOAD, it->file, (int64_t)rec->offset,
					    "EVENT payload of %zu bytes runs past the end of the "
					    "file",
					    n);
		return (long)n;
	}
	default:
		break;
	}
	if (rec->type == UFR_ENTRY && !(it->feat_mask & UFR_FEAT_ARGUMENT))
		return rd_error_set(err, UFR_E_REC_TYPE, it->file, (int64_t)rec->offset,
				    "ENTRY record has the payload bit set but feat_mask lacks "
				    "ARGUMENT");
	if (rec->type == UFR_EXIT && !(it->feat_mask & UFR_FEAT_RETVAL))
		return rd_error_set(
			err, UFR_E_REC_TYPE, it->file, (int64_t)rec->offset,
			"EXIT record has the payload bit set but feat_mask lacks RETVAL");
	if (it->args_size == NULL)
		return rd_error_set(err, UFR_E_REC_PAYLOAD, it->file, (int64_t)rec->offset,
				    "%s record carries arguments but there is no argspec to size "
				    "them",
				    rec->type == UFR_ENTRY ? "ENTRY" : "EXIT");
	return it->args_size(it->args_ctx, rec, p, avail, it->file, err);
}

int ufr_dat_next(struct ufr_dat_iter *it, struct ufr_rec *rec, struct rd_error *err)
{
	const uint8_t *p;
	size_t avail;
	bool failed;

	/* the common case first: a whole record already in memory or in the window */
	if (it->mem != NULL) {
		p = it->mem + it->offset;
		avail = it->mem_len - (size_t)it->offset;
	} else if (it->win_len - it->win_pos >= UFR_RECORD_SIZE) {
		p = it->win + it->win_pos;
		avail = it->win_len - it->win_pos;
	} else {
		avail = iter_fill(it, UFR_RECORD_SIZE, &p, err, &failed);
		if (failed)
			return -1;
	}
	if (avail == 0)
		return 0;
	if (avail < UFR_RECORD_SIZE)
		return rd_error_set(err, UFR_E_DAT_TRUNCATED, it->file, (int64_t)it->offset,
				    "truncated record: %zu trailing bytes, a record is %d", avail,
				    UFR_RECORD_SIZE);
	ufr_rec_decode(p, it->big, rec);
	rec->offset = it->offset;
	if (rec->magic != UFR_RECORD_MAGIC)
		return rd_error_set(err, UFR_E_REC_MAGIC, it->file, (int64_t)rec->offset,
				    "record magic is %u, expected %d", rec->magic,
				    UFR_RECORD_MAGIC);
	if (rec->more) {
		long n;

		/* the largest payload a writer produces (a 64 KiB event) is made contiguous */
		avail = iter_fill(it, UFR_RECORD_SIZE + UFR_MAX_PAYLOAD, &p, err, &failed);
		if (failed)
			return -1;
		n = payload_size(it, rec, p + UFR_RECORD_SIZE, avail - UFR_RECORD_SIZE, err);
		if (n < 0)
			return -1;
		rec->payload = p + UFR_RECORD_SIZE;
		rec->payload_len = (size_t)n;
		iter_advance(it, UFR_RECORD_SIZE + (size_t)n);
		return 1;
	}
	iter_advance(it, UFR_RECORD_SIZE);
	return 1;
}

/* ---- per-thread rules ---- */

void ufr_check_init(struct ufr_check *ck, const struct ufr_check_cfg *cfg)
{
	memset(ck, 0, sizeof(*ck));
	ck->cfg = *cfg;
	ck->floating = cfg->forked;
}

void ufr_check_fini(struct ufr_check *ck)
{
	free(ck->owned_resets);
	ck->owned_resets = NULL;
	ck->cfg.resets = NULL;
	ck->cfg.nr_resets = 0;
}

void ufr_count_rec(struct ufr_counts *c, const struct ufr_rec *rec)
{
	c->records++;
	switch (rec->type) {
	case UFR_ENTRY:
		c->entries++;
		break;
	case UFR_EXIT:
		c->exits++;
		break;
	case UFR_EVENT:
		c->events++;
		break;
	case UFR_LOST:
		c->lost_records++;
		c->lost += rec->addr;
		return; /* carries no time */
	}
	if (!c->has_time) {
		c->has_time = true;
		c->first_time = rec->time;
	}
	c->last_time = rec->time;
}

void ufr_counts_add(struct ufr_counts *sum, const struct ufr_counts *c)
{
	sum->records += c->records;
	sum->entries += c->entries;
	sum->exits += c->exits;
	sum->events += c->events;
	sum->lost_records += c->lost_records;
	sum->lost += c->lost;
	if (c->has_time) {
		if (!sum->has_time || c->first_time < sum->first_time)
			sum->first_time = c->first_time;
		if (!sum->has_time || c->last_time > sum->last_time)
			sum->last_time = c->last_time;
		sum->has_time = true;
	}
}

/* frames [top, depth) become unknown (entered before what this file shows) */
static void fill_unknown(struct ufr_check *ck, unsigned depth)
{
	while ((unsigned)ck->top < depth) {
		ck->frame_known[ck->top] = false;
		ck->frame_addr[ck->top] = 0;
		ck->top++;
	}
}

static int check_nesting(struct ufr_check *ck, const struct ufr_rec *rec, const char *file,
			 struct rd_error *err)
{
	unsigned d = rec->depth;

	if (ck->floating) {
		/* re-learn: everything below this record is of unknown origin */
		ck->floating = false;
		if ((unsigned)ck->top > d + (rec->type == UFR_EXIT))
			ck->top = (int)(d + (rec->type == UFR_EXIT));
		for (int i = 0; i < ck->top; i++)
			ck->frame_known[i] = false;
		fill_unknown(ck, d + (rec->type == UFR_EXIT));
	}

	if (rec->type == UFR_ENTRY) {
		if (d > (unsigned)ck->top)
			return rd_error_set(err, UFR_E_REC_DEPTH, file, (int64_t)rec->offset,
					    "ENTRY at depth %u skips a level: %d frame%s open", d,
					    ck->top, ck->top == 1 ? " is" : "s are");
		/* d < top: the frames from d up were left without EXIT (longjmp, unwinding) */
		ck->frame_addr[d] = rec->addr;
		ck->frame_known[d] = true;
		ck->top = (int)d + 1;
		return 0;
	}

	/*
	 * EXIT: it closes the frame open at its depth, and any left above it (longjmp). Only a
	 * return from the innermost frame must name that frame: a non-local exit may name the
	 * function it came back through instead (0.13 records setjmp "returning" a second time
	 * when a longjmp lands there).
	 */
	if (d >= (unsigned)ck->top)
		return rd_error_set(err, UFR_E_REC_DEPTH, file, (int64_t)rec->offset,
				    "EXIT at depth %u, but no frame is open there (%d open)", d,
				    ck->top);
	if (d == (unsigned)ck->top - 1 && ck->frame_known[d] && ck->frame_addr[d] != rec->addr)
		return rd_error_set(
			err, UFR_E_REC_DEPTH, file, (int64_t)rec->offset,
			"EXIT of 0x%llx at depth %u, but the open ENTRY there is 0x%llx",
			(unsigned long long)rec->addr, d, (unsigned long long)ck->frame_addr[d]);
	ck->top = (int)d;
	return 0;
}

int ufr_check_rec(struct ufr_check *ck, const struct ufr_rec *rec, const char *file,
		  struct rd_error *err)
{
	struct ufr_counts *c = &ck->counts;
	const struct ufr_check_cfg *cfg = &ck->cfg;
	bool had_time = c->has_time;
	uint64_t last = c->last_time;
	char t1[RD_TIME_LEN], t2[RD_TIME_LEN];

	/* counted whatever the rules say, so a caller may go on after an error */
	ufr_count_rec(c, rec);
	if (rec->type == UFR_LOST) {
		ck->floating = true;
		return 0;
	}

	if (!had_time) {
		if (cfg->has_sess_time && rec->time < cfg->sess_time)
			return rd_error_set(err, UFR_E_REC_EARLY, file, (int64_t)rec->offset,
					    "first record at %s precedes its session (SESS at %s)",
					    rd_time_str(rec->time, t1),
					    rd_time_str(cfg->sess_time, t2));
		if (cfg->has_task_time && rec->time < cfg->task_time)
			return rd_error_set(
				err, UFR_E_REC_EARLY, file, (int64_t)rec->offset,
				"first record at %s precedes the task's %s line (at %s)",
				rd_time_str(rec->time, t1),
				cfg->task_what ? cfg->task_what : "TASK",
				rd_time_str(cfg->task_time, t2));
	} else if (rec->time < last) {
		return rd_error_set(err, UFR_E_REC_TIME, file, (int64_t)rec->offset,
				    "time goes backwards: %s after %s", rd_time_str(rec->time, t1),
				    rd_time_str(last, t2));
	}

	/* exec: a later session of this process starts a new image with no frames */
	while (ck->next_reset < cfg->nr_resets && rec->time >= cfg->resets[ck->next_reset]) {
		ck->next_reset++;
		if (had_time) {
			/* sessions before the first record are where the file starts, not an exec */
			ck->top = 0;
			ck->floating = false;
		}
	}

	if (rec->type == UFR_EVENT)
		return 0;
	return check_nesting(ck, rec, file, err);
}

int ufr_check_buffer(const void *buf, size_t len, bool big, uint64_t feat_mask,
		     const struct ufr_check_cfg *cfg, struct ufr_counts *counts,
		     struct rd_error *err)
{
	static const struct ufr_check_cfg plain;
	struct ufr_check *ck = malloc(sizeof(*ck)); /* ~9 KiB of depth stack */
	struct ufr_dat_iter it;
	struct ufr_rec rec;
	int r;

	if (ck == NULL)
		return rd_error_set(err, UFR_E_IO, "(buffer)", -1, "out of memory");
	ufr_check_init(ck, cfg ? cfg : &plain);
	ufr_dat_iter_mem(&it, buf, len, "(buffer)", big, feat_mask);
	while ((r = ufr_dat_next(&it, &rec, err)) > 0) {
		if (ufr_check_rec(ck, &rec, "(buffer)", err) < 0) {
			r = -1;
			break;
		}
	}
	if (counts != NULL)
		*counts = ck->counts;
	free(ck);
	return r < 0 ? -1 : 0;
}
