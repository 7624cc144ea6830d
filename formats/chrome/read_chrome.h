/*
 * read_chrome: reader and linter of Chrome trace event JSON files (the Trace Event Format
 * that chrome://tracing and Perfetto load) (prefix ctr_).
 *
 * Role: parse a file (formats/common/rd_json) and hand each event to a callback, checking the rules
 * a viewer relies on; the first broken rule stops the reader, naming the event by its index:
 *   - the file is JSON: an object with a "traceEvents" array (JSON Object Format) or an array
 *     (JSON Array Format);
 *   - every event is an object with a one-letter "ph" string;
 *   - every event but metadata ("M") has a numeric "ts" (microseconds); "pid" and "tid" are
 *     numbers when present (a missing tid is the pid's: uftrace writes none);
 *   - B and E events nest per thread: an E closes the innermost open B of its (pid, tid);
 *     an X event has a numeric "dur" of at least 0.
 * Open B events at the end are counted, not errors (a viewer draws them to the end).
 *
 * Written apart from the writer (formats/chrome/sink_chrome.c) on purpose.
 */
#ifndef FLIGHTREC_READERS_CHROME_TRACE_H
#define FLIGHTREC_READERS_CHROME_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/common/rd_common.h"

enum ctr_rule {
	CTR_RULE_IO = 1, /* cannot read the file, or it is too large */
	CTR_RULE_JSON,	 /* not JSON, or not an object with traceEvents nor an array */
	CTR_RULE_EVENT,	 /* an event without its required fields */
	CTR_RULE_NEST,	 /* an E with no open B on its thread, a negative X duration */
};

struct ctr_event {
	size_t index;
	char ph;
	const char *name; /* NULL if absent */
	double ts;	  /* microseconds; 0 for M */
	int64_t pid, tid;
	double dur; /* X */
};

struct ctr_counts {
	uint64_t events, begins, ends, completes, instants, metadata, other;
	uint64_t open; /* B events never closed */
	uint64_t threads;
};

typedef int (*ctr_event_cb)(void *arg, const struct ctr_event *ev);

bool ctr_sniff_file(const char *path);
/* Read PATH, check every event, call cb (may be NULL) for each. 0, or -1 with err set. */
int ctr_walk(const char *path, struct ctr_counts *c, ctr_event_cb cb, void *arg,
	     struct rd_error *err);

#endif /* FLIGHTREC_READERS_CHROME_TRACE_H */
