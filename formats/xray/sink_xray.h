/*
 * sink_xray: the XRay FDR log writer (see sink_xray.c), for xray-rt's own records and, through
 * formats/xcode, for any other function hook's.
 */
#ifndef SINK_XRAY_H
#define SINK_XRAY_H

#include "librecord/rec_sink.h"
#include "librecord/rec_config.h"

#pragma GCC visibility push(hidden)

extern const struct rec_sink xray_sink;

/* XRAY_OPTIONS' xray_logfile_base resolved against the start-up cwd, or "": where the log goes
 * (the front end that reads XRAY_OPTIONS sets it before the session starts) */
extern char xr_logfile_base[REC_PATH_MAX];

/* Set before the session finishes when the log must not be written: the program's own XRay
 * runtime (compiler-rt, linked in) took every sled we patched, so it writes the program's log
 * and ours would be a second one under the same name, holding only what came before. The
 * spools are removed; FLIGHTREC_DEBUG says what was dropped and why. */
extern const char *xr_log_dropped_why;

/* compiler-rt's verbosity=1 (XRAY_OPTIONS): when the log is created, stderr gets
 * "==<pid>==XRay: Log file in '<path>'", <path> as compiler-rt prints it (the base as
 * XRAY_OPTIONS gave it, not resolved). The front end sets both before the session finishes. */
extern int xr_log_announce;
extern char xr_logfile_base_given[REC_PATH_MAX];

/* A new log named as compiler-rt names it (<base><program>.XXXXXX), for a logging mode that
 * writes its own (compiler-rt's FDR mode driven through the API); announced at verbosity=1.
 * Its path in `path`; the descriptor, or -1 (errno). */
int xr_log_create(char *path, size_t size);
/* NAME as a YAML single-quoted scalar in out (size bytes); its length, 0 if size < 3 */
size_t xr_yaml_name(char *out, size_t size, const char *name);

#pragma GCC visibility pop

#endif
