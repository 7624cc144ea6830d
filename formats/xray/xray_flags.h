/*
 * xray_flags: compiler-rt's flag syntax, as XRAY_OPTIONS, XRAY_BASIC_OPTIONS and the mode
 * configuration strings use it: name=value pairs apart by spaces, tabs, commas, colons or
 * newlines, a value optionally in single or double quotes. A word without '=' is skipped.
 * Inline and allocation-free: the runtime reads the flags before anything is set up.
 */
#ifndef FLIGHTREC_XRAY_FLAGS_H
#define FLIGHTREC_XRAY_FLAGS_H

#include <stddef.h>
#include <string.h>

static inline int xray_flag_sep(char c)
{
	return c == ' ' || c == ',' || c == ':' || c == '\t' || c == '\n';
}

/* The next pair at *PP (advanced past it): 1 with NAME/NLEN and VAL/VLEN set (spans into
 * the string, not NUL-terminated), 0 at the end. */
static inline int xray_flag_next(const char **pp, const char **name, size_t *nlen,
				 const char **val, size_t *vlen)
{
	const char *p = *pp;

	while (p && *p) {
		while (xray_flag_sep(*p))
			p++;
		*name = p;
		while (*p && *p != '=' && !xray_flag_sep(*p))
			p++;
		*nlen = (size_t)(p - *name);
		if (*p != '=')
			continue;
		p++;
		char quote = (*p == '"' || *p == '\'') ? *p++ : 0;
		*val = p;
		while (*p && (quote ? *p != quote : !xray_flag_sep(*p)))
			p++;
		*vlen = (size_t)(p - *val);
		if (quote && *p)
			p++;
		*pp = p;
		return 1;
	}
	*pp = p;
	return 0;
}

/* The next pair whose value fits VAL (SIZE bytes with its NUL), the value copied there; a pair
 * with a longer value is skipped: no flag the modes read takes one. 0 at the end. */
static inline int xray_flag_next_value(const char **pp, const char **name, size_t *nlen,
				       char *val, size_t size)
{
	const char *v;
	size_t vlen;

	while (*pp && xray_flag_next(pp, name, nlen, &v, &vlen)) {
		if (vlen >= size)
			continue;
		memcpy(val, v, vlen);
		val[vlen] = '\0';
		return 1;
	}
	return 0;
}

/* Is the pair's NAME (NLEN bytes) the flag WANT? */
static inline int xray_flag_is(const char *name, size_t nlen, const char *want)
{
	return strlen(want) == nlen && strncmp(name, want, nlen) == 0;
}

/* A boolean flag's value as compiler-rt's flag parser reads it for these modes */
static inline int xray_flag_true(const char *v)
{
	return !strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes");
}

#endif
