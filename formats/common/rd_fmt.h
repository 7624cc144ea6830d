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

/* "00" "01" ... "99": two digits per division, which halves the divisions and stores */
static const char rd_fmt_digits2[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/* V's digits ending at END, the first returned: 32-bit divisions (a 64-bit one costs several
 * times as much) once V fits, as a time's seconds, a tid, a depth and nanoseconds do */
static inline char *rd_fmt_dec_rev(char *end, uint64_t v)
{
	uint32_t w;

	while (v > UINT32_MAX) {
		end -= 2;
		memcpy(end, &rd_fmt_digits2[2 * (v % 100)], 2);
		v /= 100;
	}
	w = (uint32_t)v;
	while (w >= 100) {
		end -= 2;
		memcpy(end, &rd_fmt_digits2[2 * (w % 100)], 2);
		w /= 100;
	}
	if (w >= 10) {
		end -= 2;
		memcpy(end, &rd_fmt_digits2[2 * w], 2);
	} else {
		*--end = (char)('0' + w);
	}
	return end;
}

static inline char *rd_fmt_dec(char *p, uint64_t v)
{
	char tmp[20], *q = rd_fmt_dec_rev(tmp + sizeof(tmp), v);
	size_t n = (size_t)(tmp + sizeof(tmp) - q);

	memcpy(p, q, n);
	return p + n;
}

/* V as exactly WIDTH decimal digits, zero-padded (V must fit) */
static inline char *rd_fmt_dec_width(char *p, uint64_t v, int width)
{
	int i = width;

	if (v <= UINT32_MAX) {
		uint32_t w = (uint32_t)v;

		for (; i >= 2; i -= 2) {
			memcpy(p + i - 2, &rd_fmt_digits2[2 * (w % 100)], 2);
			w /= 100;
		}
		if (i)
			p[0] = (char)('0' + w % 10);
		return p + width;
	}
	for (i = width - 1; i >= 0; i--) {
		p[i] = (char)('0' + v % 10);
		v /= 10;
	}
	return p + width;
}

/* lower-case hex, no prefix, no padding */
static inline char *rd_fmt_hex(char *p, uint64_t v)
{
	int n = v ? (67 - __builtin_clzll(v)) / 4 : 1; /* ceil(significant bits / 4) */

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
