/*
 * read_tfile: GDB trace file reader (see read_tfile.h for the rules).
 *
 * The file is mapped read-only; nothing found in it is trusted as a size before it has been
 * checked against the end of the file (or of its frame).
 */
#include "formats/tfile/read_tfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define TFR_MAGIC    "\x7fTRACE0\n"
#define TFR_LINE_MAX 1000 /* gdb's linebuf */

bool tfr_sniff_file(const char *path)
{
	char buf[8];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	ok = read(fd, buf, 8) == 8 && memcmp(buf, TFR_MAGIC, 8) == 0;
	close(fd);
	return ok;
}

/* hex text (an even number of hex digits) to a malloc'ed string; NULL if malformed */
static char *tfr_unhex(const char *p, size_t len)
{
	char *out;

	if (len % 2)
		return NULL;
	out = malloc(len / 2 + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < len / 2; i++) {
		int hi = rd_hexval(p[2 * i]), lo = rd_hexval(p[2 * i + 1]);
		if (hi < 0 || lo < 0) {
			free(out);
			return NULL;
		}
		out[i] = (char)(hi << 4 | lo);
	}
	out[len / 2] = '\0';
	return out;
}

struct tfr_ctx {
	struct tfr_file *f;
	struct rd_error *err;
	size_t off; /* of the line being parsed */
};

static int tfr_bad(struct tfr_ctx *c, const char *what, const char *p, size_t len)
{
	return rd_error_set(c->err, TFR_RULE_DEF, c->f->path, (int64_t)c->off,
			    "%s does not parse: \"%.*s\"", what, (int)(len > 80 ? 80 : len), p);
}

static int tfr_status_line(struct tfr_ctx *c, const char *line, size_t len)
{
	struct tfr_status *st = &c->f->status;
	struct rd_scan s;
	uint64_t v;

	rd_scan_init(&s, line, len);
	if (st->present)
		return tfr_bad(c, "a second status line", line, len);
	st->present = true;
	if (rd_scan_char(&s, '1'))
		st->running = true;
	else if (!rd_scan_char(&s, '0'))
		return tfr_bad(c, "status (running flag)", line, len);
	while (!rd_scan_eol(&s)) {
		const char *key, *val;
		size_t klen, vlen;

		if (!rd_scan_char(&s, ';'))
			return tfr_bad(c, "status (';' expected)", line, len);
		if (rd_scan_eol(&s))
			break;
		klen = rd_scan_until(&s, ':', &key);
		if (!rd_scan_char(&s, ':'))
			return tfr_bad(c, "status (a field without ':')", line, len);
		vlen = rd_scan_until(&s, ';', &val);
#define KEY(k) (klen == strlen(k) && !memcmp(key, k, klen))
		if (KEY("tstop") || KEY("terror")) {
			/* <hex description>:<tracepoint>, or an older <tracepoint> alone */
			const char *colon = memchr(val, ':', vlen);
			memcpy(st->reason, key, klen);
			st->reason[klen] = '\0';
			if (colon) {
				free(st->stop_desc);
				st->stop_desc = tfr_unhex(val, (size_t)(colon - val));
				if (!st->stop_desc)
					return tfr_bad(c, "status (stop description)", line, len);
			}
			continue;
		}
		if (KEY("tunknown") || KEY("tnotrun") || KEY("tfull") || KEY("tdisconnected") ||
		    KEY("tpasscount")) {
			memcpy(st->reason, key, klen);
			st->reason[klen] = '\0';
			continue;
		}
		if (KEY("notes") || KEY("username")) {
			char *t = tfr_unhex(val, vlen);
			if (!t)
				return tfr_bad(c, "status (hex text)", line, len);
			free(KEY("notes") ? st->notes : st->user);
			*(KEY("notes") ? &st->notes : &st->user) = t;
			continue;
		}
		if (KEY("tframes") || KEY("tcreated") || KEY("tfree") || KEY("tsize") ||
		    KEY("starttime") || KEY("stoptime") || KEY("disconn") || KEY("circular")) {
			struct rd_scan vs;
			rd_scan_init(&vs, val, vlen);
			if (!rd_scan_hex(&vs, &v, NULL) || !rd_scan_eol(&vs))
				return tfr_bad(c, "status (a hex number)", line, len);
			if (KEY("tframes"))
				st->tframes = (int64_t)v;
			else if (KEY("tcreated"))
				st->tcreated = (int64_t)v;
			else if (KEY("tfree"))
				st->tfree = (int64_t)v;
			else if (KEY("tsize"))
				st->tsize = (int64_t)v;
			else if (KEY("starttime"))
				st->start_us = v;
			else if (KEY("stoptime"))
				st->stop_us = v;
		}
		/* any other field: skipped, as gdb does */
#undef KEY
	}
	return 0;
}

static struct tfr_tp *tfr_get_tp(struct tfr_file *f, uint32_t num, uint64_t addr)
{
	struct tfr_tp *tp = tfr_find_tp(f, num), *nv;

	if (tp)
		return tp;
	nv = realloc(f->tps, (f->ntps + 1) * sizeof(*nv));
	if (!nv)
		return NULL;
	f->tps = nv;
	tp = &f->tps[f->ntps++];
	memset(tp, 0, sizeof(*tp));
	tp->num = num;
	tp->addr = addr;
	return tp;
}

static int tfr_tp_line(struct tfr_ctx *c, const char *line, size_t len)
{
	struct rd_scan s;
	uint64_t num, addr, v;
	struct tfr_tp *tp;
	char piece;

	rd_scan_init(&s, line, len);
	if (len < 1)
		return tfr_bad(c, "tp", line, len);
	piece = *s.p++;
	if (!rd_scan_hex(&s, &num, NULL) || num > 0xffff || !rd_scan_char(&s, ':') ||
	    !rd_scan_hex(&s, &addr, NULL))
		return tfr_bad(c, "tp (number and address)", line, len);
	tp = tfr_get_tp(c->f, (uint32_t)num, addr);
	if (!tp)
		return rd_error_set(c->err, TFR_RULE_IO, c->f->path, -1, "out of memory");
	switch (piece) {
	case 'T':
		tp->addr = addr;
		tp->defined = true;
		if (!rd_scan_char(&s, ':'))
			return tfr_bad(c, "tp T", line, len);
		if (rd_scan_char(&s, 'E'))
			tp->enabled = true;
		else if (!rd_scan_char(&s, 'D'))
			return tfr_bad(c, "tp T (E or D)", line, len);
		if (!rd_scan_char(&s, ':') || !rd_scan_hex(&s, &v, NULL) ||
		    !rd_scan_char(&s, ':') || !rd_scan_hex(&s, &v, NULL))
			return tfr_bad(c, "tp T (step and pass counts)", line, len);
		return 0; /* optional :F, :S, :X fields follow; gdb skips what it does not know */
	case 'A':
		tp->nactions++;
		return 0;
	case 'S':
		tp->nsteps++;
		return 0;
	case 'V':
		if (!rd_scan_char(&s, ':') || !rd_scan_hex(&s, &tp->hits, NULL) ||
		    !rd_scan_char(&s, ':') || !rd_scan_hex(&s, &tp->usage, NULL))
			return tfr_bad(c, "tp V", line, len);
		tp->has_status = true;
		return 0;
	case 'Z': {
		const char *type, *hex;
		size_t tlen, hlen;
		uint64_t start, xlen;
		char *text;

		if (!rd_scan_char(&s, ':'))
			return tfr_bad(c, "tp Z", line, len);
		tlen = rd_scan_until(&s, ':', &type);
		if (!rd_scan_char(&s, ':') || !rd_scan_hex(&s, &start, NULL) ||
		    !rd_scan_char(&s, ':') || !rd_scan_hex(&s, &xlen, NULL) ||
		    !rd_scan_char(&s, ':'))
			return tfr_bad(c, "tp Z (type, start, length)", line, len);
		hlen = rd_scan_rest(&s, &hex);
		text = tfr_unhex(hex, hlen);
		if (!text)
			return tfr_bad(c, "tp Z (hex text)", line, len);
		if (tlen == 2 && !memcmp(type, "at", 2)) {
			free(tp->at);
			tp->at = text;
		} else if (tlen == 4 && !memcmp(type, "cond", 4)) {
			free(tp->cond);
			tp->cond = text;
		} else if (tlen == 3 && !memcmp(type, "cmd", 3)) {
			if (tp->ncmds++ == 0)
				tp->cmd = text;
			else
				free(text);
		} else {
			free(text);
		}
		return 0;
	}
	default:
		return 0; /* gdb warns and goes on */
	}
}

static int tfr_tsv_line(struct tfr_ctx *c, const char *line, size_t len)
{
	struct rd_scan s;
	uint64_t num, init, builtin;
	const char *hex;
	size_t hlen;
	struct tfr_tsv *nv, *t;

	rd_scan_init(&s, line, len);
	if (!rd_scan_hex(&s, &num, NULL) || num > INT32_MAX || !rd_scan_char(&s, ':') ||
	    !rd_scan_hex(&s, &init, NULL) || !rd_scan_char(&s, ':') ||
	    !rd_scan_hex(&s, &builtin, NULL) || !rd_scan_char(&s, ':'))
		return tfr_bad(c, "tsv", line, len);
	hlen = rd_scan_rest(&s, &hex);
	nv = realloc(c->f->tsvs, (c->f->ntsvs + 1) * sizeof(*nv));
	if (!nv)
		return rd_error_set(c->err, TFR_RULE_IO, c->f->path, -1, "out of memory");
	c->f->tsvs = nv;
	t = &nv[c->f->ntsvs];
	t->num = (uint32_t)num;
	t->initial = (int64_t)init;
	t->builtin = builtin != 0;
	t->name = tfr_unhex(hex, hlen);
	if (!t->name)
		return tfr_bad(c, "tsv (hex name)", line, len);
	c->f->ntsvs++;
	return 0;
}

static int tfr_def_line(struct tfr_ctx *c, const char *line, size_t len, bool *have_r)
{
	struct tfr_file *f = c->f;

	f->nlines++;
	if (len >= 2 && !memcmp(line, "R ", 2)) {
		struct rd_scan s;
		uint64_t v;
		rd_scan_init(&s, line + 2, len - 2);
		if (*have_r)
			return rd_error_set(c->err, TFR_RULE_REGSIZE, f->path, (int64_t)c->off,
					    "a second R line");
		if (!rd_scan_hex(&s, &v, NULL) || v == 0 || v > 0x10000)
			return rd_error_set(c->err, TFR_RULE_REGSIZE, f->path, (int64_t)c->off,
					    "R line: the register block size is not a hex number "
					    "in 1..0x10000: \"%.*s\"",
					    (int)len, line);
		*have_r = true;
		f->regsize = (uint32_t)v;
		return 0;
	}
	if (len >= 7 && !memcmp(line, "status ", 7))
		return tfr_status_line(c, line + 7, len - 7);
	if (len >= 3 && !memcmp(line, "tp ", 3))
		return tfr_tp_line(c, line + 3, len - 3);
	if (len >= 4 && !memcmp(line, "tsv ", 4))
		return tfr_tsv_line(c, line + 4, len - 4);
	if (len >= 6 && !memcmp(line, "tdesc ", 6)) {
		f->ntdesc++;
		return 0;
	}
	f->nunknown++;
	return 0;
}

static int tfr_tp_cmp(const void *a, const void *b)
{
	const struct tfr_tp *x = a, *y = b;
	return (x->num > y->num) - (x->num < y->num);
}

int tfr_open(const char *path, struct tfr_file *f, struct rd_error *err)
{
	struct tfr_ctx c = {f, err, 8};
	bool have_r = false;
	struct stat st;
	size_t pos;
	void *m;
	int fd;

	memset(f, 0, sizeof(*f));
	f->status.tframes = f->status.tcreated = f->status.tfree = f->status.tsize = -1;
	f->path = strdup(path);
	if (!f->path)
		return rd_error_set(err, TFR_RULE_IO, path, -1, "out of memory");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rd_error_set(err, TFR_RULE_IO, path, -1, "cannot open: %s", strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return rd_error_set(err, TFR_RULE_IO, path, -1, "not a regular file");
	}
	if (st.st_size < 8) {
		close(fd);
		return rd_error_set(err, TFR_RULE_HEADER, path, 0,
				    "shorter than the 8-byte header \\x7fTRACE0\\n");
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return rd_error_set(err, TFR_RULE_IO, path, -1, "cannot map: %s", strerror(errno));
	f->data = m;
	f->size = (size_t)st.st_size;
	if (memcmp(f->data, TFR_MAGIC, 8) != 0)
		return rd_error_set(err, TFR_RULE_HEADER, path, 0,
				    "the header is not \\x7fTRACE0\\n");
	for (pos = 8;;) {
		const uint8_t *nl = memchr(f->data + pos, '\n', f->size - pos);
		size_t len;

		if (!nl)
			return rd_error_set(err, TFR_RULE_LINE, path, (int64_t)pos,
					    "the definitions do not end (no empty line)");
		len = (size_t)(nl - (f->data + pos));
		if (len >= TFR_LINE_MAX)
			return rd_error_set(err, TFR_RULE_LINE, path, (int64_t)pos,
					    "a definition line of %zu bytes (gdb reads lines of "
					    "at most 999)",
					    len);
		if (len == 0) {
			pos++;
			break;
		}
		c.off = pos;
		if (tfr_def_line(&c, (const char *)f->data + pos, len, &have_r) < 0)
			return -1;
		pos += len + 1;
	}
	if (!have_r)
		return rd_error_set(err, TFR_RULE_REGSIZE, path, -1,
				    "no R line (gdb: \"No register block size recorded in trace "
				    "file\")");
	f->frames_off = pos;
	/* tracepoints by number (gdb-written files list them in any order) */
	rd_sort(f->tps, f->ntps, sizeof(*f->tps), tfr_tp_cmp);
	return 0;
}

int tfr_walk(struct tfr_file *f, tfr_frame_cb fcb, tfr_block_cb bcb, void *arg,
	     struct rd_error *err)
{
	size_t pos = f->frames_off;
	uint64_t index = 0;
	int r;

	for (uint32_t i = 0; i < f->ntps; i++)
		f->tps[i].frames = 0;
	for (;;) {
		struct tfr_frame fr;
		size_t bpos, end;

		if (f->size - pos < 2)
			return rd_error_set(err, TFR_RULE_TRUNCATED, f->path, (int64_t)pos,
					    "the file ends without the end marker (tracepoint 0) "
					    "after %llu frames",
					    (unsigned long long)index);
		fr.tpnum = rd_get16(f->data + pos, false);
		if (fr.tpnum == 0) {
			f->end_off = pos;
			break;
		}
		if (f->size - pos < 6)
			return rd_error_set(err, TFR_RULE_TRUNCATED, f->path, (int64_t)pos,
					    "frame %llu: the file ends inside its header",
					    (unsigned long long)index);
		fr.size = rd_get32(f->data + pos + 2, false);
		if (fr.size > f->size - pos - 6)
			return rd_error_set(err, TFR_RULE_TRUNCATED, f->path, (int64_t)pos,
					    "frame %llu: %u bytes of blocks, past the end of the "
					    "file",
					    (unsigned long long)index, fr.size);
		fr.index = index;
		fr.off = pos;
		fr.blocks = f->data + pos + 6;
		fr.tp = tfr_find_tp(f, fr.tpnum);
		if (!fr.tp || !fr.tp->defined)
			return rd_error_set(err, TFR_RULE_TP, f->path, (int64_t)pos,
					    "frame %llu: tracepoint %u has no \"tp T\" line",
					    (unsigned long long)index, fr.tpnum);
		fr.tp->frames++;
		if (fcb && (r = fcb(arg, &fr)) != 0)
			return r;
		bpos = pos + 6;
		end = bpos + fr.size;
		while (bpos < end) {
			struct tfr_block b = {0};
			b.type = (char)f->data[bpos];
			b.off = bpos;
			switch (b.type) {
			case 'R':
				if (end - bpos - 1 < f->regsize)
					goto overrun;
				b.data = f->data + bpos + 1;
				b.len = f->regsize;
				bpos += 1 + f->regsize;
				break;
			case 'M':
				if (end - bpos - 1 < 10)
					goto overrun;
				b.addr = rd_get64(f->data + bpos + 1, false);
				b.len = rd_get16(f->data + bpos + 9, false);
				if (end - bpos - 11 < b.len)
					goto overrun;
				b.data = f->data + bpos + 11;
				bpos += 11 + b.len;
				break;
			case 'V':
				if (end - bpos - 1 < 12)
					goto overrun;
				b.tsv = (int32_t)rd_get32(f->data + bpos + 1, false);
				b.value = (int64_t)rd_get64(f->data + bpos + 5, false);
				bpos += 13;
				break;
			default:
				return rd_error_set(err, TFR_RULE_BLOCK, f->path, (int64_t)bpos,
						    "frame %llu: unknown block type 0x%02x (gdb "
						    "knows R, M and V)",
						    (unsigned long long)index, (uint8_t)b.type);
			}
			if (bcb && (r = bcb(arg, &fr, &b)) != 0)
				return r;
			continue;
		overrun:
			return rd_error_set(err, TFR_RULE_BLOCK, f->path, (int64_t)bpos,
					    "frame %llu: a '%c' block runs past the end of its "
					    "frame",
					    (unsigned long long)index, b.type);
		}
		pos = end;
		index++;
	}
	f->nframes = index;
	if (f->status.tframes >= 0 && (uint64_t)f->status.tframes != index)
		return rd_error_set(err, TFR_RULE_COUNT, f->path, -1,
				    "the status line says %lld frames, the file has %llu",
				    (long long)f->status.tframes, (unsigned long long)index);
	return 0;
}

void tfr_close(struct tfr_file *f)
{
	if (f->data)
		munmap((void *)f->data, f->size);
	for (size_t i = 0; i < f->ntps; i++) {
		free(f->tps[i].at);
		free(f->tps[i].cond);
		free(f->tps[i].cmd);
	}
	for (size_t i = 0; i < f->ntsvs; i++)
		free(f->tsvs[i].name);
	free(f->tps);
	free(f->tsvs);
	free(f->status.stop_desc);
	free(f->status.notes);
	free(f->status.user);
	free(f->path);
	memset(f, 0, sizeof(*f));
}

struct tfr_tp *tfr_find_tp(const struct tfr_file *f, uint32_t num)
{
	for (size_t i = 0; i < f->ntps; i++)
		if (f->tps[i].num == num)
			return &f->tps[i];
	return NULL;
}

const struct tfr_tsv *tfr_find_tsv(const struct tfr_file *f, uint32_t num)
{
	for (size_t i = 0; i < f->ntsvs; i++)
		if (f->tsvs[i].num == num)
			return &f->tsvs[i];
	return NULL;
}

bool tfr_amd64_reg(const struct tfr_file *f, const struct tfr_block *r, unsigned slot, uint64_t *v)
{
	if (r->type != 'R' || (slot + 1) * 8 > f->regsize)
		return false;
	*v = rd_get64(r->data + slot * 8, false);
	return true;
}
