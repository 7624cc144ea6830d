/*
 * dlcaller_lib.c - the library progs/dlcaller.c loads. Its constructor runs inside the dlopen
 * and takes a backtrace there (the unwinder walks back through the runtime's dlopen call).
 */
#include <execinfo.h>

static int dcl_frames;

__attribute__((constructor)) static void dcl_init(void)
{
	void *pcs[64];

	dcl_frames = backtrace(pcs, 64);
}

int dcl_value(void)
{
	return dcl_frames > 0 ? 21 : -1;
}
