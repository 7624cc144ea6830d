/*
 * except.cc - C++ exceptions thrown through instrumented frames: 9 rounds of
 * ex_attempt -> ex_level1 -> ex_level2 -> ex_thrower; every third round throws and ex_attempt
 * catches, then calls ex_handle. The unwound frames' exit sleds never run: their exits are
 * written at the catch (__cxa_begin_catch), so ex_handle is recorded under ex_attempt and
 * every call is counted.
 */
#include <cstdio>
#include <stdexcept>
#include "xe2e.h"

XE2E_SINK_DEFINE;

FN void ex_thrower(int i)
{
	xe2e_sink += i;
	if (i % 3 == 0)
		throw std::runtime_error("ex");
}

FN void ex_level2(int i)
{
	ex_thrower(i);
	xe2e_sink++;
}

FN void ex_level1(int i)
{
	ex_level2(i);
	xe2e_sink++;
}

FN void ex_handle(int i)
{
	xe2e_sink += i;
}

FN int ex_attempt(int i)
{
	try {
		ex_level1(i);
	} catch (const std::exception &) {
		ex_handle(i);
		return 1;
	}
	return 0;
}

int main()
{
	int caught = 0;

	for (int i = 0; i < 9; i++)
		caught += ex_attempt(i);
	std::printf("except: caught %d\n", caught);
	return 0;
}
