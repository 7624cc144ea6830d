/* threads: T threads, each reads its own array and writes another, N elements, R rounds,
 * plus one atomic increment of a shared counter per round. Each thread prints its real thread
 * id; the trace must hold exactly its records under that id (nothing lost, nothing mixed). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define T 4
#define N 4096
#define R 16

struct work {
	long in[N];
	long out[N];
	pid_t tid;
};

static struct work w[T];
static _Atomic long counter;

__attribute__((noinline)) static void step(struct work *x, long k)
{
	for (int i = 0; i < N; i++)
		x->out[i] = x->in[i] + k;
}

static void *run(void *arg)
{
	struct work *x = arg;

	x->tid = (pid_t)syscall(SYS_gettid);
	for (long r = 0; r < R; r++) {
		step(x, r);
		atomic_fetch_add(&counter, 1);
	}
	return NULL;
}

int main(void)
{
	pthread_t th[T];

	for (int i = 0; i < T; i++)
		pthread_create(&th[i], NULL, run, &w[i]);
	for (int i = 0; i < T; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < T; i++) {
		printf("EXPECT tid=%d tag=0x00 size=8 lo=%p hi=%p count=%d\n", (int)w[i].tid,
		       (void *)w[i].in, (void *)(w[i].in + N), N * R);
		printf("EXPECT tid=%d tag=0x01 size=8 lo=%p hi=%p count=%d\n", (int)w[i].tid,
		       (void *)w[i].out, (void *)(w[i].out + N), N * R);
		printf("EXPECT tid=%d tag=0x40 size=8 lo=%p hi=%p count=%d\n", (int)w[i].tid,
		       (void *)&counter, (void *)(&counter + 1), R);
		printf("EXPECT tid=%d tag=0x41 size=8 lo=%p hi=%p count=%d\n", (int)w[i].tid,
		       (void *)&counter, (void *)(&counter + 1), R);
	}
	printf("THREADS %d\n", T + 1);
	return atomic_load(&counter) == T * R ? 0 : 1;
}
