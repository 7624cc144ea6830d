/*
 * sink_tfile: the GDB trace file ("tfile") writer; see sink_tfile.c.
 */
#ifndef SINK_TFILE_H
#define SINK_TFILE_H

#include "librecord/rec_sink.h"

#pragma GCC visibility push(hidden)

extern const struct rec_sink rec_sink_tfile;

/* The register block of gdb's amd64-linux target without a target description: 560 bytes
 * ("R 230"), the order and layout of a remote `g' packet. */
#define TFILE_REGBLOCK_SIZE 560

struct rec_tp_frame;
/* Encode one ring record as a tfile frame (tracepoint number, size, R, M, V blocks) into out
 * (room for tfile_frame_size(f) bytes); returns the bytes written. */
size_t tfile_encode_frame(const struct rec_tp_frame *f, uint8_t *out);
size_t tfile_frame_size(const struct rec_tp_frame *f);

#pragma GCC visibility pop

#endif
