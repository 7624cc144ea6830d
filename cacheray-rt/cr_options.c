/*
 * cr_options: CACHERAY_OPTIONS, parsed as Cacheray's runtime parses it (cacheray_options.c):
 * pairs separated by ':' (empty ones skipped), the key up to the first '=', the value after it
 * (may be empty, may hold '='); unknown keys get a warning and are ignored.
 *
 *   tracefile=PATH      the trace (default cacheray.trace; relative to $FLIGHTREC_DIR or the
 *                       current directory, cr_main.c)
 *   enabled=0|1         enabled unless the value is "0", as in Cacheray; a value other than
 *                       0 or 1 ("maybe", "no", none) gets a warning and stays enabled
 *   malloc=0|1|auto     automatic RTTA records for malloc & co. (cr_intercept.c)
 *   memfuncs=0|1        record memcpy/memmove/memset called by instrumented code
 *
 * Pure: no global state, called once at start-up (and by tests/unit/test_cacheray.c).
 */
#include "cacheray-rt/internal.h"

#include <string.h>

void cr_options_defaults(struct cr_options *o)
{
	memset(o, 0, sizeof(*o));
	memcpy(o->tracefile, "cacheray.trace", sizeof("cacheray.trace"));
	o->enabled = 1;
	o->malloc_mode = CR_MALLOC_AUTO;
	o->memfuncs = 1;
}

static int cr_flag(const char *key, const char *v, size_t vlen, int *out, int allow_auto)
{
	if (vlen == 1 && (v[0] == '0' || v[0] == '1')) {
		*out = v[0] - '0';
		return 0;
	}
	if (allow_auto && vlen == 4 && !strncmp(v, "auto", 4)) {
		*out = CR_MALLOC_AUTO;
		return 0;
	}
	rec_warn("cacheray-rt: CACHERAY_OPTIONS: %s=%.*s is not 0 or 1%s, ignored", key, (int)vlen,
		 v, allow_auto ? " or auto" : "");
	return -1;
}

/* Cacheray's grammar: pairs separated by ':' (empty ones skipped), the key up to the first '=',
 * the value after it (may be empty, may hold '='). enabled is on unless the value is "0". */
void cr_options_parse(const char *s, struct cr_options *o)
{
	cr_options_defaults(o);
	while (s && *s) {
		const char *pair = s, *end = strchr(s, ':'), *eq;
		size_t len = end ? (size_t)(end - s) : strlen(s);

		s = end ? end + 1 : s + len;
		if (len == 0)
			continue;
		eq = memchr(pair, '=', len);
		size_t klen = eq ? (size_t)(eq - pair) : len;
		const char *v = eq ? eq + 1 : pair + len;
		size_t vlen = len - (size_t)(v - pair);

		if (klen == 9 && !strncmp(pair, "tracefile", 9)) {
			if (vlen == 0 || vlen >= sizeof(o->tracefile)) {
				rec_warn("cacheray-rt: CACHERAY_OPTIONS: tracefile is %s, using %s",
					 vlen ? "too long" : "empty", o->tracefile);
				continue;
			}
			memcpy(o->tracefile, v, vlen);
			o->tracefile[vlen] = '\0';
			o->tracefile_set = 1;
		} else if (klen == 7 && !strncmp(pair, "enabled", 7)) {
			o->enabled = !(vlen == 1 && v[0] == '0');
			if (vlen != 1 || (v[0] != '0' && v[0] != '1'))
				rec_warn("cacheray-rt: CACHERAY_OPTIONS: enabled=%.*s is not 0 or "
					 "1, recording stays on (Cacheray: on unless \"0\")",
					 (int)vlen, v);
		} else if (klen == 6 && !strncmp(pair, "malloc", 6)) {
			cr_flag("malloc", v, vlen, &o->malloc_mode, 1);
		} else if (klen == 8 && !strncmp(pair, "memfuncs", 8)) {
			cr_flag("memfuncs", v, vlen, &o->memfuncs, 0);
		} else {
			rec_warn("cacheray-rt: CACHERAY_OPTIONS: unknown option '%.*s', ignored",
				 (int)klen, pair);
		}
	}
}
