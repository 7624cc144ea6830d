/*
 * dwargs: functions described only by their DWARF (built with -g), for the args/dwarf-* cases
 * (tests/e2e/run ArgsCases): -a and "-A/-R FUNC" without items take each one's parameters
 * and return type from there, as uftrace 0.13 does: integers of several sizes, char, a
 * string, pointers, a function pointer, a named and an anonymous enum (printed by name),
 * float, double and long double, structs passed by value in registers and on the stack,
 * structs returned by value (the hidden pointer moves the arguments on), a library call
 * with the table's prototype next to them. Every function is FN (kept whole at -O2).
 */
#include <stdio.h>
#include <string.h>

#include "e2e.h"

enum dw_color { DW_RED, DW_GREEN = 5, DW_BLUE };
typedef enum { DW_ONE = 1, DW_TWO } dw_anon;
struct dw_pt {
	int x, y;
};
struct dw_big {
	long a[5];
};

static volatile long sink;

FN int dw_int(int a, long b, short c, unsigned char d)
{
	sink = a;
	return a + (int)b + c + d;
}

FN char dw_char(char c, const char *s, void *p)
{
	sink = (long)p;
	return (char)(c + (s != NULL));
}

FN double dw_float(float a, double b, long double c, int d)
{
	sink = d;
	return a + b + (double)c + d;
}

FN enum dw_color dw_enum(enum dw_color c, dw_anon t)
{
	sink = t;
	return c == DW_GREEN ? DW_BLUE : DW_RED;
}

FN int dw_struct(struct dw_pt p, int after)
{
	sink = after;
	return p.x + p.y + after;
}

FN struct dw_pt dw_retstruct(int a)
{
	struct dw_pt p = { a, a + 1 };
	sink = a;
	return p;
}

FN struct dw_big dw_retbig(int a)
{
	struct dw_big b = { { a, a } };
	sink = a;
	return b;
}

FN long dw_bigarg(struct dw_big b, int after)
{
	sink = after;
	return b.a[0] + after;
}

FN const char *dw_name(int i)
{
	static const char *const names[] = { "zero", "one", "two" };
	sink = i;
	return names[i % 3];
}

FN int dw_call(int (*cb)(const char *), const char *s)
{
	return cb(s);
}

FN void dw_void(void)
{
	sink++;
}

int main(int argc, char **argv)
{
	struct dw_pt p = { 3, 4 };
	struct dw_big b = { { 7, 8, 9 } };
	long n = 0;

	n += dw_int(-1, 1L << 40, -3, 200);
	n += dw_char('a', "dwarf", NULL);
	n += (long)dw_float(1.5f, 2.25, 3.5L, 4);
	n += dw_enum(DW_GREEN, DW_TWO);
	n += dw_struct(p, 5);
	n += dw_retstruct(6).y;
	n += dw_retbig(7).a[1];
	n += dw_bigarg(b, 8);
	n += (long)strlen(dw_name(argc));
	n += dw_call(puts, argv[0] ? "dwargs: called back" : "");
	dw_void();
	printf("dwargs: %ld\n", n);
	return 0;
}
