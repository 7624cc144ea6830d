/*
 * xray_order: which thread of a log llvm-xray 14 replays first.
 *
 * Why it matters: `llvm-xray account` remembers the TSC of the very first record it processes
 * and rejects every later record with a smaller TSC; it never sorts. Records are produced
 * thread by thread, in the iteration order of the reader's block index, a
 * DenseMap<std::pair<uint64_t pid, int32_t tid>, ...> filled in file order (BlockIndexer.h,
 * Trace.cpp). Unless the thread iterated first also holds the process's earliest record,
 * `account` fails on any multi-threaded log, compiler-rt's own included.
 *
 * This is a model of that map (LLVM 14's DenseMap: 64 buckets at first, doubling when an
 * insertion would fill 3/4 of them, quadratic probing, iteration in bucket order; the pair's
 * hash combines (unsigned)(pid * 37) and (unsigned)(tid * 37) with combineHashValue). The sink
 * uses it to give that thread a first record as early as the log's earliest one.
 */
#ifndef XRAY_RT_XRAY_ORDER_H
#define XRAY_RT_XRAY_ORDER_H

#include <stddef.h>
#include <stdint.h>

static inline uint32_t xr_llvm_combine_hash(uint32_t a, uint32_t b)
{
	uint64_t key = (uint64_t)a << 32 | (uint64_t)b;

	key += ~(key << 32);
	key ^= (key >> 22);
	key += ~(key << 13);
	key ^= (key >> 8);
	key += (key << 3);
	key ^= (key >> 15);
	key += ~(key << 27);
	key ^= (key >> 31);
	return (uint32_t)key;
}

static inline uint32_t xr_llvm_key_hash(uint64_t pid, int32_t tid)
{
	return xr_llvm_combine_hash((uint32_t)(pid * 37ull), (uint32_t)tid * 37u);
}

/* Insert index `i` (key hash h[i]) into table[nb] (entries are index + 1, 0 = empty). */
static inline void xr_llvm_insert(uint32_t *table, uint32_t nb, const uint32_t *h, uint32_t i)
{
	uint32_t b = h[i] & (nb - 1), probe = 1;

	while (table[b])
		b = (b + probe++) & (nb - 1);
	table[b] = i + 1;
}

/* Words of scratch xr_llvm_first_key needs for n keys: the hashes and two tables. */
static inline size_t xr_llvm_scratch_words(size_t n)
{
	return 8 * n + 128;
}

/*
 * The index (into keys inserted in the order 0..n-1) of the key llvm-xray iterates first.
 * `scratch` holds xr_llvm_scratch_words(n) uint32_t words. Keys must be distinct.
 */
static inline size_t xr_llvm_first_key(uint64_t pid, const int32_t *tids, size_t n,
				       uint32_t *scratch)
{
	uint32_t *h = scratch, *table, *other, nb = 0, cap = 0;

	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++) { /* the largest table the insertions will need */
		if ((i + 1) * 4 >= (size_t)cap * 3)
			cap = cap ? cap * 2 : 64;
	}
	table = scratch + n;
	other = table + cap;
	for (size_t i = 0; i < n; i++) {
		h[i] = xr_llvm_key_hash(pid, tids[i]);
		if ((i + 1) * 4 >= (size_t)nb * 3) {
			/* grow: a fresh table, the old entries moved over in bucket order */
			uint32_t onb = nb, *t;
			nb = nb ? nb * 2 : 64;
			for (uint32_t k = 0; k < nb; k++)
				other[k] = 0;
			for (uint32_t k = 0; k < onb; k++)
				if (table[k])
					xr_llvm_insert(other, nb, h, table[k] - 1);
			t = table;
			table = other;
			other = t;
		}
		xr_llvm_insert(table, nb, h, (uint32_t)i);
	}
	for (uint32_t k = 0; k < nb; k++)
		if (table[k])
			return table[k] - 1;
	return 0;
}

#endif
