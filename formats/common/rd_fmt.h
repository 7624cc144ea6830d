/*
 * rd_fmt: number and text formatting for the readers' per-record output, without printf.
 *
 * Role: `flightrec dump` prints one line per record; with printf's format parsing that was
 * 60% of its time (a 128 MB uftrace.data took 9.2 s, `uftrace dump` 5.2 s). These append to a
 * caller's buffer and return the new end, so a line is built and written in one piece.
 *
 * Invariants: the caller sizes the buffer: rd_fmt_dec writes at most 20 characters,
 * rd_fmt_hex 16, rd_fmt_time 30 (20 + '.' + 9); rd_fmt_str copies the whole string, so it is
 * only for strings whose length the caller bounded. Output is identical to printf's "%" PRIu64,
 * "%" PRIx64 and rd_time_str's.
 */
#ifndef FLIGHTREC_RD_FMT_H
#define FLIGHTREC_RD_FMT_H

#include <stdint.h>
#include <string.h>

static inline char *rd_fmt_str(char *p, const char *s)
{
	size_t n = strlen(s);

	memcpy(p, s, n);
	return p + n;
}

static inline char *rd_fmt_dec(char *p, uint64_t v)
{
	char tmp[20];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* V as exactly WIDTH decimal digits, zero-padded (V must fit) */
static inline char *rd_fmt_dec_width(char *p, uint64_t v, int width)
{
	for (int i = width - 1; i >= 0; i--) {
		p[i] = (char)('0' + v % 10);
		v /= 10;
	}
	return p + width;
}

/* lower-case hex, no prefix, no padding */
static inline char *rd_fmt_hex(char *p, uint64_t v)
{
	int n = 1;

	while (n < 16 && (v >> (4 * n)))
		n++;
	for (int i = n - 1; i >= 0; i--) {
		p[i] = "0123456789abcdef"[v & 15];
		v >>= 4;
	}
	return p + n;
}

/* NS as "<sec>.<9-digit nsec>", as rd_time_str writes it */
static inline char *rd_fmt_time(char *p, uint64_t ns)
{
	p = rd_fmt_dec(p, ns / UINT64_C(1000000000));
	*p++ = '.';
	return rd_fmt_dec_width(p, ns % UINT64_C(1000000000), 9);
}

#endif /* FLIGHTREC_RD_FMT_H */
