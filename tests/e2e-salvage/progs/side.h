/*
 * side.h: the side channel killme.c and ovni_killme.c report their progress through, read by
 * the runner (tests/e2e-salvage/run: read_side, its MAX_SLOTS). A file mapped shared: a header
 * {slots used} then one slot per thread {pid, tid, calls}; a thread takes a slot with a
 * fetch-add on `used`, fills in pid, then tid with a release store, then stores its count of
 * finished calls (or pairs) into `calls` with a release store after each one.
 */
#ifndef SIDE_H
#define SIDE_H

#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_SLOTS 4096

struct slot {
	int32_t pid, tid;
	uint64_t calls;
};

struct side {
	uint64_t used;
	uint64_t pad[7];
	struct slot slot[MAX_SLOTS];
};

/* PATH created (emptied) and mapped shared as the side channel, its descriptor left open;
 * NULL when it cannot be */
static inline struct side *side_map(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	void *p;

	if (fd < 0 || ftruncate(fd, sizeof(struct side)) < 0)
		return NULL;
	p = mmap(NULL, sizeof(struct side), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

#endif
