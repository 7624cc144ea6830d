/*
 * fdr_encode: the XRay FDR records xray-rt writes, as inline encoders (little-endian x86_64).
 *
 * The format (shared/formats/xray-fdr.rst, shared/anchors/xray.md §1): a 32-byte file header,
 * then buffers; from version 2 on each buffer is a BufferExtents metadata record followed by
 * that many bytes of records. Function records are 8 bytes (bit 0 = 0, bits 1-3 type, bits 4-31
 * function id, then a 32-bit TSC delta from the previous timestamped record); metadata
 * records are 16 bytes (byte 0 = kind << 1 | 1, then 15 payload bytes). Nothing is aligned.
 * The reader (formats/xray/read_xray.c) is written apart from these encoders on purpose.
 */
#ifndef XRAY_RT_FDR_ENCODE_H
#define XRAY_RT_FDR_ENCODE_H

#include <stdint.h>
#include <string.h>

#define FDR_VERSION 5
#define FDR_TYPE 1
#define FDR_HEADER_SIZE 32
#define FDR_META_SIZE 16
#define FDR_FN_SIZE 8
#define FDR_DELTA_MAX 0x7fffffffull /* larger deltas (or a TSC going back) get a TSCWrap */
#define FDR_FID_MASK 0x0fffffffu

enum fdr_fn_type {
	FDR_ENTER = 0,
	FDR_EXIT = 1,
	FDR_TAIL_EXIT = 2,
	FDR_ENTER_ARGS = 3,
};

enum fdr_meta_kind {
	FDR_NEW_BUFFER = 0,
	FDR_END_OF_BUFFER = 1,
	FDR_NEW_CPU = 2,
	FDR_TSC_WRAP = 3,
	FDR_WALLCLOCK = 4,
	FDR_CUSTOM_EVENT = 5,
	FDR_CALL_ARG = 6,
	FDR_BUFFER_EXTENTS = 7,
	FDR_TYPED_EVENT = 8,
	FDR_PID = 9,
};

static inline uint64_t fdr_fn_word(unsigned type, uint32_t fid, uint32_t delta)
{
	return (uint64_t)(((fid & FDR_FID_MASK) << 4) | (type << 1)) | ((uint64_t)delta << 32);
}

static inline void fdr_put_fn(uint8_t *p, unsigned type, uint32_t fid, uint32_t delta)
{
	uint64_t w = fdr_fn_word(type, fid, delta);
	memcpy(p, &w, 8);
}

/* A metadata record: kind byte, then `len` payload bytes, the rest zero. */
static inline void fdr_put_meta(uint8_t *p, unsigned kind, const void *payload, size_t len)
{
	p[0] = (uint8_t)(kind << 1 | 1);
	if (len)
		memcpy(p + 1, payload, len);
	memset(p + 1 + len, 0, FDR_META_SIZE - 1 - len);
}

/* NewCPUId: u16 cpu @1, u64 absolute TSC @3. Two 8-byte stores, for the hot path. */
static inline void fdr_put_new_cpu(uint8_t *p, uint16_t cpu, uint64_t tsc)
{
	uint64_t w0 = (uint64_t)(FDR_NEW_CPU << 1 | 1) | (uint64_t)cpu << 8 | tsc << 24;
	uint64_t w1 = tsc >> 40;
	memcpy(p, &w0, 8);
	memcpy(p + 8, &w1, 8);
}

/* TSCWrap: u64 absolute TSC @1 */
static inline void fdr_put_tsc_wrap(uint8_t *p, uint64_t tsc)
{
	uint64_t w0 = (uint64_t)(FDR_TSC_WRAP << 1 | 1) | tsc << 8;
	uint64_t w1 = tsc >> 56;
	memcpy(p, &w0, 8);
	memcpy(p + 8, &w1, 8);
}

/* CallArgument: u64 @1 */
static inline void fdr_put_call_arg(uint8_t *p, uint64_t arg)
{
	uint64_t w0 = (uint64_t)(FDR_CALL_ARG << 1 | 1) | arg << 8;
	uint64_t w1 = arg >> 56;
	memcpy(p, &w0, 8);
	memcpy(p + 8, &w1, 8);
}

/* CustomEventMarker, version 5: i32 size @1, i32 TSC delta @5; `size` payload bytes follow */
static inline void fdr_put_custom_v5(uint8_t *p, int32_t size, int32_t delta)
{
	uint8_t pl[8];
	memcpy(pl, &size, 4);
	memcpy(pl + 4, &delta, 4);
	fdr_put_meta(p, FDR_CUSTOM_EVENT, pl, sizeof(pl));
}

/* The 32-byte file header of every XRay log: version, type (FDR_TYPE, or 0 for the basic
 * mode's), {constant_tsc, nonstop_tsc}, cycle frequency, then the buffer size (FDR; ignored
 * by readers of version 2 and later, 0 in a basic log) and 8 reserved bytes. */
static inline void xray_put_file_header(uint8_t *p, uint16_t version, uint16_t type,
					uint32_t bits, uint64_t hz, uint64_t buffer_size)
{
	memset(p, 0, FDR_HEADER_SIZE);
	memcpy(p, &version, 2);
	memcpy(p + 2, &type, 2);
	memcpy(p + 4, &bits, 4);
	memcpy(p + 8, &hz, 8);
	memcpy(p + 16, &buffer_size, 8);
}

static inline void fdr_put_header(uint8_t *p, uint16_t version, uint32_t bits, uint64_t hz,
				  uint64_t buffer_size)
{
	xray_put_file_header(p, version, FDR_TYPE, bits, hz, buffer_size);
}

#endif
