/* work: the instrumented part of killme (built with the front end's flags). Each call of work
 * is 4 records in a uftrace trace (work and leaf, entry and exit) and spins a little (killme's
 * spin=N; 30000 by default), so that a run of a few hundred milliseconds fills many small
 * chunks without a huge trace. */
extern int leaf_spin;

__attribute__((noinline)) int leaf(int x)
{
	volatile int s = x;
	for (int i = 0; i < leaf_spin; i++)
		s += i;
	return s;
}

__attribute__((noinline)) int work(int i)
{
	return leaf(i) + 1;
}
