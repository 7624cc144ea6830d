/*
 * tfile_encode: the bytes of a GDB trace file ("tfile") and of the gdb script beside it, built
 * from the tracepoint table (rec_tp.h) and the per-thread spools of ring records; shared by
 * the sink (sink_tfile.c, at finish) and salvage (formats/tfile/salvage_tfile.c), so a salvaged file is
 * written by the same code as a finished one.
 *
 * No runtime state, no malloc, no stdio streams: the sink calls this from finish, which may
 * run in a fatal-signal handler (buffers are the caller's, output goes through write()).
 */
#ifndef TFILE_ENCODE_H
#define TFILE_ENCODE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "librecord/rec_tp.h"

#pragma GCC visibility push(hidden)

/* The register block of gdb's amd64-linux target without a target description: 560 bytes
 * ("R 230"), the order and layout of a remote `g' packet. */
#define TFILE_REGBLOCK_SIZE 560

#define TFILE_OUTBUF (1u << 20) /* bytes of struct tfile_out's buffer */

/* Encode one ring record as a tfile frame (tracepoint number, size, R, M, V blocks) into out
 * (room for tfile_frame_size(f) bytes); returns the bytes written. */
size_t tfile_encode_frame(const struct rec_tp_frame *f, uint8_t *out);
size_t tfile_frame_size(const struct rec_tp_frame *f);
/* the largest frame (a 65535-byte stack slice): room tfile_write_trace needs */
size_t tfile_frame_max(void);

/* One thread's spool: its ring records as the flusher appended them, mapped. */
struct tfile_spool {
	char name[80];
	const uint8_t *data;
	size_t size;
	size_t pos;  /* next record */
	uint64_t ns; /* of the record at pos */
	size_t end;  /* tfile_write_trace: where the whole, sane records end (size: all of it) */
};

/* Is there a whole, sane record of a tracepoint in 1..ntp at sp->pos? Sets sp->ns. */
int tfile_spool_next(struct tfile_spool *sp, uint32_t ntp);

/* Buffered output to fd (buf: TFILE_OUTBUF bytes); bad is set by the first failed write. */
struct tfile_out {
	int fd;
	int bad;
	uint8_t *buf;
	size_t len;
	uint64_t bytes;
};
void tfile_flush(struct tfile_out *o);
void tfile_emit(struct tfile_out *o, const void *p, size_t n);
void tfile_line(struct tfile_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* What the definitions say besides the frames. */
struct tfile_trace {
	const struct rec_tp *tps; /* the tracepoint table: numbers, addresses, names, hits */
	uint32_t ntp;
	const char *stop_desc;	  /* tstatus: "Trace stopped by a tstop command (<stop_desc>)" */
	uint64_t start_us, stop_us; /* CLOCK_REALTIME, microseconds */
};

/*
 * The whole file into o: the header and definitions (frame counts taken from the spools),
 * the frames of every spool merged by time (a thread's own are in order already), the end
 * marker. A spool's records are used up to the first record that is not whole and sane
 * (sp->end says where; the caller reports it). scratch: 2 * REC_TP_MAX words; frame:
 * tfile_frame_max() bytes. Returns the number of frames written (o->bad on a write error).
 */
uint64_t tfile_write_trace(struct tfile_out *o, const struct tfile_trace *t, struct tfile_spool *v,
			   size_t n, uint64_t *scratch, uint8_t *frame);

/* The gdb script beside <base>.tf, in three parts: the head (comments, `set confirm off`,
 * `set trust-readonly-sections on`: .rodata at its run-time address, see tfile_encode.c),
 * one part per module (exec-file and symbol-file for the executable, at its load bias when it
 * is PIE; add-symbol-file -o for a shared object), the tail (target tfile DIR/TF). `note` is
 * added to the first comment line ("" for none). */
void tfile_script_head(struct tfile_out *o, const char *exe, pid_t pid, const char *dir,
		       const char *script, const char *note);
void tfile_script_module(struct tfile_out *o, const char *path, uint64_t bias, int is_exe,
			 int is_dyn);
void tfile_script_tail(struct tfile_out *o, const char *dir, const char *tf);

/* "recording ended" in the sink's files: gdb's tstatus shows it */
#define TFILE_STOP_FINISHED "recording ended"

#pragma GCC visibility pop

#endif
