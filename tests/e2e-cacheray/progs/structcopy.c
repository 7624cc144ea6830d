/* structcopy: struct copies of 3, 24 and 300 bytes (gcc: __tsan_{read,write}_range; clang:
 * loads and stores or a call of memcpy) and explicit memcpy/memmove/memset calls of 1000 bytes
 * with sizes known only at run time. Every byte of each source must be read exactly once and
 * every byte of each destination written exactly once, in records of at most 255 bytes. */
#include <stdio.h>
#include <string.h>

struct s3 {
	char x[3];
};
struct s24 {
	long a, b, c;
};
struct s300 {
	char b[300];
};

#define A64 __attribute__((aligned(64)))
static struct s3 a3 A64, b3 A64;
static struct s24 a24 A64, b24 A64;
static struct s300 a300 A64, b300 A64;
static char src1[1000] A64, dst1[1000] A64, src2[1000] A64, dst2[1000] A64, dst3[1000] A64;

__attribute__((noinline)) void copy(void)
{
	a3 = b3;
	a24 = b24;
	a300 = b300;
}

__attribute__((noinline)) void mem(size_t n)
{
	memcpy(dst1, src1, n);
	memmove(dst2, src2, n);
	memset(dst3, 1, n);
}

#define ONCE(tag, v)                                                                               \
	printf("EXPECT tag=" tag " lo=%p hi=%p bytes=%zu once\n", (void *)&(v),                    \
	       (void *)((char *)&(v) + sizeof(v)), sizeof(v))

int main(int argc, char **argv)
{
	(void)argv;
	b300.b[299] = 7;
	src1[999] = 9;
	copy();
	mem(1000 + (size_t)argc - 1);
	ONCE("0x00", b3);
	ONCE("0x01", a3);
	ONCE("0x00", b24);
	ONCE("0x01", a24);
	ONCE("0x00", b300);
	ONCE("0x01", a300);
	ONCE("0x00", src1);
	ONCE("0x01", dst1);
	ONCE("0x00", src2);
	ONCE("0x01", dst2);
	ONCE("0x01", dst3);
	return a300.b[299] == 7 && dst1[999] == 9 && dst3[5] == 1 ? 0 : 1;
}
