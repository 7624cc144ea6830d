/*
 * mcount_filter: FLIGHTREC_FILTER / _DEPTH / _TIME_FILTER / _MATCH read and compiled into the
 * address-range table the hooks search (see mcount_filter.h for the meaning of each).
 *
 * The regex matcher: POSIX extended syntax as glibc's regcomp takes it for symbol names
 * (literals, '.', bracket expressions with ranges and [:class:], '^', '$', groups,
 * alternation, '*' '+' '?' '{m}' '{m,}' '{m,n}', '\' escapes, glibc's \w \W \s \S), parsed
 * into a node array and run by backtracking with explicit continuations: a boolean search,
 * so leftmost-longest does not matter. Steps are bounded per name. What it does not take
 * (back-references, \b, collating elements) is an error, never a silent mismatch.
 * Session start only: no malloc (the table grows with rec_mem_grow), no stdio.
 */
#include "libmcount/mcount_filter.h"
#include "libmcount/mcount_plt.h"
#include "librecord/rec_elf.h"
#include "librecord/rec_symtab.h"
#include "librecord/rec_util.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

enum { RX_CHAR, RX_ANY, RX_SET, RX_BOL, RX_EOL, RX_GROUP, RX_ALT };
#define RX_END 0xffff
#define RX_INF 0xffff
#define RX_DEPTH 32		/* nested groups */
#define RX_STEPS (1u << 20)	/* per name searched */
#define REGEX_CHARS ".?*+-^$|()[]{}" /* uftrace's: a pattern without them is a plain name */

struct mc_filter_conf mc_fconf;

static void mc_err(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void mc_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

/* ---- bracket expressions (regex and glob) ---- */

static void set_add(uint8_t *set, unsigned c)
{
	set[(c & 255) >> 3] |= (uint8_t)(1u << (c & 7));
}

static int set_has(const uint8_t *set, unsigned c)
{
	return set[(c & 255) >> 3] >> (c & 7) & 1;
}

static int set_class(uint8_t *set, const char *name, size_t len)
{
	static const struct {
		const char *name;
		int (*fn)(int);
	} classes[] = { { "alpha", isalpha }, { "digit", isdigit }, { "alnum", isalnum },
			{ "upper", isupper }, { "lower", islower }, { "space", isspace },
			{ "punct", ispunct }, { "xdigit", isxdigit }, { "print", isprint },
			{ "graph", isgraph }, { "cntrl", iscntrl }, { "blank", isblank } };

	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		if (strlen(classes[i].name) != len || memcmp(classes[i].name, name, len))
			continue;
		for (unsigned c = 1; c < 256; c++)
			if (classes[i].fn((int)c))
				set_add(set, c);
		return 0;
	}
	return -1;
}

/* The bracket expression at s (just after '['): the set, and where it ends (after ']').
 * glob: '!' negates too, and '\' escapes (fnmatch without FNM_NOESCAPE). -1: malformed. */
static int bracket(const char *s, const char *end, uint8_t set[32], int glob, const char **after,
		   char *err, size_t errlen)
{
	int neg = 0, first = 1;

	memset(set, 0, 32);
	if (s < end && (*s == '^' || (glob && *s == '!'))) {
		neg = 1;
		s++;
	}
	for (;;) {
		unsigned lo, hi;

		if (s >= end) {
			mc_err(err, errlen, "unmatched '['");
			return -1;
		}
		if (*s == ']' && !first)
			break;
		first = 0;
		if (s[0] == '[' && s + 1 < end && (s[1] == '.' || s[1] == '=')) {
			mc_err(err, errlen, "collating elements ([. .] [= =]) are not supported");
			return -1;
		}
		if (s[0] == '[' && s + 1 < end && s[1] == ':') {
			const char *c = s + 2, *e = c;
			while (e + 1 < end && !(e[0] == ':' && e[1] == ']'))
				e++;
			if (e + 1 >= end || set_class(set, c, (size_t)(e - c)) < 0) {
				mc_err(err, errlen, "unknown character class in '[%.*s'",
				       (int)(end - s), s);
				return -1;
			}
			s = e + 2;
			continue;
		}
		if (glob && *s == '\\' && s + 1 < end)
			s++;
		lo = (unsigned char)*s++;
		hi = lo;
		if (s + 1 < end && s[0] == '-' && s[1] != ']') {
			s++;
			if (glob && *s == '\\' && s + 1 < end)
				s++;
			hi = (unsigned char)*s++;
			if (hi < lo) {
				mc_err(err, errlen, "invalid range end in bracket expression");
				return -1;
			}
		}
		for (unsigned c = lo; c <= hi; c++)
			set_add(set, c);
	}
	if (neg)
		for (unsigned i = 0; i < 32; i++)
			set[i] = (uint8_t)~set[i];
	set[0] &= (uint8_t)~1u; /* NUL never matches */
	*after = s + 1;
	return 0;
}

/* ---- regex parsing ---- */

struct rx_parse {
	struct mc_pattern *p;
	const char *s, *end;
	char *err;
	size_t errlen;
};

static int rx_new(struct rx_parse *ps, int op)
{
	struct mc_rx_node *n;

	if (ps->p->nnodes >= MC_RX_NODES) {
		mc_err(ps->err, ps->errlen, "too complex (more than %d nodes)", MC_RX_NODES);
		return -1;
	}
	n = &ps->p->nodes[ps->p->nnodes];
	*n = (struct mc_rx_node){ .op = (uint8_t)op, .min = 1, .max = 1, .next = RX_END,
				  .sub = RX_END };
	return ps->p->nnodes++;
}

static int rx_new_set(struct rx_parse *ps)
{
	int n;

	if (ps->p->nsets >= MC_RX_SETS) {
		mc_err(ps->err, ps->errlen, "more than %d bracket expressions", MC_RX_SETS);
		return -1;
	}
	n = rx_new(ps, RX_SET);
	if (n >= 0)
		ps->p->nodes[n].c = (uint8_t)ps->p->nsets++;
	return n;
}

static int rx_alt(struct rx_parse *ps, int depth);

/* \w \W \s \S (glibc's), or a literal */
static int rx_escape(struct rx_parse *ps)
{
	char c;
	int n;

	if (ps->s >= ps->end) {
		mc_err(ps->err, ps->errlen, "trailing backslash");
		return -1;
	}
	c = *ps->s++;
	if (c == 'w' || c == 'W' || c == 's' || c == 'S') {
		uint8_t *set;

		n = rx_new_set(ps);
		if (n < 0)
			return -1;
		set = ps->p->sets[ps->p->nodes[n].c];
		memset(set, 0, 32);
		if (c == 'w' || c == 'W') {
			set_class(set, "alnum", 5);
			set_add(set, '_');
		} else {
			set_class(set, "space", 5);
		}
		if (c == 'W' || c == 'S')
			for (unsigned i = 0; i < 32; i++)
				set[i] = (uint8_t)~set[i];
		set[0] &= (uint8_t)~1u;
		return n;
	}
	if (strchr("bB<>`'123456789", c)) {
		mc_err(ps->err, ps->errlen, "'\\%c' is not supported", c);
		return -1;
	}
	n = rx_new(ps, RX_CHAR);
	if (n >= 0)
		ps->p->nodes[n].c = (uint8_t)c;
	return n;
}

static int rx_atom(struct rx_parse *ps, int depth)
{
	char c = *ps->s++;
	int n;

	switch (c) {
	case '(':
		if (depth >= RX_DEPTH) {
			mc_err(ps->err, ps->errlen, "groups nested deeper than %d", RX_DEPTH);
			return -1;
		}
		n = rx_alt(ps, depth + 1);
		if (n < 0)
			return -1;
		if (ps->s >= ps->end || *ps->s != ')') {
			mc_err(ps->err, ps->errlen, "unmatched '('");
			return -1;
		}
		ps->s++;
		return n;
	case '[': {
		const char *after;
		n = rx_new_set(ps);
		if (n < 0 || bracket(ps->s, ps->end, ps->p->sets[ps->p->nodes[n].c], 0, &after,
				     ps->err, ps->errlen) < 0)
			return -1;
		ps->s = after;
		return n;
	}
	case '.':
		return rx_new(ps, RX_ANY);
	case '^':
		return rx_new(ps, RX_BOL);
	case '$':
		return rx_new(ps, RX_EOL);
	case '\\':
		return rx_escape(ps);
	case '*': case '+': case '?':
		mc_err(ps->err, ps->errlen, "'%c' repeats nothing", c);
		return -1;
	default:
		n = rx_new(ps, RX_CHAR);
		if (n >= 0)
			ps->p->nodes[n].c = (uint8_t)c;
		return n;
	}
}

static int rx_number(struct rx_parse *ps, unsigned *v)
{
	if (ps->s >= ps->end || !isdigit((unsigned char)*ps->s))
		return -1;
	*v = 0;
	while (ps->s < ps->end && isdigit((unsigned char)*ps->s)) {
		*v = *v * 10 + (unsigned)(*ps->s++ - '0');
		if (*v > 255)
			return -1; /* glibc takes more; no name part repeats that often */
	}
	return 0;
}

/* a quantifier at ps->s: 1 (min, max set), 0 (none), -1 (malformed) */
static int rx_quant(struct rx_parse *ps, unsigned *min, unsigned *max)
{
	const char *save = ps->s;

	if (ps->s >= ps->end)
		return 0;
	switch (*ps->s) {
	case '*': *min = 0; *max = RX_INF; ps->s++; return 1;
	case '+': *min = 1; *max = RX_INF; ps->s++; return 1;
	case '?': *min = 0; *max = 1; ps->s++; return 1;
	case '{':
		ps->s++;
		if (rx_number(ps, min) < 0) {
			/* glibc: a '{' that starts no interval is a literal */
			ps->s = save;
			return 0;
		}
		*max = *min;
		if (ps->s < ps->end && *ps->s == ',') {
			ps->s++;
			*max = RX_INF;
			if (ps->s < ps->end && *ps->s != '}' && rx_number(ps, max) < 0)
				goto bad;
		}
		if (ps->s >= ps->end || *ps->s != '}' || *max < *min)
			goto bad;
		ps->s++;
		return 1;
	default:
		return 0;
	}
bad:
	mc_err(ps->err, ps->errlen, "invalid interval '%.*s'", (int)(ps->end - save), save);
	return -1;
}

/* a sequence up to '|', ')' or the end: its first node (RX_END if empty), -2 on error */
static int rx_seq(struct rx_parse *ps, int depth)
{
	int first = RX_END, last = RX_END;

	while (ps->s < ps->end && *ps->s != '|' && *ps->s != ')') {
		unsigned min, max;
		int n = rx_atom(ps, depth), q;

		if (n < 0)
			return -2;
		while ((q = rx_quant(ps, &min, &max)) > 0) {
			struct mc_rx_node *a = &ps->p->nodes[n];
			if (a->op == RX_BOL || a->op == RX_EOL) {
				mc_err(ps->err, ps->errlen, "a repeated anchor is not supported");
				return -2;
			}
			if (a->min != 1 || a->max != 1) {
				/* x** or x{2}{3}: the repeated node in a group of its own */
				int g = rx_new(ps, RX_GROUP), alt = g < 0 ? -1 : rx_new(ps, RX_ALT);
				if (alt < 0)
					return -2;
				ps->p->nodes[g].sub = (uint16_t)alt;
				ps->p->nodes[alt].sub = (uint16_t)n;
				n = g;
			}
			ps->p->nodes[n].min = (uint16_t)min;
			ps->p->nodes[n].max = (uint16_t)max;
		}
		if (q < 0)
			return -2;
		if (last == RX_END)
			first = n;
		else
			ps->p->nodes[last].next = (uint16_t)n;
		last = n;
	}
	return first;
}

/* alternatives up to ')' or the end, as a GROUP node */
static int rx_alt(struct rx_parse *ps, int depth)
{
	int g = rx_new(ps, RX_GROUP), prev = -1;

	if (g < 0)
		return -1;
	for (;;) {
		int a = rx_new(ps, RX_ALT), seq;

		if (a < 0)
			return -1;
		if (prev < 0)
			ps->p->nodes[g].sub = (uint16_t)a;
		else
			ps->p->nodes[prev].next = (uint16_t)a;
		seq = rx_seq(ps, depth);
		if (seq == -2)
			return -1;
		ps->p->nodes[a].sub = (uint16_t)seq;
		prev = a;
		if (ps->s < ps->end && *ps->s == '|') {
			ps->s++;
			continue;
		}
		return g;
	}
}

int mc_pattern_compile(struct mc_pattern *p, const char *text, size_t len, int glob, char *err,
		       size_t errlen)
{
	struct rx_parse ps = { .p = p, .s = text, .end = text + len, .err = err,
			       .errlen = errlen };
	int root;

	memset(p, 0, sizeof(*p));
	if (len == 0 || len >= sizeof(p->text)) {
		mc_err(err, errlen, len ? "longer than %d bytes" : "empty pattern",
		       MC_PATT_LEN - 1);
		return -1;
	}
	memcpy(p->text, text, len);
	p->text[len] = '\0';
	if (memchr(text, '\0', len)) {
		mc_err(err, errlen, "a NUL byte in the pattern");
		return -1;
	}
	/* as uftrace: a name without regex characters, or a demangled "operator new" */
	if (!strpbrk(p->text, REGEX_CHARS) || !strncmp(p->text, "operator ", 9)) {
		p->type = MC_PATT_SIMPLE;
		return 0;
	}
	if (glob) {
		const char *s = text, *after;
		uint8_t set[32];

		/* fnmatch takes a malformed bracket as a literal '['; only check what it can */
		p->type = MC_PATT_GLOB;
		while ((s = memchr(s, '[', (size_t)(ps.end - s))) != NULL) {
			if (bracket(s + 1, ps.end, set, 1, &after, err, errlen) < 0 &&
			    strstr(err, "class"))
				return -1;
			s++;
		}
		return 0;
	}
	p->type = MC_PATT_REGEX;
	root = rx_alt(&ps, 0);
	if (root < 0)
		return -1;
	if (ps.s < ps.end) {
		mc_err(err, errlen, "unmatched ')'");
		return -1;
	}
	p->root = (uint16_t)root;
	return 0;
}

/* ---- regex matching ---- */

struct rx_k {
	const struct rx_k *up; /* the continuation after the group */
	unsigned grp;	       /* the GROUP whose alternative this ends */
	unsigned count;	       /* its repetitions so far, this one included */
	const char *start;     /* where this repetition started */
};

struct rx_run {
	const struct mc_pattern *p;
	const char *subject;
	uint32_t steps;
};

static int rx_seq_match(struct rx_run *r, unsigned n, const char *s, const struct rx_k *k);

static int rx_group_more(struct rx_run *r, unsigned g, unsigned count, const char *start,
			 const char *s, const struct rx_k *k)
{
	const struct mc_rx_node *node = &r->p->nodes[g];
	int empty = count > 0 && start == s;

	/* greedy: one more repetition first, unless the last one matched nothing */
	if (count < node->max && !empty) {
		struct rx_k kk = { .up = k, .grp = g, .count = count + 1, .start = s };
		for (unsigned a = node->sub; a != RX_END; a = r->p->nodes[a].next)
			if (rx_seq_match(r, r->p->nodes[a].sub, s, &kk))
				return 1;
	}
	if (count >= node->min || empty)
		return rx_seq_match(r, node->next, s, k);
	return 0;
}

static int rx_one(const struct mc_pattern *p, const struct mc_rx_node *n, char c)
{
	if (c == '\0')
		return 0;
	switch (n->op) {
	case RX_CHAR:
		return (unsigned char)c == n->c;
	case RX_ANY:
		return 1;
	default:
		return set_has(p->sets[n->c], (unsigned char)c);
	}
}

static int rx_seq_match(struct rx_run *r, unsigned n, const char *s, const struct rx_k *k)
{
	const struct mc_rx_node *node;
	unsigned i;

	if (++r->steps > RX_STEPS)
		return 0;
	if (n == RX_END) {
		if (!k)
			return 1;
		return rx_group_more(r, k->grp, k->count, k->start, s, k->up);
	}
	node = &r->p->nodes[n];
	switch (node->op) {
	case RX_BOL:
		return s == r->subject && rx_seq_match(r, node->next, s, k);
	case RX_EOL:
		return *s == '\0' && rx_seq_match(r, node->next, s, k);
	case RX_GROUP:
		return rx_group_more(r, n, 0, NULL, s, k);
	default:
		for (i = 0; i < node->max && rx_one(r->p, node, s[i]); i++)
			;
		for (;; i--) {
			if (i < node->min)
				return 0;
			if (rx_seq_match(r, node->next, s + i, k))
				return 1;
			if (i == 0)
				return 0;
		}
	}
}

/* ---- glob matching (fnmatch, flags 0) ---- */

/* Does the one-character glob item at *pp match c? *pp moves past it. */
static int glob_one(const char **pp, const char *pe, char c)
{
	const char *p = *pp, *after;
	uint8_t set[32];
	char err[8];

	if (*p == '?') {
		*pp = p + 1;
		return 1;
	}
	if (*p == '[' && bracket(p + 1, pe, set, 1, &after, err, sizeof(err)) == 0) {
		*pp = after;
		return set_has(set, (unsigned char)c);
	}
	if (*p == '\\' && p + 1 < pe)
		p++;
	*pp = p + 1;
	return *p == c;
}

static int glob_match(const char *p, const char *pe, const char *s)
{
	const char *star_p = NULL, *star_s = NULL;

	while (*s) {
		const char *q = p;
		if (p < pe && *p == '*') {
			star_p = ++p;
			star_s = s;
			continue;
		}
		if (p < pe && glob_one(&q, pe, *s)) {
			p = q;
			s++;
			continue;
		}
		if (!star_p)
			return 0;
		p = star_p;
		s = ++star_s;
	}
	while (p < pe && *p == '*')
		p++;
	return p == pe;
}

int mc_pattern_match(const struct mc_pattern *p, const char *name)
{
	struct rx_run r = { .p = p, .subject = name };
	const char *s = name;

	switch (p->type) {
	case MC_PATT_SIMPLE:
		return !strcmp(p->text, name);
	case MC_PATT_GLOB:
		return glob_match(p->text, p->text + strlen(p->text), name);
	default:
		/* searched: from every position, the end included (an empty match) */
		do {
			if (rx_seq_match(&r, p->root, s, NULL))
				return 1;
		} while (*s++ && r.steps <= RX_STEPS);
		return 0;
	}
}

/* ---- FLIGHTREC_FILTER, _TRIGGER, _CALLER ---- */

/* "N" with N <= max, the whole of s..e */
static int parse_num(const char *s, const char *e, uint64_t max, uint32_t *out)
{
	uint64_t v = 0;

	if (s >= e)
		return -1;
	for (; s < e; s++) {
		if (!isdigit((unsigned char)*s))
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > max)
			return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

static int has_prefix(const char *s, size_t len, const char *word)
{
	size_t n = strlen(word);

	return len >= n && !strncasecmp(s, word, n);
}

/* One action (or the module name) of pattern I, the LEN bytes at A. uftrace's actions are
 * matched by prefix, case-insensitively, in its table's order. */
static int parse_action(struct mc_filter_spec *s, size_t i, const char *a, size_t len,
			enum mc_list_kind kind, char *err, size_t errlen)
{
	static const char *const args[] = { "arg", "fparg", "retval", "auto-args" };
	struct mc_trigger *tr = &s->tr[i];
	const char *v = memchr(a, '=', len), *e = a + len;
	uint32_t filter_only = 0;

	for (size_t k = 0; k < sizeof(args) / sizeof(args[0]); k++) {
		if (has_prefix(a, len, args[k])) {
			mc_err(err, errlen, "'%.*s': argument actions are not supported here",
			       (int)len, a);
			return -1;
		}
	}
	v = v ? v + 1 : e;
	if (has_prefix(a, len, "read=")) {
		/* uftrace ignores a name it does not know; we say so */
		uint32_t k = mc_read_kind(v, (size_t)(e - v));
		if (!k)
			goto bad_value;
		filter_only = 1;
		tr->read |= k;
		tr->flags |= MC_TR_READ;
	} else if (has_prefix(a, len, "filter") || has_prefix(a, len, "notrace")) {
		tr->flags |= MC_TR_FILTER;
		tr->fmode = a[0] == 'f' || a[0] == 'F' ? MC_FILTER_IN : MC_FILTER_OUT;
	} else if (has_prefix(a, len, "depth=")) {
		if (parse_num(v, e, 65535, &tr->depth) < 0)
			goto bad_value;
		tr->flags |= MC_TR_DEPTH;
	} else if (has_prefix(a, len, "time=")) {
		char t[40];
		if ((size_t)(e - v) >= sizeof(t))
			goto bad_value;
		memcpy(t, v, (size_t)(e - v));
		t[e - v] = '\0';
		if (mc_parse_time(t, &tr->time) < 0)
			goto bad_value;
		tr->flags |= MC_TR_TIME;
	} else if (has_prefix(a, len, "size=")) {
		if (parse_num(v, e, UINT32_MAX, &tr->size) < 0)
			goto bad_value;
		tr->flags |= MC_TR_SIZE;
	} else if (has_prefix(a, len, "caller")) {
		tr->flags |= MC_TR_CALLER;
	} else if (has_prefix(a, len, "hide")) {
		tr->flags |= MC_TR_REPLAY;
	} else if (has_prefix(a, len, "trace")) {
		/* trace, trace_on, trace-on, traceon (and off), as uftrace's parse_trace_action */
		const char *t = a + 5;
		size_t tl = len - 5;
		filter_only = 1;
		if (tl && (*t == '_' || *t == '-')) {
			t++;
			tl--;
		}
		if (tl == 0)
			tr->flags |= MC_TR_TRACE;
		else if (tl == 2 && !strncasecmp(t, "on", 2))
			tr->flags = (tr->flags & ~(uint32_t)MC_TR_TRACE_OFF) | MC_TR_TRACE_ON;
		else if (tl == 3 && !strncasecmp(t, "off", 3))
			tr->flags = (tr->flags & ~(uint32_t)MC_TR_TRACE_ON) | MC_TR_TRACE_OFF;
		else
			goto bad_value;
	} else if (has_prefix(a, len, "finish")) {
		filter_only = 1;
		tr->flags |= MC_TR_FINISH;
	} else if (has_prefix(a, len, "color=") || has_prefix(a, len, "backtrace")) {
		filter_only = 1;
		tr->flags |= MC_TR_REPLAY;
	} else if (has_prefix(a, len, "recover")) {
		filter_only = 1;
		tr->flags |= MC_TR_RECOVER;
	} else {
		/* not an action: the module */
		if (s->module[i][0]) {
			mc_err(err, errlen, "'%.*s': a second module name", (int)len, a);
			return -1;
		}
		if (len >= MC_MODULE_LEN) {
			mc_err(err, errlen, "'%.*s': module name too long", (int)len, a);
			return -1;
		}
		if ((len == 6 && !memcmp(a, "kernel", 6)) || (len == 1 && a[0] == 'k')) {
			mc_err(err, errlen, "'%.*s': kernel modules are not supported", (int)len,
			       a);
			return -1;
		}
		memcpy(s->module[i], a, len);
		s->module[i][len] = '\0';
		return 0;
	}
	if (filter_only && kind != MC_LIST_TRIGGER) {
		/* uftrace ignores them there; we say so */
		mc_err(err, errlen, "'%.*s' is a trigger action (-T), not a filter one", (int)len,
		       a);
		return -1;
	}
	return 0;
bad_value:
	mc_err(err, errlen, "'%.*s': invalid value", (int)len, a);
	return -1;
}

int mc_filter_parse_more(struct mc_filter_spec *s, const char *list, enum mc_list_kind kind,
			 int glob, char *err, size_t errlen)
{
	const char *p = list;

	while (*p) {
		const char *e = strchr(p, ';');
		size_t len = e ? (size_t)(e - p) : strlen(p), plen;
		const char *at = memchr(p, '@', len);
		int out = 0;
		char why[160];

		if (len && *p == '!' && kind == MC_LIST_FILTER) {
			out = 1;
			p++;
			len--;
			at = memchr(p, '@', len);
		}
		plen = at ? (size_t)(at - p) : len;
		if (len == 0) {
			if (out) {
				mc_err(err, errlen, "'!' with no pattern");
				return -1;
			}
		} else if (s->n >= MC_FILTER_MAX) {
			mc_err(err, errlen, "more than %d patterns", MC_FILTER_MAX);
			return -1;
		} else {
			size_t i = s->n;
			struct mc_trigger *tr = &s->tr[i];

			if (mc_pattern_compile(&s->p[i], p, plen, glob, why, sizeof(why)) < 0) {
				mc_err(err, errlen, "'%.*s': %s", (int)plen, p, why);
				return -1;
			}
			*tr = (struct mc_trigger){ 0 };
			s->module[i][0] = '\0';
			s->modidx[i] = -1;
			if (kind == MC_LIST_FILTER) {
				tr->flags = MC_TR_FILTER;
				tr->fmode = out ? MC_FILTER_OUT : MC_FILTER_IN;
			} else if (kind == MC_LIST_CALLER) {
				tr->flags = MC_TR_CALLER;
			}
			for (const char *a = at ? at + 1 : p + len; a < p + len;) {
				const char *c = memchr(a, ',', (size_t)(p + len - a));
				size_t alen = c ? (size_t)(c - a) : (size_t)(p + len - a);

				if (alen &&
				    parse_action(s, i, a, alen, kind, why, sizeof(why)) < 0) {
					mc_err(err, errlen, "'%.*s': %s", (int)len, p, why);
					return -1;
				}
				a += alen + 1;
			}
			if (kind == MC_LIST_TRIGGER && !tr->flags) {
				mc_err(err, errlen,
				       "'%.*s': a trigger needs an action (FUNC@ACTION)", (int)len,
				       p);
				return -1;
			}
			s->p[i].out = (tr->flags & MC_TR_FILTER) && tr->fmode == MC_FILTER_OUT;
			s->has_in |= (tr->flags & MC_TR_FILTER) && tr->fmode == MC_FILTER_IN;
			s->n++;
		}
		if (!e)
			break;
		p = e + 1;
	}
	return 0;
}

int mc_filter_parse(struct mc_filter_spec *s, const char *list, int glob, char *err,
		    size_t errlen)
{
	s->n = 0;
	s->has_in = 0;
	return mc_filter_parse_more(s, list, MC_LIST_FILTER, glob, err, errlen);
}

int mc_filter_mode_of(const struct mc_filter_spec *s, const char *name)
{
	for (size_t i = s->n; i-- > 0;)
		if ((s->tr[i].flags & MC_TR_FILTER) && mc_pattern_match(&s->p[i], name))
			return (int)s->tr[i].fmode;
	return 0;
}

/* uftrace's add_trigger: later patterns add flags and replace values */
static void trigger_merge(struct mc_trigger *to, const struct mc_trigger *tr)
{
	to->flags |= tr->flags;
	if (tr->flags & MC_TR_DEPTH)
		to->depth = tr->depth;
	if (tr->flags & MC_TR_FILTER)
		to->fmode = tr->fmode;
	if (tr->flags & MC_TR_TRACE_ON)
		to->flags &= ~(uint32_t)MC_TR_TRACE_OFF;
	if (tr->flags & MC_TR_TRACE_OFF)
		to->flags &= ~(uint32_t)MC_TR_TRACE_ON;
	if (tr->flags & MC_TR_TIME)
		to->time = tr->time;
	if (tr->flags & MC_TR_SIZE)
		to->size = tr->size;
	to->read |= tr->read; /* uftrace's add_trigger ORs the read bits too */
}

uint32_t mc_read_kind(const char *s, size_t len)
{
	static const char *const names[MC_READ_KINDS] = { "proc/statm", "page-fault", "pmu-cycle",
							  "pmu-cache", "pmu-branch" };

	for (uint32_t i = 0; i < MC_READ_KINDS; i++)
		if (strlen(names[i]) == len && !memcmp(s, names[i], len))
			return 1u << i;
	return 0;
}

/* pattern i applies in module MOD (mc_filter_trigger_of's numbering) */
static int mc_filter_mod_ok(const struct mc_filter_spec *s, size_t i, int mod)
{
	if (!s->module[i][0])
		return 1;
	if (s->modidx[i] == MC_MODIDX_PLT)
		return mod >= 0 && (mod & MC_MOD_EXE_PLT);
	return s->modidx[i] == (mod >= 0 ? mod & ~MC_MOD_EXE_PLT : mod);
}

int mc_filter_trigger_of(const struct mc_filter_spec *s, const char *name, int mod,
			 struct mc_trigger *out)
{
	int any = 0;

	*out = (struct mc_trigger){ 0 };
	for (size_t i = 0; i < s->n; i++) {
		if (!mc_filter_mod_ok(s, i, mod))
			continue;
		if (!mc_pattern_match(&s->p[i], name))
			continue;
		trigger_merge(out, &s->tr[i]);
		any = 1;
	}
	return any;
}

/* ---- the range table ---- */

int mc_ftable_add_sym(struct mc_ftable *t, const struct mc_filter_spec *s, const char *name,
		      int mod, uintptr_t lo, uintptr_t hi, uint32_t size, int all)
{
	struct mc_trigger tr;
	int any_in = 0;

	if (!mc_filter_trigger_of(s, name, mod, &tr) && !all)
		return 0;
	/* uftrace's filter mode is IN once an IN pattern matched a symbol, even one a later
	 * notrace pattern then took */
	for (size_t i = 0; i < s->n && tr.flags; i++)
		if ((s->tr[i].flags & MC_TR_FILTER) && s->tr[i].fmode == MC_FILTER_IN &&
		    mc_filter_mod_ok(s, i, mod) && mc_pattern_match(&s->p[i], name))
			any_in = 1;
	if (lo >= hi)
		return 0;
	t->has_in |= any_in;
	t->has_caller |= !!(tr.flags & MC_TR_CALLER);
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct mc_frange *r = rec_mem_grow(t->r, cap * sizeof(*r));
		if (!r)
			return -1;
		t->r = r;
		t->cap = cap;
	}
	t->r[t->n] = (struct mc_frange){ .lo = lo, .hi = hi,
					 .mode = tr.flags & MC_TR_FILTER ? tr.fmode : 0,
					 .seq = (uint32_t)t->n, .symsize = size, .tr = tr };
	t->n++;
	return 0;
}

int mc_ftable_add(struct mc_ftable *t, const struct mc_filter_spec *s, const char *name,
		  uintptr_t lo, uintptr_t hi)
{
	return mc_ftable_add_sym(t, s, name, -1, lo, hi, (uint32_t)(hi - lo), 0);
}

static int frange_cmp(const void *a, const void *b)
{
	const struct mc_frange *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

void mc_ftable_finish(struct mc_ftable *t)
{
	size_t o = 0;

	rec_sort(t->r, t->n, sizeof(*t->r), frange_cmp);
	for (size_t i = 0; i < t->n; i++) {
		if (o && t->r[o - 1].lo == t->r[i].lo)
			continue; /* an alias: the first added keeps the address */
		if (o && t->r[o - 1].hi > t->r[i].lo)
			t->r[o - 1].hi = t->r[i].lo;
		t->r[o++] = t->r[i];
	}
	t->n = o;
}

void mc_ftable_free(struct mc_ftable *t)
{
	if (t->r)
		rec_mem_free(t->r);
	*t = (struct mc_ftable){ 0 };
}

int mc_parse_time(const char *s, uint64_t *ns)
{
	static const struct {
		const char *unit;
		uint64_t mult;
	} units[] = { { "", 1 }, { "ns", 1 }, { "nsec", 1 }, { "us", 1000 }, { "usec", 1000 },
		      { "ms", 1000000 }, { "msec", 1000000 }, { "s", 1000000000 },
		      { "sec", 1000000000 }, { "m", 60000000000ull },
		      { "min", 60000000000ull } };
	uint64_t whole = 0, frac = 0, fdiv = 1;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -1;
	for (; isdigit((unsigned char)*p); p++) {
		if (whole > UINT64_MAX / 10 - 10)
			return -1;
		whole = whole * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return -1;
		for (; isdigit((unsigned char)*p); p++) {
			if (fdiv < 1000000000) {
				frac = frac * 10 + (uint64_t)(*p - '0');
				fdiv *= 10;
			}
		}
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		uint64_t m = units[i].mult;
		if (strcasecmp(p, units[i].unit))
			continue;
		if (whole > UINT64_MAX / m)
			return -1;
		/* no unit: ns, and the decimals are dropped (uftrace's parse_time) */
		*ns = whole * m + frac * m / fdiv;
		return 0;
	}
	return -1;
}

/* ---- C++ names ---- */

int mc_demangle_simple(const char *full, char *out, size_t len)
{
	static const char anon[] = "(anonymous namespace)";
	static const char opchars[] = "+-*/%^&|~!=<>,[]";
	static const char *const optokens[] = {
		"<<=", ">>=", "->*", "<=>", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "++",
		"--", "+=", "-=", "*=", "/=", "%=", "^=", "&=", "|=", "->", "[]", "+", "-", "*",
		"/", "%", "^", "&", "|", "~", "!", "=", "<", ">", ",",
	};
	size_t o = 0, last_space = 0;
	int has_space = 0;

	if (!len)
		return -1;
	for (const char *p = full; *p;) {
		/* gcc's clones (.isra.0, .constprop.0, .part.0) are the function's name too */
		if (!strncmp(p, " [clone ", 8))
			break;
		if (!strncmp(p, anon, sizeof(anon) - 1)) {
			/* uftrace keeps the mangled namespace's source name */
			p += sizeof(anon) - 1;
			for (const char *q = "_GLOBAL__N_1"; *q; q++)
				if (o + 1 < len)
					out[o++] = *q;
			continue;
		}
		if (!strncmp(p, "operator", 8) && (p == full || !isalnum((unsigned char)p[-1])) &&
		    !isalnum((unsigned char)p[8]) && p[8] != '_') {
			/* the operator's own characters are its name, not a bracket */
			for (int i = 0; i < 8; i++)
				if (o + 1 < len)
					out[o++] = p[i];
			p += 8;
			if (*p == ' ' && p[1] && !strchr(opchars, p[1]) && p[1] != '(') {
				/* operator new, operator delete[], a conversion operator */
				while (*p && *p != '(' && *p != '<') {
					if (o + 1 < len)
						out[o++] = *p;
					p++;
				}
				continue;
			}
			/* the longest operator token: what follows it ('<' too) is a template's
			 * arguments ("operator+<char, ...>", "operator< <int>") or the parameters */
			size_t tl = 0;
			for (size_t i = 0; i < sizeof(optokens) / sizeof(optokens[0]); i++) {
				size_t n = strlen(optokens[i]);
				if (n > tl && !strncmp(p, optokens[i], n))
					tl = n;
			}
			for (size_t i = 0; i < tl; i++)
				if (o + 1 < len)
					out[o++] = p[i];
			p += tl;
			if (tl && p[0] == ' ' && p[1] == '<')
				p++;
			continue;
		}
		if (*p == '<' || *p == '(') {
			/* template arguments, parameters: dropped whole */
			int depth = 0;
			do {
				if (*p == '<' || *p == '(')
					depth++;
				else if (*p == '>' || *p == ')')
					depth--;
				p++;
			} while (*p && depth > 0);
			continue;
		}
		if (*p == ' ') {
			last_space = o;
			has_space = 1;
		}
		if (o + 1 < len)
			out[o++] = *p;
		p++;
	}
	out[o] = '\0';
	/* a trailing qualifier, then a return type in front */
	for (;;) {
		static const char *const quals[] = { " const", " volatile", " &&", " &" };
		int cut = 0;
		for (size_t i = 0; i < sizeof(quals) / sizeof(quals[0]); i++) {
			size_t ql = strlen(quals[i]);
			if (o >= ql && !strcmp(out + o - ql, quals[i])) {
				o -= ql;
				out[o] = '\0';
				cut = 1;
			}
		}
		if (!cut)
			break;
	}
	if (has_space) {
		char *sp = strrchr(out, ' ');
		(void)last_space;
		if (sp && !(sp - out >= 8 && !strncmp(sp - 8, "operator", 8)))
			memmove(out, sp + 1, strlen(sp + 1) + 1);
		else if (sp) {
			/* "ret ns::operator new": the return type before the operator's space */
			char *op = strstr(out, "operator");
			char *before = op;
			while (before > out && before[-1] != ' ')
				before--;
			if (before > out)
				memmove(out, before, strlen(before) + 1);
		}
	}
	return 0;
}

typedef char *(*mc_cxa_demangle_fn)(const char *, char *, size_t *, int *);

void mc_namer_init(struct mc_namer *n)
{
	/* uftrace's --demangle: simple (the default), full, or no (the mangled names) */
	const char *how = rec_getenv("FLIGHTREC_DEMANGLE");

	n->full = how && !strcmp(how, "full");
	n->demangle = how && !strcmp(how, "no")
			      ? NULL
			      : (mc_cxa_demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
	n->dbuf = NULL;
	n->dlen = 0;
	n->simple[0] = '\0';
}

const char *mc_namer_name(struct mc_namer *n, const char *name)
{
	int status = -1;
	char *d;

	if (!n->demangle || name[0] != '_' || name[1] != 'Z')
		return name;
	d = n->demangle(name, n->dbuf, &n->dlen, &status);
	if (!d || status != 0)
		return name;
	n->dbuf = d;
	if (n->full)
		return d;
	mc_demangle_simple(d, n->simple, sizeof(n->simple));
	return n->simple;
}

void mc_namer_fini(struct mc_namer *n)
{
	free(n->dbuf);
	n->dbuf = NULL;
	n->dlen = 0;
}

uintptr_t mc_sym_end(const struct rec_module *m, size_t i)
{
	const struct rec_sym *sym = &m->syms[i];
	size_t j = i + 1;

	if (sym->size)
		return sym->addr + sym->size;
	while (j < m->nsyms && m->syms[j].addr == sym->addr)
		j++;
	return j < m->nsyms ? m->syms[j].addr : m->hi;
}

/* ---- -L ---- */

const char *(*mc_filter_locate)(const struct rec_module *m, uintptr_t addr);
static struct mc_pattern mc_loc[MC_LOC_MAX];
static size_t mc_nloc;

int mc_loc_parse(struct mc_pattern *p, size_t max, const char *list, int glob, char *err,
		 size_t errlen)
{
	const char *s = list;
	size_t n = 0;

	while (*s) {
		const char *e = strchr(s, ';');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		char text[MC_PATT_LEN], conv[MC_PATT_LEN + 32];
		int out = 0;

		if (len && *s == '!') {
			out = 1;
			s++;
			len--;
		}
		if (len >= sizeof(text)) {
			mc_err(err, errlen, "longer than %d bytes", MC_PATT_LEN - 1);
			return -1;
		}
		memcpy(text, s, len);
		text[len] = '\0';
		if (len && n == max) {
			mc_err(err, errlen, "more than %d patterns", (int)max);
			return -1;
		}
		if (len && !strpbrk(text, REGEX_CHARS)) {
			/* uftrace's init_locfilter_pattern: one '/' off each end, then whole path
			 * components */
			char *t = text;

			if (t[strlen(t) - 1] == '/')
				t[strlen(t) - 1] = '\0';
			if (*t == '/')
				t++;
			snprintf(conv, sizeof(conv), "((.*/)*)%s($|(/.*))", t);
			if (mc_pattern_compile(&p[n], conv, strlen(conv), 0, err, errlen) < 0)
				return -1;
		} else if (len && mc_pattern_compile(&p[n], text, len, glob, err, errlen) < 0) {
			return -1;
		}
		if (len)
			p[n++].out = out;
		s += e ? len + 1 : len;
		if (e && !*s)
			break;
	}
	return (int)n;
}

/* MC_TR_LOC_IN or _OUT for a function in FILE (NULL: none known), 0 if no -L pattern matches:
 * the last one that matches decides, as uftrace's merged trigger */
static uint32_t mc_loc_flags(const char *file)
{
	uint32_t f = 0;

	for (size_t i = 0; file && i < mc_nloc; i++)
		if (mc_pattern_match(&mc_loc[i], file))
			f = mc_loc[i].out ? MC_TR_LOC_OUT : MC_TR_LOC_IN;
	return f;
}

/*
 * The program's PLT entries, by the names uftrace gives them ('P' lines of the .sym file): the
 * library calls libmcount records (mcount_plt.c) are entered at those addresses, and uftrace
 * filters them by name as it does functions (-F puts, -N malloc, -T puts@depth=1; @PLT: these
 * only). With --nest-libcall the libraries' too (uftrace's symbol tables hold every module's
 * PLT entries; @PLT stays the program's). The range of a sizeless symbol before the PLT
 * (_init) is cut at the first entry by mc_ftable_finish.
 */
static int mc_resolve_plt(struct mc_ftable *t, struct mc_filter_spec *s, int all,
			  struct mc_namer *namer)
{
	int nest = mc_plt_nest_wanted();

	for (size_t k = 0; k < rec_symtab_nmodules(); k++) {
		const struct rec_module *m = rec_symtab_module_at(k);
		struct rec_elf_map em;
		struct rec_elf_plt plt;
		int ret = 0, mod = (int)k | (m->is_exe ? MC_MOD_EXE_PLT : 0);

		if ((!m->is_exe && !nest) || !m->path[0] || rec_elf_map_open(m->path, &em) < 0)
			continue;
		if (rec_elf_plt(&em, &plt) == 0) {
			for (size_t i = 0; i < plt.nrel && ret == 0; i++) {
				const char *name = rec_elf_plt_name(&em, &plt, i);
				uintptr_t lo = m->bias + (uintptr_t)plt.first + plt.step * i;

				/* demangled as the functions' (-F ^operator takes _Znwm) */
				if (*name)
					ret = mc_ftable_add_sym(t, s, mc_namer_name(namer, name), mod,
								lo, lo + plt.step, plt.step, all);
			}
		}
		rec_elf_map_close(&em);
		if (ret < 0)
			return -1;
	}
	return 0;
}

static int mc_resolve(struct mc_ftable *t, struct mc_filter_spec *s, int all)
{
	/* C++ names are matched demangled, as uftrace's "simple" demangler gives them: the
	 * demangler of the libstdc++ a C++ program has loaded (set-up only; it mallocs) */
	struct mc_namer namer;

	if (rec_symtab_load() < 0)
		return -1;
	/* PATTERN@MODULE: the first module whose file name starts with MODULE */
	for (size_t i = 0; i < s->n; i++) {
		s->modidx[i] = strcasecmp(s->module[i], "PLT") ? -1 : MC_MODIDX_PLT;
		for (size_t k = 0; s->module[i][0] && s->modidx[i] == -1 &&
				   k < rec_symtab_nmodules(); k++) {
			const char *path = rec_symtab_module_at(k)->path;
			const char *base = strrchr(path, '/');

			base = base ? base + 1 : path;
			if (!strncmp(base, s->module[i], strlen(s->module[i]))) {
				s->modidx[i] = (int)k;
				break;
			}
		}
	}
	mc_namer_init(&namer);
	for (size_t k = 0; k < rec_symtab_nmodules(); k++) {
		const struct rec_module *m = rec_symtab_module_at(k);

		for (size_t i = 0; i < m->nsyms; i++) {
			const struct rec_sym *sym = &m->syms[i];
			const char *name = mc_namer_name(&namer, rec_symtab_name(m, sym));
			uint32_t loc = 0;
			size_t n0 = t->n;

			if (mc_nloc && mc_filter_locate)
				loc = mc_loc_flags(mc_filter_locate(m, sym->addr));

			if (mc_ftable_add_sym(t, s, name, (int)k, sym->addr, mc_sym_end(m, i),
					      sym->size, all || loc) < 0) {
				mc_namer_fini(&namer);
				return -1;
			}
			if (t->n > n0 && loc) {
				t->r[t->n - 1].tr.flags |= loc;
				t->has_loc_in |= loc == MC_TR_LOC_IN;
			}
		}
	}
	if (mc_resolve_plt(t, s, all, &namer) < 0) {
		mc_namer_fini(&namer);
		return -1;
	}
	mc_namer_fini(&namer);
	mc_ftable_finish(t);
	return 0;
}

/* ---- --signal ---- */

volatile uint32_t mc_tracing_on = 1;
const char *mc_trigger_list;
volatile uint32_t mc_finished;

#define MC_SIG_MAX 8
static int mc_sigs[MC_SIG_MAX];
static uint32_t mc_sig_acts[MC_SIG_MAX];
static size_t mc_nsigs;

int mc_signal_parse(const char *list, int *sigs, uint32_t *acts, size_t max, char *err,
		    size_t errlen)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = { { "HUP", SIGHUP },   { "INT", SIGINT },	  { "QUIT", SIGQUIT },
		      { "ILL", SIGILL },   { "TRAP", SIGTRAP },	  { "ABRT", SIGABRT },
		      { "BUS", SIGBUS },   { "FPE", SIGFPE },	  { "USR1", SIGUSR1 },
		      { "SEGV", SIGSEGV }, { "USR2", SIGUSR2 },	  { "PIPE", SIGPIPE },
		      { "ALRM", SIGALRM }, { "TERM", SIGTERM },	  { "STKFLT", SIGSTKFLT },
		      { "CHLD", SIGCHLD }, { "CONT", SIGCONT },	  { "TSTP", SIGTSTP },
		      { "TTIN", SIGTTIN }, { "TTOU", SIGTTOU },	  { "URG", SIGURG },
		      { "XCPU", SIGXCPU }, { "XFSZ", SIGXFSZ },	  { "VTALRM", SIGVTALRM },
		      { "PROF", SIGPROF }, { "WINCH", SIGWINCH }, { "IO", SIGIO },
		      { "PWR", SIGPWR },   { "SYS", SIGSYS } };
	const char *p = list;
	size_t n = 0;

	while (*p) {
		const char *e = strchr(p, ';');
		size_t len = e ? (size_t)(e - p) : strlen(p), nl;
		const char *end = p + len, *at = memchr(p, '@', len), *name = p, *a;
		int sig = -1;
		uint32_t num;

		if (len == 0)
			goto next;
		if (!at) {
			mc_err(err, errlen, "'%.*s': SIGNAL@ACTION expected", (int)len, p);
			return -1;
		}
		nl = (size_t)(at - name);
		if (nl > 3 && !strncmp(name, "SIG", 3)) {
			name += 3;
			nl -= 3;
		}
		if (parse_num(name, at, 64, &num) == 0) {
			sig = (int)num;
		} else if (nl >= 5 && (!strncmp(name, "RTMIN", 5) || !strncmp(name, "RTMAX", 5))) {
			int min = name[3] == 'I';
			uint32_t off = 0;
			if (nl > 5 && (name[5] != (min ? '+' : '-') ||
				       parse_num(name + 6, at, 64, &off) < 0))
				goto bad_sig;
			sig = min ? SIGRTMIN + (int)off : SIGRTMAX - (int)off;
		} else {
			for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
				if (strlen(names[k].name) == nl && !memcmp(names[k].name, name, nl))
					sig = names[k].sig;
		}
		if (sig <= 0 || sig > SIGRTMAX || sig == SIGKILL || sig == SIGSTOP)
			goto bad_sig;
		if (n >= max) {
			mc_err(err, errlen, "more than %zu signals", max);
			return -1;
		}
		sigs[n] = sig;
		acts[n] = 0;
		for (a = at + 1; a <= end;) {
			const char *c = memchr(a, ',', (size_t)(end - a));
			size_t al = c ? (size_t)(c - a) : (size_t)(end - a);
			if ((al == 8 && !strncasecmp(a, "trace_on", al)) ||
			    (al == 8 && !strncasecmp(a, "trace-on", al)) ||
			    (al == 7 && !strncasecmp(a, "traceon", al)))
				acts[n] |= MC_TR_TRACE_ON;
			else if ((al == 9 && !strncasecmp(a, "trace_off", al)) ||
				 (al == 9 && !strncasecmp(a, "trace-off", al)) ||
				 (al == 8 && !strncasecmp(a, "traceoff", al)))
				acts[n] |= MC_TR_TRACE_OFF;
			else if (al == 6 && !strncasecmp(a, "finish", al))
				acts[n] |= MC_TR_FINISH;
			else {
				mc_err(err, errlen, "'%.*s': a signal's action is trace_on, "
				       "trace_off or finish", (int)al, a);
				return -1;
			}
			a += al + 1;
		}
		n++;
next:
		if (!e)
			break;
		p = e + 1;
		continue;
bad_sig:
		mc_err(err, errlen, "'%.*s': not a signal", (int)(at - p), p);
		return -1;
	}
	return (int)n;
}

/* async-signal-safe: plain stores */
static void mc_signal_trigger(int sig)
{
	for (size_t i = 0; i < mc_nsigs; i++) {
		if (mc_sigs[i] != sig)
			continue;
		if (mc_sig_acts[i] & MC_TR_TRACE_ON)
			mc_tracing_on = 1;
		if (mc_sig_acts[i] & MC_TR_TRACE_OFF)
			mc_tracing_on = 0;
		if (mc_sig_acts[i] & MC_TR_FINISH)
			mc_finished = 1;
	}
}

/* ---- the session's set-up ---- */

static struct mc_filter_spec mc_spec; /* 64 compiled patterns: not on the stack */

/* "N" with 1 <= N <= max */
static int mc_parse_uint(const char *s, uint32_t max, uint32_t *out)
{
	if (parse_num(s, s + strlen(s), max, out) < 0 || *out == 0)
		return -1;
	return 0;
}

int mc_filter_setup(char *why, size_t len)
{
	static const struct {
		const char *var;
		enum mc_list_kind kind;
	} lists[] = { { "FLIGHTREC_FILTER", MC_LIST_FILTER },
		      { "FLIGHTREC_TRIGGER", MC_LIST_TRIGGER },
		      { "FLIGHTREC_CALLER", MC_LIST_CALLER } };
	const char *depth = rec_getenv("FLIGHTREC_DEPTH");
	const char *time = rec_getenv("FLIGHTREC_TIME_FILTER");
	const char *match = rec_getenv("FLIGHTREC_MATCH");
	const char *size = rec_getenv("FLIGHTREC_MIN_SIZE");
	const char *disabled = rec_getenv("FLIGHTREC_DISABLED");
	const char *sig = rec_getenv("FLIGHTREC_SIGNAL");
	const char *loc = rec_getenv("FLIGHTREC_LOC_FILTER");
	int glob = 0, any_size = 0, nsig = 0, nloc = 0;
	char err[400];

	mc_fconf = (struct mc_filter_conf){ 0 };
	mc_tracing_on = 1;
	mc_finished = 0;
	mc_nsigs = 0;
	mc_nloc = 0;
	if (match && *match) {
		if (!strcmp(match, "glob"))
			glob = 1;
		else if (strcmp(match, "regex")) {
			mc_err(why, len, "FLIGHTREC_MATCH=%s is not regex or glob", match);
			return -1;
		}
	}
	if (depth && *depth && mc_parse_uint(depth, 65535, &mc_fconf.depth) < 0) {
		mc_err(why, len, "FLIGHTREC_DEPTH=%s is not a depth in [1, 65535]", depth);
		return -1;
	}
	if (time && *time && mc_parse_time(time, &mc_fconf.time) < 0) {
		mc_err(why, len, "FLIGHTREC_TIME_FILTER=%s is not a time (e.g. 10us; units ns us "
		       "ms s m)", time);
		return -1;
	}
	if (size && *size && parse_num(size, size + strlen(size), UINT32_MAX,
				       &mc_fconf.min_size) < 0) {
		mc_err(why, len, "FLIGHTREC_MIN_SIZE=%s is not a size in bytes", size);
		return -1;
	}
	if (disabled && *disabled && strcmp(disabled, "0"))
		mc_tracing_on = 0;
	if (sig && *sig) {
		nsig = mc_signal_parse(sig, mc_sigs, mc_sig_acts, MC_SIG_MAX, err, sizeof(err));
		if (nsig < 0) {
			mc_err(why, len, "FLIGHTREC_SIGNAL: %s", err);
			return -1;
		}
	}
	if (loc && *loc) {
		nloc = mc_loc_parse(mc_loc, MC_LOC_MAX, loc, glob, err, sizeof(err));
		if (nloc < 0) {
			mc_err(why, len, "FLIGHTREC_LOC_FILTER: %s", err);
			return -1;
		}
		mc_nloc = (size_t)nloc;
	}
	mc_spec.n = 0;
	mc_spec.has_in = 0;
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		const char *v = rec_getenv(lists[i].var);

		if (lists[i].kind == MC_LIST_TRIGGER && mc_trigger_list)
			v = mc_trigger_list;
		if (v && *v &&
		    mc_filter_parse_more(&mc_spec, v, lists[i].kind, glob, err, sizeof(err)) < 0) {
			mc_err(why, len, "%s: %s", lists[i].var, err);
			return -1;
		}
	}
	for (size_t i = 0; i < mc_spec.n; i++)
		any_size |= !!(mc_spec.tr[i].flags & MC_TR_SIZE);
	if (mc_spec.n || mc_fconf.min_size || any_size || mc_nloc) {
		/* -Z and size=: every function's size is looked up, so every one has a range */
		if (mc_resolve(&mc_fconf.table, &mc_spec, mc_fconf.min_size || any_size) < 0) {
			mc_ftable_free(&mc_fconf.table);
			mc_err(why, len, "FLIGHTREC_FILTER: cannot read the program's symbols");
			return -1;
		}
	}
	mc_nsigs = (size_t)nsig;
	mc_fconf.active = mc_fconf.depth || mc_fconf.time || mc_fconf.table.n ||
			  mc_fconf.min_size || !mc_tracing_on || nsig;
	return 0;
}

void mc_filter_start(void)
{
	for (size_t i = 0; i < mc_nsigs; i++) {
		struct sigaction sa = { .sa_handler = mc_signal_trigger, .sa_flags = SA_RESTART };

		sigemptyset(&sa.sa_mask);
		/* a valid signal (mc_signal_parse): only SIGKILL/SIGSTOP could fail, refused there */
		(void)sigaction(mc_sigs[i], &sa, NULL);
	}
}
