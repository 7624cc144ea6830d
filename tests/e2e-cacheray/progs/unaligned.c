/* unaligned: the fields of a packed struct at odd offsets. clang calls the unaligned
 * callbacks, gcc the range ones: both must give one record of the field's size at the field's
 * address, flagged UNALIGNED exactly when that address is not a multiple of the size (the
 * second element's `len` happens to be aligned). */
#include <stdint.h>
#include <stdio.h>

struct __attribute__((packed)) wire {
	char kind;    /* offset 0 */
	uint32_t len; /* offset 1 */
	uint64_t q;   /* offset 5 */
	uint16_t s;   /* offset 13 */
};

static struct wire w[2] __attribute__((aligned(64)));

__attribute__((noinline)) void put(struct wire *x, int i)
{
	x->kind = 'w';
	x->len = 42u + (unsigned)i;
	x->q = (uint64_t)i << 40;
	x->s = (uint16_t)i;
}

__attribute__((noinline)) uint64_t get(struct wire *x)
{
	return x->len + x->q + x->s;
}

/* one WRITE (put) and one READ (get) of each field of each element */
#define FIELD(i, f)                                                                                \
	do {                                                                                       \
		uintptr_t a_ = (uintptr_t)&w[i].f;                                                 \
		int u_ = (a_ % sizeof(w[i].f)) != 0;                                               \
		printf("EXPECT tag=0x%02x size=%d lo=%p hi=%p count=1\n", u_ ? 0x81 : 0x01,        \
		       (int)sizeof(w[i].f), (void *)a_, (void *)(a_ + sizeof(w[i].f)));            \
		if (sizeof(w[i].f) > 1)                                                            \
			printf("EXPECT tag=0x%02x size=%d lo=%p hi=%p count=1\n",                  \
			       u_ ? 0x80 : 0x00, (int)sizeof(w[i].f), (void *)a_,                  \
			       (void *)(a_ + sizeof(w[i].f)));                                     \
	} while (0)

int main(void)
{
	uint64_t sum = 0;

	for (int i = 0; i < 2; i++)
		put(&w[i], i);
	for (int i = 0; i < 2; i++)
		sum += get(&w[i]);
	for (int i = 0; i < 2; i++) {
		FIELD(i, kind);
		FIELD(i, len);
		FIELD(i, q);
		FIELD(i, s);
	}
	return sum == 42 + 43 + (1ull << 40) + 1 ? 0 : 1;
}
