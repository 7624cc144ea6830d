/*
 * read_tfile: reader and strict linter of GDB trace files (gdb's `tsave`/`target tfile` format;
 * shared/formats/gdb-tfile.txt, with the corrections of shared/anchors/gdb-tfile.md) (prefix
 * tfr_).
 *
 * Role: parse the header and the definition section (R, status, tp, tsv, tdesc lines) into a
 * struct tfr_file, then walk the frames, handing each frame and each of its blocks to
 * callbacks (dump, stats) while counting (verify).
 *
 * The rules, as gdb 13 reads the file (the first broken one stops the reader, with the byte
 * offset of the offending line, frame or block):
 *   - the file starts with "\x7fTRACE0\n";
 *   - a definition line is shorter than 1000 bytes, and the section ends with an empty line;
 *   - there is exactly one "R <hex>" line, with a size above 0 (hex, not decimal as the
 *     manual says); status, tp and tsv lines parse (numbers are hex); tp and tsv names and
 *     source strings are hex-encoded text;
 *   - frames are {u16 tracepoint, u32 size, size bytes of blocks}, little-endian; a frame
 *     ends within the file; its blocks fill it exactly: 'R' + the register block size, 'M' +
 *     u64 address + u16 length + length bytes, 'V' + i32 number + i64 value; any other
 *     block type is an error for gdb ("Unknown block type");
 *   - tracepoint number 0 ends the frames and must be there (else gdb fails with "Premature
 *     end of file" on any search that reaches the end); bytes after it are ignored;
 *   - stricter than gdb: every frame's tracepoint is defined by a "tp T" line, and the status
 *     line's tframes, when given, is the number of frames.
 * Unknown definition lines are counted, not errors (gdb warns and ignores them).
 *
 * Written apart from the writer (formats/tfile/sink_tfile.c) on purpose.
 */
#ifndef FLIGHTREC_READERS_TFILE_H
#define FLIGHTREC_READERS_TFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/common/rd_common.h"

enum tfr_rule {
	TFR_RULE_IO = 1,    /* cannot open, map or read the file */
	TFR_RULE_HEADER,    /* not "\x7fTRACE0\n" */
	TFR_RULE_LINE,	    /* a definition line of 1000 bytes or more, or no end of section */
	TFR_RULE_REGSIZE,   /* no R line, two of them, or a bad size */
	TFR_RULE_DEF,	    /* a status, tp or tsv line that does not parse */
	TFR_RULE_TRUNCATED, /* the file ends inside a frame, or before the end marker */
	TFR_RULE_BLOCK,	    /* an unknown block type, or blocks that do not fill the frame */
	TFR_RULE_TP,	    /* a frame of a tracepoint no "tp T" line defines */
	TFR_RULE_COUNT,	    /* the status line's tframes is not the number of frames */
};

struct tfr_tp {
	uint32_t num;
	uint64_t addr;
	bool defined; /* a "tp T" line */
	bool enabled;
	bool has_status; /* a "tp V" line */
	uint64_t hits;	 /* tp V */
	uint64_t usage;
	char *at; /* source forms (tp Z), decoded; NULL if absent */
	char *cond;
	char *cmd; /* the first "cmd" line */
	unsigned ncmds, nactions, nsteps;
	uint64_t frames; /* counted by tfr_walk */
};

struct tfr_tsv {
	uint32_t num;
	int64_t initial;
	bool builtin;
	char *name;
};

struct tfr_status {
	bool present;
	bool running;
	char reason[16]; /* tstop, tfull, tnotrun, tpasscount, terror, tdisconnected, ... */
	char *stop_desc; /* decoded, or NULL */
	int64_t tframes, tcreated, tfree, tsize; /* -1 when absent */
	uint64_t start_us, stop_us;
	char *notes, *user; /* decoded, or NULL */
};

struct tfr_file {
	char *path;
	const uint8_t *data;
	size_t size;
	uint32_t regsize;
	struct tfr_status status;
	struct tfr_tp *tps;
	size_t ntps;
	struct tfr_tsv *tsvs;
	size_t ntsvs;
	size_t nlines, nunknown, ntdesc;
	size_t frames_off; /* first frame */
	/* set by tfr_walk */
	uint64_t nframes;
	size_t end_off; /* the end marker */
};

struct tfr_frame {
	uint64_t index; /* 0-based, in file order (gdb's frame number) */
	size_t off;	/* of the tracepoint number */
	uint16_t tpnum;
	uint32_t size; /* bytes of blocks */
	const uint8_t *blocks;
	struct tfr_tp *tp;
};

struct tfr_block {
	char type;	     /* 'R', 'M', 'V' */
	size_t off;	     /* of the type byte */
	const uint8_t *data; /* R: the register block; M: the bytes */
	uint64_t addr;	     /* M */
	uint32_t len;	     /* R: regsize; M: length */
	int32_t tsv;	     /* V */
	int64_t value;	     /* V */
};

typedef int (*tfr_frame_cb)(void *arg, const struct tfr_frame *fr);
typedef int (*tfr_block_cb)(void *arg, const struct tfr_frame *fr, const struct tfr_block *b);

/* Does PATH start like a trace file? */
bool tfr_sniff_file(const char *path);
/* Map PATH and parse its header and definitions. */
int tfr_open(const char *path, struct tfr_file *f, struct rd_error *err);
/* Walk every frame and block (callbacks may be NULL; a callback returning non-zero stops the
 * walk with that value); checks the frame rules. 0, or -1 with err set. */
int tfr_walk(struct tfr_file *f, tfr_frame_cb fcb, tfr_block_cb bcb, void *arg,
	     struct rd_error *err);
void tfr_close(struct tfr_file *f);

struct tfr_tp *tfr_find_tp(const struct tfr_file *f, uint32_t num);
const struct tfr_tsv *tfr_find_tsv(const struct tfr_file *f, uint32_t num);
/* A register of an R block in gdb's amd64 order (rax rbx rcx rdx rsi rdi rbp rsp r8..r15
 * rip at 8-byte slots 0..16); false when the block is too small. */
bool tfr_amd64_reg(const struct tfr_file *f, const struct tfr_block *r, unsigned slot, uint64_t *v);

#endif /* FLIGHTREC_READERS_TFILE_H */
