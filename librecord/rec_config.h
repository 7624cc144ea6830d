/*
 * rec_config: the environment, parsed once in the runtime's constructor and never again
 * (getenv is not safe to call from hooks, signal handlers or the flusher).
 *
 * Variables (every front end): FLIGHTREC_DIR (output directory), FLIGHTREC_BUFSIZE (bytes per
 * chunk, K/M suffix), FLIGHTREC_BUFCOUNT (chunks per thread), FLIGHTREC_POLICY
 * (drop|overwrite|block|drain|help), FLIGHTREC_BLOCK_MS (block and help policies time-out),
 * FLIGHTREC_MAX_STACK (call depth kept by function hooks), FLIGHTREC_DEBUG, FLIGHTREC_FORMAT
 * (the format written, when the front end can write another than its own: uftrace, xray, tfile,
 * chrome), and the tracepoints of the tfile format: FLIGHTREC_TRACEPOINTS (FUNC[,FUNC...]),
 * FLIGHTREC_TP_STACK (bytes of stack kept per hit, from the entry stack pointer) and
 * FLIGHTREC_TP_MAX_FRAMES (frames kept per tracepoint; later hits are only counted),
 * FLIGHTREC_RING_POOL (rings of ended threads kept for new ones, 0: none; rec_ringpool.h),
 * FLIGHTREC_WRITERS (threads that write live threads' full chunks beside the flusher, at
 * most 15; unset: as threads grow, rec_flusher.c).
 * A front end may name its anchor tool's own directory variable (UFTRACE_DIR, ...), read
 * when FLIGHTREC_DIR is absent. Every value is length- and range-checked; a bad value gets one
 * warning naming the variable and the value, and the default: a number that is malformed, out
 * of range or overflows with its K/M/G suffix; a FLIGHTREC_MAX_STACK above the front end's
 * ceiling (libmcount: 1024, the deepest level uftrace's records hold); a FLIGHTREC_DEBUG
 * other than 1|yes|on|true|0|no|off|false (debug stays off: "0" means off).
 */
#ifndef REC_CONFIG_H
#define REC_CONFIG_H

#include <stddef.h>
#include <stdint.h>

enum rec_policy {
	REC_POLICY_DROP,      /* full ring: drop the event and count it (default) */
	REC_POLICY_OVERWRITE, /* flight recorder: keep the newest chunks, written at the end */
	REC_POLICY_BLOCK,     /* wait for the flusher up to block_ms, then drop and count */
	REC_POLICY_DRAIN,     /* the producer writes its own full chunks (libovni's way) */
	REC_POLICY_HELP,      /* the flusher writes full chunks; a producer whose next chunk
			       * is not written yet writes its own instead of waiting */
};

#define REC_PATH_MAX 4096

struct rec_config {
	char dir[REC_PATH_MAX];   /* output directory, absolute or relative to the cwd at start */
	size_t chunk_size;        /* bytes per chunk, header included; multiple of the page size */
	uint32_t chunk_count;     /* chunks per thread ring, >= 2 */
	enum rec_policy policy;
	uint32_t block_ms;        /* BLOCK, HELP: longest wait for a free chunk */
	uint32_t max_stack;       /* function hooks: deepest call level recorded */
	int debug;
	char format[16];          /* FLIGHTREC_FORMAT, "" = the front end's own */
	char tracepoints[REC_PATH_MAX]; /* FLIGHTREC_TRACEPOINTS: "func1,func2", "" = none */
	uint32_t tp_stack;        /* FLIGHTREC_TP_STACK: stack bytes per tracepoint hit */
	uint32_t tp_max_frames;   /* FLIGHTREC_TP_MAX_FRAMES: frames kept per tracepoint */
	uint32_t ring_pool;       /* FLIGHTREC_RING_POOL: spare rings kept (rec_ringpool.h) */
	int writers;              /* FLIGHTREC_WRITERS: extra writers, -1 = as threads grow */
};

/* FLIGHTREC_WRITERS' ceiling: threads that write chunks beside the flusher (rec_flusher.c) */
#define REC_WRITERS_MAX 15

/* What a front end tells librecord before the environment is read. */
struct rec_config_defaults {
	const char *dir;          /* default output directory, e.g. "uftrace.data" */
	const char *dir_env;      /* anchor tool's own directory variable, or NULL */
	enum rec_policy policy;
	uint32_t max_stack;       /* FLIGHTREC_MAX_STACK default, 0 = 1024 */
	uint32_t max_stack_max;   /* and the largest value accepted, 0 = 65536 */
};

/* Fill cfg from the environment (envp-style lookup through getenv, constructor time only). */
void rec_config_parse(struct rec_config *cfg, const struct rec_config_defaults *def);

/* Parse "123", "64K", "4M"; 0 on success. Exposed for unit tests. */
int rec_config_parse_size(const char *s, uint64_t *out);

#endif
