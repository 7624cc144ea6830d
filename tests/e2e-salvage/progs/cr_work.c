/* cr_work: killme.c's work() for cacheray-rt, built with -fsanitize=thread: one instrumented
 * 8-byte store per call (one WRITE record), then a spin that touches no memory, so the trace
 * holds exactly one record per call of the thread. */
long cr_slots[64];

__attribute__((noinline)) int work(int i)
{
	cr_slots[i & 63] = i;
	for (int k = 0; k < 3000; k++)
		__asm__ __volatile__("");
	return 0;
}
