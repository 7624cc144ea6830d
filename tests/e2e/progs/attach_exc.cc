/*
 * attach_exc.cc - the program of the `attach/except` case (tests/e2e/run, AttachCases): an
 * exception thrown through -pg frames whose returns an attached libmcount hijacked.
 *
 *   attach_exc MS   for MS milliseconds, one call of ax_catcher() a millisecond: it calls
 *                   ax_middle(), which calls ax_thrower(), which throws every third call;
 *                   ax_catcher catches it. Prints the sum of the results and exits 0.
 * Output and status depend on MS only.
 */
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <time.h>

__attribute__((noinline)) int ax_thrower(int i)
{
	if (i % 3 == 0)
		throw std::runtime_error("third");
	return i;
}

__attribute__((noinline)) int ax_middle(int i)
{
	return ax_thrower(i) + 1;
}

__attribute__((noinline)) int ax_catcher(int i)
{
	try {
		return ax_middle(i);
	} catch (const std::exception &) {
		return -1;
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000, sum = 0;
	struct timespec ts = { 0, 1000000L };

	for (long i = 0; i < n; i++) {
		sum += ax_catcher((int)i);
		nanosleep(&ts, NULL);
	}
	printf("sum %ld\n", sum);
	return 0;
}
