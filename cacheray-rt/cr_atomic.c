/*
 * cr_atomic: the atomic-operation callbacks of ThreadSanitizer instrumentation, 1 to 16 bytes
 * (__tsan_atomic{8,16,32,64,128}_*) and the fences. Each one records the access, flagged
 * ATOMIC, and then performs the real operation, which is the program's own synchronisation.
 *
 * Records, as Cacheray's runtime writes them:
 *   load                           READ
 *   store                          WRITE
 *   exchange, fetch_{add,sub,and,or,xor,nand}   READ then WRITE (a read-modify-write)
 *   compare_exchange_{strong,weak}(a, c, v)     READ a, READ c; then WRITE a on success or
 *                                  WRITE c (the expected value is updated) on failure
 *   compare_exchange_val           READ a; WRITE a on success
 * The accesses to `c` are plain accesses of the program's `expected` variable: unlike
 * Cacheray, they are not flagged ATOMIC.
 *
 * Memory orders: the TSan ABI passes them as values (0 relaxed ... 5 seq_cst; gcc may add HLE
 * bits above bit 15). A stronger order is always correct, and on x86 every read-modify-write is
 * a locked instruction anyway, so loads and RMWs are seq_cst, stores are seq_cst only when asked
 * (else a plain release store), fences are an mfence for seq_cst and a compiler barrier else.
 *
 * 16-byte atomics use `lock cmpxchg16b` (inline, no libatomic): a load is a compare-exchange
 * of 0 with 0 (the location must be writable and 16-byte aligned, as for any cmpxchg16b user).
 */
#include "cacheray-rt/internal.h"

#define CR_SEQ_CST    5
#define CR_IS_SEQ(mo) (((mo)&0xffff) == CR_SEQ_CST)
#define CR_RD	      (CR_READ | CR_ATOMIC)
#define CR_WR	      (CR_WRITE | CR_ATOMIC)

typedef unsigned char cr_a8;
typedef unsigned short cr_a16;
typedef unsigned int cr_a32;
typedef unsigned long long cr_a64;
typedef unsigned __int128 cr_a128;

#define CR_RMW(BITS, T, N, NAME, OP)                                                               \
	CR_EXPORT T __tsan_atomic##BITS##_##NAME(volatile T *a, T v, int mo)                       \
	{                                                                                          \
		(void)mo;                                                                          \
		cr_access(CR_RD, (uintptr_t)a, N);                                                 \
		cr_access(CR_WR, (uintptr_t)a, N);                                                 \
		return OP(a, v, __ATOMIC_SEQ_CST);                                                 \
	}

#define CR_ATOMICS(BITS, T, N)                                                                     \
	CR_EXPORT T __tsan_atomic##BITS##_load(const volatile T *a, int mo)                        \
	{                                                                                          \
		(void)mo;                                                                          \
		cr_access(CR_RD, (uintptr_t)a, N);                                                 \
		return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                       \
	}                                                                                          \
	CR_EXPORT void __tsan_atomic##BITS##_store(volatile T *a, T v, int mo)                     \
	{                                                                                          \
		cr_access(CR_WR, (uintptr_t)a, N);                                                 \
		if (CR_IS_SEQ(mo))                                                                 \
			__atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                  \
		else                                                                               \
			__atomic_store_n(a, v, __ATOMIC_RELEASE);                                  \
	}                                                                                          \
	CR_RMW(BITS, T, N, exchange, __atomic_exchange_n)                                          \
	CR_RMW(BITS, T, N, fetch_add, __atomic_fetch_add)                                          \
	CR_RMW(BITS, T, N, fetch_sub, __atomic_fetch_sub)                                          \
	CR_RMW(BITS, T, N, fetch_and, __atomic_fetch_and)                                          \
	CR_RMW(BITS, T, N, fetch_or, __atomic_fetch_or)                                            \
	CR_RMW(BITS, T, N, fetch_xor, __atomic_fetch_xor)                                          \
	CR_RMW(BITS, T, N, fetch_nand, __atomic_fetch_nand)                                        \
	static int cr_cas##BITS(volatile T *a, T *c, T v)                                          \
	{                                                                                          \
		int ok;                                                                            \
		cr_access(CR_RD, (uintptr_t)a, N);                                                 \
		cr_access(CR_READ | cr_misaligned((uintptr_t)c, N), (uintptr_t)c, N);              \
		ok = __atomic_compare_exchange_n(a, c, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);  \
		if (ok)                                                                            \
			cr_access(CR_WR, (uintptr_t)a, N);                                         \
		else                                                                               \
			cr_access(CR_WRITE | cr_misaligned((uintptr_t)c, N), (uintptr_t)c, N);     \
		return ok;                                                                         \
	}                                                                                          \
	CR_EXPORT int __tsan_atomic##BITS##_compare_exchange_strong(volatile T *a, T *c, T v,      \
								    int mo, int fmo)               \
	{                                                                                          \
		(void)mo;                                                                          \
		(void)fmo;                                                                         \
		return cr_cas##BITS(a, c, v);                                                      \
	}                                                                                          \
	CR_EXPORT int __tsan_atomic##BITS##_compare_exchange_weak(volatile T *a, T *c, T v,        \
								  int mo, int fmo)                 \
	{                                                                                          \
		(void)mo;                                                                          \
		(void)fmo;                                                                         \
		return cr_cas##BITS(a, c, v);                                                      \
	}                                                                                          \
	CR_EXPORT T __tsan_atomic##BITS##_compare_exchange_val(volatile T *a, T c, T v, int mo,    \
							       int fmo)                            \
	{                                                                                          \
		(void)mo;                                                                          \
		(void)fmo;                                                                         \
		cr_access(CR_RD, (uintptr_t)a, N);                                                 \
		if (__atomic_compare_exchange_n(a, &c, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))  \
			cr_access(CR_WR, (uintptr_t)a, N);                                         \
		return c;                                                                          \
	}

CR_ATOMICS(8, cr_a8, 1)
CR_ATOMICS(16, cr_a16, 2)
CR_ATOMICS(32, cr_a32, 4)
CR_ATOMICS(64, cr_a64, 8)

/* --- 16 bytes ------------------------------------------------------------------------------ */

/* lock cmpxchg16b: *a == *c ? (*a = v, 1) : (*c = *a, 0) */
static inline int cr_cmpxchg16b(volatile cr_a128 *a, cr_a128 *c, cr_a128 v)
{
	uint64_t lo = (uint64_t)*c, hi = (uint64_t)(*c >> 64);
	unsigned char ok;

	__asm__ __volatile__("lock cmpxchg16b %1\n\tsetz %0"
			     : "=q"(ok), "+m"(*a), "+a"(lo), "+d"(hi)
			     : "b"((uint64_t)v), "c"((uint64_t)(v >> 64))
			     : "memory", "cc");
	*c = ((cr_a128)hi << 64) | lo;
	return ok;
}

/* a first guess for a compare-exchange loop; a torn read only costs one more round */
static inline cr_a128 cr_peek16(const volatile cr_a128 *a)
{
	const volatile uint64_t *w = (const volatile uint64_t *)a;
	return ((cr_a128)w[1] << 64) | w[0];
}

static cr_a128 cr_load16(const volatile cr_a128 *a)
{
	cr_a128 c = 0;
	cr_cmpxchg16b((volatile cr_a128 *)a, &c, 0); /* c = *a; *a unchanged */
	return c;
}

enum cr_op16 { CR_XCHG, CR_ADD, CR_SUB, CR_AND, CR_OR, CR_XOR, CR_NAND };

static cr_a128 cr_rmw16(volatile cr_a128 *a, cr_a128 v, enum cr_op16 op)
{
	cr_a128 old = cr_peek16(a), nv;

	for (;;) {
		switch (op) {
		case CR_ADD:
			nv = old + v;
			break;
		case CR_SUB:
			nv = old - v;
			break;
		case CR_AND:
			nv = old & v;
			break;
		case CR_OR:
			nv = old | v;
			break;
		case CR_XOR:
			nv = old ^ v;
			break;
		case CR_NAND:
			nv = ~(old & v);
			break;
		default:
			nv = v;
			break;
		}
		if (cr_cmpxchg16b(a, &old, nv))
			return old;
	}
}

CR_EXPORT cr_a128 __tsan_atomic128_load(const volatile cr_a128 *a, int mo)
{
	(void)mo;
	cr_access(CR_RD, (uintptr_t)a, 16);
	return cr_load16(a);
}

CR_EXPORT void __tsan_atomic128_store(volatile cr_a128 *a, cr_a128 v, int mo)
{
	(void)mo;
	cr_access(CR_WR, (uintptr_t)a, 16);
	cr_rmw16(a, v, CR_XCHG);
}

#define CR_RMW16(NAME, OP)                                                                         \
	CR_EXPORT cr_a128 __tsan_atomic128_##NAME(volatile cr_a128 *a, cr_a128 v, int mo)          \
	{                                                                                          \
		(void)mo;                                                                          \
		cr_access(CR_RD, (uintptr_t)a, 16);                                                \
		cr_access(CR_WR, (uintptr_t)a, 16);                                                \
		return cr_rmw16(a, v, OP);                                                         \
	}

CR_RMW16(exchange, CR_XCHG)
CR_RMW16(fetch_add, CR_ADD)
CR_RMW16(fetch_sub, CR_SUB)
CR_RMW16(fetch_and, CR_AND)
CR_RMW16(fetch_or, CR_OR)
CR_RMW16(fetch_xor, CR_XOR)
CR_RMW16(fetch_nand, CR_NAND)

static int cr_cas128(volatile cr_a128 *a, cr_a128 *c, cr_a128 v)
{
	int ok;

	cr_access(CR_RD, (uintptr_t)a, 16);
	cr_access(CR_READ | cr_misaligned((uintptr_t)c, 16), (uintptr_t)c, 16);
	ok = cr_cmpxchg16b(a, c, v); /* on failure, *c gets the current value */
	if (ok)
		cr_access(CR_WR, (uintptr_t)a, 16);
	else
		cr_access(CR_WRITE | cr_misaligned((uintptr_t)c, 16), (uintptr_t)c, 16);
	return ok;
}

CR_EXPORT int __tsan_atomic128_compare_exchange_strong(volatile cr_a128 *a, cr_a128 *c, cr_a128 v,
						       int mo, int fmo)
{
	(void)mo;
	(void)fmo;
	return cr_cas128(a, c, v);
}

CR_EXPORT int __tsan_atomic128_compare_exchange_weak(volatile cr_a128 *a, cr_a128 *c, cr_a128 v,
						     int mo, int fmo)
{
	(void)mo;
	(void)fmo;
	return cr_cas128(a, c, v);
}

CR_EXPORT cr_a128 __tsan_atomic128_compare_exchange_val(volatile cr_a128 *a, cr_a128 c, cr_a128 v,
							int mo, int fmo)
{
	(void)mo;
	(void)fmo;
	cr_access(CR_RD, (uintptr_t)a, 16);
	if (cr_cmpxchg16b(a, &c, v))
		cr_access(CR_WR, (uintptr_t)a, 16);
	return c;
}

/* --- fences -------------------------------------------------------------------------------- */

CR_EXPORT void __tsan_atomic_thread_fence(int mo)
{
	if (CR_IS_SEQ(mo))
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	else
		__atomic_thread_fence(__ATOMIC_ACQ_REL); /* a compiler barrier on x86 */
}

CR_EXPORT void __tsan_atomic_signal_fence(int mo)
{
	(void)mo;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}
