/* loop: a known loop; every element is read once from a[] and written once to b[].
 * Built with and without vectorisation: the records must cover each array exactly (count of
 * 4-byte records without vectorisation, bytes with it). */
#include <stdio.h>

#define N 100000

int a[N], b[N];

__attribute__((noinline)) void loop(int k)
{
	for (int i = 0; i < N; i++)
		b[i] = a[i] + k;
}

int main(void)
{
	loop(1);
	printf("EXPECT tag=0x00 lo=%p hi=%p bytes=%zu once\n", (void *)a, (void *)(a + N),
	       sizeof(a));
	printf("EXPECT tag=0x01 lo=%p hi=%p bytes=%zu once\n", (void *)b, (void *)(b + N),
	       sizeof(b));
	printf("EXPECT-NOVEC tag=0x00 size=4 lo=%p hi=%p count=%d\n", (void *)a, (void *)(a + N),
	       N);
	printf("EXPECT-NOVEC tag=0x01 size=4 lo=%p hi=%p count=%d\n", (void *)b, (void *)(b + N),
	       N);
	return b[N - 1] == 1 ? 0 : 1;
}
