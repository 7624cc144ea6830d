/*
 * pmushim.c - a test-only LD_PRELOAD shim (filter/read-fds) standing in for a kernel with a
 * PMU where there is none: syscall(SYS_perf_event_open, ...) gives a descriptor on /dev/zero
 * (reads give zeros: no value recorded, but the descriptor is held and read as a counter
 * would be), every other syscall goes to libc's.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

long syscall(long n, ...)
{
	static long (*real)(long, ...);
	va_list ap;
	long a[6];

	va_start(ap, n);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (n == SYS_perf_event_open)
		return open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	return real(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}
