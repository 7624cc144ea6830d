/* volatile: volatile accesses, built with the compilers' distinguish-volatile options
 * (__tsan_volatile_* callbacks): READ and WRITE records like any other access. */
#include <stdint.h>
#include <stdio.h>

static volatile uint8_t v1[16];
static volatile uint16_t v2[16];
static volatile uint32_t v4[16];
static volatile uint64_t v8[16];

#define BUMP(v)                                                                                    \
	for (int i = 0; i < 16; i++)                                                               \
	v[i] = v[i] + 1

#define EXP(v)                                                                                     \
	printf("EXPECT tag=0x00 size=%zu lo=%p hi=%p count=16\n"                                   \
	       "EXPECT tag=0x01 size=%zu lo=%p hi=%p count=16\n",                                  \
	       sizeof(v[0]), (void *)v, (void *)(v + 16), sizeof(v[0]), (void *)v,                 \
	       (void *)(v + 16))

int main(void)
{
	BUMP(v1);
	BUMP(v2);
	BUMP(v4);
	BUMP(v8);
	EXP(v1);
	EXP(v2);
	EXP(v4);
	EXP(v8);
	return 0;
}
