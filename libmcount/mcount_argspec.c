/*
 * mcount_argspec: parsing and merging -A/-R specs (mcount_argspec.h), uftrace 0.13's rules:
 *
 *   item      argN | fpargN | retval, then "/FMT[BITS]" and/or "%REG" / "%stackN"
 *   FMT       d i u x s c f p S e:NAME tSIZE[:NAME] (a struct by value, at most
 *             MC_STRUCT_MAX bytes, in "%REG+REG" or "%stack+N"); BITS 8 16 32 64, or 80 for
 *             floats; argN/f is fpargN; the default size is 8 (c: 1)
 *   merge     per function, entries in order: an item of the same type and index (register,
 *             stack offset) as one already listed replaces it in place, unless the listed one
 *             came from an exact name and this one from a regex; others are appended
 *   auto      an entry without items of its kind ("-A FUNC", "-R FUNC") takes, in its place in
 *             that order, the items of uftrace_autoargs' entry for the function's name (none:
 *             nothing); with -a/--auto-args every function that has no items of a kind after
 *             all the entries takes its table entry's items of that kind (utils/filter.c
 *             add_filter with TRIGGER_FL_AUTO_ARGS: "ignore auto-args if it already has
 *             argspec")
 *
 * Everything here is plain string work on caller-provided storage (see the header).
 */
#include "libmcount/mcount_argspec.h"
#include "formats/uftrace/uftrace_autoargs.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static void ma_err(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void ma_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

/* strtol(.., 0)'s base at *s: 0x/0X hex (skipped), a leading 0 octal, else decimal */
static int ma_base(const char **s, const char *end)
{
	if (end - *s > 2 && (*s)[0] == '0' && ((*s)[1] == 'x' || (*s)[1] == 'X')) {
		*s += 2;
		return 16;
	}
	return *s < end && **s == '0' ? 8 : 10;
}

/* the value of digit C in any base up to 16, or 99 */
static int ma_digit(char c)
{
	return isdigit((unsigned char)c)  ? c - '0' :
	       isxdigit((unsigned char)c) ? tolower((unsigned char)c) - 'a' + 10 :
					    99;
}

/* a decimal (or 0x) number at *p, as strtol(.., 0) reads it; *p moves past it */
static long ma_number(const char **p, const char *end)
{
	const char *s = *p;
	long v = 0, sign = 1;
	int base, d;

	if (s < end && (*s == '+' || *s == '-')) {
		sign = *s == '-' ? -1 : 1;
		s++;
	}
	base = ma_base(&s, end);
	for (; s < end && (d = ma_digit(*s)) < base; s++)
		if (v < 100000)
			v = v * base + d;
	*p = s;
	return v * sign;
}

/* the N of argN, as uftrace's `idx = strtol(...)` into an int: decimal, 0x or octal,
 * saturated at LONG_MAX, then truncated (arg4294967295 is -1, an index no function has) */
static int32_t ma_index(const char **p, const char *end)
{
	const char *s = *p;
	unsigned long long v = 0;
	int base = ma_base(&s, end), d;

	for (; s < end && (d = ma_digit(*s)) < base; s++) {
		v = v * (unsigned)base + (unsigned)d;
		if (v > (unsigned long long)LONG_MAX)
			v = LONG_MAX; /* strtol's ERANGE */
	}
	*p = s;
	return (int32_t)(uint32_t)v;
}

static const char *const ma_regs[] = { "rdi", "rsi", "rdx", "rcx", "r8", "r9" };

/* uftrace's register number of NAME (LEN bytes, any case), -1 if none */
static int ma_reg(const char *name, size_t len)
{
	for (int i = 0; i < 6; i++)
		if (strlen(ma_regs[i]) == len && !strncasecmp(name, ma_regs[i], len))
			return i + 1;
	if (len == 4 && !strncasecmp(name, "xmm", 3) && name[3] >= '0' && name[3] <= '7')
		return MC_REG_XMM0 + (name[3] - '0');
	return -1;
}

int mc_arg_parse(struct mc_arg *a, const char *item, size_t len, char *err, size_t errlen)
{
	const char *p = item, *end = item + len;
	int bits;

	memset(a, 0, sizeof(*a));
	a->fmt = 'd';
	a->size = 8;
	if (len > 3 && !strncmp(p, "arg", 3) && isdigit((unsigned char)p[3])) {
		p += 3;
		a->idx = ma_index(&p, end);
		a->type = MC_AT_INDEX;
	} else if (len >= 6 && !strncmp(p, "retval", 6)) {
		p += 6;
		a->type = MC_AT_INDEX;
	} else if (len > 5 && !strncmp(p, "fparg", 5) && isdigit((unsigned char)p[5])) {
		p += 5;
		a->idx = ma_index(&p, end);
		a->type = MC_AT_FLOAT;
		a->fmt = 'f';
	} else {
		ma_err(err, errlen, "'%.*s': not argN, fpargN or retval", (int)len, item);
		return -1;
	}
	if (p == end)
		return 0;
	if (*p == '%')
		goto location;
	if (*p != '/')
		goto bad;
	p++;
	if (p == end)
		goto bad;
	switch (*p) {
	case 'd':
	case 'i':
	case 'u':
	case 'x':
	case 's':
	case 'p':
	case 'S':
		a->fmt = *p;
		break;
	case 'c':
		a->fmt = 'c';
		a->size = 1;
		break;
	case 'f':
		a->fmt = 'f';
		a->type = MC_AT_FLOAT;
		a->size = 8;
		break;
	case 'e':
		/* an enum: the value as an integer, its name for the reader */
		if (end - p < 3 || p[1] != ':' || !(isalpha((unsigned char)p[2]) || p[2] == '_')) {
			ma_err(err, errlen, "'%.*s': an enum is /e:NAME", (int)len, item);
			return -1;
		}
		a->fmt = 'e';
		p += 2;
		while (p < end && *p != '%')
			p++;
		goto location;
	case 't': {
		/* a struct by value (uftrace's DWARF specs write it): SIZE bytes, base 0 as
		 * strtol(.., 0), an optional name up to the location, then its registers joined
		 * with '+' (unknown ones skipped, as uftrace does) or %stack+N */
		long tsize;

		p++;
		tsize = ma_number(&p, end);
		if (tsize < 0 || tsize > MC_STRUCT_MAX) {
			ma_err(err, errlen, "'%.*s': a struct of more than %d bytes", (int)len, item,
			       MC_STRUCT_MAX);
			return -1;
		}
		a->fmt = 't';
		a->tsize = (uint8_t)tsize;
		a->size = 8;
		if (p < end && *p == ':')
			while (p < end && *p != '%')
				p++;
		if (p == end)
			return 0;
		if (*p != '%')
			goto bad;
		if (end - p >= 7 && !strncmp(p, "%stack+", 7))
			goto location;
		while (p < end) {
			const char *q = ++p;
			int r;

			while (p < end && *p != '+')
				p++;
			r = ma_reg(q, (size_t)(p - q));
			if (r >= 0 && a->nregs < sizeof(a->regs))
				a->regs[a->nregs++] = (uint8_t)r;
		}
		if (a->nregs) {
			a->type = MC_AT_REG;
			a->reg = a->regs[a->nregs - 1];
		}
		return 0;
	}
	default:
		if (a->fmt == 'f' && isdigit((unsigned char)*p))
			goto size;
		ma_err(err, errlen, "'%.*s': unsupported format '%c' (d i u x s c f p S e t)",
		       (int)len, item, *p);
		return -1;
	}
	p++;
	if (p == end)
		return 0;
	if (*p == '%')
		goto location;
size:
	bits = (int)ma_number(&p, end);
	if (bits == 8 || bits == 16 || bits == 32 || bits == 64)
		a->size = (uint8_t)(bits / 8);
	else if (bits == 80 && a->fmt == 'f')
		a->size = 10;
	else {
		ma_err(err, errlen, "'%.*s': unsupported size (8 16 32 64, 80 for floats)",
		       (int)len, item);
		return -1;
	}
location:
	if (p == end)
		return 0;
	if (*p != '%')
		goto bad;
	p++;
	if (end - p >= 5 && !strncmp(p, "stack", 5)) {
		p += 5;
		a->stack_ofs = (int16_t)ma_number(&p, end);
		a->type = MC_AT_STACK;
		return 0; /* uftrace reads the number and ignores what follows */
	} else {
		int r = ma_reg(p, (size_t)(end - p));
		if (r < 0) {
			ma_err(err, errlen, "'%.*s': unknown register (rdi rsi rdx rcx r8 r9 "
			       "xmm0-xmm7, or stackN)", (int)len, item);
			return -1;
		}
		a->reg = (uint8_t)r;
		a->type = MC_AT_REG;
		return 0;
	}
bad:
	ma_err(err, errlen, "'%.*s': cannot parse", (int)len, item);
	return -1;
}

/* uftrace's trigger actions: words that are neither an argument nor a module name */
static const char *const ma_actions[] = { "depth=", "filter", "notrace", "trace_on", "trace_off",
					  "trace", "recover", "color=", "time=", "read=",
					  "finish", "auto-args", "hide", "size=", "call=" };

static int ma_item(struct mc_argrule *r, const char *s, size_t n, int kind, char *err,
		   size_t errlen)
{
	int is_arg = (n > 3 && !strncasecmp(s, "arg", 3)) || (n > 5 && !strncasecmp(s, "fparg", 5));
	int is_ret = n >= 6 && !strncasecmp(s, "retval", 6);

	if (is_arg || is_ret) {
		if ((is_arg && kind != MC_AR_ARG) || (is_ret && kind != MC_AR_RET))
			return 0; /* an action of the other option: uftrace ignores it */
		if (r->n == MC_ARGS_MAX) {
			ma_err(err, errlen, "more than %d arguments in one entry", MC_ARGS_MAX);
			return -1;
		}
		if (mc_arg_parse(&r->a[r->n], s, n, err, errlen) < 0)
			return -1;
		r->n++;
		return 0;
	}
	for (size_t i = 0; i < sizeof(ma_actions) / sizeof(ma_actions[0]); i++)
		if (!strncasecmp(s, ma_actions[i], strlen(ma_actions[i])))
			return 0;
	/* a module name; uftrace takes the first one and ignores the others */
	if (r->module[0])
		return 0;
	if (n >= sizeof(r->module)) {
		ma_err(err, errlen, "module name '%.*s' too long", (int)n, s);
		return -1;
	}
	memcpy(r->module, s, n);
	r->module[n] = '\0';
	return 0;
}

int mc_argspec_parse(struct mc_argspec_set *s, const char *list, int kind, int glob, char *err,
		     size_t errlen)
{
	const char *p = list;

	while (p && *p) {
		const char *e = strchr(p, ';'), *at, *q;
		struct mc_argrule *r;
		char perr[300];

		if (!e)
			e = p + strlen(p);
		if (e == p) {
			p = *e ? e + 1 : e;
			continue;
		}
		if (s->n == MC_ARGRULES_MAX) {
			ma_err(err, errlen, "more than %d entries", MC_ARGRULES_MAX);
			return -1;
		}
		r = &s->r[s->n];
		memset(r, 0, sizeof(*r) - sizeof(r->a));
		r->kind = (uint8_t)kind;
		at = memchr(p, '@', (size_t)(e - p));
		if (!at)
			at = e;
		if (at == p) {
			ma_err(err, errlen, "'%.*s': no function pattern", (int)(e - p), p);
			return -1;
		}
		if (mc_pattern_compile(&r->patt, p, (size_t)(at - p), glob, perr, sizeof(perr)) <
		    0) {
			ma_err(err, errlen, "'%.*s': %s", (int)(at - p), p, perr);
			return -1;
		}
		for (q = at < e ? at + 1 : e; q < e;) {
			const char *c = memchr(q, ',', (size_t)(e - q));
			if (!c)
				c = e;
			if (c > q && ma_item(r, q, (size_t)(c - q), kind, err, errlen) < 0)
				return -1;
			q = c + 1;
		}
		/* no item ("-A FUNC"): the auto spec of each function it matches (n 0) */
		s->n++;
		p = *e ? e + 1 : e;
	}
	return 0;
}

int mc_argspec_module_is(const char *path, const char *module)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, module, strlen(module));
}

static int ma_same(const struct mc_arg *x, const struct mc_arg *y)
{
	if (x->type != y->type)
		return 0;
	switch (x->type) {
	case MC_AT_INDEX:
	case MC_AT_FLOAT:
		return x->idx == y->idx;
	case MC_AT_REG:
		return x->reg == y->reg;
	default:
		return x->stack_ofs == y->stack_ofs;
	}
}

/* Merge item A (EXACT: from a plain name) into OUT, uftrace's add_trigger */
static void ma_merge(struct mc_arglist *out, const struct mc_arg *in, int exact)
{
	struct mc_arg a = *in;
	unsigned j;

	a.exact = (uint8_t)exact;
	for (j = 0; j < out->n && !ma_same(&out->a[j], &a); j++)
		;
	if (j < out->n) {
		if (exact || !out->a[j].exact) {
			int32_t idx = out->a[j].idx;
			out->a[j] = a;
			out->a[j].idx = idx;
		}
		return;
	}
	if (out->n == MC_ARGS_MAX)
		return; /* counted by the caller: it warns of none */
	out->a[out->n++] = a;
}

/* The items of KIND for NAME merged into OUT: DWARF's (DW, "arg1,arg2/s" without the '@')
 * first, as uftrace's find_auto_argspec, else the table's; 0 when neither has any. A DWARF
 * spec with an item we cannot record (a struct by value) gives none of that kind: its
 * payload would not have the layout the .dbg tells uftrace's readers. */
static int ma_merge_auto(struct mc_arglist *out, const char *name, int kind, int exact,
			 const char *dw)
{
	const struct uftrace_autoarg *e = dw ? NULL : uftrace_autoarg_find(name);
	const char *p = dw ? dw : e ? (kind == MC_AR_ARG ? e->args : e->ret) : NULL;
	struct mc_arg a[MC_ARGS_MAX];
	unsigned n = 0;

	if (!p)
		return 0;
	while (*p) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);

		/* the table is ours and parses (the unit test checks every entry) */
		if (n == MC_ARGS_MAX || mc_arg_parse(&a[n], p, len, NULL, 0) < 0) {
			if (dw)
				return 1;
		} else {
			n++;
		}
		p += len + (c != NULL);
	}
	for (unsigned i = 0; i < n; i++)
		ma_merge(out, &a[i], exact);
	return 1;
}

void mc_argspec_for(const struct mc_argspec_set *s, const char *path, const char *name,
		    const uint8_t *module_ok, struct mc_arglist *out)
{
	mc_argspec_for_dwarf(s, path, name, module_ok, NULL, NULL, out);
}

void mc_argspec_for_dwarf(const struct mc_argspec_set *s, const char *path, const char *name,
			  const uint8_t *module_ok, const char *dw_arg, const char *dw_ret,
			  struct mc_arglist *out)
{
	const char *dw[3] = { NULL, dw_arg, dw_ret };

	int has[3] = { 0 }; /* by kind: an entry gave the function items (uftrace's flags) */

	(void)path;
	out->n = out->nargs = out->nret = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct mc_argrule *r = &s->r[i];
		int exact = r->patt.type == MC_PATT_SIMPLE;

		if (r->module[0] && !(module_ok && module_ok[i]))
			continue;
		if (!mc_pattern_match(&r->patt, name))
			continue;
		if (r->n == 0) {
			has[r->kind] |= ma_merge_auto(out, name, r->kind, exact, dw[r->kind]);
			continue;
		}
		for (unsigned k = 0; k < r->n; k++)
			ma_merge(out, &r->a[k], exact);
		has[r->kind] = 1;
	}
	if (s->auto_all) {
		/* uftrace's "." pattern: a regex, so not exact */
		if (!has[MC_AR_ARG])
			ma_merge_auto(out, name, MC_AR_ARG, 0, dw_arg);
		if (!has[MC_AR_RET])
			ma_merge_auto(out, name, MC_AR_RET, 0, dw_ret);
	}
	for (unsigned j = 0; j < out->n; j++) {
		if (out->a[j].idx == 0) /* uftrace: RETVAL_IDX, whatever the type */
			out->nret++;
		else
			out->nargs++;
	}
}

/* the LEN bytes at S after what OUT (SIZE bytes) holds, SEP between; -1 when it does not fit */
static int ma_append(char *out, size_t size, char sep, const char *s, size_t len)
{
	size_t n = strlen(out), seplen = n ? 1 : 0;

	if (n + seplen + len + 1 > size)
		return -1;
	if (seplen)
		out[n++] = sep;
	memcpy(out + n, s, len);
	out[n + len] = '\0';
	return 0;
}

/* one more entry of OUT, a ';'-separated list */
static int ma_add(char *out, size_t size, const char *s, size_t len)
{
	return ma_append(out, size, ';', s, len);
}

/* "NAME@LIST" (NLEN and LLEN bytes) as one more entry of OUT */
static int ma_add_entry(char *out, size_t size, const char *name, size_t nlen, const char *list,
			size_t llen)
{
	char entry[1024];

	if (nlen + 1 + llen + 1 > sizeof(entry))
		return -1;
	memcpy(entry, name, nlen);
	entry[nlen] = '@';
	memcpy(entry + nlen + 1, list, llen);
	return ma_add(out, size, entry, nlen + 1 + llen);
}

/* the action of LEN bytes at A after the ones in LIST (',' between) */
static int ma_add_action(char *list, size_t size, const char *a, size_t len)
{
	return ma_append(list, size, ',', a, len);
}

int mc_trigger_split(const char *trig, char *rest, char *args, char *rets, size_t size)
{
	const char *p = trig;

	rest[0] = args[0] = rets[0] = '\0';
	while (p && *p) {
		const char *end = strchr(p, ';'), *at, *a;
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char items[1024] = "", keep[1024] = "";
		int rval = 0, autoa = 0;
		size_t nlen;

		at = memchr(p, '@', len);
		if (!at) {
			if (len && ma_add(rest, size, p, len) < 0)
				return -1;
			goto next;
		}
		nlen = (size_t)(at - p);
		for (a = at + 1; a < p + len;) {
			const char *ae = memchr(a, ',', (size_t)(p + len - a));
			size_t alen = ae ? (size_t)(ae - a) : (size_t)(p + len - a);

			if ((alen >= 3 && !strncasecmp(a, "arg", 3)) ||
			    (alen >= 5 && !strncasecmp(a, "fparg", 5))) {
				if (ma_add_action(items, sizeof(items), a, alen) < 0)
					return -1;
			} else if (alen >= 6 && !strncasecmp(a, "retval", 6)) {
				rval = 1;
			} else if (alen >= 9 && !strncasecmp(a, "auto-args", 9)) {
				autoa = 1;
			} else if (alen && ma_add_action(keep, sizeof(keep), a, alen) < 0) {
				return -1;
			}
			a += alen + 1;
		}
		if (items[0] && ma_add_entry(args, size, p, nlen, items, strlen(items)) < 0)
			return -1;
		if (rval && ma_add_entry(rets, size, p, nlen, "retval", 6) < 0)
			return -1;
		if (autoa && (ma_add(args, size, p, nlen) < 0 || ma_add(rets, size, p, nlen) < 0))
			return -1;
		if (keep[0] && ma_add_entry(rest, size, p, nlen, keep, strlen(keep)) < 0)
			return -1;
next:
		p = end ? end + 1 : NULL;
	}
	return 0;
}
