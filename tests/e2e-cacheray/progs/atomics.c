/* atomics: every atomic operation on 1, 2, 4 and 8 bytes (16 with -DWITH16 and -mcx16), each
 * on its own variable; the values prove the real operation happened. Per variable the trace
 * must hold the ATOMIC READs and WRITEs the operations imply (cacheray-rt/cr_atomic.c):
 * load R, store W, exchange and the 6 fetch_ops R+W each, a successful and a failed strong
 * CAS, a successful weak CAS (R each, W on success), a successful and a failed CAS-val
 * (__sync_val_compare_and_swap: R each, W on success). The `expected` variables get plain
 * (not ATOMIC) records. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static int bad;
#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			printf("check failed line %d: %s\n", __LINE__, #c);                        \
			bad = 1;                                                                   \
		}                                                                                  \
	} while (0)

#define OPS(T, V, PRINT)                                                                           \
	do {                                                                                       \
		T e, old;                                                                          \
		atomic_store(&V, (T)5);                                                            \
		CHECK(atomic_load(&V) == 5);                                                       \
		old = atomic_exchange(&V, (T)7);                                                   \
		CHECK(old == 5);                                                                   \
		CHECK(atomic_fetch_add(&V, (T)3) == 7);                                            \
		CHECK(atomic_fetch_sub(&V, (T)2) == 10);                                           \
		CHECK(atomic_fetch_and(&V, (T)0xc) == 8);                                          \
		CHECK(atomic_fetch_or(&V, (T)0x3) == 8);                                           \
		CHECK(atomic_fetch_xor(&V, (T)0x1) == 0xb);                                        \
		CHECK(__atomic_fetch_nand((T *)&V, (T)0xf, __ATOMIC_SEQ_CST) == 0xa);              \
		atomic_store(&V, (T)1);                                                            \
		e = 1;                                                                             \
		CHECK(atomic_compare_exchange_strong(&V, &e, (T)2));                               \
		e = 1;                                                                             \
		CHECK(!atomic_compare_exchange_strong(&V, &e, (T)3) && e == 2);                    \
		while (!atomic_compare_exchange_weak(&V, &e, (T)4))                                \
			;                                                                          \
		CHECK(__sync_val_compare_and_swap((T *)&V, (T)4, (T)6) == 4);                      \
		CHECK(__sync_val_compare_and_swap((T *)&V, (T)4, (T)9) == 6);                      \
		CHECK(atomic_load(&V) == 6);                                                       \
		/* R: 2 loads, 7 RMW, 3 CAS, 2 CAS-val; W: 2 stores, 7 RMW, 2 + 1 successes */     \
		if (PRINT) {                                                                       \
			printf("EXPECT tag=0x40 size=%zu lo=%p hi=%p count=%d\n", sizeof(T),       \
			       (void *)&V, (void *)(&V + 1), 2 + 7 + 3 + 2);                       \
			printf("EXPECT tag=0x41 size=%zu lo=%p hi=%p count=%d\n", sizeof(T),       \
			       (void *)&V, (void *)(&V + 1), 2 + 7 + 2 + 1);                       \
		}                                                                                  \
	} while (0)

static _Atomic unsigned char v1;
static _Atomic unsigned short v2;
static _Atomic unsigned int v4;
static _Atomic unsigned long v8;
#ifdef WITH16
static _Atomic unsigned __int128 v16;
#endif

int main(void)
{
	OPS(unsigned char, v1, 1);
	OPS(unsigned short, v2, 1);
	OPS(unsigned int, v4, 1);
	OPS(unsigned long, v8, 1);
#ifdef WITH16
	OPS(unsigned __int128, v16, 0);
	{
		/* the high half must take part too */
		unsigned __int128 big = ((unsigned __int128)0x1234 << 64) | 1, e;
		atomic_store(&v16, big);
		e = atomic_fetch_add(&v16, (unsigned __int128)0xffffffffffffffffull);
		CHECK(e == big);
		CHECK(atomic_load(&v16) == ((unsigned __int128)0x1235 << 64));
		printf("EXPECT tag=0x40 size=16 lo=%p hi=%p count=16\n", (void *)&v16,
		       (void *)(&v16 + 1));
		printf("EXPECT tag=0x41 size=16 lo=%p hi=%p count=14\n", (void *)&v16,
		       (void *)(&v16 + 1));
	}
#endif
	atomic_thread_fence(memory_order_seq_cst);
	atomic_signal_fence(memory_order_seq_cst);
	return bad;
}
