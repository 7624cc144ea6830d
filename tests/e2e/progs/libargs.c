/*
 * libargs: library calls whose arguments and return values the -A/-R and -a cases record
 * (tests/e2e/run ArgsCases, the lib-* and auto-* cases): integers, strings (in the executable
 * and on the heap), a double argument and a double return value, a variadic call with
 * arguments on the stack, and calls uftrace's auto-args table describes with enum values
 * (open, mmap, mprotect, kill). Every value recorded is the same from run to run but the
 * addresses mmap and malloc return (the cases that record them mask them): no file descriptor
 * is opened (the tracer's own would shift its number).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile int sink;
/* volatile: gcc -O2 would compute strlen and strcmp of known strings itself */
static const char *volatile exe_str = "in the executable", *volatile hello = "hello";

int main(int argc, char **argv)
{
	char buf[64], src[12] = "on the heap";
	char *volatile p = malloc(32);
	double d;
	int n, fd;
	void *m;

	(void)argv;
	memcpy(p, src, sizeof(src));
	/* a string of the executable: uftrace names a /p pointer into its data by the data
	 * symbol before it (&_IO_stdin_used), from the .sym file */
	memcpy(buf, "in the executable", 18);
	n = (int)strlen(exe_str);
	n += (int)strlen(p);
	n += atoi("100");
	d = atof("2.5");
	n += snprintf(buf, sizeof(buf), "%d %d %d %d %d", 1, 2, 3, 4, 5);
	n += printf("libargs: %s %d %g\n", "say", argc, d * 1.5);
	n += strcmp(hello, "hello");
	free(p);
	fd = open("/nonexistent/libargs", O_RDONLY); /* -1 */
	m = mmap(NULL, 4096, PROT_READ, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
	n += mprotect(m, 4096, PROT_NONE);
	n += munmap(m, 4096);
	n += close(fd);
	n += kill(0, 0);
	sink = n;
	return 0;
}
