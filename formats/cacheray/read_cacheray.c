/*
 * read_cacheray: the Cacheray trace walker (see read_cacheray.h for the rules).
 *
 * Invariant: no read past `end`; every length taken from the file is checked against what is
 * left before it is used (a name length near 2^32 cannot wrap the bound).
 */
#include "formats/cacheray/read_cacheray.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

const char *crt_kind_name(unsigned kind)
{
	static const char *const names[] = {"READ", "WRITE", "RTTA_ADD", "RTTA_REMOVE"};
	return kind < 4 ? names[kind] : "?";
}

/* Decode the record at p (left bytes remain); 0 or -1 with err set. */
static int crt_decode(const uint8_t *p, size_t left, uint64_t off, const char *file,
		      struct crt_rec *r, struct rd_error *err)
{
	uint8_t tag = p[0], kind = tag & 0x3f, flags = tag & 0xc0;
	size_t need;

	memset(r, 0, sizeof(*r));
	r->off = off;
	r->tag = tag;
	r->kind = kind;
	r->atomic = (flags & CRT_FLAG_ATOMIC) != 0;
	r->unaligned = (flags & CRT_FLAG_UNALIGNED) != 0;
	switch (kind) {
	case CRT_READ:
	case CRT_WRITE:
		need = CRT_ACCESS_LEN;
		break;
	case CRT_RTTA_ADD:
		need = CRT_ADD_FIXED_LEN;
		break;
	case CRT_RTTA_REMOVE:
		need = CRT_REMOVE_LEN;
		break;
	default:
		return rd_error_set(err, CRT_RULE_TYPE, file, (int64_t)off,
				    "unknown record type 0x%02x (tag 0x%02x)", kind, tag);
	}
	if (flags && kind >= CRT_RTTA_ADD)
		return rd_error_set(
			err, CRT_RULE_FLAGS, file, (int64_t)off,
			"tag 0x%02x: %s with the%s%s flag (flags go with READ and WRITE "
			"only)",
			tag, crt_kind_name(kind), r->atomic ? " ATOMIC" : "",
			r->unaligned ? " UNALIGNED" : "");
	if (left < need)
		return rd_error_set(
			err, CRT_RULE_TRUNCATED, file, (int64_t)off,
			"truncated %s record: %zu of its %zu bytes before the end of the "
			"file",
			crt_kind_name(kind), left, need);
	r->addr = rd_get64(p + 1, false);
	if (kind <= CRT_WRITE) {
		r->size = p[9];
		r->tid = rd_get64(p + 10, false);
		if (r->size == 0)
			return rd_error_set(err, CRT_RULE_SIZE, file, (int64_t)off,
					    "%s of 0 bytes at 0x%llx", crt_kind_name(kind),
					    (unsigned long long)r->addr);
		r->len = CRT_ACCESS_LEN;
		return 0;
	}
	r->tid = rd_get64(p + 9, false);
	if (kind == CRT_RTTA_REMOVE) {
		r->len = CRT_REMOVE_LEN;
		return 0;
	}
	r->elem_size = rd_get32(p + 17, false);
	r->elem_count = rd_get32(p + 21, false);
	r->name_len = rd_get32(p + 25, false);
	if ((uint64_t)r->name_len > left - CRT_ADD_FIXED_LEN)
		return rd_error_set(err, CRT_RULE_TRUNCATED, file, (int64_t)off,
				    "truncated RTTA_ADD record: a type name of %u bytes, %zu bytes "
				    "before the end of the file",
				    r->name_len, left - CRT_ADD_FIXED_LEN);
	r->name = p + CRT_ADD_FIXED_LEN;
	if (memchr(r->name, '\0', r->name_len))
		return rd_error_set(
			err, CRT_RULE_NAME, file, (int64_t)off,
			"RTTA_ADD type name holds a NUL byte (at name offset %zu)",
			(size_t)((const uint8_t *)memchr(r->name, '\0', r->name_len) - r->name));
	r->len = CRT_ADD_FIXED_LEN + r->name_len;
	return 0;
}

/* MAPPED: DATA is the file's mapping, whose pages are given back once walked */
static int crt_walk_mem(const uint8_t *data, size_t len, const char *file, struct crt_counts *c,
			crt_rec_fn fn, void *ctx, struct rd_error *err, bool mapped)
{
	struct crt_rec r;
	size_t off = 0, released = 0;

	if (c) {
		memset(c, 0, sizeof(*c));
		c->bytes = len;
	}
	while (off < len) {
		if (crt_decode(data + off, len - off, off, file, &r, err) < 0)
			return -1;
		if (c) {
			c->records++;
			c->by_tag[r.tag]++;
		}
		if (fn) {
			int ret = fn(ctx, &r);
			if (ret)
				return ret;
		}
		off += r.len;
		if (mapped)
			rd_map_release(data, off, &released);
	}
	return 0;
}

int crt_walk_buf(const uint8_t *data, size_t len, const char *file, struct crt_counts *c,
		 crt_rec_fn fn, void *ctx, struct rd_error *err)
{
	return crt_walk_mem(data, len, file, c, fn, ctx, err, false);
}

int crt_walk(const char *path, struct crt_counts *c, crt_rec_fn fn, void *ctx, struct rd_error *err)
{
	struct stat st;
	void *map = NULL;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rd_error_set(err, CRT_RULE_IO, path, -1, "cannot open: %s", strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return rd_error_set(err, CRT_RULE_IO, path, -1, "not a regular file");
	}
	if (st.st_size > 0) {
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map == MAP_FAILED) {
			int e = errno;
			close(fd);
			return rd_error_set(err, CRT_RULE_IO, path, -1, "cannot map: %s",
					    strerror(e));
		}
		madvise(map, (size_t)st.st_size, MADV_SEQUENTIAL);
	}
	close(fd);
	ret = crt_walk_mem(map ? map : (const void *)"", (size_t)st.st_size, path, c, fn, ctx, err,
			   map != NULL);
	if (map)
		munmap(map, (size_t)st.st_size);
	return ret;
}

#define CRT_SNIFF_RECORDS 16

bool crt_sniff_file(const char *path)
{
	uint8_t buf[CRT_SNIFF_RECORDS * (CRT_ADD_FIXED_LEN + 64)];
	struct rd_error err;
	struct crt_rec r;
	struct stat st;
	size_t n = strlen(path), len, off = 0;
	ssize_t got;
	int fd;

	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	if (n > 6 && !strcmp(path + n - 6, ".trace"))
		return true;
	if (st.st_size == 0)
		return false; /* an empty file could be anything */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	got = read(fd, buf, sizeof(buf));
	close(fd);
	if (got <= 0)
		return false;
	len = (size_t)got;
	rd_error_clear(&err);
	for (int i = 0; i < CRT_SNIFF_RECORDS && off < len; i++) {
		if (crt_decode(buf + off, len - off, off, path, &r, &err) < 0)
			/* a record cut by our buffer, not by the file, still counts */
			return err.rule == CRT_RULE_TRUNCATED && (off_t)len < st.st_size && i > 0;
		off += r.len;
	}
	return true;
}
