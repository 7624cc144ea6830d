/*
 * read_args: sizing the argument / return value payloads of ENTRY and EXIT records.
 *
 * Role: a record with the `more` bit carries payload bytes that are not self-describing; their
 * layout comes from the ARG_SPEC info section and, for "auto" arguments, from uftrace's table
 * of known functions (argauto/retauto) or the debug info it saved (<module>.dbg). Like uftrace
 * 0.13 we build, per function name, the list of specs:
 *   1. explicit entries of argspec/retspec whose pattern matches the name, merged in order (a
 *      later spec of the same kind and index replaces an earlier one, but a pattern match never
 *      replaces an exact one);
 *   2. for each kind (arguments, return value) with no explicit spec: the auto spec, when
 *      "auto-args:1" is set or a matching explicit entry names no spec ("-A malloc"): the
 *      function's A:/R: line of a .dbg file when the DEBUG_INFO feature is set, else the entry
 *      of the argauto/retauto table with that name.
 * An ENTRY payload holds the non-retval specs in list order, an EXIT payload the retval ones:
 * integers take their size rounded up to 4 bytes, strings a u16 length plus the bytes rounded
 * up so the running total stays a multiple of 4, and the whole payload is padded to 8.
 *
 * Entry syntax: "<pattern>[@<item>,<item>,...];..." where an item is argN, fpargN or retval
 * with an optional "/<fmt>[<bits>]" and "%<location>"; anything else (other trigger actions,
 * module names) is not an argument and does not change the layout.
 *
 * Invariants and limits: pattern types follow pattern_type (regex unless plain, glob, simple);
 * module-qualified entries are applied to every module; .dbg entries are matched by function
 * name. Payload sizes are only ever computed from bytes present in the window; .dbg files are
 * read with a size cap.
 */
#include "formats/uftrace/read_internal.h"

#include <dirent.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

enum arg_kind { ARG_INDEX, ARG_FLOAT, ARG_REG, ARG_STACK };

struct arg_item {
	enum arg_kind kind;
	int idx; /* argN / fpargN index, 0 for retval, stack offset */
	char reg[16]; /* ARG_REG */
	bool retval;
	bool str;
	bool exact; /* from a plain (non-pattern) entry: a pattern match does not override it */
	unsigned size;
	char fmt; /* the format letter (d i u x p s S c f e t), for ufr_args_format */
};

enum patt_type { PATT_SIMPLE, PATT_REGEX, PATT_GLOB };

struct arg_rule {
	enum patt_type type;
	char *patt;
	regex_t re;
	struct arg_item *items;
	size_t nr;
	bool auto_arg, auto_ret; /* an entry without specs: use the auto spec of that kind */
};

struct rule_list {
	struct arg_rule *rules;
	size_t nr;
};

/* a function's specs from a .dbg file (F: <addr> <name>, A: @<specs>, R: @<specs>) */
struct dbg_entry {
	char *name;
	struct arg_item *items; /* arguments and return value */
	size_t nr;
};

#define CACHE_SLOTS 256

struct cache_slot {
	char *name;
	struct arg_item *items;
	size_t nr;
};

struct ufr_argspecs {
	struct rule_list explicit_rules; /* argspec, retspec */
	struct rule_list table; /* argauto, retauto */
	bool auto_all; /* "auto-args:1": every function gets its auto specs */
	bool use_dbg; /* DEBUG_INFO: .dbg files come first */
	bool lp64;
	char *dir;
	bool dbg_loaded;
	struct dbg_entry *dbg; /* sorted by name */
	size_t nr_dbg;
	struct cache_slot cache[CACHE_SLOTS];
};

static size_t align(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

/* one "argN/fmt%loc" item; false when ITEM is not an argument spec at all */
static bool parse_item(const char *item, bool lp64, struct arg_item *a)
{
	const char *p;
	char *end;

	memset(a, 0, sizeof(*a));
	a->size = lp64 ? 8 : 4;
	a->fmt = 'd';
	if (!strncmp(item, "arg", 3) && item[3] >= '0' && item[3] <= '9') {
		a->kind = ARG_INDEX;
		a->idx = (int)strtol(item + 3, &end, 10);
	} else if (!strncmp(item, "retval", 6)) {
		a->kind = ARG_INDEX;
		a->retval = true;
		end = (char *)item + 6;
	} else if (!strncmp(item, "fparg", 5) && item[5] >= '0' && item[5] <= '9') {
		a->kind = ARG_FLOAT;
		a->idx = (int)strtol(item + 5, &end, 10);
		a->size = 8;
		a->fmt = 'f';
	} else {
		return false;
	}
	p = end;
	if (*p == '/') {
		bool is_float = a->kind == ARG_FLOAT;

		p++;
		if (*p && strchr("diuxpsScfet", *p))
			a->fmt = *p;
		switch (*p) {
		case 'd':
		case 'i':
		case 'u':
		case 'x':
		case 'p':
			p++;
			break;
		case 's':
		case 'S':
			a->str = true;
			p++;
			break;
		case 'c':
			a->size = 1;
			p++;
			break;
		case 'f':
			is_float = true;
			a->size = 8;
			p++;
			break;
		case 'e':
			/* e:<enum name>: the size stays the default */
			p += strcspn(p, "%");
			break;
		case 't':
			/* t<size>[:<name>]: a struct passed by value */
			a->size = (unsigned)strtoul(p + 1, &end, 10);
			if (a->size > 0xffff)
				a->size = 0xffff; /* still bounded by the bytes present */
			p = end + strcspn(end, "%");
			break;
		default:
			if (!(is_float && *p >= '0' && *p <= '9'))
				return true; /* uftrace rejects it; keep the default layout */
		}
		if (*p >= '0' && *p <= '9') {
			long bits = strtol(p, &end, 10);

			if (bits == 8 || bits == 16 || bits == 32 || bits == 64 ||
			    (bits == 80 && is_float))
				a->size = (unsigned)bits / 8;
			p = end;
		}
	}
	if (*p == '%') {
		p++;
		if (!strncmp(p, "stack", 5)) {
			a->kind = ARG_STACK;
			a->idx = (int)strtol(p + 5, NULL, 0);
		} else {
			a->kind = ARG_REG;
			snprintf(a->reg, sizeof(a->reg), "%s", p);
		}
	}
	return true;
}

static bool same_slot(const struct arg_item *x, const struct arg_item *y)
{
	if (x->kind != y->kind)
		return false;
	if (x->kind == ARG_REG)
		return !strcmp(x->reg, y->reg);
	return x->idx == y->idx && x->retval == y->retval;
}

/* add A to a merged list the way uftrace's add_arg_spec does */
static int merge_item(struct arg_item **items, size_t *nr, const struct arg_item *a)
{
	struct arg_item *n;

	for (size_t i = 0; i < *nr; i++) {
		if (!same_slot(&(*items)[i], a))
			continue;
		if (a->exact || !(*items)[i].exact)
			(*items)[i] = *a;
		return 0;
	}
	n = realloc(*items, (*nr + 1) * sizeof(*n));
	if (n == NULL)
		return -1;
	*items = n;
	n[(*nr)++] = *a;
	return 0;
}

/*
 * Rules from one spec string. WANT_RET: the retspec pass keeps only retval items, the argspec
 * pass only the others (uftrace ignores actions of the other kind in each pass). An entry
 * left without items asks for the auto spec of that kind (not in the auto table itself).
 */
static int add_rules(struct rule_list *list, const char *spec, bool want_ret, bool is_table,
		     enum patt_type ptype, bool lp64)
{
	char *copy, *save = NULL, *entry;

	if (spec == NULL)
		return 0;
	copy = strdup(spec);
	if (copy == NULL)
		return -1;
	for (entry = strtok_r(copy, ";", &save); entry; entry = strtok_r(NULL, ";", &save)) {
		char *at = strchr(entry, '@');
		char *isave = NULL, *item;
		struct arg_rule r;
		struct arg_rule *n;

		memset(&r, 0, sizeof(r));
		if (at != NULL) {
			*at = '\0';
			for (item = strtok_r(at + 1, ",", &isave); item;
			     item = strtok_r(NULL, ",", &isave)) {
				struct arg_item a;

				if (!parse_item(item, lp64, &a) || a.retval != want_ret)
					continue;
				if (merge_item(&r.items, &r.nr, &a) < 0) {
					free(r.items);
					free(copy);
					return -1;
				}
			}
		}
		if (*entry == '\0' || (r.nr == 0 && is_table)) {
			free(r.items);
			continue;
		}
		r.auto_arg = r.nr == 0 && !want_ret;
		r.auto_ret = r.nr == 0 && want_ret;
		r.patt = strdup(entry);
		r.type = strpbrk(entry, ".?*+-^$|()[]{}") == NULL ? PATT_SIMPLE : ptype;
		if (r.type == PATT_REGEX && (!strncmp(entry, "operator ", 9) ||
					     regcomp(&r.re, entry, REG_NOSUB | REG_EXTENDED) != 0))
			r.type = PATT_SIMPLE;
		for (size_t i = 0; i < r.nr; i++)
			r.items[i].exact = r.type == PATT_SIMPLE;
		n = realloc(list->rules, (list->nr + 1) * sizeof(*n));
		if (n == NULL || r.patt == NULL) {
			if (n != NULL)
				list->rules = n;
			if (r.type == PATT_REGEX)
				regfree(&r.re);
			free(r.patt);
			free(r.items);
			free(copy);
			return -1;
		}
		list->rules = n;
		list->rules[list->nr++] = r;
	}
	free(copy);
	return 0;
}

static void rules_free(struct rule_list *list)
{
	for (size_t i = 0; i < list->nr; i++) {
		if (list->rules[i].type == PATT_REGEX)
			regfree(&list->rules[i].re);
		free(list->rules[i].patt);
		free(list->rules[i].items);
	}
	free(list->rules);
	list->rules = NULL;
	list->nr = 0;
}

void ufr_argspecs_free(struct ufr_argspecs *as)
{
	if (as == NULL)
		return;
	rules_free(&as->explicit_rules);
	rules_free(&as->table);
	for (size_t i = 0; i < as->nr_dbg; i++) {
		free(as->dbg[i].name);
		free(as->dbg[i].items);
	}
	free(as->dbg);
	for (size_t i = 0; i < CACHE_SLOTS; i++) {
		free(as->cache[i].name);
		free(as->cache[i].items);
	}
	free(as->dir);
	free(as);
}

struct ufr_argspecs *ufr_argspecs_build(const struct ufr_info *info, const char *dir)
{
	struct ufr_argspecs *as;
	enum patt_type ptype = PATT_REGEX;
	int ret = 0;

	if (info->pattern_type && !strcmp(info->pattern_type, "glob"))
		ptype = PATT_GLOB;
	else if (info->pattern_type && !strcmp(info->pattern_type, "simple"))
		ptype = PATT_SIMPLE;
	as = calloc(1, sizeof(*as));
	if (as == NULL)
		return NULL;
	as->lp64 = info->hdr.elf_class == 2;
	as->auto_all = info->auto_args;
	as->use_dbg = info->hdr.feat_mask & UFR_FEAT_DEBUG_INFO;
	as->dir = strdup(dir);
	ret |= as->dir == NULL;
	ret |= add_rules(&as->explicit_rules, info->argspec, false, false, ptype, as->lp64);
	ret |= add_rules(&as->explicit_rules, info->retspec, true, false, ptype, as->lp64);
	/* old data has no separate retspec */
	if (info->argspec && strstr(info->argspec, "retval"))
		ret |= add_rules(&as->explicit_rules, info->argspec, true, false, ptype, as->lp64);
	ret |= add_rules(&as->table, info->argauto, false, true, PATT_SIMPLE, as->lp64);
	ret |= add_rules(&as->table, info->retauto, true, true, PATT_SIMPLE, as->lp64);
	if (ret != 0) {
		ufr_argspecs_free(as);
		return NULL;
	}
	return as;
}

static bool rule_matches(const struct arg_rule *r, const char *name)
{
	switch (r->type) {
	case PATT_SIMPLE:
		return !strcmp(r->patt, name);
	case PATT_REGEX:
		return !regexec(&r->re, name, 0, NULL, 0);
	case PATT_GLOB:
		return !fnmatch(r->patt, name, 0);
	}
	return false;
}

static unsigned name_hash(const char *s)
{
	unsigned h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h % CACHE_SLOTS;
}

/* ---- .dbg files ---- */

#define DBG_MAX (64u << 20)

static int dbg_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dbg_entry *)a)->name, ((const struct dbg_entry *)b)->name);
}

/* the A:/R: specs "@<item>,..." of one .dbg line */
static int dbg_add_items(struct ufr_argspecs *as, struct dbg_entry *e, const char *p, size_t n,
			 bool want_ret)
{
	char *copy = rd_strndup(p, n), *save = NULL, *item;
	int ret = 0;

	if (copy == NULL)
		return -1;
	for (item = strtok_r(copy[0] == '@' ? copy + 1 : copy, ",", &save); item && ret == 0;
	     item = strtok_r(NULL, ",", &save)) {
		struct arg_item a;

		if (parse_item(item, as->lp64, &a) && a.retval == want_ret)
			ret = merge_item(&e->items, &e->nr, &a);
	}
	free(copy);
	return ret;
}

static int dbg_load_file(struct ufr_argspecs *as, const char *path, size_t *cap)
{
	struct rd_error err;
	struct rd_buf buf;
	struct rd_lines it;
	struct rd_line line;
	struct dbg_entry *cur = NULL;
	int ret = 0;

	rd_error_clear(&err);
	if (rd_load_file(path, DBG_MAX, &buf, 1, 1, &err) < 0)
		return 0; /* unreadable debug info: functions fall back to the auto table */
	rd_lines_init(&it, buf.data, buf.len, 0);
	while (ret == 0 && rd_lines_next(&it, &line)) {
		if (line.len > 3 && !memcmp(line.p, "F: ", 3)) {
			const char *name = memchr(line.p + 3, ' ', line.len - 3);

			cur = NULL;
			if (name == NULL || name + 1 >= line.p + line.len)
				continue;
			name++;
			if (as->nr_dbg == *cap) {
				size_t ncap = *cap ? *cap * 2 : 64;
				struct dbg_entry *n = realloc(as->dbg, ncap * sizeof(*n));

				if (n == NULL) {
					ret = -1;
					break;
				}
				as->dbg = n;
				*cap = ncap;
			}
			cur = &as->dbg[as->nr_dbg];
			memset(cur, 0, sizeof(*cur));
			cur->name = rd_strndup(name, (size_t)(line.p + line.len - name));
			if (cur->name == NULL) {
				ret = -1;
				break;
			}
			as->nr_dbg++;
		} else if (cur != NULL && line.len > 3 &&
			   (!memcmp(line.p, "A: ", 3) || !memcmp(line.p, "R: ", 3))) {
			ret = dbg_add_items(as, cur, line.p + 3, line.len - 3, line.p[0] == 'R');
		}
	}
	rd_buf_free(&buf);
	return ret;
}

/* every *.dbg of the directory, once */
static void dbg_load(struct ufr_argspecs *as)
{
	struct dirent *de;
	size_t cap = 0;
	DIR *dp;

	as->dbg_loaded = true;
	dp = opendir(as->dir);
	if (dp == NULL)
		return;
	while ((de = readdir(dp)) != NULL) {
		size_t n = strlen(de->d_name);
		char *path;

		if (n <= 4 || strcmp(de->d_name + n - 4, ".dbg") != 0)
			continue;
		path = rd_path_join(as->dir, de->d_name);
		if (path == NULL || dbg_load_file(as, path, &cap) < 0) {
			free(path);
			break;
		}
		free(path);
	}
	closedir(dp);
	rd_sort(as->dbg, as->nr_dbg, sizeof(*as->dbg), dbg_cmp);
}

/* append the auto specs of kind WANT_RET for NAME: its .dbg line, else the auto table */
static int add_auto(struct ufr_argspecs *as, const char *name, bool want_ret,
		    struct arg_item **items, size_t *n)
{
	bool found = false;

	if (as->use_dbg) {
		struct dbg_entry key = { .name = (char *)name }, *e;

		if (!as->dbg_loaded)
			dbg_load(as);
		e = as->nr_dbg ? bsearch(&key, as->dbg, as->nr_dbg, sizeof(*as->dbg), dbg_cmp)
			       : NULL;
		for (size_t i = 0; e != NULL && i < e->nr; i++) {
			if (e->items[i].retval != want_ret)
				continue;
			found = true;
			if (merge_item(items, n, &e->items[i]) < 0)
				return -1;
		}
	}
	for (size_t r = 0; !found && r < as->table.nr; r++) {
		const struct arg_rule *rule = &as->table.rules[r];

		if (!rule_matches(rule, name))
			continue;
		for (size_t i = 0; i < rule->nr; i++)
			if (rule->items[i].retval == want_ret &&
			    merge_item(items, n, &rule->items[i]) < 0)
				return -1;
	}
	return 0;
}

/* the merged spec list of NAME (cached); NULL with *NR = 0 when nothing matches */
static const struct arg_item *specs_for(struct ufr_argspecs *as, const char *name, size_t *nr)
{
	struct cache_slot *slot = &as->cache[name_hash(name)];
	struct arg_item *items = NULL;
	bool has_arg = false, has_ret = false;
	bool auto_arg = as->auto_all, auto_ret = as->auto_all;
	size_t n = 0;

	if (slot->name != NULL && !strcmp(slot->name, name)) {
		*nr = slot->nr;
		return slot->items;
	}
	for (size_t i = 0; i < as->explicit_rules.nr; i++) {
		const struct arg_rule *r = &as->explicit_rules.rules[i];

		if (!rule_matches(r, name))
			continue;
		auto_arg |= r->auto_arg;
		auto_ret |= r->auto_ret;
		for (size_t j = 0; j < r->nr; j++) {
			has_arg |= !r->items[j].retval;
			has_ret |= r->items[j].retval;
			if (merge_item(&items, &n, &r->items[j]) < 0)
				goto oom;
		}
	}
	/* explicit specs of a kind win over the auto ones of that kind */
	if ((auto_arg && !has_arg && add_auto(as, name, false, &items, &n) < 0) ||
	    (auto_ret && !has_ret && add_auto(as, name, true, &items, &n) < 0))
		goto oom;

	free(slot->name);
	free(slot->items);
	slot->name = strdup(name);
	slot->items = items;
	slot->nr = slot->name ? n : 0;
	*nr = slot->nr;
	return slot->items;
oom:
	free(items);
	*nr = 0;
	return NULL;
}

long ufr_args_size(void *ctx, const struct ufr_rec *rec, const uint8_t *p, size_t avail,
		   const char *file, struct rd_error *err)
{
	struct ufr_thread *t = ctx;
	struct ufr_data *d = t->owner;
	struct ufr_argspecs *as = d->argspecs;
	const struct arg_item *items;
	const char *name;
	size_t nr, len = 0;
	bool want_ret = rec->type == UFR_EXIT;
	bool matched = false;
	bool big = d->info.hdr.endian == 2;

	name = ufr_symbolize(d, t, rec->time, rec->addr);
	if (name == NULL)
		return rd_error_set(err, UFR_E_REC_PAYLOAD, file, (int64_t)rec->offset,
				    "%s record of unresolved address 0x%llx carries a payload that "
				    "only a matching argspec can size",
				    rec->type == UFR_ENTRY ? "ENTRY" : "EXIT",
				    (unsigned long long)rec->addr);
	items = specs_for(as, name, &nr);
	for (size_t i = 0; i < nr; i++) {
		const struct arg_item *a = &items[i];
		size_t size = a->size;

		if (a->retval != want_ret)
			continue;
		matched = true;
		if (a->size == 0)
			continue;
		if (a->str) {
			if (len + 2 > avail)
				goto past_end;
			size = rd_get16(p + len, big);
			len += 2;
		}
		len = align(len + size, 4);
		if (len > avail)
			goto past_end;
	}
	if (!matched)
		return rd_error_set(err, UFR_E_REC_PAYLOAD, file, (int64_t)rec->offset,
				    "%s record of %s has the payload bit but no %s spec matches it "
				    "(uftrace aborts: \"record missing argument info\")",
				    rec->type == UFR_ENTRY ? "ENTRY" : "EXIT", name,
				    want_ret ? "retval" : "argument");
	len = align(len, 8);
	if (len > avail)
		goto past_end;
	return (long)len;

past_end:
	return rd_error_set(
		err, UFR_E_REC_PAYLOAD, file, (int64_t)rec->offset,
		"argument payload of %s runs past the end of the file (or past %d bytes)", name,
		UFR_MAX_PAYLOAD);
}

/* one value of SIZE bytes at P as an integer, sign-extended when SIGNED_ */
static uint64_t args_int(const uint8_t *p, unsigned size, bool big, bool signed_)
{
	uint64_t v = 0;

	if (size > 8)
		size = 8;
	for (unsigned i = 0; i < size; i++)
		v |= (uint64_t)p[big ? size - 1 - i : i] << (8 * i);
	if (signed_ && size < 8 && size > 0 && (v >> (8 * size - 1)) & 1)
		v |= ~0ull << (8 * size);
	return v;
}

static void args_put(char *buf, size_t len, size_t *pos, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void args_put(char *buf, size_t len, size_t *pos, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*pos >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *pos, len - *pos, fmt, ap);
	va_end(ap);
	if (n > 0)
		*pos = *pos + (size_t)n < len ? *pos + (size_t)n : len;
}

/* C as uftrace 0.13's print_json_escaped_char writes it into dump --chrome's strings (its
 * control-character escapes keep a doubled backslash, as it writes them) */
static void args_put_json_char(char *buf, size_t len, size_t *pos, unsigned char c)
{
	if (c == '\n')
		args_put(buf, len, pos, "\\\\n");
	else if (c == '\t')
		args_put(buf, len, pos, "\\\\t");
	else if (c == '\\')
		args_put(buf, len, pos, "\\\\");
	else if (c == '"')
		args_put(buf, len, pos, "\\\"");
	else if (c >= 0x20 && c < 0x7f)
		args_put(buf, len, pos, "%c", c);
	else
		args_put(buf, len, pos, "\\\\x%02x", c);
}

/*
 * One integer-like value as uftrace 0.13's get_argspec_string prints it ("%#" conversions of
 * the value zero-extended from SIZE bytes into a long): auto ('d') and unsigned values past
 * 100000 in hex, except an auto value that is a negative int in 4 bytes; hex without a 0x
 * for 0 (what "%#x" does).
 */
static void args_put_uftrace_int(char *buf, size_t len, size_t *pos, char fmt, uint64_t x,
				 unsigned size)
{
	int64_t v = (int64_t)x;

	switch (fmt) {
	case 'd':
		if (v > 100000 || v < -100000) {
			if (x > 0xffff0000ull && x <= 0xffffffffull)
				args_put(buf, len, pos, "%d", (int)(uint32_t)x);
			else
				args_put(buf, len, pos, x ? "%#" PRIx64 : "0", x);
			return;
		}
		break;
	case 'u':
		if (x > 100000)
			args_put(buf, len, pos, "%#" PRIx64, x);
		else
			args_put(buf, len, pos, "%" PRIu64, x);
		return;
	case 'x':
		args_put(buf, len, pos, x ? "%#" PRIx64 : "0", x);
		return;
	default:
		break;
	}
	/* signed, at its own size ("%#hhd" of a byte) */
	if (size < 8 && size > 0 && (x >> (8 * size - 1)) & 1)
		v = (int64_t)(x | ~0ull << (8 * size));
	args_put(buf, len, pos, "%" PRId64, v);
}

/*
 * One non-string value A at V as uftrace 0.13's get_argspec_string writes it for dump
 * --chrome: floats "%#f"; a char JSON-escaped in quotes; a pointer as "&symbol" where it
 * points into a function the reader can name, else in hex ("0" for NULL); a struct passed by
 * value "{...}"; integers by args_put_uftrace_int.
 */
static void args_put_uftrace(struct ufr_data *d, const struct ufr_thread *t,
			     const struct ufr_rec *rec, const struct arg_item *a, const uint8_t *v,
			     bool big, char *buf, size_t len, size_t *pos)
{
	unsigned size = a->size;
	uint64_t x = args_int(v, size, big, false);
	const char *sym;

	switch (a->fmt) {
	case 'f':
		if (size == 4) {
			uint32_t w = (uint32_t)x;
			float f;

			memcpy(&f, &w, 4);
			args_put(buf, len, pos, "%#f", f);
		} else if (size == 8) {
			double f;

			memcpy(&f, &x, 8);
			args_put(buf, len, pos, "%#f", f);
		} else {
			long double f = 0;

			memcpy(&f, v, size < sizeof(f) ? size : sizeof(f));
			args_put(buf, len, pos, "%#Lf", f);
		}
		break;
	case 'c':
		args_put(buf, len, pos, "'");
		args_put_json_char(buf, len, pos, (unsigned char)x);
		args_put(buf, len, pos, "'");
		break;
	case 'p':
		sym = x ? ufr_symbolize(d, t, rec->time, x) : NULL;
		if (sym)
			args_put(buf, len, pos, "&%s", sym);
		else
			args_put(buf, len, pos, x ? "%#" PRIx64 : "0", x);
		break;
	case 't':
		args_put(buf, len, pos, size ? "{...}" : "{}");
		break;
	default:
		args_put_uftrace_int(buf, len, pos, a->fmt, x, size);
		break;
	}
}

/* uftrace: the values as `uftrace dump --chrome` writes them (ufr_args_format_json) */
static int args_format(struct ufr_data *d, const struct ufr_thread *t, const struct ufr_rec *rec,
		       char *buf, size_t len, bool uftrace)
{
	struct ufr_argspecs *as = d->argspecs;
	const struct arg_item *items;
	const uint8_t *p = rec->payload;
	const char *name;
	size_t nr, off = 0, pos = 0, avail = rec->payload_len;
	bool want_ret = rec->type == UFR_EXIT, big = d->info.hdr.endian == 2, first = true;
	bool paren = uftrace && !want_ret;

	if (!len)
		return -1;
	buf[0] = '\0';
	if (!as || !rec->more || !p)
		return -1;
	name = ufr_symbolize(d, t, rec->time, rec->addr);
	if (!name)
		return -1;
	items = specs_for(as, name, &nr);
	if (paren)
		args_put(buf, len, &pos, "(");
	for (size_t i = 0; i < nr; i++) {
		const struct arg_item *a = &items[i];
		size_t size = a->size;

		if (a->retval != want_ret || a->size == 0)
			continue;
		/* uftrace reads only the first return value spec */
		if (uftrace && want_ret && !first)
			break;
		args_put(buf, len, &pos, "%s", first ? "" : ", ");
		first = false;
		if (a->str) {
			if (off + 2 > avail)
				return -1;
			size = rd_get16(p + off, big);
			off += 2;
			if (off + size > avail)
				return -1;
			if (uftrace && size == 4 && !memcmp(p + off, "\xff\xff\xff\xff", 4)) {
				args_put(buf, len, &pos, "NULL");
			} else if (uftrace) {
				/* up to the first NUL, as uftrace's loop over a C string */
				args_put(buf, len, &pos, "\\\"");
				for (size_t k = 0; k < size && p[off + k]; k++)
					args_put_json_char(buf, len, &pos, p[off + k]);
				args_put(buf, len, &pos, "\\\"");
			} else {
				args_put(buf, len, &pos, "\"");
				for (size_t k = 0; k < size; k++) {
					unsigned char c = p[off + k];
					if (c == '"' || c == '\\')
						args_put(buf, len, &pos, "\\%c", c);
					else if (c < 0x20 || c >= 0x7f)
						args_put(buf, len, &pos, "\\x%02x", c);
					else
						args_put(buf, len, &pos, "%c", c);
				}
				args_put(buf, len, &pos, "\"");
			}
			if (uftrace && a->fmt == 'S')
				args_put(buf, len, &pos, "s");
		} else if (uftrace) {
			if (off + size > avail)
				return -1;
			args_put_uftrace(d, t, rec, a, p + off, big, buf, len, &pos);
		} else {
			const uint8_t *v = p + off;
			uint64_t x;

			if (off + size > avail)
				return -1;
			switch (a->fmt) {
			case 'f':
				if (size == 4) {
					float f;
					x = args_int(v, 4, big, false);
					uint32_t w = (uint32_t)x;
					memcpy(&f, &w, 4);
					args_put(buf, len, &pos, "%g", f);
				} else if (size == 8) {
					double f;
					x = args_int(v, 8, big, false);
					memcpy(&f, &x, 8);
					args_put(buf, len, &pos, "%g", f);
				} else {
					long double f = 0;
					memcpy(&f, v, size < sizeof(f) ? size : sizeof(f));
					args_put(buf, len, &pos, "%Lg", f);
				}
				break;
			case 'c':
				x = args_int(v, 1, big, false);
				if (x >= 0x20 && x < 0x7f && x != '\'' && x != '\\')
					args_put(buf, len, &pos, "'%c'", (int)x);
				else
					args_put(buf, len, &pos, "'\\x%02x'", (unsigned)x);
				break;
			case 'x':
			case 'p':
			case 't':
				args_put(buf, len, &pos, "0x%" PRIx64, args_int(v, (unsigned)size, big,
										 false));
				break;
			case 'u':
				/* uftrace replay's rule: large values in hex */
				x = args_int(v, (unsigned)size, big, false);
				args_put(buf, len, &pos, x > 100000 ? "0x%" PRIx64 : "%" PRIu64, x);
				break;
			case 'd':
				/* auto: as uftrace replay shows it (hex when large, except a small
				 * negative int held in 64 bits) */
				x = args_int(v, (unsigned)size, big, true);
				if (x > 0xffff0000ull && x <= 0xffffffffull)
					args_put(buf, len, &pos, "%d", (int)(uint32_t)x);
				else if ((int64_t)x > 100000 || (int64_t)x < -100000)
					args_put(buf, len, &pos, "0x%" PRIx64, x);
				else
					args_put(buf, len, &pos, "%" PRId64, (int64_t)x);
				break;
			default:
				args_put(buf, len, &pos, "%" PRId64,
					 (int64_t)args_int(v, (unsigned)size, big, true));
				break;
			}
		}
		off = align(off + size, 4);
	}
	if (paren)
		args_put(buf, len, &pos, ")");
	return first ? -1 : 0;
}

int ufr_args_format(struct ufr_data *d, const struct ufr_thread *t, const struct ufr_rec *rec,
		    char *buf, size_t len)
{
	return args_format(d, t, rec, buf, len, false);
}

int ufr_args_format_json(struct ufr_data *d, const struct ufr_thread *t, const struct ufr_rec *rec,
			 char *buf, size_t len)
{
	return args_format(d, t, rec, buf, len, true);
}
