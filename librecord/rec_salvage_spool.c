/*
 * rec_salvage_spool: the append loop and the image table shared by the salvagers that keep one
 * file per thread holding the ring's bytes as they are (formats/tfile/salvage_tfile.c,
 * formats/xray/salvage_xray.c, formats/ovni/salvage_ovni.c); see rec_salvage_spool.h.
 * Invariant: every chunk's write is bracketed by rec_salvage_chunk_begin/done, the drainer's
 * protocol (rec_salvage.h), so a salvage killed in the middle of a write finds cut_pos next
 * time and cuts the file back before anything is appended: nothing is written twice.
 */
#include "librecord/rec_salvage_spool.h"
#include "librecord/rec_util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* NAME in .flightrec for writing: its descriptor and size, or -1 said */
static int spool_open(struct rec_salvage_ctx *ctx, const char *name, off_t *size)
{
	struct stat st;
	int fd;

	fd = openat(ctx->ringdirfd, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		rec_salvage_log(ctx, "%s/.flightrec/%s: %s", ctx->dir, name,
				fd < 0 ? strerror(errno) : "not a regular file");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*size = st.st_size;
	return fd;
}

int rec_salvage_spool_append(struct rec_salvage_ctx *ctx, struct rec_salvage_ring *r, int fd,
			     off_t size, const struct rec_salvage_spool *sp, off_t *from, off_t *to)
{
	off_t pos;

	/* a cut_pos past the end is not ours to trust: the file is left as it is */
	if (r->cut && r->cut_pos >= 0 && r->cut_pos <= size && ftruncate(fd, r->cut_pos) < 0) {
		rec_salvage_log(ctx, "%s: cannot cut it back: %s", sp->label, strerror(errno));
		return -1;
	}
	pos = lseek(fd, 0, SEEK_END);
	if (from)
		*from = pos;
	for (size_t i = 0; i < r->nr_chunks; i++) {
		const struct rec_salvage_chunk *c = &r->chunks[i];
		size_t len = c->len - c->off;

		if (sp->before_chunk)
			sp->before_chunk(sp->arg, c);
		rec_salvage_chunk_begin(r, c, (int64_t)pos);
		if (rec_write_all(fd, c->data + c->off, len) < 0) {
			rec_salvage_log(ctx, "%s: write: %s", sp->label, strerror(errno));
			return -1;
		}
		pos += (off_t)len;
		rec_salvage_chunk_done(r, c);
		r->bytes += len;
		r->lost += c->lost_before;
		if (sp->count)
			r->events += sp->count(c->data + c->off, len);
	}
	r->lost += r->lost_tail;
	if (r->lost_tail)
		rec_salvage_tail_done(r);
	if (to)
		*to = pos;
	return 0;
}

int rec_salvage_spool_thread(struct rec_salvage_ctx *ctx, struct rec_salvage_ring *r,
			     const char *name, const char *logname,
			     const struct rec_salvage_spool *sp)
{
	char label[PATH_MAX + 96];
	struct rec_salvage_spool s = *sp;
	off_t size;
	int fd, ret;

	fd = spool_open(ctx, name, &size);
	if (fd < 0)
		return -1;
	snprintf(label, sizeof(label), "%s/.flightrec/%s", ctx->dir, logname);
	s.label = label;
	ret = rec_salvage_spool_append(ctx, r, fd, size, &s, NULL, NULL);
	close(fd);
	return ret;
}

ssize_t rec_salvage_image(void **v, size_t *n, size_t size, int32_t pid, uint64_t ns, bool *added)
{
	struct rec_salvage_image_id *id;
	uint8_t *nv;

	*added = false;
	for (size_t i = 0; i < *n; i++) {
		const struct rec_salvage_image_id *k = (const void *)((uint8_t *)*v + i * size);
		if (k->pid == pid && k->session_ns == ns)
			return (ssize_t)i;
	}
	nv = realloc(*v, (*n + 1) * size);
	if (!nv)
		return -1;
	*v = nv;
	memset(nv + *n * size, 0, size);
	id = (void *)(nv + *n * size);
	id->pid = pid;
	id->session_ns = ns;
	*added = true;
	return (ssize_t)(*n)++;
}
