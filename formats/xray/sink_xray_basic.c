/*
 * sink_xray_basic: compiler-rt's basic ("naive") logging mode, xray_mode=xray-basic, written
 * from the FDR records xray-rt's hooks put in its rings: the hot path is the FDR one, unchanged
 * (no lock, no syscall, no allocation), and the basic log is made at finish from the thread
 * spools sink_xray.c keeps (xray_finish calls xb_transcode for each thread instead of
 * assembling an FDR log).
 *
 * compiler-rt's filters, applied here as its handler applies them on each event:
 *  - max_stack_depth: an entry deeper than that many open calls is not written, nor its exit
 *    (nor its argument);
 *  - func_duration_threshold_us: when an exit comes on the CPU of its entry less than the
 *    threshold after it, the entry (and its argument) is taken back out of the thread's buffer
 *    and the exit is not written, if the entry is still in the buffer (thread_buffer_size
 *    records, written when full) and nothing was written after it.
 * What differs: compiler-rt forgets its whole shadow stack each time a buffer is written (the
 * depth filter then counts from there); this keeps counting from the thread's first call.
 * An exit without its entry in the stream (a gap: overwrite policy) is left out, so that
 * llvm-xray account accepts the log.
 *
 * Invariant: the writes are whole records, and an enter-with-argument record and its argument
 * are always in the same write, so logs that several processes append to (a fork child writes
 * to its parent's log, as under compiler-rt) stay well-formed. Each process appends at its
 * end, under an exclusive flock, then puts the processes' parts in the order of their first
 * record's TSC (xb_order_runs): a child usually ends before its parent, and `llvm-xray
 * account`, which replays a basic log in file order, rejects any record below the first one.
 */
#include "formats/xray/sink_xray_basic.h"
#include "formats/xray/xray_flags.h"
#include "formats/xray/fdr_encode.h"
#include "librecord/rec_util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

struct xb_log xb_log;

void xb_options_default(struct xb_options *o)
{
	o->threshold_us = 5;
	o->max_depth = 64;
	o->buffer_size = 1024;
}

/* compiler-rt's flag syntax (xray_flags.h). Only the names we know are taken; compiler-rt
 * warns about others and goes on. */
int xb_options_parse(struct xb_options *o, const char *flags, const char *prefix)
{
	static const char *const names[] = {"func_duration_threshold_us", "max_stack_depth",
					    "thread_buffer_size"};
	size_t plen = prefix ? strlen(prefix) : 0, nlen, vlen;
	const char *p = flags, *name, *val;
	int bad = 0;

	while (xray_flag_next(&p, &name, &nlen, &val, &vlen)) {
		if (nlen < plen || strncmp(name, prefix ? prefix : "", plen) != 0)
			continue;
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			char num[32], *end;
			unsigned long long v;
			if (nlen - plen != strlen(names[i]) ||
			    strncmp(name + plen, names[i], nlen - plen) != 0)
				continue;
			if (vlen == 0 || vlen >= sizeof(num)) {
				bad = -1;
				break;
			}
			memcpy(num, val, vlen);
			num[vlen] = '\0';
			v = strtoull(num, &end, 10);
			if (*end || num[0] == '-') {
				bad = -1;
				break;
			}
			if (i == 0)
				o->threshold_us = v;
			else if (i == 1)
				o->max_depth = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
			else
				o->buffer_size = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
		}
	}
	return bad;
}

void xb_put_header(uint8_t *p, uint64_t hz, uint32_t bits)
{
	_Static_assert(XB_HEADER_SIZE == FDR_HEADER_SIZE, "one XRay file header");
	xray_put_file_header(p, XB_VERSION, XB_TYPE_NAIVE, bits, hz, 0);
}

/* the buffer out, whole records */
static int xb_write_out(struct xb_work *w)
{
	if (w->n && rec_write_all(w->fd, w->out, w->n * XB_RECORD_SIZE) < 0)
		return -1;
	w->written += w->n;
	w->n = 0;
	return 0;
}

int xb_flush(struct xb_work *w)
{
	return xb_write_out(w);
}

static uint8_t *xb_room(struct xb_work *w, size_t records)
{
	if (w->n + records > w->cap && xb_write_out(w) < 0)
		return NULL;
	return w->out + w->n * XB_RECORD_SIZE;
}

static void xb_put_fn(uint8_t *r, uint8_t cpu, uint8_t type, uint32_t fid, uint64_t tsc,
		      uint32_t tid, uint32_t pid)
{
	uint16_t rt = XB_REC_FUNCTION;

	memset(r, 0, XB_RECORD_SIZE);
	memcpy(r, &rt, 2);
	r[2] = cpu;
	r[3] = type;
	memcpy(r + 4, &fid, 4);
	memcpy(r + 8, &tsc, 8);
	memcpy(r + 16, &tid, 4);
	memcpy(r + 20, &pid, 4);
}

static void xb_put_arg(uint8_t *r, uint32_t fid, uint32_t tid, uint32_t pid, uint64_t arg)
{
	uint16_t rt = XB_REC_ARG;

	memset(r, 0, XB_RECORD_SIZE);
	memcpy(r, &rt, 2);
	memcpy(r + 4, &fid, 4);
	memcpy(r + 8, &tid, 4);
	memcpy(r + 12, &pid, 4);
	memcpy(r + 16, &arg, 8);
}

int xb_transcode(struct xb_work *w, const struct xb_options *o, uint64_t threshold_ticks,
		 const uint8_t *d, size_t n, uint32_t tid, uint32_t pid)
{
	uint64_t tsc = 0;
	uint16_t cpu = 0;
	size_t pos = 0;
	int arg_wanted = 0; /* the last record: an enter-with-argument written (its arg next) */
	uint32_t arg_fid = 0;

	while (pos < n) {
		const uint8_t *p = d + pos;

		if (!(p[0] & 1)) { /* function record */
			uint32_t word, delta, fid;
			unsigned type;
			uint8_t *r;

			if (pos + FDR_FN_SIZE > n)
				return -1;
			memcpy(&word, p, 4);
			memcpy(&delta, p + 4, 4);
			pos += FDR_FN_SIZE;
			tsc += delta;
			type = (word >> 1) & 7;
			fid = word >> 4;
			arg_wanted = 0;
			if (type == FDR_ENTER || type == FDR_ENTER_ARGS) {
				if (w->depth++ >= o->max_depth) {
					w->filtered++;
					continue;
				}
				if (!(r = xb_room(w, type == FDR_ENTER_ARGS ? 2 : 1)))
					return -1;
				if (w->depth <= w->stack_cap)
					w->stack[w->depth - 1] =
						(struct xb_frame){fid, (uint8_t)cpu, (uint8_t)type,
								  tsc, w->written + w->n};
				xb_put_fn(r, (uint8_t)cpu, (uint8_t)type, fid, tsc, tid, pid);
				w->n++;
				arg_wanted = type == FDR_ENTER_ARGS;
				arg_fid = fid;
				continue;
			}
			if (type != FDR_EXIT && type != FDR_TAIL_EXIT)
				return -1;
			if (w->depth == 0) { /* its entry is not in the stream */
				w->filtered++;
				continue;
			}
			if (--w->depth >= o->max_depth) {
				w->filtered++;
				continue;
			}
			if (w->depth < w->stack_cap) {
				const struct xb_frame *top = &w->stack[w->depth];
				size_t nrec = top->type == FDR_ENTER_ARGS ? 2 : 1;
				if (top->fid == fid && top->cpu == (uint8_t)cpu && top->tsc < tsc &&
				    tsc - top->tsc < threshold_ticks && top->at >= w->written &&
				    top->at + nrec == w->written + w->n) {
					w->n -= nrec; /* a short call: taken back out */
					w->filtered += nrec + 1;
					continue;
				}
			}
			if (!(r = xb_room(w, 1)))
				return -1;
			xb_put_fn(r, (uint8_t)cpu, (uint8_t)type, fid, tsc, tid, pid);
			w->n++;
			continue;
		}
		/* metadata */
		if (pos + FDR_META_SIZE > n)
			return -1;
		switch (p[0] >> 1) {
		case FDR_NEW_CPU:
			memcpy(&cpu, p + 1, 2);
			memcpy(&tsc, p + 3, 8);
			arg_wanted = 0;
			break;
		case FDR_TSC_WRAP:
			memcpy(&tsc, p + 1, 8);
			arg_wanted = 0;
			break;
		case FDR_CALL_ARG:
			if (arg_wanted) { /* room for it was made with its entry */
				uint64_t arg;
				memcpy(&arg, p + 1, 8);
				xb_put_arg(w->out + w->n * XB_RECORD_SIZE, arg_fid, tid, pid, arg);
				w->n++;
			} else {
				w->filtered++;
			}
			arg_wanted = 0;
			break;
		case FDR_CUSTOM_EVENT: { /* basic mode has no custom events: its time only */
			int32_t size, delta;
			memcpy(&size, p + 1, 4);
			memcpy(&delta, p + 5, 4);
			if (size < 0 || (uint64_t)size > n - pos - FDR_META_SIZE)
				return -1;
			tsc += (uint64_t)(int64_t)delta;
			pos += (size_t)size;
			arg_wanted = 0;
			break;
		}
		default:
			return -1;
		}
		pos += FDR_META_SIZE;
	}
	return 0;
}

/* the pid of the record at p (function or argument record) */
static uint32_t xb_rec_pid(const uint8_t *p)
{
	uint32_t pid;

	memcpy(&pid, p + (p[0] == XB_REC_ARG && p[1] == 0 ? 12 : 20), 4);
	return pid;
}

int xb_order_runs(int fd)
{
	struct stat st;
	size_t nrec, nruns = 0, size;
	uint8_t *m, *tmp;
	struct xb_run {
		size_t first, n;
		uint64_t tsc;
	} * runs;
	int ret = -1, sorted = 1;

	if (fstat(fd, &st) < 0 || st.st_size < XB_HEADER_SIZE ||
	    (st.st_size - XB_HEADER_SIZE) % XB_RECORD_SIZE)
		return -1;
	size = (size_t)st.st_size;
	nrec = (size - XB_HEADER_SIZE) / XB_RECORD_SIZE;
	if (nrec < 2)
		return 0;
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return -1;
	for (size_t i = 0; i < nrec; i++) {
		const uint8_t *p = m + XB_HEADER_SIZE + i * XB_RECORD_SIZE;
		nruns += i == 0 || xb_rec_pid(p) != xb_rec_pid(p - XB_RECORD_SIZE);
	}
	/* scratch: the runs, then a copy of the records */
	tmp = nruns > 1 ? mmap(NULL, nruns * sizeof(*runs) + size - XB_HEADER_SIZE,
			       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
			: NULL;
	if (nruns <= 1) {
		ret = 0;
		goto out;
	}
	if (tmp == MAP_FAILED)
		goto out;
	runs = (struct xb_run *)tmp;
	nruns = 0;
	for (size_t i = 0; i < nrec; i++) {
		const uint8_t *p = m + XB_HEADER_SIZE + i * XB_RECORD_SIZE;
		if (i == 0 || xb_rec_pid(p) != xb_rec_pid(p - XB_RECORD_SIZE)) {
			runs[nruns].first = i;
			runs[nruns].n = 0;
			memcpy(&runs[nruns].tsc, p + 8, 8); /* a run starts with a function */
			nruns++;
		}
		runs[nruns - 1].n++;
	}
	/* stable insertion sort by first TSC: a handful of processes */
	for (size_t i = 1; i < nruns; i++) {
		struct xb_run r = runs[i];
		size_t j = i;
		while (j > 0 && runs[j - 1].tsc > r.tsc) {
			runs[j] = runs[j - 1];
			j--;
			sorted = 0;
		}
		runs[j] = r;
	}
	if (!sorted) {
		uint8_t *copy = tmp + nruns * sizeof(*runs), *q = copy;
		for (size_t i = 0; i < nruns; i++) {
			memcpy(q, m + XB_HEADER_SIZE + runs[i].first * XB_RECORD_SIZE,
			       runs[i].n * XB_RECORD_SIZE);
			q += runs[i].n * XB_RECORD_SIZE;
		}
		memcpy(m + XB_HEADER_SIZE, copy, size - XB_HEADER_SIZE);
	}
	munmap(tmp, nruns * sizeof(*runs) + size - XB_HEADER_SIZE);
	ret = 0;
out:
	munmap(m, size);
	return ret;
}
