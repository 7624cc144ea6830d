/*
 * xcode: transcoding state of a sink fed another encoding (see xcode.h).
 */
#include "formats/xcode/xcode.h"
#include "librecord/rec_session.h"
#include "librecord/rec_util.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct xcode *xcode_new(uint32_t cap, size_t bufsize)
{
	size_t size = sizeof(struct xcode) + (size_t)cap * sizeof(uintptr_t) + bufsize;
	struct xcode *x;

	size = (size + 4095) & ~(size_t)4095;
	x = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (x == MAP_FAILED)
		return NULL;
	x->alloc = size;
	x->fd = -1;
	x->cap = cap;
	x->stack = (uintptr_t *)(x + 1);
	x->buf = (uint8_t *)(x->stack + cap);
	x->size = bufsize;
	x->dec.enc = rec_sess.fe ? rec_sess.fe->encoding : REC_ENC_NONE;
	x->dec.fn_addr = rec_sess.fe ? rec_sess.fe->fn_addr : NULL;
	return x;
}

int xcode_attach(struct rec_thread *t, uint32_t cap, size_t bufsize, const char *nomem)
{
	struct xcode *x = xcode_new(cap, bufsize);

	if (!x) {
		rec_warn("%s", nomem);
		close(t->sink_fd);
		t->sink_fd = -1;
		return -1;
	}
	x->fd = t->sink_fd;
	t->sink_priv = x;
	return 0;
}

void xcode_free(struct xcode *x)
{
	if (x)
		munmap(x, x->alloc);
}

int xcode_flush(struct xcode *x)
{
	if (x->len && !x->bad && (x->fd < 0 || rec_write_all(x->fd, x->buf, x->len) < 0))
		x->bad = 1;
	x->len = 0;
	return x->bad ? -1 : 0;
}

uint8_t *xcode_room(struct xcode *x, size_t n)
{
	if (n > x->size)
		return NULL;
	if (x->len + n > x->size)
		xcode_flush(x);
	return x->buf + x->len;
}
