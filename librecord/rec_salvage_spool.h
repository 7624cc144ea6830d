/*
 * rec_salvage_spool: what the format salvagers that keep one output file per thread, written
 * with the ring's bytes as they are (tfile and XRay spools, ovni streams), share: appending a
 * ring's unwritten chunks to that file, and the table of process images their spools belong
 * to. The format-specific parts (the events counted in a chunk, XRay's lossy mark) come in
 * through struct rec_salvage_spool.
 */
#ifndef REC_SALVAGE_SPOOL_H
#define REC_SALVAGE_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "librecord/rec_salvage.h"

/* the format's part in rec_salvage_spool_append */
struct rec_salvage_spool {
	const char *label; /* the file as the log names it (rec_salvage_spool_thread sets it) */
	/* the events in a chunk's bytes, added to r->events (NULL: the caller counts them) */
	uint64_t (*count)(const uint8_t *p, size_t n);
	/* called before each chunk is begun (NULL: nothing), with ARG */
	void (*before_chunk)(void *arg, const struct rec_salvage_chunk *c);
	void *arg;
};

/*
 * Append R's unwritten chunks to FD (of SIZE bytes): cut it back first when the kill came in
 * the middle of a write (r->cut), then each chunk's bytes between rec_salvage_chunk_begin and
 * rec_salvage_chunk_done; r->bytes, r->lost (lost_before of each chunk, then lost_tail: these
 * formats have no loss record, the count is in the report) and r->events (SP->count) grow.
 * *FROM and *TO (either may be NULL): the file's size before and after the chunks.
 * 0, or -1 said on the log; FD stays open either way.
 */
int rec_salvage_spool_append(struct rec_salvage_ctx *ctx, struct rec_salvage_ring *r, int fd,
			     off_t size, const struct rec_salvage_spool *sp, off_t *from,
			     off_t *to);

/*
 * The whole of it for a spool in DIR/.flightrec: open NAME (created, mode 0600; a regular
 * file), append as above, close. The log names the file DIR/.flightrec/LOGNAME (XRay's
 * spool keeps its first name there once it is .lossy). 0, or -1 said on the log.
 */
int rec_salvage_spool_thread(struct rec_salvage_ctx *ctx, struct rec_salvage_ring *r,
			     const char *name, const char *logname,
			     const struct rec_salvage_spool *sp);

/* the key of a process image: the first member of a format's image struct */
struct rec_salvage_image_id {
	int32_t pid;
	uint64_t session_ns;
};

/*
 * The image PID/NS in the array V of *N elements of SIZE bytes, each starting with a
 * struct rec_salvage_image_id: its index, or, when it is not there, the array grows by one
 * zeroed element with that key (*V may move, *ADDED is set). -1 when out of memory.
 */
ssize_t rec_salvage_image(void **v, size_t *n, size_t size, int32_t pid, uint64_t ns, bool *added);

#endif
