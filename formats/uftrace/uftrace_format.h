/*
 * uftrace_format: the encoding of uftrace.data records, as uftrace 0.13 reads them.
 *
 * A record is two little-endian u64: the time in ns (CLOCK_MONOTONIC) and a packed word
 * type:2 | more:1 | magic:3 (= 5) | depth:10 | addr:48. LOST records carry time 0 and the
 * number of lost records in addr. This header is for writers (libmcount and the uftrace
 * sink); the offline reader has its own definitions on purpose.
 */
#ifndef UFTRACE_FORMAT_H
#define UFTRACE_FORMAT_H

#include <stdint.h>

enum uftrace_rec_type {
	UFTRACE_ENTRY = 0,
	UFTRACE_EXIT = 1,
	UFTRACE_LOST = 2,
	UFTRACE_EVENT = 3,
};

#define UFTRACE_RECORD_MAGIC 5u
#define UFTRACE_RECORD_MORE (1ull << 2) /* an argument/return value payload follows */
#define UFTRACE_DEPTH_MAX 1023u
#define UFTRACE_ADDR_MASK ((1ull << 48) - 1)

struct uftrace_record {
	uint64_t time;
	uint64_t word;
};

static inline uint64_t uftrace_record_word(unsigned type, unsigned depth, uint64_t addr)
{
	return (uint64_t)type | ((uint64_t)UFTRACE_RECORD_MAGIC << 3) |
	       ((uint64_t)(depth & UFTRACE_DEPTH_MAX) << 6) | ((addr & UFTRACE_ADDR_MASK) << 16);
}

/* info header (40 bytes) */
#define UFTRACE_MAGIC "Ftrace!"
#define UFTRACE_FILE_VERSION 4
#define UFTRACE_HEADER_SIZE 40

/* feat_mask bits */
#define UFTRACE_FEAT_TASK_SESSION (1u << 1)
#define UFTRACE_FEAT_SYM_REL_ADDR (1u << 5)
#define UFTRACE_FEAT_MAX_STACK (1u << 6)
#define UFTRACE_FEAT_ARGUMENT (1u << 3)
#define UFTRACE_FEAT_RETVAL (1u << 4)
#define UFTRACE_FEAT_AUTO_ARGS (1u << 9) /* argauto/retauto/enumauto are in info */
#define UFTRACE_FEAT_DEBUG_INFO (1u << 10) /* <module>.dbg files (DWARF argspecs, lines) */

/* info_mask bits: sections appear in this order */
#define UFTRACE_INFO_EXE_NAME (1u << 0)
#define UFTRACE_INFO_EXIT_STATUS (1u << 2)
#define UFTRACE_INFO_CMDLINE (1u << 3)
#define UFTRACE_INFO_CPUINFO (1u << 4)
#define UFTRACE_INFO_TASKINFO (1u << 7)
#define UFTRACE_INFO_ARG_SPEC (1u << 10)
#define UFTRACE_INFO_RECORD_DATE (1u << 11)
#define UFTRACE_INFO_PATTERN_TYPE (1u << 12)
#define UFTRACE_INFO_VERSION (1u << 13)

#endif
