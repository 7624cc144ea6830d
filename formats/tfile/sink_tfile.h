/*
 * sink_tfile: the GDB trace file ("tfile") writer; see sink_tfile.c (the file's bytes:
 * tfile_encode.h).
 */
#ifndef SINK_TFILE_H
#define SINK_TFILE_H

#include "librecord/rec_sink.h"
#include "formats/tfile/tfile_encode.h"

#pragma GCC visibility push(hidden)

extern const struct rec_sink tfile_sink;

#pragma GCC visibility pop

#endif
