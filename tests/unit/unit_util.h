/*
 * unit_util: what the unit tests that work on a trace directory share: a fresh directory under
 * /tmp (with its .flightrec, or not yet) and its removal, a text file written into it, and a
 * ring file built by hand the way the runtime leaves it (librecord/rec_ring.h: the header,
 * then every chunk FREE with its magic; the test fills in what it needs), the build's
 * libovni.so.1 opened (the ovni tests call the library itself), and the path of a golden
 * sample of tests/samples (a missing one fails the test: a skip would hide it), and what a
 * call wrote on stderr (the runtime's warnings).
 * Header-only, static inline: each test binary is one .c file and uses a part of it. The
 * helpers fail the test (cmocka) when the file system says no; include <cmocka.h> first.
 */
#ifndef UNIT_UTIL_H
#define UNIT_UTIL_H

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "librecord/rec_ring.h"

/* The build's libovni.so.1 (build/, or $FLIGHTREC_BUILD; tests run from the repo root),
 * NULL with the reason on stderr. */
static inline void *unit_open_libovni(void)
{
	const char *b = getenv("FLIGHTREC_BUILD");
	char path[512];
	void *h;

	snprintf(path, sizeof(path), "%s/lib/libovni.so.1", b ? b : "build");
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		fprintf(stderr, "cannot load %s: %s (run make; tests run from the repo root)\n",
			path, dlerror());
	return h;
}

/* PATH[SIZE] := the golden sample REL of tests/samples ($FLIGHTREC_SAMPLES, or the directory
 * of the checkout the test was built from, which the Makefile passes as FLIGHTREC_SAMPLES_DIR).
 * Fails the test when it is not there: the tree carries its samples, so a missing one is a
 * broken checkout or a wrong path, never a reason to skip. */
static inline void unit_sample_path(char *path, size_t size, const char *rel)
{
	const char *env = getenv("FLIGHTREC_SAMPLES");
	const char *dir = env && *env ? env : FLIGHTREC_SAMPLES_DIR;
	struct stat st;

	snprintf(path, size, "%s/%s", dir, rel);
	if (stat(path, &st) != 0)
		fail_msg("golden sample %s: %s (tests/samples is part of the tree; "
			 "FLIGHTREC_SAMPLES overrides its path)", path, strerror(errno));
}

/* FN(ARG) with fd 2 sent to a temporary file; returns what it wrote there (malloc'ed, NUL
 * terminated; the caller frees it). rec_warn writes fd 2 directly, so this sees each warning. */
static inline char *unit_stderr_of(void (*fn)(void *), void *arg)
{
	FILE *tmp = tmpfile();
	int saved;
	long len;
	char *text;

	assert_non_null(tmp);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
	fn(arg);
	fflush(stderr);
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	len = (long)lseek(fileno(tmp), 0, SEEK_END);
	assert_true(len >= 0);
	text = calloc(1, (size_t)len + 1);
	assert_non_null(text);
	assert_int_equal(pread(fileno(tmp), text, (size_t)len, 0), len);
	fclose(tmp);
	return text;
}

/* the number of lines of TEXT */
static inline int unit_lines(const char *text)
{
	int n = 0;

	for (; *text; text++)
		n += *text == '\n';
	return n;
}

/* DIR[SIZE] := a new /tmp/<NAME>.XXXXXX, with an empty .flightrec in it when FLIGHTREC */
static inline void unit_tmpdir_make(char *dir, size_t size, const char *name, bool flightrec)
{
	char p[512];

	snprintf(dir, size, "/tmp/%s.XXXXXX", name);
	assert_non_null(mkdtemp(dir));
	if (!flightrec)
		return;
	snprintf(p, sizeof(p), "%s/.flightrec", dir);
	assert_int_equal(mkdir(p, 0755), 0);
}

static inline int unit_rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)f;
	return flag == FTW_DP ? rmdir(p) : unlink(p);
}

/* DIR and everything below it */
static inline void unit_tmpdir_remove(const char *dir)
{
	nftw(dir, unit_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* DIR/NAME := TEXT */
static inline void unit_write_file(const char *dir, const char *name, const char *text)
{
	char p[2048];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* a ring file, mapped read-write */
struct unit_ring {
	int fd;
	uint8_t *map;
	size_t size;
	struct rec_ring_hdr *h;
};

/* DIR/.flightrec/ring.<PID>.<TID> of NCHUNK chunks of CHUNK bytes, FORMAT's, policy 2, no
 * write yet (write_pos -1) */
static inline void unit_ring_create(struct unit_ring *r, const char *dir, int pid, int tid,
				    const char *format, uint32_t chunk, uint32_t nchunk,
				    uint64_t session_ns)
{
	char p[512];

	r->size = REC_RING_HDR_SIZE + (size_t)chunk * nchunk;
	snprintf(p, sizeof(p), "%s/.flightrec/ring.%d.%d", dir, pid, tid);
	r->fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(r->fd >= 0);
	assert_int_equal(ftruncate(r->fd, (off_t)r->size), 0);
	r->map = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	assert_true(r->map != MAP_FAILED);
	r->h = (struct rec_ring_hdr *)r->map;
	memcpy(r->h->magic, REC_RING_MAGIC, 8);
	r->h->version = REC_RING_VERSION;
	r->h->hdr_size = REC_RING_HDR_SIZE;
	r->h->chunk_size = chunk;
	r->h->chunk_count = nchunk;
	r->h->pid = pid;
	r->h->tid = tid;
	r->h->policy = 2;
	snprintf(r->h->format, sizeof(r->h->format), "%s", format);
	r->h->session_ns = session_ns;
	r->h->write_pos = -1;
	for (uint32_t i = 0; i < nchunk; i++) {
		struct rec_chunk *c =
			(struct rec_chunk *)(r->map + REC_RING_HDR_SIZE + (size_t)i * chunk);
		c->magic = REC_CHUNK_MAGIC;
	}
}

static inline void unit_ring_close(struct unit_ring *r)
{
	munmap(r->map, r->size);
	close(r->fd);
}

#endif
