/*
 * cacheray_encode: the Cacheray trace's records, as the runtime writes them into its rings and
 * the sink appends them to the trace file (prefix cr_).
 *
 * Records (shared/formats/cacheray.md; host byte order, no header, no padding):
 *   READ/WRITE   tag u8, addr u64, size u8, tid u64                        18 bytes
 *   RTTA_ADD     tag u8, addr u64, tid u64, elemsize u32, elemcount u32,
 *                name length u32, name bytes (no NUL)                      29 + len bytes
 *   RTTA_REMOVE  tag u8, addr u64, tid u64                                 17 bytes
 */
#ifndef FORMATS_CACHERAY_ENCODE_H
#define FORMATS_CACHERAY_ENCODE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "cacheray-rt writes little-endian records with word stores"
#endif

enum cr_tag {
	CR_READ = 0x00,
	CR_WRITE = 0x01,
	CR_RTTA_ADD = 0x02,
	CR_RTTA_REMOVE = 0x03,
	CR_ATOMIC = 0x40,
	CR_UNALIGNED = 0x80,
};

#define CR_ACCESS_BYTES	   18u
#define CR_REMOVE_BYTES	   17u
#define CR_ADD_FIXED_BYTES 29u
/* longest type name written; longer ones are cut (a record must fit in the smallest chunk) */
#define CR_NAME_MAX 4000u
/* the largest access one record holds; longer ranges are cut (cr_range) */
#define CR_SIZE_MAX 255u

/* --- the record writers ------------------------------------------------------------------ */

static inline void cr_put_access(uint8_t *p, unsigned tag, uintptr_t addr, unsigned size,
				 uint64_t tid)
{
	/* bytes 0-7: tag, addr[0..6]; 8-15: addr[7], size, tid[0..5]; 16-17: tid[6..7] */
	uint64_t w0 = (uint64_t)tag | ((uint64_t)addr << 8);
	uint64_t w1 = ((uint64_t)addr >> 56) | ((uint64_t)(size & 0xff) << 8) | (tid << 16);
	uint16_t w2 = (uint16_t)(tid >> 48);

	memcpy(p, &w0, 8);
	memcpy(p + 8, &w1, 8);
	memcpy(p + 16, &w2, 2);
}

static inline void cr_put_remove(uint8_t *p, uintptr_t addr, uint64_t tid)
{
	uint64_t a = addr;

	p[0] = CR_RTTA_REMOVE;
	memcpy(p + 1, &a, 8);
	memcpy(p + 9, &tid, 8);
}

static inline void cr_put_add(uint8_t *p, uintptr_t addr, uint64_t tid, uint32_t elem_size,
			      uint32_t elem_count, const char *name, uint32_t len)
{
	uint64_t a = addr;

	p[0] = CR_RTTA_ADD;
	memcpy(p + 1, &a, 8);
	memcpy(p + 9, &tid, 8);
	memcpy(p + 17, &elem_size, 4);
	memcpy(p + 21, &elem_count, 4);
	memcpy(p + 25, &len, 4);
	memcpy(p + 29, name, len);
}

#endif
