/*
 * rd_json: a recursive-descent JSON parser for metadata files (see rd_json.h).
 */
#include "formats/common/rd_json.h"
#include "formats/common/rd_common.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct ovj_in {
	const char *p, *start, *end;
	int depth;
};

void ovj_free(struct ovj *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++) {
		ovj_free(v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->string);
	free(v);
}

/* white space and comments */
static bool ovj_skip(struct ovj_in *in)
{
	for (;;) {
		while (in->p < in->end &&
		       (*in->p == ' ' || *in->p == '\t' || *in->p == '\n' || *in->p == '\r'))
			in->p++;
		if (in->end - in->p >= 2 && in->p[0] == '/' && in->p[1] == '/') {
			while (in->p < in->end && *in->p != '\n')
				in->p++;
		} else if (in->end - in->p >= 2 && in->p[0] == '/' && in->p[1] == '*') {
			const char *q = in->p + 2;
			while (q + 1 < in->end && !(q[0] == '*' && q[1] == '/'))
				q++;
			if (q + 1 >= in->end)
				return false;
			in->p = q + 2;
		} else {
			return true;
		}
	}
}

static bool ovj_u4(struct ovj_in *in, unsigned *out)
{
	unsigned v = 0;
	if (in->end - in->p < 4)
		return false;
	for (int i = 0; i < 4; i++) {
		int h = rd_hexval(in->p[i]);
		if (h < 0)
			return false;
		v = v * 16 + (unsigned)h;
	}
	in->p += 4;
	*out = v;
	return true;
}

/* after the opening quote; malloc'ed UTF-8 text */
static char *ovj_string(struct ovj_in *in)
{
	size_t cap = 32, n = 0;
	char *s = malloc(cap);

	while (s && in->p < in->end && *in->p != '"') {
		unsigned char c = (unsigned char)*in->p;
		unsigned cp;

		if (cap - n < 5) {
			char *ns = realloc(s, cap * 2);
			if (!ns)
				break;
			s = ns;
			cap *= 2;
		}
		if (c < 0x20)
			goto bad;
		if (c != '\\') {
			s[n++] = (char)c;
			in->p++;
			continue;
		}
		if (++in->p >= in->end)
			goto bad;
		c = (unsigned char)*in->p++;
		switch (c) {
		case '"':
		case '\\':
		case '/': s[n++] = (char)c; continue;
		case 'b': s[n++] = '\b'; continue;
		case 'f': s[n++] = '\f'; continue;
		case 'n': s[n++] = '\n'; continue;
		case 'r': s[n++] = '\r'; continue;
		case 't': s[n++] = '\t'; continue;
		case 'u': break;
		default: goto bad;
		}
		if (!ovj_u4(in, &cp) || cp == 0)
			goto bad;
		if (cp >= 0xd800 && cp < 0xdc00) {
			unsigned lo;
			if (in->end - in->p < 2 || in->p[0] != '\\' || in->p[1] != 'u')
				goto bad;
			in->p += 2;
			if (!ovj_u4(in, &lo) || lo < 0xdc00 || lo > 0xdfff)
				goto bad;
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
		} else if (cp >= 0xdc00 && cp <= 0xdfff) {
			goto bad;
		}
		if (cp < 0x80) {
			s[n++] = (char)cp;
		} else if (cp < 0x800) {
			s[n++] = (char)(0xc0 | (cp >> 6));
			s[n++] = (char)(0x80 | (cp & 0x3f));
		} else if (cp < 0x10000) {
			s[n++] = (char)(0xe0 | (cp >> 12));
			s[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
			s[n++] = (char)(0x80 | (cp & 0x3f));
		} else {
			s[n++] = (char)(0xf0 | (cp >> 18));
			s[n++] = (char)(0x80 | ((cp >> 12) & 0x3f));
			s[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
			s[n++] = (char)(0x80 | (cp & 0x3f));
		}
	}
	if (!s || in->p >= in->end)
		goto bad;
	in->p++;
	s[n] = '\0';
	return s;
bad:
	free(s);
	return NULL;
}

static struct ovj *ovj_new(enum ovj_type t)
{
	struct ovj *v = calloc(1, sizeof(*v));
	if (v)
		v->type = t;
	return v;
}

static bool ovj_push(struct ovj *c, char *key, struct ovj *item)
{
	struct ovj **items = realloc(c->items, (c->n + 1) * sizeof(*items));
	if (!items)
		return false;
	c->items = items;
	if (c->type == OVJ_OBJECT) {
		char **keys = realloc(c->keys, (c->n + 1) * sizeof(*keys));
		if (!keys)
			return false;
		c->keys = keys;
		c->keys[c->n] = key;
	}
	c->items[c->n++] = item;
	return true;
}

static struct ovj *ovj_value(struct ovj_in *in);

static struct ovj *ovj_container(struct ovj_in *in, bool object)
{
	struct ovj *v = ovj_new(object ? OVJ_OBJECT : OVJ_ARRAY);
	char close = object ? '}' : ']';

	if (!v || ++in->depth > OVJ_MAX_DEPTH)
		goto bad;
	in->p++;
	if (!ovj_skip(in))
		goto bad;
	if (in->p < in->end && *in->p == close) {
		in->p++;
		in->depth--;
		return v;
	}
	for (;;) {
		char *key = NULL;
		struct ovj *item;

		if (!ovj_skip(in))
			goto bad;
		if (object) {
			if (in->p >= in->end || *in->p != '"')
				goto bad;
			in->p++;
			if (!(key = ovj_string(in)))
				goto bad;
			if (!ovj_skip(in) || in->p >= in->end || *in->p != ':') {
				free(key);
				goto bad;
			}
			in->p++;
		}
		item = ovj_value(in);
		if (!item || !ovj_push(v, key, item)) {
			free(key);
			ovj_free(item);
			goto bad;
		}
		if (!ovj_skip(in) || in->p >= in->end)
			goto bad;
		if (*in->p == ',') {
			in->p++;
			continue;
		}
		if (*in->p != close)
			goto bad;
		in->p++;
		in->depth--;
		return v;
	}
bad:
	ovj_free(v);
	return NULL;
}

static bool ovj_lit(struct ovj_in *in, const char *w)
{
	size_t n = strlen(w);
	if ((size_t)(in->end - in->p) < n || memcmp(in->p, w, n) != 0)
		return false;
	in->p += n;
	return true;
}

static struct ovj *ovj_number(struct ovj_in *in)
{
	const char *q = in->p;
	char buf[128];
	struct ovj *v;
	char *e;

	if (q < in->end && *q == '-')
		q++;
	if (q >= in->end || *q < '0' || *q > '9')
		return NULL;
	if (*q == '0')
		q++;
	else
		while (q < in->end && *q >= '0' && *q <= '9')
			q++;
	if (q < in->end && *q == '.') {
		if (++q >= in->end || *q < '0' || *q > '9')
			return NULL;
		while (q < in->end && *q >= '0' && *q <= '9')
			q++;
	}
	if (q < in->end && (*q == 'e' || *q == 'E')) {
		q++;
		if (q < in->end && (*q == '+' || *q == '-'))
			q++;
		if (q >= in->end || *q < '0' || *q > '9')
			return NULL;
		while (q < in->end && *q >= '0' && *q <= '9')
			q++;
	}
	if ((size_t)(q - in->p) >= sizeof(buf))
		return NULL;
	memcpy(buf, in->p, (size_t)(q - in->p));
	buf[q - in->p] = '\0';
	v = ovj_new(OVJ_NUMBER);
	if (!v)
		return NULL;
	v->number = strtod(buf, &e);
	if (*e || !isfinite(v->number)) {
		ovj_free(v);
		return NULL;
	}
	in->p = q;
	return v;
}

static struct ovj *ovj_value(struct ovj_in *in)
{
	struct ovj *v;

	if (!ovj_skip(in) || in->p >= in->end)
		return NULL;
	switch (*in->p) {
	case '{': return ovj_container(in, true);
	case '[': return ovj_container(in, false);
	case '"':
		in->p++;
		v = ovj_new(OVJ_STRING);
		if (v && !(v->string = ovj_string(in))) {
			ovj_free(v);
			return NULL;
		}
		return v;
	case 't':
	case 'f': {
		bool b = ovj_lit(in, "true");
		if (!b && !ovj_lit(in, "false"))
			return NULL;
		v = ovj_new(OVJ_BOOL);
		if (v)
			v->boolean = b;
		return v;
	}
	case 'n': return ovj_lit(in, "null") ? ovj_new(OVJ_NULL) : NULL;
	default: return ovj_number(in);
	}
}

struct ovj *ovj_parse(const char *text, size_t len, size_t *err_off)
{
	struct ovj_in in = { text, text, text + len, 0 };
	struct ovj *v = ovj_value(&in);

	if (v && (!ovj_skip(&in) || in.p != in.end)) {
		ovj_free(v);
		v = NULL;
	}
	if (!v && err_off)
		*err_off = (size_t)(in.p - in.start);
	return v;
}

static const struct ovj *ovj_get_n(const struct ovj *obj, const char *key, size_t klen)
{
	const struct ovj *found = NULL;

	if (!obj || obj->type != OVJ_OBJECT)
		return NULL;
	for (size_t i = 0; i < obj->n; i++)
		if (strlen(obj->keys[i]) == klen && memcmp(obj->keys[i], key, klen) == 0)
			found = obj->items[i];
	return found;
}

const struct ovj *ovj_get(const struct ovj *obj, const char *key)
{
	return ovj_get_n(obj, key, strlen(key));
}

const struct ovj *ovj_dotget(const struct ovj *obj, const char *path)
{
	for (;;) {
		const char *dot = strchr(path, '.');
		size_t klen = dot ? (size_t)(dot - path) : strlen(path);
		obj = ovj_get_n(obj, path, klen);
		if (!obj || !dot)
			return obj;
		path = dot + 1;
	}
}

const char *ovj_dotget_string(const struct ovj *obj, const char *path)
{
	const struct ovj *v = ovj_dotget(obj, path);
	return v && v->type == OVJ_STRING ? v->string : NULL;
}

bool ovj_dotget_number(const struct ovj *obj, const char *path, double *out)
{
	const struct ovj *v = ovj_dotget(obj, path);
	if (!v || v->type != OVJ_NUMBER)
		return false;
	*out = v->number;
	return true;
}
