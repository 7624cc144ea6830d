/*
 * xcode: per-thread state of a sink that writes another front end's ring encoding
 * (fn_decode.h): the decoder, the thread's open frames (for call depths, and for closing
 * what is still open when the thread's stream ends) and an output buffer.
 *
 * Allocated with mmap in the sink's open_thread (a first event may come from a signal handler
 * that interrupted malloc), used by write_chunk and close_thread only, which never run
 * concurrently for one thread (rec_sink.h).
 */
#ifndef REC_XCODE_H
#define REC_XCODE_H

#include <stddef.h>
#include <stdint.h>

#include "formats/xcode/fn_decode.h"

#pragma GCC visibility push(hidden)

struct xcode {
	struct fn_decoder dec;
	int fd;		    /* where flushes go */
	int bad;	    /* a write failed */
	int lossy;	    /* the stream had a gap (a sink's own flag) */
	uint32_t depth;	    /* open frames (may exceed cap: deeper ones are not kept) */
	uint32_t cap;	    /* entries of stack[] */
	uint64_t last_ns;   /* of the last event decoded */
	uint64_t last_time; /* ... in the encoding's unit */
	uint64_t events;    /* events written */
	uint64_t dropped;   /* events the format cannot hold (a sink's own count) */
	uint8_t *buf;
	size_t len, size;
	uintptr_t *stack; /* per open frame: what the sink needs to close it (address, id) */
	size_t alloc;
};

/* A state for the front end's encoding, `cap` frames deep, with a `bufsize` buffer; NULL
 * when out of memory. */
struct xcode *xcode_new(uint32_t cap, size_t bufsize);
void xcode_free(struct xcode *x);
struct rec_thread;
/* Give thread t, its sink file open, a state (xcode_new) that flushes to that file, in
 * t->sink_priv; 0. Out of memory: print NOMEM, close the file (sink_fd -1) and return -1. */
int xcode_attach(struct rec_thread *t, uint32_t cap, size_t bufsize, const char *nomem);
/* Room for n more bytes (flushes to x->fd first when needed); NULL if n does not fit. */
uint8_t *xcode_room(struct xcode *x, size_t n);
/* Write out what the buffer holds; 0, or -1 after a failed write. */
int xcode_flush(struct xcode *x);

#pragma GCC visibility pop

#endif
