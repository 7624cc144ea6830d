/*
 * api_handlers.cc - every handler of compiler-rt's API at once, built at -O2 so that api_tail
 * ends in a tail call (a tail sled): run with XRAY_OPTIONS=patch_premain=false. The program
 * finds its functions' ids by address (__xray_function_address up to __xray_max_function_id),
 * calls api_leaf once before anything (nothing patched as far as compiler-rt knows: no
 * handler call), installs an entry/exit handler (still nothing patched: no call), patches
 * everything, then checks the exact sequence its handlers see: entry 0 / exit 1 / tail 2 with
 * the right ids, a log-args function going to the entry handler (type 3) until an arg1
 * handler is set, then to the arg1 handler with its argument; after both are removed, nothing.
 * Prints the sequence by name; exit status 0 when it is the expected one.
 */
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include "xray/xray_interface.h"

static char seen[1024];
static int32_t id_leaf, id_tail, id_args;

[[clang::xray_never_instrument]] static const char *api_name(int32_t fid)
{
	return fid == id_leaf ? "leaf" : fid == id_tail ? "tail" : fid == id_args ? "args" : "?";
}

[[clang::xray_never_instrument]] static void api_handler(int32_t fid, XRayEntryType type)
{
	size_t n = strlen(seen);
	snprintf(seen + n, sizeof(seen) - n, "%s:%u ", api_name(fid), (unsigned)type);
}

[[clang::xray_never_instrument]] static void api_handler1(int32_t fid, XRayEntryType type,
							   uint64_t arg)
{
	size_t n = strlen(seen);
	snprintf(seen + n, sizeof(seen) - n, "%s:%u:%" PRIx64 " ", api_name(fid), (unsigned)type,
		 arg);
}

extern "C" [[clang::xray_always_instrument]] __attribute__((noinline)) int api_leaf(int x)
{
	asm volatile("" : "+r"(x));
	return x + 1;
}

extern "C" [[clang::xray_always_instrument]] __attribute__((noinline)) int api_tail(int x)
{
	asm volatile("" : "+r"(x));
	return api_leaf(x * 3); /* a tail call at -O2 */
}

extern "C" [[clang::xray_always_instrument, clang::xray_log_args(1)]] __attribute__((noinline))
uint64_t api_args(uint64_t a)
{
	asm volatile("" : "+r"(a));
	return a ^ 1;
}

[[clang::xray_never_instrument]] static int32_t api_id(uintptr_t fn)
{
	for (size_t i = 1; i <= __xray_max_function_id(); i++)
		if (__xray_function_address((int32_t)i) == fn)
			return (int32_t)i;
	return 0;
}

[[clang::xray_never_instrument]] static int api_step(const char *what, const char *want)
{
	int ok = strcmp(seen, want) == 0;
	printf("%s: %s%s\n", what, seen, ok ? "" : "(unexpected)");
	seen[0] = '\0';
	return ok;
}

[[clang::xray_never_instrument]] int main()
{
	int ok = 1;

	id_leaf = api_id((uintptr_t)&api_leaf);
	id_tail = api_id((uintptr_t)&api_tail);
	id_args = api_id((uintptr_t)&api_args);
	printf("ids found: %d, max id %zu\n", id_leaf && id_tail && id_args,
	       __xray_max_function_id());
	api_leaf(1);
	printf("__xray_set_handler: %d\n", __xray_set_handler(api_handler));
	api_leaf(2);
	ok &= api_step("set, not patched", "");
	printf("__xray_patch: %d\n", (int)__xray_patch());
	api_leaf(3);
	ok &= api_step("leaf", "leaf:0 leaf:1 ");
	api_tail(4);
	ok &= api_step("tail", "tail:0 tail:2 leaf:0 leaf:1 ");
	api_args(0xcafe);
	ok &= api_step("args, no arg1 handler", "args:3 args:1 ");
	printf("__xray_set_handler_arg1: %d\n", __xray_set_handler_arg1(api_handler1));
	api_args(0xf00d);
	ok &= api_step("args", "args:3:f00d args:1 ");
	printf("__xray_remove_handler_arg1: %d\n", __xray_remove_handler_arg1());
	api_args(0xbeef);
	ok &= api_step("args, arg1 removed", "args:3 args:1 ");
	printf("__xray_remove_handler: %d\n", __xray_remove_handler());
	api_leaf(5);
	api_tail(6);
	api_args(7);
	ok &= api_step("all removed", "");
	return ok ? 0 : 1;
}
