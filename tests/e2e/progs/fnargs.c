/*
 * fnargs: functions whose arguments and return values the -A/-R cases record (tests/e2e/run
 * ArgsCases): integers of each size, chars, strings (a null one, an unreadable one, a long
 * one; in the executable, on the stack, on the heap), floats and doubles, a long double,
 * arguments past the sixth (on the stack), a variadic function; `fnargs kill` ends with
 * SIGKILL (its trace is salvaged). Everything is noinline and
 * its result is used, so -O2 keeps each call with its arguments in the ABI's places.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define NI __attribute__((noinline))

static volatile int sink;

/* Each function's body takes some tens of ns: where the clock moves in steps of 10 ns (this
 * VM's TSC), a body of a few ns read as 0 ns now and then, and the -t 1ns cases, which must
 * keep every call, lost it on flightrec's side, whose hooks are quicker than uftrace's
 * (e2e args/time: ar_str gone, 1 run in 10) */
#define BUSY()                                                                                     \
	do {                                                                                       \
		for (volatile int busy_ = 0; busy_ < 32; busy_++)                                  \
			;                                                                          \
	} while (0)

NI int ar_int2(int a, int b)
{
	BUSY();
	sink = a;
	return a + b;
}

NI long ar_mixed(char c, short s, unsigned u, long l)
{
	BUSY();
	sink = c;
	return c + s + (long)u + l;
}

NI int ar_str(const char *s, int n)
{
	BUSY();
	sink = n;
	return s && n ? (int)strlen(s) : -1; /* n 0: s is not a string */
}

NI const char *ar_name(int i)
{
	BUSY();
	static const char *const names[] = { "zero", "one", "two" };
	sink = i;
	return names[i % 3];
}

NI double ar_float(float f, double d)
{
	BUSY();
	sink = (int)f;
	return f * d;
}

NI long double ar_ldouble(long double x)
{
	BUSY();
	sink = 1;
	return x * 2;
}

NI long ar_many(long a1, long a2, long a3, long a4, long a5, long a6, long a7, long a8)
{
	BUSY();
	sink = (int)a1;
	return a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8;
}

NI int ar_vsum(int n, ...)
{
	BUSY();
	va_list ap;
	int s = 0;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s += va_arg(ap, int);
	va_end(ap);
	return s;
}

NI char ar_char(char c)
{
	BUSY();
	sink = c;
	return (char)(c + 1);
}

int main(int argc, char **argv)
{
	static const char longstr[] = "0123456789012345678901234567890123456789012345678901234567890"
				      "123456789012345678901234567890123456789";
	char local[16] = "on the stack";
	char *heap = strdup("on the heap");
	long r = 0;

	r += ar_int2(7, -42);
	r += ar_mixed('x', -300, 4000000000u, -5000000000L);
	r += ar_str("flightrec", 3);
	r += ar_str(NULL, 4);
	r += ar_str((const char *)8, 0); /* unreadable: only its address is recorded */
	r += ar_str(longstr, 5);
	r += ar_str(local, 6);	/* in main's frame: read directly (the live stack) */
	r += ar_str(heap, 7);	/* on the heap: read through the kernel */
	r += (long)strlen(ar_name(1));
	r += (long)ar_float(1.5f, 2.25);
	r += (long)ar_ldouble(3.5L);
	r += ar_many(1, 2, 3, 4, 5, 6, 7, 8);
	r += ar_vsum(3, 10, 20, 30);
	r += ar_char('a');
	free(heap);
	printf("fnargs: %ld\n", r);
	if (argc > 1 && !strcmp(argv[1], "kill")) {
		/* killed with frames open and records in the rings: salvage's case */
		fflush(stdout);
		raise(SIGKILL);
	}
	return 0;
}
