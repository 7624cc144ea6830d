/*
 * sink_uftrace: writes uftrace.data (info, task.txt, sid-<sid>.map, <exe>.sym, <tid>.dat)
 * directly from the runtime, with no uftrace process. See sink_uftrace.c.
 */
#ifndef SINK_UFTRACE_H
#define SINK_UFTRACE_H

#include <stdint.h>

#include "librecord/rec_sink.h"

extern const struct rec_sink uftrace_sink;

/* A library dlopen'ed while this image records uftrace.data: its DLOP line in task.txt
 * (libname as the loader has it, loaded at base) and its .sym file, as uftrace writes them,
 * so that readers name its functions. Slow path (the dlopen wrapper); nothing if the session
 * is not an active uftrace one. */
void uftrace_note_dlopen(const char *libname, uintptr_t base);
/* A library loaded with the program whose functions the front end records (xray-rt: one with
 * sleds): its .sym file, as uftrace writes one for every module, so that readers name its
 * functions without the file. Slow path; nothing if the session is not an active uftrace one. */
void uftrace_note_module(const char *path);

#endif
