/*
 * rd_common: what every offline trace reader shares.
 *
 * Role: one error type that names the file, the byte offset and the rule a trace broke;
 * bounded whole-file loading; a window that reads a file front to back (rd_win); the hook of
 * a command's progress line (rd_progress); a line iterator and a strict token scanner over
 * memory.
 * Every reader in formats/ works on (pointer, length) spans taken from these helpers, so a
 * fuzzer can feed any of them a buffer directly.
 *
 * Invariants:
 *  - nothing here trusts a size found inside a file: loads are capped by the caller's limit and
 *    by what read(2) actually returns; scanners never read past their end pointer.
 *  - a scanner span is not NUL-terminated; callers copy with rd_strndup when they keep text.
 *  - rd_error_set() returns -1 so parsers can `return rd_error_set(...)`; the first error
 *    recorded is the one reported (later calls do not overwrite it).
 */
#ifndef FLIGHTREC_RD_COMMON_H
#define FLIGHTREC_RD_COMMON_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* little-endian fields at P, any alignment (the traces are written on x86_64) */
static inline uint16_t rd_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t rd_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t rd_le64(const uint8_t *p)
{
	return (uint64_t)rd_le32(p) | (uint64_t)rd_le32(p + 4) << 32;
}

/* A read-only file mapping read front to back gives back its pages once they are behind:
 * UPTO is the offset reached, and the whole pages of [*DONE, UPTO) are dropped
 * (MADV_DONTNEED) once they add up to RD_RELEASE_STEP, so a reader's resident memory stays
 * bounded whatever the file's size (a mapped page otherwise stays resident, counted in the
 * reader's RSS, until memory runs short). Only for MAP_PRIVATE, PROT_READ file mappings,
 * never for memory of its own: a dropped page touched again is read again from the file. */
#define RD_RELEASE_STEP (8u << 20)
void rd_map_release(const void *base, size_t upto, size_t *done);
/* ... and all of a mapping of LEN bytes from *DONE on, once read to its end */
void rd_map_release_end(const void *base, size_t len, size_t *done);

/*
 * A window over a file read with pread(2), for readers that walk a file front to back by
 * offsets: rd_win_at(W, OFF, NEED) is a pointer to the file's bytes [OFF, OFF + NEED), valid
 * until the next call. The window holds RD_WIN_SIZE bytes and reads ahead a whole window at
 * a time; it only grows for one span longer than that (a record's payload), to that span's
 * size, which the caller has checked against the file's size: memory is the window, not the
 * file. Reading a file's pages through a mapping instead cost a cache and TLB miss on the
 * first byte of every page (74% of `flightrec verify` of an XRay log), and kept them resident
 * until given back; copying them into a window that stays in the cache does neither.
 * Over a buffer in memory (rd_win_mem), every span is a pointer into it and nothing is read.
 * Invariant: a caller asks only for spans inside [0, size), which it checks before; a span
 * the file no longer has (it shrank while read) or a read error is a NULL return, with ERR
 * set (RULE_IO, the span's offset).
 */
#define RD_WIN_SIZE (256u << 10)
struct rd_win {
	const uint8_t *mem; /* a buffer in memory (no file) */
	int fd;		    /* the file, or -1 */
	uint8_t *buf;
	size_t cap;    /* buf's size */
	uint64_t off;  /* the file offset of buf[0] */
	size_t len;    /* the bytes of buf read */
	uint64_t size; /* the file's (or buffer's) size */
	const char *file;
	int rule_io;
	struct rd_error *err;
};

/* over LEN bytes at DATA (a buffer of the caller's: FILE names it in errors) */
void rd_win_mem(struct rd_win *w, const void *data, size_t len);
/* over PATH opened: 0, or -1 with ERR set (RULE_IO: cannot open, not a regular file, no
 * memory). w->size is the file's size. Errors later (rd_win_at) also go to ERR. */
int rd_win_open(struct rd_win *w, const char *path, int rule_io, struct rd_error *err);
void rd_win_close(struct rd_win *w);
const uint8_t *rd_win_fill(struct rd_win *w, uint64_t off, size_t need);

static inline const uint8_t *rd_win_at(struct rd_win *w, uint64_t off, size_t need)
{
	if (w->mem)
		return w->mem + off;
	/* the common case: the span is in the window (off - w->off wraps when below it) */
	if (off - w->off <= w->len && need <= w->len - (off - w->off))
		return w->buf + (off - w->off);
	return rd_win_fill(w, off, need);
}

/* how many bytes from OFF on rd_win_at gives without reading: after a call that returned OFF's
 * span, the rest of the window (of the buffer in memory) */
static inline size_t rd_win_avail(const struct rd_win *w, uint64_t off)
{
	if (w->mem)
		return (size_t)(w->size - off);
	return off - w->off <= w->len ? w->len - (size_t)(off - w->off) : 0;
}

/*
 * The progress of a long read: readers report the bytes they take from trace files (rd_win's
 * reads, the uftrace window's, rd_map_release's steps) to ADD, and rd_error_print calls CLEAR
 * before it prints; the command line sets them to draw its progress line on a terminal
 * (cli/progress.c). Both NULL (libraries, tests, fuzzers): nothing. ADD may be called from
 * several threads at once (verify -j); it is called once per window, never per record.
 */
struct rd_progress {
	void (*add)(uint64_t bytes);
	void (*clear)(void);
};
extern struct rd_progress rd_progress;

static inline void rd_progress_add(uint64_t bytes)
{
	if (rd_progress.add)
		rd_progress.add(bytes);
}

#define RD_FILE_MAX 4096
#define RD_MSG_MAX 320

/* rule 0 means "no error"; each format numbers its own rules from 1 */
struct rd_error {
	int rule;
	int64_t offset; /* byte offset in file, -1 when the rule is about the whole file */
	char file[RD_FILE_MAX];
	char msg[RD_MSG_MAX];
};

void rd_error_clear(struct rd_error *err);
bool rd_error_isset(const struct rd_error *err);
int rd_error_set(struct rd_error *err, int rule, const char *file, int64_t offset, const char *fmt,
		 ...) __attribute__((format(printf, 5, 6)));
/* "flightrec: FILE: offset 0xOFF: MSG\n" (offset part omitted when < 0) */
void rd_error_print(FILE *fp, const struct rd_error *err);

/* a whole file in memory, NUL-terminated for convenience (len excludes the NUL) */
struct rd_buf {
	char *data;
	size_t len;
};

/*
 * Load PATH into OUT. Fails with RULE_IO when it cannot be opened or read (ENOENT included;
 * callers that treat absence differently check rd_file_exists first) and with RULE_BIG when it
 * is larger than MAX bytes.
 */
int rd_load_file(const char *path, size_t max, struct rd_buf *out, int rule_io, int rule_big,
		 struct rd_error *err);
void rd_buf_free(struct rd_buf *buf);
bool rd_file_exists(const char *path);
/* size of a regular file, -1 if it is missing or not a regular file */
int64_t rd_file_size(const char *path);

/* DIR + "/" + NAME without a doubled slash; the result is malloc'ed (NULL on OOM) */
char *rd_path_join(const char *dir, const char *name);
char *rd_strndup(const char *p, size_t len);

/* lines of a buffer; a final line without '\n' is still returned (has_nl = false) */
struct rd_line {
	const char *p;
	size_t len; /* without the '\n' */
	size_t off; /* byte offset of the first character */
	unsigned lineno; /* 1-based */
	bool has_nl;
};

struct rd_lines {
	const char *buf;
	size_t len;
	size_t pos;
	size_t base; /* file offset of buf[0] */
	unsigned lineno;
};

/* BASE_OFF: the file offset of BUF[0], so rd_line.off is a file offset */
void rd_lines_init(struct rd_lines *it, const char *buf, size_t len, size_t base_off);
bool rd_lines_next(struct rd_lines *it, struct rd_line *line);

/* a strict left-to-right scanner over one span */
struct rd_scan {
	const char *p;
	const char *end;
};

void rd_scan_init(struct rd_scan *s, const char *p, size_t len);
bool rd_scan_eol(const struct rd_scan *s);
bool rd_scan_lit(struct rd_scan *s, const char *lit);
bool rd_scan_char(struct rd_scan *s, char c);
/* one or more decimal digits, overflow-checked; NDIGITS (optional) gets the digit count */
bool rd_scan_dec(struct rd_scan *s, uint64_t *v, size_t *ndigits);
/* optional '-' then decimal digits, within int64 */
bool rd_scan_int(struct rd_scan *s, int64_t *v);
/* the value of hex digit C (either case), or -1 */
int rd_hexval(char c);
/* one or more hex digits (no 0x), at most 16 */
bool rd_scan_hex(struct rd_scan *s, uint64_t *v, size_t *ndigits);
/* the characters up to (not including) the next C or the end; may be empty */
size_t rd_scan_until(struct rd_scan *s, char c, const char **start);
size_t rd_scan_spaces(struct rd_scan *s);
size_t rd_scan_rest(struct rd_scan *s, const char **start);

bool rd_is_hex_string(const char *p, size_t len);

/*
 * integers stored little-endian (BIG false) or big-endian (BIG true), at any alignment.
 * Inline: every reader's record loop goes through them (an out-of-line byte loop was 38% of
 * `flightrec verify`); memcpy compiles to one unaligned load, the swap to one bswap.
 */
static inline uint16_t rd_get16(const uint8_t *p, bool big)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return big == (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__) ? v : __builtin_bswap16(v);
}

static inline uint32_t rd_get32(const uint8_t *p, bool big)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return big == (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__) ? v : __builtin_bswap32(v);
}

static inline uint64_t rd_get64(const uint8_t *p, bool big)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return big == (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__) ? v : __builtin_bswap64(v);
}

#define RD_NSEC_PER_SEC UINT64_C(1000000000)
#define RD_TIME_LEN 32
/* NS as "<sec>.<9-digit nsec>", the way task.txt writes timestamps; returns BUF */
const char *rd_time_str(uint64_t ns, char buf[RD_TIME_LEN]);

/* Run WORKER(ARG) on up to JOBS threads started into TIDS (may be NULL: none started) and
 * join them; this thread runs it too when one could not start (or none did), so the work
 * gets done whatever pthread_create says. The worker takes its items from ARG itself. */
void rd_run_workers(pthread_t *tids, unsigned jobs, void *(*worker)(void *), void *arg);

/* qsort that also takes an empty array, which may be NULL (qsort's may not) */
void rd_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

#endif /* FLIGHTREC_RD_COMMON_H */
