/*
 * sink_cacheray: the Cacheray trace writer (see sink_cacheray.c): one trace file that every
 * thread and process of the recording appends whole chunks to.
 */
#ifndef SINK_CACHERAY_H
#define SINK_CACHERAY_H

#include "librecord/rec_config.h"
#include "librecord/rec_sink.h"

#pragma GCC visibility push(hidden)

extern const struct rec_sink cacheray_sink;
/* the absolute path of the trace file: set by the front end from CACHERAY_OPTIONS before the
 * session starts */
extern char cr_trace_path[REC_PATH_MAX];
/* The trace file descriptor, -1 when none; exec keeps it (the front end's exec hook). */
int cr_trace_fd(void);

#pragma GCC visibility pop

#endif
