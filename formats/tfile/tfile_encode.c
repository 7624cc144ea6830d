/*
 * tfile_encode: GDB trace file bytes, shared by the sink and salvage (see tfile_encode.h).
 *
 * What gdb 13 reads (shared/anchors/gdb-tfile.md, gdb/tracefile-tfile.c):
 *   "\x7fTRACE0\n", then definition lines, then an empty line, then frames
 *   {u16 tracepoint, u32 size, blocks}, then a u16 0 (we write u32 0, as gdb does). Blocks:
 *   'R' + the register block (size from the "R <hex>" line), 'M' + u64 address + u16 length +
 *   bytes, 'V' + i32 variable + i64 value. Numbers on definition lines are hex; a line is
 *   under 1000 bytes.
 * What we write:
 *   R 230          the 560-byte amd64-linux block (no tdesc line: gdb takes the program's)
 *   status 0;tstop:<stop_desc>:0;tframes:<frames>;tcreated:<hits>;starttime:..;
 *                  stoptime:..;notes:<"func: N hits, M frames; ...">  (tstatus prints these)
 *   tsv 1 tid, 2 ts_ns, 3 hits (the hit's ordinal among its tracepoint's hits), and one per
 *                  tracepoint, 16 + its number, hits_<function> with the tracepoint's hit
 *                  count as its initial value (`info tvariables` lists them all, when the
 *                  status notes have no room for every tracepoint)
 *   per tracepoint, numbers DESCENDING (gdb prepends each to its list; only then do its own
 *   numbers match ours, which `tfind tracepoint N` needs): T (enabled), Z at "*0x<addr>"
 *   (an address, so PIE symbols at any bias resolve it), Z cmd "collect $regs, $args, ..."
 *   (tdump prints that source form), V hit count and bytes used
 *   frames in time order over all threads: R, M [rsp, rsp + FLIGHTREC_TP_STACK), V tid,
 *   V ts_ns, V hits; then the end marker.
 * Invariant: only records that pass tfile_spool_next become frames (whole, the right magic and
 * size, a defined tracepoint, a stack slice that fits an M block), so whatever a spool holds,
 * the file is well formed.
 */
#include "formats/tfile/tfile_encode.h"
#include "librecord/rec_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define TFILE_TSV_TID  1
#define TFILE_TSV_TS   2
#define TFILE_TSV_HITS 3
#define TFILE_TSV_TP0  16 /* + tracepoint number: hits_<function>, initial value = its hits */
#define TFILE_COLLECT  "collect $regs, $args, $tid, $ts_ns, $hits"

/* --- frames ---------------------------------------------------------------------------- */

size_t tfile_frame_size(const struct rec_tp_frame *f)
{
	return 6 + 1 + TFILE_REGBLOCK_SIZE + (f->stack_len ? 1 + 8 + 2 + f->stack_len : 0) +
	       3 * (1 + 4 + 8);
}

size_t tfile_frame_max(void)
{
	return tfile_frame_size(&(struct rec_tp_frame){.stack_len = 65535});
}

static uint8_t *tfile_put(uint8_t *p, const void *v, size_t n)
{
	memcpy(p, v, n);
	return p + n;
}

static uint8_t *tfile_put_tsv(uint8_t *p, int32_t num, int64_t v)
{
	*p++ = 'V';
	p = tfile_put(p, &num, 4);
	return tfile_put(p, &v, 8);
}

/* gdb's amd64-linux register block, remote `g' packet order */
static void tfile_regblock(const struct rec_tp_regs *r, uint8_t *b)
{
	uint32_t v32;
	uint64_t v64;

	memset(b, 0, TFILE_REGBLOCK_SIZE);
	memcpy(b, r->gpr, 16 * 8); /* rax .. r15 */
	memcpy(b + 128, &r->rip, 8);
	v32 = (uint32_t)r->eflags;
	memcpy(b + 136, &v32, 4);
	v32 = 0x33; /* cs, as on x86-64 Linux user space */
	memcpy(b + 140, &v32, 4);
	v32 = 0x2b; /* ss; ds es fs gs are 0 */
	memcpy(b + 144, &v32, 4);
	/* st0-7 at 164: empty at a function's entry (the ABI leaves the x87 stack empty) */
	v32 = r->fcw;
	memcpy(b + 244, &v32, 4);
	v32 = r->fsw;
	memcpy(b + 248, &v32, 4);
	v32 = 0xffff; /* ftag: every register empty */
	memcpy(b + 252, &v32, 4);
	memcpy(b + 276, r->xmm, 256); /* xmm0-15 */
	memcpy(b + 532, &r->mxcsr, 4);
	v64 = (uint64_t)-1; /* orig_rax: not in a system call */
	memcpy(b + 536, &v64, 8);
	memcpy(b + 544, &r->fs_base, 8);
	/* gs_base 0 */
}

size_t tfile_encode_frame(const struct rec_tp_frame *f, uint8_t *out)
{
	uint16_t tp = f->tpnum;
	uint32_t size = (uint32_t)(tfile_frame_size(f) - 6);
	uint8_t *p = out;

	p = tfile_put(p, &tp, 2);
	p = tfile_put(p, &size, 4);
	*p++ = 'R';
	tfile_regblock(&f->regs, p);
	p += TFILE_REGBLOCK_SIZE;
	if (f->stack_len) {
		uint64_t addr = f->regs.gpr[REC_TP_RSP];
		uint16_t len = (uint16_t)f->stack_len;
		*p++ = 'M';
		p = tfile_put(p, &addr, 8);
		p = tfile_put(p, &len, 2);
		p = tfile_put(p, f + 1, f->stack_len);
	}
	p = tfile_put_tsv(p, TFILE_TSV_TID, (int64_t)f->tid);
	p = tfile_put_tsv(p, TFILE_TSV_TS, (int64_t)f->ns);
	p = tfile_put_tsv(p, TFILE_TSV_HITS, (int64_t)f->hit);
	return (size_t)(p - out);
}

int tfile_spool_next(struct tfile_spool *sp, uint32_t ntp)
{
	struct rec_tp_frame f;

	if (sp->pos > sp->size || sp->size - sp->pos < sizeof(f))
		return 0;
	memcpy(&f, sp->data + sp->pos, sizeof(f) - sizeof(f.regs));
	if (f.magic != REC_TP_FRAME_MAGIC || f.stack_len > 65535 ||
	    f.size != rec_tp_frame_size(f.stack_len) || f.size > sp->size - sp->pos ||
	    f.tpnum == 0 || f.tpnum > ntp)
		return 0;
	sp->ns = f.ns;
	return 1;
}

/* --- output ---------------------------------------------------------------------------- */

void tfile_flush(struct tfile_out *o)
{
	if (!o->bad && o->len && rec_write_all(o->fd, o->buf, o->len) < 0)
		o->bad = 1;
	o->bytes += o->len;
	o->len = 0;
}

void tfile_emit(struct tfile_out *o, const void *p, size_t n)
{
	if (o->len + n > TFILE_OUTBUF)
		tfile_flush(o);
	if (n > TFILE_OUTBUF) {
		if (!o->bad && rec_write_all(o->fd, p, n) < 0)
			o->bad = 1;
		o->bytes += n;
		return;
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

void tfile_line(struct tfile_out *o, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	tfile_emit(o, line, (size_t)n);
}

/* hex of a string, as gdb's bin2hex; into out (room for 2 * strlen + 1) */
static char *tfile_hex(char *out, size_t size, const char *s)
{
	static const char digits[] = "0123456789abcdef";
	size_t i = 0;

	for (; *s && i + 2 < size; s++) {
		out[i++] = digits[(uint8_t)*s >> 4];
		out[i++] = digits[(uint8_t)*s & 15];
	}
	out[i] = '\0';
	return out;
}

/* hits_<function name>, made an identifier ([A-Za-z0-9_]); _<n> added to a name taken */
static void tfile_tsv_name(const struct rec_tp *tps, uint32_t i, char *out, size_t size)
{
	size_t n = rec_snprintf(out, size, "hits_%s", tps[i].name);

	for (size_t k = 5; k < n; k++) {
		char c = out[k];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
			out[k] = '_';
	}
	for (uint32_t j = 0; j < i; j++)
		if (!strcmp(tps[j].name, tps[i].name)) {
			rec_snprintf(out + n, size - n, "_%u", tps[i].num);
			break;
		}
}

static void tfile_definitions(struct tfile_out *o, const struct tfile_trace *t, uint64_t frames,
			      const uint64_t *tp_frames, const uint64_t *tp_bytes)
{
	char notes[360], hex[1000], src[64];
	uint64_t hits = 0;
	size_t nl = 0;

	tfile_emit(o, "\x7fTRACE0\n", 8);
	tfile_line(o, "R %x\n", TFILE_REGBLOCK_SIZE);
	notes[0] = '\0';
	for (uint32_t i = 0; i < t->ntp; i++) {
		const struct rec_tp *tp = &t->tps[i];
		uint64_t h = __atomic_load_n(&tp->hits, __ATOMIC_RELAXED);
		size_t k;
		hits += h;
		k = rec_snprintf(notes + nl, sizeof(notes) - nl, "%s%s: %llu hits, %llu frames",
				 i ? "; " : "", tp->name, (unsigned long long)h,
				 (unsigned long long)tp_frames[i]);
		if (nl + k >= sizeof(notes) - 1) {
			rec_snprintf(notes + (nl < sizeof(notes) - 4 ? nl : sizeof(notes) - 4), 4,
				     "...");
			break;
		}
		nl += k;
	}
	tfile_line(o,
		   "status 0;tstop:%s:0;tframes:%llx;tcreated:%llx;starttime:%llx;stoptime:%llx;",
		   tfile_hex(hex, sizeof(hex), t->stop_desc), (unsigned long long)frames,
		   (unsigned long long)(hits > frames ? hits : frames),
		   (unsigned long long)t->start_us, (unsigned long long)t->stop_us);
	tfile_line(o, "notes:%s\n", tfile_hex(hex, sizeof(hex), notes));
	tfile_line(o, "tsv %x:0:0:%s\n", TFILE_TSV_TID, tfile_hex(hex, sizeof(hex), "tid"));
	tfile_line(o, "tsv %x:0:0:%s\n", TFILE_TSV_TS, tfile_hex(hex, sizeof(hex), "ts_ns"));
	tfile_line(o, "tsv %x:0:0:%s\n", TFILE_TSV_HITS, tfile_hex(hex, sizeof(hex), "hits"));
	for (uint32_t i = 0; i < t->ntp; i++) {
		char name[REC_TP_NAME_MAX + 16];
		tfile_tsv_name(t->tps, i, name, sizeof(name));
		tfile_line(o, "tsv %x:%llx:0:%s\n", TFILE_TSV_TP0 + t->tps[i].num,
			   (unsigned long long)__atomic_load_n(&t->tps[i].hits, __ATOMIC_RELAXED),
			   tfile_hex(hex, sizeof(hex), name));
	}
	for (uint32_t i = t->ntp; i-- > 0;) {
		const struct rec_tp *tp = &t->tps[i];
		unsigned long long a = (unsigned long long)(tp->pc ? tp->pc : tp->addr);
		rec_snprintf(src, sizeof(src), "*0x%llx", a);
		tfile_line(o, "tp T%x:%llx:E:0:0\n", tp->num, a);
		tfile_line(o, "tp Z%x:%llx:at:0:%zx:%s\n", tp->num, a, strlen(src),
			   tfile_hex(hex, sizeof(hex), src));
		tfile_line(o, "tp Z%x:%llx:cmd:0:%zx:%s\n", tp->num, a, strlen(TFILE_COLLECT),
			   tfile_hex(hex, sizeof(hex), TFILE_COLLECT));
		tfile_line(o, "tp V%x:%llx:%llx:%llx\n", tp->num, a,
			   (unsigned long long)__atomic_load_n(&tp->hits, __ATOMIC_RELAXED),
			   (unsigned long long)tp_bytes[i]);
	}
	tfile_emit(o, "\n", 1);
}

uint64_t tfile_write_trace(struct tfile_out *o, const struct tfile_trace *t, struct tfile_spool *v,
			   size_t n, uint64_t *scratch, uint8_t *frame)
{
	uint64_t *tp_frames = scratch, *tp_bytes = scratch + REC_TP_MAX, frames = 0;
	uint32_t ntp = t->ntp < REC_TP_MAX ? t->ntp : REC_TP_MAX;

	memset(scratch, 0, 2 * REC_TP_MAX * sizeof(*scratch));
	/* count what each tracepoint has, and where each spool's sane records end */
	for (size_t i = 0; i < n; i++) {
		struct tfile_spool sp = v[i];
		sp.pos = 0;
		while (tfile_spool_next(&sp, ntp)) {
			const struct rec_tp_frame *f = (const void *)(sp.data + sp.pos);
			tp_frames[f->tpnum - 1]++;
			tp_bytes[f->tpnum - 1] += tfile_frame_size(f);
			frames++;
			sp.pos += f->size;
		}
		v[i].end = sp.pos;
	}
	tfile_definitions(o, t, frames, tp_frames, tp_bytes);
	/* frames by time over all threads (a thread's own are in order already) */
	for (size_t i = 0; i < n; i++) {
		v[i].pos = 0;
		if (!tfile_spool_next(&v[i], ntp))
			v[i].pos = v[i].end;
	}
	for (;;) {
		struct tfile_spool *best = NULL;
		const struct rec_tp_frame *f;
		for (size_t i = 0; i < n; i++)
			if (v[i].pos < v[i].end && (!best || v[i].ns < best->ns))
				best = &v[i];
		if (!best)
			break;
		f = (const void *)(best->data + best->pos);
		tfile_emit(o, frame, tfile_encode_frame(f, frame));
		best->pos += f->size;
		if (best->pos >= best->end || !tfile_spool_next(best, ntp))
			best->pos = best->end;
	}
	tfile_emit(o, "\0\0\0\0", 4); /* tracepoint 0: the end (gdb writes 4 bytes) */
	tfile_flush(o);
	return frames;
}

/* --- the gdb script -------------------------------------------------------------------- */

void tfile_script_head(struct tfile_out *o, const char *exe, pid_t pid, const char *dir,
		       const char *script, const char *note)
{
	tfile_line(o,
		   "# flightrec: the tracepoint hits of %s (pid %d)%s, for gdb:\n"
		   "#   gdb -x %s/%s %s\n"
		   "# then: tstatus, tfind start, tfind N, tfind tracepoint N, tdump, bt, "
		   "info registers, print ARG\n",
		   exe, (int)pid, note, dir, script, exe);
	tfile_line(o, "set confirm off\n");
	/*
	 * Memory that no frame holds (a string in .rodata, a constant table) target tfile serves
	 * only from the executable's read-only sections at their link-time addresses (gdb 13
	 * tfile_xfer_partial -> exec_read_partial_read_only): a PIE's and every shared object's
	 * sections are elsewhere at run time, so a `const char *` into them printed
	 * <unavailable>. With trust-readonly-sections gdb reads any read-only section from its
	 * file at the address the symbol-file -o / add-symbol-file -o lines below give it, before
	 * asking the target. Only read-only sections: writable data still comes from the frames.
	 */
	tfile_line(o, "set trust-readonly-sections on\n");
}

void tfile_script_module(struct tfile_out *o, const char *path, uint64_t bias, int is_exe,
			 int is_dyn)
{
	if (!path[0])
		return;
	if (is_exe) {
		tfile_line(o, "exec-file %s\n", path);
		if (is_dyn)
			tfile_line(o, "symbol-file -o 0x%llx %s\n", (unsigned long long)bias, path);
		else
			tfile_line(o, "symbol-file %s\n", path);
	} else {
		tfile_line(o, "add-symbol-file %s -o 0x%llx\n", path, (unsigned long long)bias);
	}
}

void tfile_script_tail(struct tfile_out *o, const char *dir, const char *tf)
{
	tfile_line(o, "target tfile %s/%s\n", dir, tf);
	tfile_line(o, "set confirm on\n");
	tfile_flush(o);
}
