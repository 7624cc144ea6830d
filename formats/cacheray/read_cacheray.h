/*
 * read_cacheray: reader and strict linter of Cacheray traces (shared/formats/cacheray.md,
 * and shared/anchors/cacheray.md for what Cacheray's own tools read) (prefix crt_).
 *
 * Role: walk a trace record by record, hand each decoded record to a callback (dump, stats)
 * while counting (verify). A trace is a bare concatenation of records in host (little-endian)
 * byte order, with no header and no end marker; an empty file is a valid, empty trace.
 *
 * Stricter than Cacheray's tools, which strip the flag bits off any tag and accept a truncated
 * last record: the first broken rule stops the walk with the byte offset of the offending record:
 *   - the tag's base type (tag & 0x3f) must be READ 0, WRITE 1, RTTA_ADD 2 or RTTA_REMOVE 3
 *     (bits 0x04..0x20 set, e.g. 0x05 or 0x3f, are unknown types);
 *   - the ATOMIC (0x40) and UNALIGNED (0x80) flags only go with READ and WRITE;
 *   - a record must end within the file;
 *   - an access has a size of at least 1 byte;
 *   - a type name holds no NUL byte (writers take it from a C string).
 *
 * Written apart from cacheray-rt's sink on purpose: it reads what the spec says, not what our
 * writer happens to write.
 */
#ifndef FLIGHTREC_READERS_CACHERAY_TRACE_H
#define FLIGHTREC_READERS_CACHERAY_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/common/rd_common.h"

enum crt_rule {
	CRT_RULE_IO = 1,    /* cannot open, map or read the file */
	CRT_RULE_TYPE,	    /* an unknown base type */
	CRT_RULE_FLAGS,	    /* ATOMIC or UNALIGNED on an RTTA record */
	CRT_RULE_TRUNCATED, /* the file ends inside a record */
	CRT_RULE_SIZE,	    /* an access of size 0 */
	CRT_RULE_NAME,	    /* a NUL byte inside a type name */
};

enum crt_kind { CRT_READ = 0, CRT_WRITE = 1, CRT_RTTA_ADD = 2, CRT_RTTA_REMOVE = 3 };

#define CRT_FLAG_ATOMIC	   0x40u
#define CRT_FLAG_UNALIGNED 0x80u
#define CRT_ACCESS_LEN	   18u
#define CRT_ADD_FIXED_LEN  29u
#define CRT_REMOVE_LEN	   17u

/* One record, decoded; fields its kind does not have are 0. */
struct crt_rec {
	uint64_t off; /* file offset of the tag */
	uint32_t len; /* bytes of the record (name included) */
	uint8_t tag;  /* as written */
	uint8_t kind; /* enum crt_kind (tag without flags) */
	bool atomic, unaligned;
	uint64_t addr;
	uint64_t tid;
	uint8_t size;	    /* READ/WRITE */
	uint32_t elem_size; /* RTTA_ADD */
	uint32_t elem_count;
	const uint8_t *name; /* RTTA_ADD: name_len bytes, not NUL-terminated */
	uint32_t name_len;
};

struct crt_counts {
	uint64_t records;
	uint64_t bytes; /* of the file */
	uint64_t by_tag[256];
};

/* returns 0 to go on, non-zero to stop the walk (returned by crt_walk) */
typedef int (*crt_rec_fn)(void *ctx, const struct crt_rec *r);

/* Is PATH a Cacheray trace? A regular file named *.trace, or one whose first records (up to
 * 16, or all of a shorter file) decode strictly. Cheap: reads at most a few hundred bytes. */
bool crt_sniff_file(const char *path);
/* Walk the trace at PATH (mapped, any size); c (optional) gets the counts, fn (optional)
 * every record. 0 ok, -1 with err set, or fn's non-zero value. */
int crt_walk(const char *path, struct crt_counts *c, crt_rec_fn fn, void *ctx,
	     struct rd_error *err);
/* Same over bytes in memory (FILE names them in errors); for tests and fuzzers. */
int crt_walk_buf(const uint8_t *data, size_t len, const char *file, struct crt_counts *c,
		 crt_rec_fn fn, void *ctx, struct rd_error *err);

/* "READ", "WRITE", "RTTA_ADD", "RTTA_REMOVE" */
const char *crt_kind_name(unsigned kind);

#endif /* FLIGHTREC_READERS_CACHERAY_TRACE_H */
