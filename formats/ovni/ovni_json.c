/*
 * ovni_json: JSON tree, parser and writer for ovni-rt's metadata (see ovni_json.h).
 *
 * Invariants: every container owns its items and keys; strings are valid UTF-8 without NUL
 * bytes; the parser never reads past `len` and nests at most OJ_MAX_DEPTH levels.
 */
#include "formats/ovni/ovni_json.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OJ_MAX_DEPTH 64

struct oj *oj_new(enum oj_type type)
{
	struct oj *v = calloc(1, sizeof(*v));
	if (v)
		v->type = type;
	return v;
}

struct oj *oj_number(double d)
{
	struct oj *v;
	if (!isfinite(d))
		return NULL;
	v = oj_new(OJ_NUMBER);
	if (v)
		v->u.number = d;
	return v;
}

struct oj *oj_bool(int b)
{
	struct oj *v = oj_new(OJ_BOOL);
	if (v)
		v->u.boolean = !!b;
	return v;
}

/* Length of the UTF-8 sequence starting at s (at most n bytes), 0 if it is not valid. */
static size_t oj_utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	uint32_t cp;

	if (c < 0x80)
		return c ? 1 : 0;
	if ((c & 0xe0) == 0xc0) {
		len = 2;
		cp = c & 0x1f;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3;
		cp = c & 0x0f;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* overlong forms, surrogates, beyond Unicode */
	if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

static int oj_utf8_valid(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t l = oj_utf8_len((const unsigned char *)s + i, n - i);
		if (!l)
			return 0;
		i += l;
	}
	return 1;
}

struct oj *oj_string(const char *s)
{
	struct oj *v;
	size_t n = strlen(s);

	if (!oj_utf8_valid(s, n))
		return NULL;
	v = oj_new(OJ_STRING);
	if (!v)
		return NULL;
	v->u.string = strdup(s);
	if (!v->u.string) {
		free(v);
		return NULL;
	}
	return v;
}

void oj_free(struct oj *v)
{
	if (!v)
		return;
	if (v->type == OJ_STRING) {
		free(v->u.string);
	} else if (v->type == OJ_ARRAY || v->type == OJ_OBJECT) {
		for (size_t i = 0; i < v->u.c.len; i++) {
			oj_free(v->u.c.items[i]);
			if (v->u.c.keys)
				free(v->u.c.keys[i]);
		}
		free(v->u.c.items);
		free(v->u.c.keys);
	}
	free(v);
}

/* Make room for one more item in a container. */
static int oj_grow(struct oj *v)
{
	size_t cap;
	struct oj **items;

	if (v->u.c.len < v->u.c.cap)
		return 0;
	cap = v->u.c.cap ? v->u.c.cap * 2 : 4;
	items = realloc(v->u.c.items, cap * sizeof(*items));
	if (!items)
		return -1;
	v->u.c.items = items;
	if (v->type == OJ_OBJECT) {
		char **keys = realloc(v->u.c.keys, cap * sizeof(*keys));
		if (!keys)
			return -1;
		v->u.c.keys = keys;
	}
	v->u.c.cap = cap;
	return 0;
}

int oj_append(struct oj *arr, struct oj *val)
{
	if (!arr || !val || arr->type != OJ_ARRAY || oj_grow(arr) < 0) {
		oj_free(val);
		return -1;
	}
	arr->u.c.items[arr->u.c.len++] = val;
	return 0;
}

static long oj_index(const struct oj *obj, const char *key, size_t klen)
{
	if (!obj || obj->type != OJ_OBJECT)
		return -1;
	for (size_t i = 0; i < obj->u.c.len; i++)
		if (strncmp(obj->u.c.keys[i], key, klen) == 0 && obj->u.c.keys[i][klen] == '\0')
			return (long)i;
	return -1;
}

/* Set key (klen bytes) in obj, replacing in place or appending; takes ownership of val. */
static int oj_set_n(struct oj *obj, const char *key, size_t klen, struct oj *val)
{
	long i = oj_index(obj, key, klen);
	char *k;

	if (!val)
		return -1;
	if (i >= 0) {
		oj_free(obj->u.c.items[i]);
		obj->u.c.items[i] = val;
		return 0;
	}
	if (oj_grow(obj) < 0 || !(k = strndup(key, klen))) {
		oj_free(val);
		return -1;
	}
	obj->u.c.keys[obj->u.c.len] = k;
	obj->u.c.items[obj->u.c.len++] = val;
	return 0;
}

struct oj *oj_get(const struct oj *obj, const char *key)
{
	long i = oj_index(obj, key, strlen(key));
	return i >= 0 ? obj->u.c.items[i] : NULL;
}

int oj_remove(struct oj *obj, const char *key)
{
	long i = oj_index(obj, key, strlen(key));
	if (i < 0)
		return 0;
	oj_free(obj->u.c.items[i]);
	free(obj->u.c.keys[i]);
	memmove(&obj->u.c.items[i], &obj->u.c.items[i + 1],
		(obj->u.c.len - (size_t)i - 1) * sizeof(obj->u.c.items[0]));
	memmove(&obj->u.c.keys[i], &obj->u.c.keys[i + 1],
		(obj->u.c.len - (size_t)i - 1) * sizeof(obj->u.c.keys[0]));
	obj->u.c.len--;
	return 1;
}

struct oj *oj_dotget(const struct oj *obj, const char *path)
{
	for (;;) {
		const char *dot = strchr(path, '.');
		size_t klen = dot ? (size_t)(dot - path) : strlen(path);
		long i = oj_index(obj, path, klen);
		if (i < 0)
			return NULL;
		if (!dot)
			return obj->u.c.items[i];
		obj = obj->u.c.items[i];
		path = dot + 1;
	}
}

int oj_dotset(struct oj *obj, const char *path, struct oj *val)
{
	if (!val)
		return -1;
	for (;;) {
		const char *dot = strchr(path, '.');
		size_t klen = dot ? (size_t)(dot - path) : strlen(path);
		struct oj *next;
		long i;

		/* an empty part ("a..b", ".a", "a.") is a key "", as libovni's parson makes it */
		if (!obj || obj->type != OJ_OBJECT) {
			oj_free(val);
			return -1;
		}
		if (!dot)
			return oj_set_n(obj, path, klen, val);
		i = oj_index(obj, path, klen);
		if (i >= 0) {
			next = obj->u.c.items[i];
		} else {
			next = oj_new(OJ_OBJECT);
			if (!next || oj_set_n(obj, path, klen, next) < 0) {
				oj_free(val);
				return -1;
			}
		}
		obj = next;
		path = dot + 1;
	}
}

struct oj *oj_copy(const struct oj *v)
{
	struct oj *c;

	if (!v)
		return NULL;
	switch (v->type) {
	case OJ_NULL: return oj_new(OJ_NULL);
	case OJ_BOOL: return oj_bool(v->u.boolean);
	case OJ_NUMBER: return oj_number(v->u.number);
	case OJ_STRING: return oj_string(v->u.string);
	default: break;
	}
	c = oj_new(v->type);
	if (!c)
		return NULL;
	for (size_t i = 0; i < v->u.c.len; i++) {
		struct oj *item = oj_copy(v->u.c.items[i]);
		char *k = NULL;
		/* the source's keys are unique already: appended, not looked up (a lookup per key
		 * made copying an object of n keys cost n^2/2 key comparisons) */
		if (!item || oj_grow(c) < 0 ||
		    (v->type == OJ_OBJECT && !(k = strdup(v->u.c.keys[i])))) {
			oj_free(item);
			oj_free(c);
			return NULL;
		}
		if (v->type == OJ_OBJECT)
			c->u.c.keys[c->u.c.len] = k;
		c->u.c.items[c->u.c.len++] = item;
	}
	return c;
}

/* --- parser ----------------------------------------------------------------------------- */

struct oj_parser {
	const char *p, *end;
	int depth;
};

static void oj_ws(struct oj_parser *ps)
{
	while (ps->p < ps->end &&
	       (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static int oj_hex4(const char *s, uint32_t *out)
{
	uint32_t v = 0;
	for (int i = 0; i < 4; i++) {
		char c = s[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static size_t oj_put_utf8(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A string token (the opening quote already consumed); malloc'ed result. */
static char *oj_parse_string(struct oj_parser *ps)
{
	const char *s = ps->p;
	size_t cap = 16, n = 0;
	char *out = malloc(cap);

	if (!out)
		return NULL;
	while (s < ps->end && *s != '"') {
		if (cap - n < 8) {
			char *no = realloc(out, cap *= 2);
			if (!no)
				goto bad;
			out = no;
		}
		if ((unsigned char)*s < 0x20) {
			goto bad;
		} else if (*s == '\\') {
			uint32_t cp, lo;
			if (++s >= ps->end)
				goto bad;
			switch (*s) {
			case '"': out[n++] = '"'; break;
			case '\\': out[n++] = '\\'; break;
			case '/': out[n++] = '/'; break;
			case 'b': out[n++] = '\b'; break;
			case 'f': out[n++] = '\f'; break;
			case 'n': out[n++] = '\n'; break;
			case 'r': out[n++] = '\r'; break;
			case 't': out[n++] = '\t'; break;
			case 'u':
				if (ps->end - s < 5 || oj_hex4(s + 1, &cp) < 0)
					goto bad;
				s += 4;
				if (cp >= 0xd800 && cp <= 0xdbff) {
					if (ps->end - s < 7 || s[1] != '\\' || s[2] != 'u' ||
					    oj_hex4(s + 3, &lo) < 0 || lo < 0xdc00 || lo > 0xdfff)
						goto bad;
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
					s += 6;
				} else if (cp >= 0xdc00 && cp <= 0xdfff) {
					goto bad;
				}
				if (cp == 0)
					goto bad; /* no NUL inside our C strings */
				n += oj_put_utf8(out + n, cp);
				break;
			default: goto bad;
			}
			s++;
		} else {
			size_t l = oj_utf8_len((const unsigned char *)s, (size_t)(ps->end - s));
			if (!l)
				goto bad;
			memcpy(out + n, s, l);
			n += l;
			s += l;
		}
	}
	if (s >= ps->end)
		goto bad;
	ps->p = s + 1;
	out[n] = '\0';
	return out;
bad:
	free(out);
	return NULL;
}

static struct oj *oj_parse_value(struct oj_parser *ps);

static struct oj *oj_parse_number(struct oj_parser *ps)
{
	const char *s = ps->p, *start = s;
	char buf[64];
	char *endp;
	double d;

	if (s < ps->end && *s == '-')
		s++;
	if (s >= ps->end)
		return NULL;
	if (*s == '0') {
		s++;
	} else if (*s >= '1' && *s <= '9') {
		while (s < ps->end && *s >= '0' && *s <= '9')
			s++;
	} else {
		return NULL;
	}
	if (s < ps->end && *s == '.') {
		s++;
		if (s >= ps->end || *s < '0' || *s > '9')
			return NULL;
		while (s < ps->end && *s >= '0' && *s <= '9')
			s++;
	}
	if (s < ps->end && (*s == 'e' || *s == 'E')) {
		s++;
		if (s < ps->end && (*s == '+' || *s == '-'))
			s++;
		if (s >= ps->end || *s < '0' || *s > '9')
			return NULL;
		while (s < ps->end && *s >= '0' && *s <= '9')
			s++;
	}
	if ((size_t)(s - start) >= sizeof(buf))
		return NULL;
	memcpy(buf, start, (size_t)(s - start));
	buf[s - start] = '\0';
	d = strtod(buf, &endp);
	if (*endp != '\0' || !isfinite(d))
		return NULL;
	ps->p = s;
	return oj_number(d);
}

static int oj_word(struct oj_parser *ps, const char *w)
{
	size_t n = strlen(w);
	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, w, n) != 0)
		return 0;
	ps->p += n;
	return 1;
}

static struct oj *oj_parse_container(struct oj_parser *ps, int object)
{
	struct oj *v = oj_new(object ? OJ_OBJECT : OJ_ARRAY);
	char close = object ? '}' : ']';

	if (!v || ++ps->depth > OJ_MAX_DEPTH)
		goto bad;
	ps->p++; /* the opening bracket */
	oj_ws(ps);
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		ps->depth--;
		return v;
	}
	for (;;) {
		char *key = NULL;
		struct oj *item;

		oj_ws(ps);
		if (object) {
			if (ps->p >= ps->end || *ps->p != '"')
				goto bad;
			ps->p++;
			key = oj_parse_string(ps);
			if (!key)
				goto bad;
			oj_ws(ps);
			if (ps->p >= ps->end || *ps->p != ':') {
				free(key);
				goto bad;
			}
			ps->p++;
		}
		item = oj_parse_value(ps);
		if (!item) {
			free(key);
			goto bad;
		}
		if (object) {
			/* a repeated key keeps its first place and takes the last value */
			int r = oj_set_n(v, key, strlen(key), item);
			free(key);
			if (r < 0)
				goto bad;
		} else if (oj_append(v, item) < 0) {
			goto bad;
		}
		oj_ws(ps);
		if (ps->p >= ps->end)
			goto bad;
		if (*ps->p == ',') {
			ps->p++;
			continue;
		}
		if (*ps->p != close)
			goto bad;
		ps->p++;
		ps->depth--;
		return v;
	}
bad:
	oj_free(v);
	return NULL;
}

static struct oj *oj_parse_value(struct oj_parser *ps)
{
	oj_ws(ps);
	if (ps->p >= ps->end)
		return NULL;
	switch (*ps->p) {
	case '{': return oj_parse_container(ps, 1);
	case '[': return oj_parse_container(ps, 0);
	case '"': {
		struct oj *v;
		char *s;
		ps->p++;
		s = oj_parse_string(ps);
		if (!s)
			return NULL;
		v = oj_new(OJ_STRING);
		if (!v) {
			free(s);
			return NULL;
		}
		v->u.string = s;
		return v;
	}
	case 't': return oj_word(ps, "true") ? oj_bool(1) : NULL;
	case 'f': return oj_word(ps, "false") ? oj_bool(0) : NULL;
	case 'n': return oj_word(ps, "null") ? oj_new(OJ_NULL) : NULL;
	default: return oj_parse_number(ps);
	}
}

struct oj *oj_parse(const char *text, size_t len)
{
	struct oj_parser ps = { text, text + len, 0 };
	struct oj *v = oj_parse_value(&ps);

	if (!v)
		return NULL;
	oj_ws(&ps);
	if (ps.p != ps.end) {
		oj_free(v);
		return NULL;
	}
	return v;
}

/* --- writer ----------------------------------------------------------------------------- */

struct oj_out {
	char *p;
	size_t len, cap;
	int failed;
};

static void oj_emit(struct oj_out *o, const char *s, size_t n)
{
	if (o->failed)
		return;
	if (o->cap - o->len <= n) {
		size_t cap = o->cap ? o->cap : 256;
		while (cap - o->len <= n)
			cap *= 2;
		char *np = realloc(o->p, cap);
		if (!np) {
			o->failed = 1;
			return;
		}
		o->p = np;
		o->cap = cap;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = '\0';
}

static void oj_emits(struct oj_out *o, const char *s)
{
	oj_emit(o, s, strlen(s));
}

static void oj_indent(struct oj_out *o, int level)
{
	for (int i = 0; i < level; i++)
		oj_emit(o, "    ", 4);
}

static void oj_write_string(struct oj_out *o, const char *s)
{
	oj_emit(o, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[8];
		switch (c) {
		case '"': oj_emit(o, "\\\"", 2); break;
		case '\\': oj_emit(o, "\\\\", 2); break;
		case '\b': oj_emit(o, "\\b", 2); break;
		case '\f': oj_emit(o, "\\f", 2); break;
		case '\n': oj_emit(o, "\\n", 2); break;
		case '\r': oj_emit(o, "\\r", 2); break;
		case '\t': oj_emit(o, "\\t", 2); break;
		default:
			if (c < 0x20) {
				snprintf(esc, sizeof(esc), "\\u%04x", c);
				oj_emit(o, esc, 6);
			} else {
				oj_emit(o, s, 1);
			}
		}
	}
	oj_emit(o, "\"", 1);
}

/* Integers as integers; anything else with the fewest digits that read back the same. */
static void oj_write_number(struct oj_out *o, double d)
{
	char buf[40];

	if (d == floor(d) && fabs(d) < 9007199254740992.0) {
		snprintf(buf, sizeof(buf), "%.0f", d);
		if (strcmp(buf, "-0") == 0)
			strcpy(buf, "0");
	} else {
		for (int prec = 15; prec <= 17; prec++) {
			snprintf(buf, sizeof(buf), "%.*g", prec, d);
			if (strtod(buf, NULL) == d)
				break;
		}
	}
	oj_emits(o, buf);
}

static void oj_write(struct oj_out *o, const struct oj *v, int pretty, int level)
{
	switch (v->type) {
	case OJ_NULL: oj_emits(o, "null"); return;
	case OJ_BOOL: oj_emits(o, v->u.boolean ? "true" : "false"); return;
	case OJ_NUMBER: oj_write_number(o, v->u.number); return;
	case OJ_STRING: oj_write_string(o, v->u.string); return;
	default: break;
	}
	oj_emits(o, v->type == OJ_OBJECT ? "{" : "[");
	if (v->u.c.len == 0) {
		oj_emits(o, v->type == OJ_OBJECT ? "}" : "]");
		return;
	}
	if (pretty)
		oj_emits(o, "\n");
	for (size_t i = 0; i < v->u.c.len; i++) {
		if (pretty)
			oj_indent(o, level + 1);
		if (v->type == OJ_OBJECT) {
			oj_write_string(o, v->u.c.keys[i]);
			oj_emits(o, pretty ? ": " : ":");
		}
		oj_write(o, v->u.c.items[i], pretty, level + 1);
		if (i + 1 < v->u.c.len)
			oj_emits(o, ",");
		if (pretty)
			oj_emits(o, "\n");
	}
	if (pretty)
		oj_indent(o, level);
	oj_emits(o, v->type == OJ_OBJECT ? "}" : "]");
}

char *oj_serialize(const struct oj *v, int pretty, size_t *len)
{
	struct oj_out o = { 0 };

	oj_write(&o, v, pretty, 0);
	if (o.failed) {
		free(o.p);
		return NULL;
	}
	if (len)
		*len = o.len;
	return o.p;
}
