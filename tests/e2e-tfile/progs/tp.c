/*
 * tp.c - the tracepoint acceptance program: target() is called N times (argv[1], default 5)
 * with arguments known from the call number i: x = i, y = 100 + 7 * i, p = &pr (pr.a grows by
 * x each call), d = i / 2.0; other() once at the end. tests/e2e-tfile/run puts tracepoints on
 * target and other and checks what gdb shows in every frame.
 */
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define FN __attribute__((noinline, used))
#else
#define FN __attribute__((noinline, noipa, used))
#endif

struct pair {
	int a;
	long b;
};

volatile long tp_sink;

FN long target(int x, long y, struct pair *p, double d)
{
	long local = x * 10 + y;

	p->a += x;
	p->b += local;
	tp_sink += local + (long)d;
	return local;
}

FN int other(int z)
{
	tp_sink += z;
	return z + 1;
}

FN long helper(long v)
{
	tp_sink += v;
	return v * 2;
}

int main(int argc, char **argv)
{
	struct pair pr = {1, 2};
	int n = argc > 1 ? atoi(argv[1]) : 5;
	long sum = 0;

	for (int i = 0; i < n; i++) {
		sum += target(i, 100 + 7 * i, &pr, i / 2.0);
		sum += helper(i);
	}
	sum += other(42);
	printf("tp: n=%d sum=%ld a=%d b=%ld\n", n, sum, pr.a, pr.b);
	return 0;
}
