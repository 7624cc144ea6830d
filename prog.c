#include <stdio.h>
#include <string.h>
#include <unistd.h>
__attribute__((noinline)) void work(void) { asm volatile(""); }
int main(void)
{
	int p[2]; char buf[64] = {0}; ssize_t n;
	work();                      /* read=pmu-cycle: our counters opened here */
	for (int fd = 3; fd < 64; fd++) close(fd);  /* the program's closefrom(3) */
	if (pipe(p) < 0) return 1;
	printf("pipe fds %d %d\n", p[0], p[1]); fflush(stdout);
	write(p[1], "0123456789abcdefghijklmnopqrstuvwxyz\n", 37);
	work();                      /* read= again */
	n = read(p[0], buf, sizeof(buf) - 1);
	printf("program read %zd bytes: %s", n, buf);
	return 0;
}
