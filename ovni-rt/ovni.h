/*
 * ovni.h: the public interface of flightrec's ovni runtime (ovni-rt), a drop-in replacement
 * for libovni.so.1.
 *
 * The 35 functions, their signatures, the event structures and the constants below are
 * those of libovni 1.14 (the ABI has not changed since 1.5), so a program built against
 * this header runs on the original library and a program built against the original header
 * runs on ours. The library reports version 1.14.0: ovni_version_check() in a program built
 * against any libovni 1.x header up to 1.14 passes.
 *
 * Where ovni-rt differs (doc/design.md, section ovni-rt, says why):
 *  - the trace layout is format v3 (loom.L/proc.P/thread.T/stream.obs and stream.json,
 *    what libovni 1.11+ writes) unless FLIGHTREC_OVNI_FORMAT=v2 (loom.L/proc.P/metadata.json,
 *    thread.T.obs, thread.T.json: libovni 1.5-1.10's, for ovniemu 1.10 and older);
 *  - every event emitted before ovni_thread_free() reaches the trace, flushed or not; a thread
 *    or process that ends without ovni_thread_free()/ovni_proc_fini() is finished at exit;
 *  - a fork child starts with no ovni state: it may call ovni_proc_init() for its own pid;
 *  - ovni_clock_now() reads the TSC, kept within about a microsecond of CLOCK_MONOTONIC, so
 *    clocks stay comparable across the threads and processes of a loom;
 *  - in optimised GNU C/C++ builds the event builders (set_mcv, set_clock, get_clock,
 *    payload_add) are inline (see below; -DOVNI_NO_INLINE makes them calls again).
 */
#ifndef OVNI_H
#define OVNI_H

#pragma GCC visibility push(default)

#ifdef __cplusplus
extern "C" {
#endif

/* programs may rely on these coming with ovni.h, as they do with the original */
#include <limits.h>
#include <linux/limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* "version" in the thread metadata of the layout libovni 1.14 writes (v3); ovni-rt writes 2
 * or 3 depending on the layout chosen at run time */
#define OVNI_METADATA_VERSION 3

#define OVNI_TRACEDIR "ovni"		      /* default trace directory, relative to the cwd */
#define OVNI_MAX_HOSTNAME 512		      /* longest loom name, terminating NUL included */
#define OVNI_MAX_EV_BUF (2 * 1024LL * 1024LL) /* largest event, jumbo data included */

#define OVNI_STREAM_MAGIC "ovni"
#define OVNI_STREAM_VERSION 1
#define OVNI_STREAM_EXT ".obs"

#define OVNI_MODEL_VERSION "1.1.0" /* the 'O' event model every thread requires */
#define OVNI_LIB_VERSION "1.14.0"  /* what this header's ABI corresponds to */
#define OVNI_GIT_COMMIT "flightrec"

/* ---------------------------------- events -------------------------------------------- */

enum ovni_ev_flags {
	OVNI_EV_JUMBO = 0x10, /* the 4-byte payload is the size of data that follows */
};

struct __attribute__((__packed__)) ovni_jumbo_payload {
	uint32_t size;
	uint8_t data[1];
};

/* Up to 16 bytes; the flags' low nibble holds size - 1 (0 for none, so no 1-byte payload). */
union __attribute__((__packed__)) ovni_ev_payload {
	int8_t i8[16];
	int16_t i16[8];
	int32_t i32[4];
	int64_t i64[2];

	uint8_t u8[16];
	uint16_t u16[8];
	uint32_t u32[4];
	uint64_t u64[2];

	struct ovni_jumbo_payload jumbo;
};

/* 12 bytes on disk: flags, model, category, value, clock in nanoseconds (host endian). */
struct __attribute__((__packed__)) ovni_ev_header {
	uint8_t flags;
	uint8_t model;
	uint8_t category;
	uint8_t value;
	uint64_t clock;
};

/* What a program fills (usually on its stack) and hands to ovni_ev_emit(). */
struct __attribute__((__packed__)) ovni_ev {
	struct ovni_ev_header header;
	union ovni_ev_payload payload;
};

/* The first 8 bytes of every stream file. */
struct __attribute__((__packed__)) ovni_stream_header {
	char magic[4];
	uint32_t version;
};

/* ---------------------------------- library ------------------------------------------- */

/* Abort unless this library can serve a program built against `version` (same major,
 * minor not newer). */
#define ovni_version_check() ovni_version_check_str(OVNI_LIB_VERSION)
void ovni_version_check_str(const char *version);
void ovni_version_get(const char **version, const char **commit);

/* ---------------------------------- process ------------------------------------------- */

/* Once per process: app id (> 0), loom name ("hostname.suffix") and pid (getpid()).
 * Creates $OVNI_TRACEDIR/loom.<loom>/proc.<pid>/ (and the same under $OVNI_TMPDIR). */
void ovni_proc_init(int app, const char *loom, int pid);
/* MPI rank of this process and the number of ranks; the calling thread must be initialised. */
void ovni_proc_set_rank(int rank, int nranks);
/* The process will initialise no more threads. */
void ovni_proc_fini(void);

/* ---------------------------------- thread -------------------------------------------- */

/* Once per thread, after ovni_proc_init(): creates the thread's stream. */
void ovni_thread_init(pid_t tid);
/* Declare that this thread emits events of `model` at `version` ("X.Y.Z"). */
void ovni_thread_require(const char *model, const char *version);
/* Write out the thread's events and metadata and close its stream. */
void ovni_thread_free(void);
/* 1 between ovni_thread_init() and ovni_thread_free(), else 0. */
int ovni_thread_isready(void);

/* ---------------------------------- building events ----------------------------------- */

void ovni_ev_set_mcv(struct ovni_ev *ev, const char *mcv);
uint64_t ovni_ev_get_clock(const struct ovni_ev *ev);
void ovni_ev_set_clock(struct ovni_ev *ev, uint64_t clock);
/* Nanoseconds on the clock every thread and process of the loom shares. */
uint64_t ovni_clock_now(void);
/* Append size (>= 2) bytes to the payload (16 bytes at most in all). */
void ovni_payload_add(struct ovni_ev *ev, const uint8_t *buf, int size);
int ovni_ev_size(const struct ovni_ev *ev);
int ovni_payload_size(const struct ovni_ev *ev);

/*
 * The event builders inline, in optimised GNU C/C++ builds: a program fills its event with
 * plain stores instead of a call per field (three payload_add calls cost more than the emit
 * itself). These are only inline definitions (gnu_inline): the library still exports the
 * functions, which programs built without optimisation, with OVNI_NO_INLINE, or against the
 * original header call, and which the inline payload_add calls for anything it does not take
 * (a jumbo event, fewer than 2 bytes, more than 16 in all) so that misuse dies with the same
 * message. The bytes are the same as the library's (tests/unit/test_ovni_inline.c).
 */
#if defined(__GNUC__) && defined(__OPTIMIZE__) && !defined(OVNI_NO_INLINE)
#define OVNI_INLINE_ extern __inline __attribute__((__gnu_inline__))

/* the library's ovni_payload_add under another name: a call to it from the inline body is
 * not a recursion the compiler may turn into a loop */
void ovni_payload_add_lib_(struct ovni_ev *ev, const uint8_t *buf, int size) __asm__("ovni_payload_add");

OVNI_INLINE_ void ovni_ev_set_mcv(struct ovni_ev *ev, const char *mcv)
{
	ev->header.model = (uint8_t)mcv[0];
	ev->header.category = (uint8_t)mcv[1];
	ev->header.value = (uint8_t)mcv[2];
}

OVNI_INLINE_ uint64_t ovni_ev_get_clock(const struct ovni_ev *ev)
{
	return ev->header.clock;
}

OVNI_INLINE_ void ovni_ev_set_clock(struct ovni_ev *ev, uint64_t clock)
{
	ev->header.clock = clock;
}

OVNI_INLINE_ void ovni_payload_add(struct ovni_ev *ev, const uint8_t *buf, int size)
{
	unsigned f = ev->header.flags;
	unsigned have = (f & 0x0f) ? (f & 0x0f) + 1u : 0u;

	if ((f & OVNI_EV_JUMBO) || size < 2 || have + (unsigned)size > 16) {
		ovni_payload_add_lib_(ev, buf, size); /* it says what is wrong, and aborts */
		return;
	}
	memcpy(&ev->payload.u8[have], buf, (size_t)size);
	ev->header.flags = (uint8_t)((f & 0xf0) | ((have + (unsigned)size - 1) & 0x0f));
}

#undef OVNI_INLINE_
#endif

/* Declare a CPU of the loom: logical index (0..N-1) and the OS CPU number. */
void ovni_add_cpu(int index, int phyid);

/* ---------------------------------- emitting ------------------------------------------ */

void ovni_ev_emit(struct ovni_ev *ev);
/* ev must have an empty payload; bufsize bytes of buf follow the event. */
void ovni_ev_jumbo_emit(struct ovni_ev *ev, const uint8_t *buf, uint32_t bufsize);
/* Write the thread's buffered events now. As in libovni, an OF[ / OF] pair marks the time
 * it took and comes before the thread's next event; none after the thread's last event. */
void ovni_flush(void);

/* ---------------------------------- thread attributes --------------------------------- */

/* Keys are dot paths into the thread's metadata ("ovni.mark.1.title"). */
int ovni_attr_has(const char *key);
void ovni_attr_set_double(const char *key, double num);
void ovni_attr_set_boolean(const char *key, int value);
void ovni_attr_set_str(const char *key, const char *value);
void ovni_attr_set_json(const char *key, const char *json);
double ovni_attr_get_double(const char *key);
int ovni_attr_get_boolean(const char *key);
const char *ovni_attr_get_str(const char *key);
/* malloc'ed text; the caller frees it */
char *ovni_attr_get_json(const char *key);
/* Write the thread's metadata to disk now. */
void ovni_attr_flush(void);

/* ---------------------------------- marks --------------------------------------------- */

enum ovni_mark_flags {
	OVNI_MARK_STACK = 1, /* values are pushed and popped, not set */
};
void ovni_mark_type(int32_t type, long flags, const char *title);
void ovni_mark_label(int32_t type, int64_t value, const char *label);
void ovni_mark_push(int32_t type, int64_t value);
void ovni_mark_pop(int32_t type, int64_t value);
void ovni_mark_set(int32_t type, int64_t value);

#ifdef __cplusplus
}
#endif

#pragma GCC visibility pop

#endif /* OVNI_H */
