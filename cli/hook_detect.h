/*
 * hook_detect: which recording runtime a program needs, from its ELF file (prefix hook_).
 *
 * Role: `flightrec record` looks at the program's symbols (dynamic and static symbol tables)
 * and sections with libelf:
 *   xray_instr_map section, or __xray_* symbols            -> HOOK_XRAY     (libxray-rt.so)
 *   __tsan_* symbols (-fsanitize=thread)                     -> HOOK_CACHERAY (libcacheray-rt.so)
 *   mcount, _mcount, __fentry__, __gnu_mcount_nc,
 *   __cyg_profile_func_enter                                 -> HOOK_MCOUNT   (libmcount.so)
 * in that order of precedence (an XRay or TSan build may also carry -pg symbols from a
 * library; the reverse does not happen).
 *
 * Invariant: the file is only read; a non-ELF file is reported, never guessed at.
 */
#ifndef FLIGHTREC_CLI_HOOK_DETECT_H
#define FLIGHTREC_CLI_HOOK_DETECT_H

#include <stdbool.h>
#include <stddef.h>

enum hook_kind { HOOK_NONE, HOOK_MCOUNT, HOOK_XRAY, HOOK_CACHERAY };

/*
 * 0 with *KIND set (HOOK_NONE: nothing found) and *DYNAMIC (it has a program interpreter, so
 * LD_PRELOAD reaches it); -1 with WHY filled when PATH is not readable ELF.
 */
int hook_detect(const char *path, enum hook_kind *kind, bool *dynamic, char *why, size_t whylen);

/* "mcount" / "xray" / "cacheray" -> kind; HOOK_NONE for an unknown name */
enum hook_kind hook_from_name(const char *name);
const char *hook_name(enum hook_kind kind);
/* the runtime library file of KIND ("libmcount.so", ...) and its human name ("xray-rt") */
const char *hook_library(enum hook_kind kind);
const char *hook_runtime_name(enum hook_kind kind);

#endif /* FLIGHTREC_CLI_HOOK_DETECT_H */
