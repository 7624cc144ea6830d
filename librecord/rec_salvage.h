/*
 * rec_salvage: rebuild a trace's native files from the ring files of processes that died
 * without finishing (SIGKILL, a crash inside finish, the OOM killer), trusting only committed
 * bytes. Offline code: `flightrec salvage DIR` and `flightrec record` run it, never a runtime.
 *
 * What a dead process leaves in <dir>/.flightrec (rec_ring.h): one ring.<pid>.<tid> per thread
 * that had not been closed, each a header page then N chunks. A chunk is FREE (written, or
 * never used), FILLING (the thread's current one: `committed` bytes of whole records) or FULL
 * (handed over, not yet written, or written but killed before it was marked FREE). The
 * header says how far the drainer got: write_seq/write_pos before each write, done_seq/
 * done_len after it.
 *
 * The core (this file's API) turns each ring into the list of what is still to be written:
 *   - chunks FULL or FILLING with seq > done_seq, in seq order; a chunk whose seq is done_seq
 *     but holds more committed bytes than done_len (finish wrote it in part, the thread went
 *     on) contributes the rest;
 *   - a write the kill cut short (write_seq > done_seq) is undone: the format cuts the thread's
 *     output back to write_pos and the chunk is written again whole;
 *   - under the overwrite policy, the events of reused chunks (header `overwritten` minus
 *     `overwritten_told`) are lost before the oldest chunk left; a FULL chunk with seq
 *     `overwritten_seq` was being reused when the process died, and is skipped;
 *   - events lost after the last chunk was taken (header `lost_pending`, for the chunk
 *     `lost_for_seq` that was never taken) are told after the last chunk (lost_tail);
 *   - any other gap in the seqs is a loss of unknown size, reported as such.
 * A per-format salvager (rec_salvage_<format>.c) then appends those bytes to the format's own
 * files and writes the metadata a finishing process would have written. It reports each
 * chunk through rec_salvage_chunk_begin/done, the same protocol as the runtime's drainer, so
 * a salvage that is itself interrupted can simply be run again: nothing is written twice.
 * A ring is unlinked once its format's salvage succeeded.
 *
 * Nothing in a ring is trusted: the header's geometry must match the file's size, a chunk
 * with a bad magic, state or length is skipped and reported, seqs are checked for duplicates.
 * Rings of a live process are left alone: the runtime holds flock(LOCK_EX) on
 * .flightrec/live.<pid> for as long as the process image records (its fork child holds the
 * parent's lock too until it closes its copy, and locks live.<its pid>), so a ring whose
 * process's live file salvage cannot lock belongs to a live process. Runtimes before it held
 * the lock on each ring file instead; salvage still takes that lock too, which also keeps two
 * salvages off one ring.
 */
#ifndef REC_SALVAGE_H
#define REC_SALVAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "librecord/rec_ring.h"

/* one chunk's bytes still to be written */
struct rec_salvage_chunk {
	uint32_t idx;         /* in the ring */
	uint32_t state;       /* REC_CHUNK_FULL or REC_CHUNK_FILLING */
	uint64_t seq;
	uint64_t off;         /* first byte still to write (done_len of a chunk written in part) */
	uint64_t len;         /* committed bytes (off <= len) */
	uint64_t lost_before; /* events lost before these bytes, to be told in the format's way */
	uint64_t events;      /* FULL: the chunk's event count; FILLING: unknown, 0 */
	bool tells_overwritten; /* lost_before includes the overwrite policy's reused events */
	const uint8_t *data;  /* the chunk's records (data + off is the first byte to write) */
};

/* one ring file */
struct rec_salvage_ring {
	char name[64];         /* ring.<pid>.<tid> */
	int fd;
	uint8_t *map;
	size_t size;
	struct rec_ring_hdr *hdr; /* in the map (read-write: progress is recorded there) */
	pid_t pid, tid;
	char format[sizeof(((struct rec_ring_hdr *)0)->format)];
	uint64_t session_ns;
	struct rec_salvage_chunk *chunks; /* to write, seq order */
	size_t nr_chunks;
	bool cut;              /* write_seq > done_seq: cut the output back to cut_pos */
	int64_t cut_pos;       /* -1: unknown (the format must cope, e.g. cut at a record);
				* one file for every thread: where the cut chunk's bytes went,
				* -1 if the kill came before they had a place */
	uint64_t cut_len;      /* ... and how many (one file for every thread) */
	uint64_t lost_tail;    /* events lost after the last chunk: counted after the last
				* chunk was taken, or reused chunks with none left */
	uint64_t gaps;         /* chunks missing without an account of their events */
	uint64_t bad_chunks;   /* chunks skipped as malformed */
	/* filled by the format salvager */
	uint64_t events;       /* events written */
	uint64_t bytes;        /* record bytes written */
	uint64_t lost;         /* events told lost (LOST records or the format's counters) */
	uint64_t lost_earlier; /* lost before the chunks written before the kill (lost_written):
				* in the report only (uftrace's LOST records of them are in the
				* trace already) */
	uint64_t first_time, last_time; /* ns, of the records written (0: none) */
	bool ok;               /* salvaged: the ring may go */
};

struct rec_salvage_opts {
	bool dry_run;           /* report what would be done, write nothing */
	bool keep_rings;        /* do not unlink rings once salvaged */
	const char *cmdline;    /* the program's command line, when the caller knows it */
	FILE *log;              /* one line per ring and per problem (NULL: quiet) */
};

struct rec_salvage_report {
	unsigned rings;         /* ring files found */
	unsigned salvaged;      /* ... salvaged */
	unsigned busy;          /* ... left alone: a live process holds them */
	unsigned bad;           /* ... unreadable or of an unknown format */
	unsigned unborn;        /* ... killed while being created: nothing in them, removed */
	unsigned processes;     /* distinct pids salvaged */
	uint64_t chunks, bytes, events, lost, gaps;
};

struct rec_salvage_format;

/*
 * Salvage every ring in DIR/.flightrec, each by the salvager in FORMATS (NULL-terminated: the
 * caller's table, librecord knows no format) named by its header. Returns 0 when every ring
 * that could be read was salvaged (none at all is fine), -1 when something failed (said on
 * o->log).
 */
int rec_salvage_dir(const char *dir, const struct rec_salvage_format *const *formats,
		    const struct rec_salvage_opts *o, struct rec_salvage_report *rep);

/* Does a live process image of PID hold RINGDIRFD's live.<pid> (see the top)? */
bool rec_salvage_pid_live(int ringdirfd, pid_t pid);

/* Does any live process image hold a live.<pid> in RINGDIRFD? (then its trace is still being
 * written, and its finish writes the format's metadata, not salvage) */
bool rec_salvage_any_live(int ringdirfd);

/* Is there any ring file in DIR/.flightrec? (record: salvage only then) */
bool rec_salvage_needed(const char *dir);

/* --- for the format salvagers ---------------------------------------------------------- */

struct rec_salvage_ctx {
	const char *dir;        /* the trace directory */
	int dirfd;              /* ... open */
	int ringdirfd;          /* DIR/.flightrec */
	const struct rec_salvage_opts *opts;
	uint64_t lost;          /* events a format salvager left out of what it assembled (XRay:
				 * exits whose entry a gap took): told with the rings' losses */
	unsigned busy;          /* rings left alone: a live process holds them */
};

struct rec_salvage_format {
	const char *name; /* the ring header's format */
	/* write every ring's chunks and the format's metadata; set ring->ok for each ring done.
	 * Returns -1 when the trace could not be completed (said on ctx->opts->log). */
	int (*salvage)(struct rec_salvage_ctx *ctx, struct rec_salvage_ring **rings, size_t nr);
	/* optional: the directory had no ring of this format to salvage (a process killed
	 * before its threads recorded anything): complete the format's metadata if the
	 * directory is a trace of this format its processes left without it, else nothing.
	 * Returns -1 when it could not (said on ctx->opts->log). */
	int (*ringless)(struct rec_salvage_ctx *ctx);
};

/* around the write of one chunk's bytes: POS is the output's size before it (-1: none); it
 * and the bytes' count are what a later salvage finds as cut_pos/cut_len */
void rec_salvage_chunk_begin(struct rec_salvage_ring *r, const struct rec_salvage_chunk *c,
			     int64_t pos);
void rec_salvage_chunk_done(struct rec_salvage_ring *r, const struct rec_salvage_chunk *c);
/* after lost_tail was told: a second salvage must not tell it again */
void rec_salvage_tail_done(struct rec_salvage_ring *r);

/* "flightrec: salvage: <msg>\n" on the log, if any */
void rec_salvage_log(const struct rec_salvage_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Load and check one ring (exposed for tests and the fuzzer): FD open on a ring file named
 * NAME, read-write when WRITABLE (else it is mapped privately and progress goes nowhere).
 * 0 and R filled (chunks to write in seq order); 1 when the ring was never finished being
 * created (empty, or a header of zeros: its thread recorded nothing); -1 with WHY set. */
int rec_salvage_ring_load(int fd, const char *name, bool writable, struct rec_salvage_ring *r,
			  char *why, size_t why_size);
void rec_salvage_ring_free(struct rec_salvage_ring *r);


#endif
