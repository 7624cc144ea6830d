/*
 * read_ovni: reader and linter of ovni trace directories, layouts v2 and v3
 * (shared/formats/ovni.md; shared/anchors/ovni.md for what ovniemu 1.10 and 1.14 check).
 *
 * Role: find the streams of a trace directory the way ovniemu does (v3: every directory
 * holding a stream.json; v2: every loom.L/proc.P/thread.T.obs), load and check their metadata,
 * build the looms, processes and threads they describe, and walk each stream event by event
 * (cursors, so a caller can merge streams by clock). ovr_verify runs every rule this reader
 * knows; the first broken one is reported with the file and byte offset.
 *
 * Rules (what ovniemu rejects): stream header (magic "ovni", version 1, not empty); framing
 * (no event past the end); clock never decreasing within a stream; models registered and
 * required (ovni.require, with a compatible version); the ovni model's thread states (OHx
 * first, valid transitions, every thread dead at the end), payload sizes of OA and OM events,
 * OHx/OAs CPU indices, mark types declared and stacks balanced; metadata keys (v3: version 3,
 * ovni.part/loom/pid/tid/lib/require/finished, app_id and rank per process, loom_cpus per loom;
 * v2: version 2, metadata.json with app_id and the loom's cpus in exactly one process,
 * thread.T.json with ovni.lib); first events of all streams within an hour.
 * Not checked: the cross-thread rules that need the whole emulation (two threads running on
 * one physical CPU, remote affinity targets), and the events of models other than ovni beyond
 * their model letter.
 *
 * Written apart from ovni-rt's sink on purpose: it reads what the spec and ovniemu say, not
 * what our writer happens to write.
 */
#ifndef FLIGHTREC_READERS_OVNI_TRACE_H
#define FLIGHTREC_READERS_OVNI_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/common/rd_json.h"
#include "formats/common/rd_common.h"

enum ovr_rule {
	OVR_RULE_IO = 1,  /* cannot open, map or read a file */
	OVR_RULE_LAYOUT,  /* no streams, mixed layouts, a path ovniemu cannot place */
	OVR_RULE_JSON,	  /* a metadata file is not a JSON object */
	OVR_RULE_META,	  /* a metadata key is missing or wrong */
	OVR_RULE_HEADER,  /* stream header: empty, short, magic, version */
	OVR_RULE_FRAMING, /* an event runs past the end of its stream */
	OVR_RULE_CLOCK,	  /* clock goes backwards; streams start over an hour apart */
	OVR_RULE_MODEL,	  /* model not registered, not required, incompatible version */
	OVR_RULE_THREAD,  /* ovni thread state machine, thread not dead at the end */
	OVR_RULE_EVENT,	  /* an ovni-model event with a bad payload or value */
	OVR_RULE_PROC,	  /* process app_id / rank */
	OVR_RULE_CPU,	  /* loom CPUs */
	OVR_RULE_MARK,	  /* mark types and stacks */
};

enum ovr_layout { OVR_V2 = 2, OVR_V3 = 3 };

struct ovr_cpu {
	int index;
	int phyid;
};

struct ovr_loom {
	char *name;	      /* v3: ovni.loom; v2: the directory name without "loom." */
	struct ovr_cpu *cpus; /* every CPU, by index 0..ncpus-1 once checked */
	size_t ncpus;
	size_t nprocs;
	bool has_rank;
};

struct ovr_proc {
	size_t loom; /* index in ovr_trace.looms */
	int pid;
	int app_id; /* 0 when not set */
	int rank;   /* -1 when not set */
	int nranks;
	size_t nthreads;
	struct ovj *meta; /* v2: metadata.json */
};

struct ovr_stream {
	char *relpath; /* as ovniemu names it (relative to the trace directory) */
	char *obs;     /* stream file */
	char *json;    /* thread metadata file */
	struct ovj *meta;
	size_t proc; /* index in ovr_trace.procs */
	int tid;
	const uint8_t *buf; /* the mapped stream file */
	size_t size;
	/* filled by ovr_verify */
	uint64_t events, flush_markers, jumbo;
	uint64_t first_clock, last_clock;
};

struct ovr_mark_type {
	int type;
	char *title;
	bool stack;
};

struct ovr_trace {
	char *dir;
	int layout;		    /* enum ovr_layout */
	bool compat;		    /* v2 without ovni.require somewhere: every model enabled */
	struct ovr_stream *streams; /* sorted by relpath */
	size_t nstreams;
	struct ovr_proc *procs;
	size_t nprocs;
	struct ovr_loom *looms;
	size_t nlooms;
	bool enabled[256]; /* models enabled by ovni.require */
	struct ovr_mark_type *marks;
	size_t nmarks;
	char *lib_version, *lib_commit; /* of the first stream */
	/* what ovniemu would only warn about, one line each */
	char **warnings;
	size_t nwarnings;
};

struct ovr_event {
	uint64_t off; /* byte offset in the stream file */
	uint8_t flags;
	char mcv[4]; /* NUL-terminated */
	uint64_t clock;
	size_t size;		/* whole event, jumbo data included */
	const uint8_t *payload; /* normal payload, or the 4-byte jumbo size */
	size_t payload_size;
	const uint8_t *jumbo; /* jumbo data, NULL for normal events */
	uint32_t jumbo_size;
};

struct ovr_cursor {
	const struct ovr_trace *trace;
	const struct ovr_stream *stream;
	uint64_t off;
	uint64_t last_clock;
	bool started;
	size_t released; /* the stream's pages before this offset were given back */
};

/* Does PATH look like an ovni trace directory (a loom.* directory in it)? Only looks. */
bool ovr_sniff(const char *path);

/* Find the streams, load and check the metadata, map the stream files, check the headers. */
int ovr_open(const char *dir, struct ovr_trace **out, struct rd_error *err);
void ovr_close(struct ovr_trace *t);

/* Events of one stream in file order; framing and per-stream clock order are checked. */
void ovr_cursor_init(struct ovr_cursor *c, const struct ovr_trace *t, const struct ovr_stream *s);
/* 1 with *ev filled, 0 at the end, -1 on a broken rule (err set) */
int ovr_cursor_next(struct ovr_cursor *c, struct ovr_event *ev, struct rd_error *err);

/* The streams merged by clock, ties in stream order, as ovniemu's player: the order dump shows
 * and convert reads. */
struct ovr_merge_head {
	struct ovr_cursor c;
	struct ovr_event ev;
	size_t idx; /* stream index */
};

struct ovr_merge {
	struct ovr_merge_head *heads, **heap;
	size_t n;
	bool pending; /* the event last returned is still on top: advance it first */
};

#define OVR_ALL_LOOMS ((size_t)-1)

/* Every stream of LOOM (OVR_ALL_LOOMS: of the trace). 0; -1 on a broken rule (err set) or out of
 * memory (err clear). ovr_merge_close in both cases. */
int ovr_merge_init(struct ovr_merge *m, const struct ovr_trace *t, size_t loom,
		   struct rd_error *err);
/* 1 with *ev (valid until the next call) and *stream set to the earliest event left, 0 at the
 * end, -1 on a broken rule (err set) */
int ovr_merge_next(struct ovr_merge *m, const struct ovr_event **ev, size_t *stream,
		   struct rd_error *err);
void ovr_merge_close(struct ovr_merge *m);

struct ovr_totals {
	uint64_t events, flush_markers, jumbo, bytes;
};

/* Every rule; fills the per-stream counts and the totals. 0 or -1 (err set). */
int ovr_verify(struct ovr_trace *t, struct ovr_totals *tot, struct rd_error *err);
/* The same with up to JOBS threads walking the streams at once (1: alone): the same
 * warnings, the same first broken rule in stream order, the same counts. */
int ovr_verify_jobs(struct ovr_trace *t, unsigned jobs, struct ovr_totals *tot,
		    struct rd_error *err);

/* The models ovniemu knows: letter, name, version in 1.14 (read by v3) and 1.10 (v2). */
struct ovr_model {
	char letter;
	const char *name;
	const char *v3, *v2;
};
const struct ovr_model *ovr_model_of(char letter);

/* Record what ovniemu would only warn about (kept in t->warnings). */
void ovr_warn(struct ovr_trace *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Payload size a flags byte announces for a normal event (0, or 2..16). */
static inline size_t ovr_payload_size(uint8_t flags)
{
	return (flags & 0x0f) ? (size_t)(flags & 0x0f) + 1 : 0;
}

#endif /* FLIGHTREC_READERS_OVNI_TRACE_H */
