/*
 * ovni_state: the process's ovni state and the helpers the API and the writer share (see
 * ovni_state.h): messages in libovni's shape, the CPU lists, the reference a freeing thread
 * waits on.
 */
#include "formats/ovni/ovni_state.h"
#include "librecord/rec_util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ovni_proc ovni_proc = { .lock = PTHREAD_MUTEX_INITIALIZER };

void ovni_vmsg(const char *prefix, const char *func, const char *fmt, va_list ap)
{
	char buf[1024];
	int saved = errno;
	size_t n = (size_t)snprintf(buf, sizeof(buf), "%s: ", prefix);
	int m;

	if (func)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s: ", func);
	m = vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	if (m > 0)
		n = n + (size_t)m < sizeof(buf) ? n + (size_t)m : sizeof(buf) - 1;
	if (n > 0 && buf[n - 1] == ':' && n < sizeof(buf) - 2)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, " %s", strerror(saved));
	if (n >= sizeof(buf) - 1)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	rec_stderr_write(buf, n); /* the helper's warnings too (its table is its own) */
	errno = saved;
}

void ovni_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ovni_vmsg("WARN", NULL, fmt, ap);
	va_end(ap);
}

void ovni_done_put(struct ovni_done *d)
{
	/* acq_rel: the last holder sees the other's writes before freeing */
	if (__atomic_sub_fetch(&d->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(d);
}

int ovni_cpus_add(struct ovni_cpus *c, int index, int phyid)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct ovni_cpu *v = realloc(c->v, cap * sizeof(*v));
		if (!v)
			return -1;
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n].index = index;
	c->v[c->n].phyid = phyid;
	c->n++;
	return 0;
}
