/*
 * sink_uftrace: writes uftrace.data (info, task.txt, sid-<sid>.map, <exe>.sym, <tid>.dat)
 * directly from the runtime, with no uftrace process. See sink_uftrace.c.
 */
#ifndef SINK_UFTRACE_H
#define SINK_UFTRACE_H

#include "librecord/rec_sink.h"

extern const struct rec_sink rec_sink_uftrace;

#endif
