/*
 * dso/many case: dlopens every library named on the command line (copies of one library with
 * sleds, each its own object), calls its b_top once, and keeps them all loaded: more objects
 * than function ids can name. Prints the sum of the results.
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	long s = 0;

	for (int i = 1; i < argc; i++) {
		void *h = dlopen(argv[i], RTLD_NOW);
		int (*f)(int) = h ? (int (*)(int))dlsym(h, "b_top") : NULL;

		if (!f) {
			fprintf(stderr, "dlopen %s: %s\n", argv[i], dlerror());
			return 2;
		}
		s += f(i);
	}
	printf("%ld\n", s);
	return 0;
}
