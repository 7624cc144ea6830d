/*
 * sink_chrome: the Chrome trace event JSON writer (Perfetto, chrome://tracing); see
 * sink_chrome.c.
 */
#ifndef SINK_CHROME_H
#define SINK_CHROME_H

#include "librecord/rec_sink.h"

#pragma GCC visibility push(hidden)

extern const struct rec_sink chrome_sink;

#pragma GCC visibility pop

#endif
