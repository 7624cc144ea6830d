/*
 * except.cc - C++ exceptions thrown through several traced frames and caught.
 *
 * 9 rounds of ex::attempt -> ex::level1 -> ex::level2 -> ex::level3 -> ex::thrower.
 * thrower throws when i % 3 == 0 (rounds 0, 3, 6): the exception unwinds level3, level2 and
 * level1; level2 catches and rethrows (throw;) on the way, so the unwinder runs twice through
 * traced frames.  attempt catches and calls ex::handle.  ex::after x 3 at the end checks that
 * the runtime is consistent again.  Names live in a namespace so demangling is exercised.
 */
#include <cstdio>
#include "e2e.h"

E2E_SINK_DEFINE;

namespace ex {

struct error {
	int code;
};

FN void thrower(int i)
{
	e2e_sink += i;
	if (i % 3 == 0)
		throw error{i};
}

FN void level3(int i)
{
	thrower(i);
	e2e_sink++;
}

FN void level2(int i)
{
	try {
		level3(i);
	} catch (const error &) {
		e2e_sink++;
		throw;
	}
	e2e_sink++;
}

FN void level1(int i)
{
	level2(i);
	e2e_sink++;
}

FN void handle(int code)
{
	e2e_sink += code;
}

FN int attempt(int i)
{
	try {
		level1(i);
	} catch (const error &e) {
		handle(e.code);
		return 1;
	}
	return 0;
}

FN void after(int i)
{
	e2e_sink += i;
}

} // namespace ex

int main()
{
	int caught = 0;

	for (int i = 0; i < 9; i++)
		caught += ex::attempt(i);
	for (int i = 0; i < 3; i++)
		ex::after(i);
	std::printf("except: caught=%d\n", caught);
	return 0;
}
