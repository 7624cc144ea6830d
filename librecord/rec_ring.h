/*
 * rec_ring: a thread's ring of chunks and the inline hot path that writes into it.
 *
 * Layout of a ring file (<dir>/.flightrec/ring.<pid>.<tid>, MAP_SHARED, every block allocated
 * at creation so that no store into it can fault on a full disk, pre-faulted):
 *   [ struct rec_ring_hdr, padded to 4096 ][ chunk 0 ][ chunk 1 ] ... [ chunk N-1 ]
 * Each chunk is struct rec_chunk (64 bytes) followed by chunk_size - 64 bytes of records in
 * the format's native encoding. Because the ring lives in the page cache, a SIGKILL does
 * not lose committed bytes: salvage reads them back from the file.
 *
 * Chunk states and who moves them:
 *   FREE --producer takes it--> FILLING --producer switches away--> FULL
 *   FULL --flusher (or drain/finish) wrote it--> FREE
 * The producer is the only writer of FILLING chunks and of `committed`; the flusher is the
 * only one that moves FULL to FREE. Each transition is a store-release paired with a
 * load-acquire on the other side, so the bytes of a chunk are visible before its state.
 *
 * The hot path (rec_reserve + rec_commit): bump `pos`; if the record does not fit, take the
 * slow path (rec_reserve_slow) which switches chunks under the thread's full-buffer policy.
 * No lock, no atomic read-modify-write, no syscall. `committed` is published with a plain
 * store-release (a mov on x86) after the record's bytes are written.
 */
#ifndef REC_RING_H
#define REC_RING_H

#include <stddef.h>
#include <stdint.h>

#include "librecord/rec_clock.h"
#include "librecord/rec_util.h"

#define REC_RING_MAGIC "FRRING1"
#define REC_RING_VERSION 3 /* 2: the drainer's progress in the header; 3: write_len */
#define REC_RING_HDR_SIZE 4096u
#define REC_CHUNK_MAGIC 0x4b4e4843u /* "CHNK" */

enum rec_chunk_state {
	REC_CHUNK_FREE = 0,
	REC_CHUNK_FILLING = 1,
	REC_CHUNK_FULL = 2,
};

/* First page of a ring file: what salvage needs to make sense of the chunks. */
struct rec_ring_hdr {
	char magic[8];          /* REC_RING_MAGIC */
	uint32_t version;
	uint32_t hdr_size;      /* offset of chunk 0 */
	uint64_t chunk_size;
	uint32_t chunk_count;
	int32_t pid;
	int32_t tid;
	uint32_t policy;
	char format[16];        /* sink name */
	struct rec_clock clock; /* the conversion this image used */
	uint64_t session_ns;    /* session start, ns */
	/* The drainer's progress, kept here so that salvage (rec_salvage.h) writes each committed
	 * byte exactly once after a SIGKILL. rec_chunk_write stores write_pos then write_seq
	 * before handing a chunk to the sink, done_len then done_seq after it returns: a
	 * write_seq above done_seq is a write the kill cut short, which salvage undoes by
	 * cutting the thread's output file back to write_pos. Release stores, in that order.
	 * A sink that appends every thread's chunks to ONE file (out_path) says where each goes:
	 * under its append lock, after write_seq, rec_chunk_write stores write_len then write_pos
	 * (the file's end, where exactly these bytes go), and done_len/done_seq before it lets
	 * the lock go; write_pos stays -1 until then (salvage: nothing of the chunk is there). */
	uint64_t write_seq;     /* chunk being handed to the sink (0: none yet) */
	int64_t write_pos;      /* size of the thread's sink_fd file before it, -1 if none; for
				 * a shared output, the offset of this chunk's bytes in it */
	uint64_t write_len;     /* shared output: bytes of the chunk written at write_pos */
	uint64_t done_seq;      /* last chunk the sink returned from */
	uint64_t done_len;      /* bytes of it written (finish writes a FILLING chunk in part) */
	uint64_t overwritten;   /* overwrite policy: events of chunks reused unwritten */
	uint64_t overwritten_seq; /* ... the last of them (stored with `overwritten`, before the
				   * chunk is FREE: salvage skips it if it is still FULL) */
	uint64_t overwritten_told; /* ... of which the sink has been told (lost_before) */
	/* events lost that no chunk carries yet: rec_count_lost stores them with the seq of the
	 * chunk whose lost_before will carry them; salvage tells them itself unless that chunk
	 * was taken (then its lost_before has them) */
	uint64_t lost_pending;
	uint64_t lost_for_seq;
	/* the sink's one output file, when all threads write into one (rec_session.out_path;
	 * empty otherwise): where salvage appends this ring's chunks */
	char out_path[2048];
	/* events lost before the chunks the drainer has written (their lost_before and what the
	 * overwrite policy reused), added after each write's done_seq: a dead image's stats file
	 * is unfinished, so salvage tells these too. A kill between the two stores leaves one
	 * chunk's part out (never counted twice). Zero in rings of builds before it. */
	uint64_t lost_written;
};
_Static_assert(sizeof(struct rec_ring_hdr) <= REC_RING_HDR_SIZE, "ring header fits its page");

struct rec_chunk {
	uint32_t magic;         /* REC_CHUNK_MAGIC */
	uint32_t state;         /* enum rec_chunk_state; release/acquire */
	uint64_t seq;           /* 1, 2, ... in the thread's stream */
	uint64_t committed;     /* bytes of whole records after the header; release/acquire */
	uint64_t lost_before;   /* events lost between the previous chunk and this one */
	uint64_t events;        /* events in this chunk (set when it becomes FULL) */
	uint64_t reserved[3];
};
_Static_assert(sizeof(struct rec_chunk) == 64, "chunk header is one cache line");

static inline uint8_t *rec_chunk_data(struct rec_chunk *c)
{
	return (uint8_t *)(c + 1);
}

#endif
