/*
 * salvagers: the table of every format's salvager (see salvagers.h). A format that can be
 * salvaged adds its entry here, nowhere else.
 */
#include "formats/salvagers.h"

const struct rec_salvage_format *const fmt_salvagers[] = {
	&uftrace_salvager, &xray_salvager, &ovni_salvager, &cacheray_salvager, &tfile_salvager, NULL,
};

int fmt_salvage_dir(const char *dir, const struct rec_salvage_opts *o,
		    struct rec_salvage_report *rep)
{
	return rec_salvage_dir(dir, fmt_salvagers, o, rep);
}
