/*
 * salvagers: the formats' table of salvagers, for the salvage driver (librecord/rec_salvage.h),
 * which knows no format: each format's salvage_<name>.c defines its entry, this table lists
 * them, and fmt_salvage_dir runs the driver over it.
 */
#ifndef FORMATS_SALVAGERS_H
#define FORMATS_SALVAGERS_H

#include "librecord/rec_salvage.h"

extern const struct rec_salvage_format uftrace_salvager; /* formats/uftrace/salvage_uftrace.c */
extern const struct rec_salvage_format xray_salvager;	 /* formats/xray/salvage_xray.c */
extern const struct rec_salvage_format ovni_salvager;	 /* formats/ovni/salvage_ovni.c */
extern const struct rec_salvage_format cacheray_salvager; /* formats/cacheray/salvage_cacheray.c */
extern const struct rec_salvage_format tfile_salvager;	 /* formats/tfile/salvage_tfile.c */

/* every format that can be salvaged, NULL-terminated */
extern const struct rec_salvage_format *const fmt_salvagers[];

/* rec_salvage_dir over fmt_salvagers */
int fmt_salvage_dir(const char *dir, const struct rec_salvage_opts *o,
		    struct rec_salvage_report *rep);

#endif
