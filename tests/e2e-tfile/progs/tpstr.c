/*
 * tpstr.c - strings that no trace frame holds: target() is called with pointers into read-only
 * sections, which a tracepoint hit does not collect (registers and stack only): call i < 3
 * passes word i, a literal in the program's own .rodata; call 3 passes gnu_get_libc_version(),
 * a string in libc's .rodata. gdb reads them from the files, at the addresses the gdb script
 * gives the sections (a PIE and libc are not at their link-time addresses).
 * tests/e2e-tfile/run checks that gdb prints them in every frame. Prints the libc version so
 * that the test knows what call 3 must show.
 */
#include <gnu/libc-version.h>
#include <stdio.h>

#if defined(__clang__)
#define FN __attribute__((noinline, used))
#else
#define FN __attribute__((noinline, noipa, used))
#endif

volatile long tp_sink;

FN long target(const char *s, int i)
{
	tp_sink += s[0] + i;
	return tp_sink;
}

int main(void)
{
	static const char *const words[] = {"alpha-rodata", "beta-rodata", "gamma-rodata"};
	const char *v = gnu_get_libc_version();

	for (int i = 0; i < 3; i++)
		target(words[i], i);
	target(v, 3);
	printf("tpstr: libc %s\n", v);
	return 0;
}
