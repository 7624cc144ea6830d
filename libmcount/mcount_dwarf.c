/*
 * mcount_dwarf: DWARF-described arguments (see mcount_dwarf.h for the role and invariants).
 *
 * The translation follows uftrace 0.13's utils/dwarf.c rule for rule, quirks included, since
 * the .dbg text and the payloads must be what uftrace's readers compute from the same spec:
 *   - a parameter's type chain is followed through typedefs, const, pointers and references;
 *     "char *" is /s, other pointers /p, char /c, float double long double fpargN/32 /64 /80
 *     (retval: /f32 ...), enums /e:NAME (an unnamed one _<cu file>_<die offset>), a struct,
 *     union or class by value argN/tSIZE[:NAME] (empty aggregates /t0), a basic_string
 *     with _M_dataplus /S; an integer gets no format (8 bytes of its register);
 *   - the location: a register of the first location (list) entry (rdi rsi rdx rcx r8 r9,
 *     xmm0-7) or %stack+N for a non-negative frame-base offset; none (-O0) keeps the index,
 *     except after a struct passed by value, where each later argument names its register;
 *   - a struct by value is classified as the x86_64 psABI does it (at most 16 bytes, INTEGER
 *     or SSE per eightbyte, MEMORY otherwise; a class with a destructor or virtual functions
 *     goes by hidden pointer); a struct or std::string returned by value moves the arguments
 *     one register on (the hidden return pointer in rdi).
 */
#include "libmcount/mcount_dwarf.h"

#include <ctype.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef MC_HAVE_LIBDW
#include <dwarf.h>
#include <elfutils/libdw.h>

#define MD_SPEC_MAX 256 /* uftrace's ARGSPEC_MAX_SIZE */

/* ---- libdw, loaded once ---- */

static struct {
	int tried, ok;
	Dwarf *(*begin)(int, Dwarf_Cmd);
	int (*end)(Dwarf *);
	int (*nextcu)(Dwarf *, Dwarf_Off, Dwarf_Off *, size_t *, Dwarf_Off *, uint8_t *, uint8_t *);
	Dwarf_Die *(*offdie)(Dwarf *, Dwarf_Off, Dwarf_Die *);
	int (*tag)(Dwarf_Die *);
	ptrdiff_t (*getfuncs)(Dwarf_Die *, int (*)(Dwarf_Die *, void *), void *, ptrdiff_t);
	int (*hasattr)(Dwarf_Die *, unsigned int);
	int (*hasattr_integrate)(Dwarf_Die *, unsigned int);
	Dwarf_Attribute *(*attr)(Dwarf_Die *, unsigned int, Dwarf_Attribute *);
	Dwarf_Attribute *(*attr_integrate)(Dwarf_Die *, unsigned int, Dwarf_Attribute *);
	const char *(*formstring)(Dwarf_Attribute *);
	const char *(*diename)(Dwarf_Die *);
	int (*lowpc)(Dwarf_Die *, Dwarf_Addr *);
	int (*child)(Dwarf_Die *, Dwarf_Die *);
	int (*siblingof)(Dwarf_Die *, Dwarf_Die *);
	Dwarf_Die *(*formref_die)(Dwarf_Attribute *, Dwarf_Die *);
	unsigned int (*whatform)(Dwarf_Attribute *);
	int (*formsdata)(Dwarf_Attribute *, Dwarf_Sword *);
	int (*aggregate_size)(Dwarf_Die *, Dwarf_Word *);
	int (*bytesize)(Dwarf_Die *);
	int (*getlocation)(Dwarf_Attribute *, Dwarf_Op **, size_t *);
	ptrdiff_t (*getlocations)(Dwarf_Attribute *, ptrdiff_t, Dwarf_Addr *, Dwarf_Addr *,
				  Dwarf_Addr *, Dwarf_Op **, size_t *);
	Dwarf_Die *(*diecu)(Dwarf_Die *, Dwarf_Die *, uint8_t *, uint8_t *);
	Dwarf_Off (*cuoffset)(Dwarf_Die *);
	int (*decl_line)(Dwarf_Die *, int *);
	const char *(*decl_file)(Dwarf_Die *);
	Dwarf_Line *(*getsrc_die)(Dwarf_Die *, Dwarf_Addr);
	const char *(*linesrc)(Dwarf_Line *, Dwarf_Word *, Dwarf_Word *);
	int (*lineno)(Dwarf_Line *, int *);
} dw;

static int md_load(char *why, size_t len)
{
	void *lib;

	if (dw.tried)
		goto out;
	dw.tried = 1;
	lib = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		goto out;
#define MD_SYM(f, n)                                                                               \
	do {                                                                                       \
		*(void **)&dw.f = dlsym(lib, "dwarf_" n);                                          \
		if (!dw.f)                                                                         \
			goto out;                                                                  \
	} while (0)
	MD_SYM(begin, "begin");
	MD_SYM(end, "end");
	MD_SYM(nextcu, "nextcu");
	MD_SYM(offdie, "offdie");
	MD_SYM(tag, "tag");
	MD_SYM(getfuncs, "getfuncs");
	MD_SYM(hasattr, "hasattr");
	MD_SYM(hasattr_integrate, "hasattr_integrate");
	MD_SYM(attr, "attr");
	MD_SYM(attr_integrate, "attr_integrate");
	MD_SYM(formstring, "formstring");
	MD_SYM(diename, "diename");
	MD_SYM(lowpc, "lowpc");
	MD_SYM(child, "child");
	MD_SYM(siblingof, "siblingof");
	MD_SYM(formref_die, "formref_die");
	MD_SYM(whatform, "whatform");
	MD_SYM(formsdata, "formsdata");
	MD_SYM(aggregate_size, "aggregate_size");
	MD_SYM(bytesize, "bytesize");
	MD_SYM(getlocation, "getlocation");
	MD_SYM(getlocations, "getlocations");
	MD_SYM(diecu, "diecu");
	MD_SYM(cuoffset, "cuoffset");
	MD_SYM(decl_line, "decl_line");
	MD_SYM(decl_file, "decl_file");
	MD_SYM(getsrc_die, "getsrc_die");
	MD_SYM(linesrc, "linesrc");
	MD_SYM(lineno, "lineno");
#undef MD_SYM
	dw.ok = 1;
out:
	if (!dw.ok)
		snprintf(why, len,
			 "libdw.so.1 cannot be loaded (Debian: libdw1): arguments "
			 "from DWARF are not recorded");
	return dw.ok ? 0 : -1;
}

/* ---- small string helpers (malloc'ed; a failed allocation gives NULL, the caller skips) */

static char *md_strdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void md_cat(char *dst, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void md_cat(char *dst, size_t len, const char *fmt, ...)
{
	size_t n = strlen(dst);
	va_list ap;

	if (n >= len - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(dst + n, len - n, fmt, ap);
	va_end(ap);
}

/* ---- enums ---- */

struct md_ctx {
	struct mc_dwarf *d;
	mc_dwarf_want_fn want;
	void *data;
	size_t cfn, cen;
	/* compilation directories and how many functions each holds (the .dbg's base dir) */
	struct {
		char *dir;
		size_t nused, nlocs;
	} dirs[64];
	size_t ndirs, cu_locs;
	int oom;
};

struct md_eval {
	const char *name;
	long val;
};

static int md_eval_cmp(const void *a, const void *b)
{
	const struct md_eval *x = a, *y = b;

	return x->val < y->val ? -1 : x->val > y->val;
}

/* ENUM's definition under NAME, as uftrace's parse_enum_string + get_enum_def_string keep it:
 * values in ascending order, "=VALUE" only where one does not follow the previous; a name
 * seen before keeps its first definition */
static void md_add_enum(struct md_ctx *c, const char *name, Dwarf_Die *die)
{
	struct mc_dwarf *d = c->d;
	struct md_eval *v = NULL;
	size_t n = 0, cap = 0, len = 1;
	Dwarf_Die e;
	char *s;
	long last = -1;

	for (size_t i = 0; i < d->nen; i++)
		if (!strcmp(d->en[i].name, name))
			return;
	if (dw.child(die, &e) != 0)
		return;
	do {
		Dwarf_Attribute a;
		Dwarf_Sword val = 0;

		if (dw.tag(&e) != DW_TAG_enumerator)
			continue;
		if (n == cap) {
			struct md_eval *p = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*v));
			if (!p)
				goto oom;
			v = p;
		}
		if (dw.attr(&e, DW_AT_const_value, &a))
			dw.formsdata(&a, &val);
		v[n].name = dw.diename(&e);
		v[n].val = (long)val;
		len += strlen(v[n].name ? v[n].name : "") + 24;
		n++;
	} while (dw.siblingof(&e, &e) == 0);
	if (!n)
		goto out;
	qsort(v, n, sizeof(*v), md_eval_cmp);
	s = malloc(len);
	if (!s)
		goto oom;
	s[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		size_t o = strlen(s);
		const char *sep = i ? "," : "";

		if (v[i].val == ++last)
			snprintf(s + o, len - o, "%s%s", sep, v[i].name ? v[i].name : "");
		else
			snprintf(s + o, len - o, "%s%s=%ld", sep, v[i].name ? v[i].name : "",
				 (last = v[i].val));
	}
	if (d->nen == c->cen) {
		struct mc_dwenum *p =
			realloc(d->en, (c->cen = c->cen ? c->cen * 2 : 8) * sizeof(*p));
		if (!p) {
			free(s);
			goto oom;
		}
		d->en = p;
	}
	d->en[d->nen].name = strdup(name);
	d->en[d->nen].vals = s;
	if (!d->en[d->nen].name) {
		free(s);
		goto oom;
	}
	d->nen++;
out:
	free(v);
	return;
oom:
	c->oom = 1;
	free(v);
}

/* ---- one function's specs (uftrace's struct arg_data and its rules) ---- */

enum { MD_CLS_NONE = 0, MD_CLS_MEM = 'm', MD_CLS_INT = 'i', MD_CLS_FP = 'f', MD_CLS_PTR = 'p' };
enum { MD_AUTO, MD_CHAR, MD_STR, MD_STDSTR, MD_FLOAT, MD_PTR, MD_ENUM, MD_STRUCT };

struct md_arg {
	struct md_ctx *c;
	int idx, fpidx;
	int last_fmt, last_size;
	int reg_pos, fpreg_pos;
	int has_retspec, struct_passed;
	char struct_regs[4];
	int struct_reg_cnt;
};

struct md_type {
	int fmt;
	size_t size; /* bits */
	int pointer;
	char name[MD_SPEC_MAX];
};

/* uftrace's arch_register_argspec_name on x86_64 (upper case, unlike the DWARF table's) */
static const char *const md_iregs[] = {"RDI", "RSI", "RDX", "RCX", "R8", "R9"};

static size_t md_type_size(Dwarf_Die *die, size_t dflt)
{
	Dwarf_Word size;
	int b;

	if (dw.aggregate_size(die, &size) >= 0)
		return (size_t)size * 8;
	b = dw.bytesize(die);
	return (size_t)(b > 0 ? b : (int)dflt) * 8;
}

/* follow DIE's DW_AT_type into REF; 0 at the end of the chain, -1 on an odd form */
static int md_next_type(Dwarf_Die **die, Dwarf_Die *ref)
{
	Dwarf_Attribute a;

	if (!dw.hasattr(*die, DW_AT_type))
		return 0;
	dw.attr(*die, DW_AT_type, &a);
	switch (dw.whatform(&a)) {
	case DW_FORM_ref1:
	case DW_FORM_ref2:
	case DW_FORM_ref4:
	case DW_FORM_ref8:
	case DW_FORM_ref_udata:
	case DW_FORM_ref_addr:
	case DW_FORM_ref_sig8:
		if (!dw.formref_die(&a, ref))
			return -1;
		*die = ref;
		return 1;
	default:
		return -1;
	}
}

/* uftrace's is_empty_aggregate (its member test reads the aggregate's own DW_AT_type, which
 * it has none of: a struct with a member is never empty there, kept) */
static int md_empty_aggregate(Dwarf_Die *die)
{
	Dwarf_Die child, parent, tmp;
	int inherited;

	if (md_type_size(die, sizeof(long)) > 8)
		return 0;
	for (;;) {
		inherited = 0;
		if (dw.child(die, &child) != 0)
			return 1;
		do {
			Dwarf_Attribute a;

			switch (dw.tag(&child)) {
			case DW_TAG_member:
				if (!dw.attr(die, DW_AT_type, &a) || !dw.formref_die(&a, &tmp))
					return 0;
				return md_empty_aggregate(&tmp);
			case DW_TAG_subprogram:
				return 0;
			case DW_TAG_inheritance:
				if (dw.attr(&child, DW_AT_type, &a) && dw.formref_die(&a, &parent))
					inherited = 1;
				break;
			default:
				break;
			}
		} while (dw.siblingof(&child, &child) == 0);
		if (!inherited)
			return 1;
		tmp = parent;
		die = &tmp;
	}
}

struct md_param {
	int pos;
	unsigned max_size; /* bits */
	int reg_max, reg_cnt;
	char regs[4];
	int lookup_string;
	int prev_class;
};

#define MD_ROUND_UP(x, a) (((x) + (a)-1) / (a) * (a))

/* a struct member's psABI class (uftrace's get_param_class) */
static int md_param_class(Dwarf_Die *die, struct md_param *pd)
{
	Dwarf_Die ref;
	int r, size, cls;
	const char *tname;

	while ((r = md_next_type(&die, &ref)) > 0) {
		switch (dw.tag(die)) {
		case DW_TAG_pointer_type:
		case DW_TAG_ptr_to_member_type:
		case DW_TAG_reference_type:
		case DW_TAG_rvalue_reference_type:
			if (pd->pos % 8)
				pd->reg_cnt++;
			pd->pos = MD_ROUND_UP(pd->pos, 8);
			if (pd->reg_cnt >= pd->reg_max)
				return MD_CLS_MEM;
			pd->pos += 8;
			pd->regs[pd->reg_cnt++] = MD_CLS_INT;
			return MD_CLS_INT;
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
		case DW_TAG_class_type:
			return MD_CLS_MEM;
		case DW_TAG_enumeration_type:
			return MD_CLS_INT;
		case DW_TAG_base_type:
			tname = dw.diename(die);
			tname = tname ? tname : "";
			size = (int)(md_type_size(die, sizeof(int)) / 8);
			if (size == 0)
				size = 1;
			if (pd->pos % size && (pd->pos % 8) + size >= 8) {
				pd->reg_cnt++;
				pd->prev_class = MD_CLS_NONE;
			}
			pd->pos = MD_ROUND_UP(pd->pos, size);
			if (pd->reg_cnt >= pd->reg_max)
				return MD_CLS_MEM;
			if (!strcmp(tname, "double")) {
				pd->regs[pd->reg_cnt++] = MD_CLS_FP;
				pd->pos += 8;
				pd->prev_class = MD_CLS_NONE;
				return MD_CLS_FP;
			} else if (!strcmp(tname, "float")) {
				if (pd->prev_class != MD_CLS_INT)
					pd->prev_class = MD_CLS_FP;
			} else {
				pd->prev_class = MD_CLS_INT;
			}
			cls = pd->prev_class;
			pd->regs[pd->reg_cnt] = (char)cls;
			if ((pd->pos % 8) + size >= 8) {
				pd->reg_cnt++;
				pd->prev_class = MD_CLS_NONE;
			}
			pd->pos += size;
			return cls == MD_CLS_INT ? cls : MD_CLS_FP;
		default:
			break;
		}
	}
	return MD_CLS_MEM;
}

/* where a struct passed by value goes (uftrace's place_struct_members on x86_64) */
static void md_place_struct(Dwarf_Die *die, struct md_arg *ad, struct md_type *td)
{
	struct md_param pd = {.max_size = 128, .reg_max = 2};
	Dwarf_Die child;
	const char *sname = dw.diename(die);
	int found_mem = 0, ptr_only = 0, reg_cnt = 0, fp_cnt = 0;

	ad->struct_reg_cnt = 0;
	ad->struct_passed = 1;
	if (sname) {
		char *p;

		snprintf(td->name, sizeof(td->name), "%s", sname);
		/* a long C++ type name cut at its first template or parameter list */
		p = td->name[0] ? strpbrk(td->name + 1, "< ({[") : NULL;
		if (p)
			*p = '\0';
		if (!strcmp(td->name, "basic_string"))
			pd.lookup_string = 1;
	}
	if (dw.child(die, &child) != 0)
		return;
	if (td->size > pd.max_size && !pd.lookup_string)
		ptr_only = 1; /* x86_64: class_via_ptr */
	do {
		switch (dw.tag(&child)) {
		case DW_TAG_member:
			if (ptr_only)
				break;
			if (md_param_class(&child, &pd) == MD_CLS_MEM)
				found_mem = 1;
			if (!pd.lookup_string)
				break;
			sname = dw.diename(&child);
			if (sname && !strcmp(sname, "_M_dataplus")) {
				td->fmt = MD_STDSTR;
				td->size = 64;
				return;
			}
			break;
		case DW_TAG_subprogram:
			if (ad->reg_pos >= 6)
				goto via_stack;
			sname = dw.diename(&child);
			if ((sname && sname[0] == '~') || dw.hasattr(die, DW_AT_virtuality)) {
				ad->struct_regs[0] = MD_CLS_PTR;
				ad->struct_reg_cnt = 1;
				return;
			}
			break;
		default:
			break;
		}
	} while (dw.siblingof(&child, &child) == 0);
	if (td->size > pd.max_size || found_mem)
		goto via_stack;
	if (pd.pos % 8)
		pd.reg_cnt++;
	for (int i = 0; i < pd.reg_cnt; i++) {
		if (pd.regs[i] == MD_CLS_FP)
			fp_cnt++;
		else
			reg_cnt++;
	}
	if (ad->reg_pos + reg_cnt > 6 || ad->fpreg_pos + fp_cnt > 8)
		goto via_stack;
	memcpy(ad->struct_regs, pd.regs, sizeof(pd.regs));
	ad->struct_reg_cnt = pd.reg_cnt;
	return;
via_stack:
	ad->struct_reg_cnt = 0;
	/* x86_64: struct_return_needs_ptr (a returned one comes back through rdi) */
	if (ad->has_retspec && ad->reg_pos < 6)
		ad->struct_regs[ad->struct_reg_cnt++] = MD_CLS_PTR;
}

/* The tail of enum NAME's anonymous form: _<basename of the CU>_<DIE offset in the CU> */
static void md_enum_name(Dwarf_Die *die, char *buf, size_t len)
{
	Dwarf_Die cu;
	const char *cu_name = NULL, *b;
	char *p;

	if (dw.diecu(die, &cu, NULL, NULL))
		cu_name = dw.diename(&cu);
	if (!cu_name)
		cu_name = "unnamed";
	b = strrchr(cu_name, '/');
	snprintf(buf, len, "_%s_%lx", b ? b + 1 : cu_name, (unsigned long)dw.cuoffset(die));
	for (p = buf; (p = strpbrk(p, "+-.()<> ")) != NULL;)
		*p++ = '_';
}

/* uftrace's resolve_type_info: 1 with TD filled, 0 when the type is not understood */
static int md_resolve_type(Dwarf_Die *die, struct md_arg *ad, struct md_type *td)
{
	Dwarf_Die ref;
	const char *tname;
	int r;

	while ((r = md_next_type(&die, &ref)) > 0) {
		switch (dw.tag(die)) {
		case DW_TAG_enumeration_type: {
			Dwarf_Die e;

			if (dw.child(die, &e) != 0)
				return 0; /* no values: the default format */
			td->fmt = MD_ENUM;
			tname = dw.diename(die);
			if (tname && (isalpha((unsigned char)*tname) || *tname == '_'))
				snprintf(td->name, sizeof(td->name), "%s", tname);
			else
				md_enum_name(die, td->name, sizeof(td->name));
			td->size = md_type_size(die, sizeof(int));
			md_add_enum(ad->c, td->name, die);
			return 1;
		}
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
		case DW_TAG_class_type:
			if (td->pointer)
				break;
			td->fmt = MD_STRUCT;
			td->size = md_empty_aggregate(die) ? 0 : md_type_size(die, sizeof(long));
			md_place_struct(die, ad, td);
			return 1;
		case DW_TAG_pointer_type:
		case DW_TAG_ptr_to_member_type:
		case DW_TAG_reference_type:
		case DW_TAG_rvalue_reference_type:
			td->pointer++;
			break;
		case DW_TAG_subroutine_type:
			if (td->pointer == 1) {
				td->fmt = MD_PTR;
				return 1;
			}
			break;
		default:
			break;
		}
	}
	if (r < 0)
		return 0;
	tname = dw.diename(die);
	if (td->pointer) {
		td->size = 64;
		td->fmt = td->pointer == 1 && tname && !strcmp(tname, "char") ? MD_STR : MD_PTR;
		return 1;
	}
	td->size = md_type_size(die, sizeof(long));
	if (dw.tag(die) != DW_TAG_base_type || !tname)
		return 0;
	if (!strcmp(tname, "char"))
		td->fmt = MD_CHAR;
	else if (!strcmp(tname, "float") || !strcmp(tname, "double"))
		td->fmt = MD_FLOAT;
	else if (!strcmp(tname, "long double")) {
		td->fmt = MD_FLOAT;
		td->size = 80;
	}
	return 1;
}

/* uftrace's add_type_info: SPEC ("argN" or "retval") gets its format */
static int md_add_type(char *spec, size_t len, Dwarf_Die *die, struct md_arg *ad)
{
	struct md_type td = {.fmt = MD_AUTO};
	Dwarf_Die origin;

	if (!dw.hasattr(die, DW_AT_type)) {
		Dwarf_Attribute a;

		if (!dw.hasattr(die, DW_AT_abstract_origin))
			return 0;
		dw.attr(die, DW_AT_abstract_origin, &a);
		if (!dw.formref_die(&a, &origin))
			return 0;
		die = &origin;
	}
	if (!md_resolve_type(die, ad, &td))
		return 0;
	ad->last_fmt = td.fmt;
	ad->last_size = (int)(td.size / 8);
	switch (td.fmt) {
	case MD_CHAR:
		md_cat(spec, len, "/c");
		break;
	case MD_STR:
		md_cat(spec, len, "/s");
		break;
	case MD_STDSTR:
		md_cat(spec, len, "/S");
		break;
	case MD_FLOAT:
		if (ad->idx) {
			snprintf(spec, len, "fparg%d/%zu", ++ad->fpidx, td.size);
			--ad->idx; /* the integer arguments keep their numbers */
		} else {
			md_cat(spec, len, "/f%d", (int)td.size);
		}
		break;
	case MD_PTR:
		md_cat(spec, len, "/p");
		break;
	case MD_ENUM:
		md_cat(spec, len, "/e:%s", td.name);
		break;
	case MD_STRUCT:
		if (ad->idx)
			snprintf(spec, len, "arg%d/t%d", ad->idx, ad->last_size);
		else
			md_cat(spec, len, "/t%d", ad->last_size);
		if (td.name[0])
			md_cat(spec, len, ":%s", td.name);
		break;
	default:
		break;
	}
	return 1;
}

/* uftrace's arch_register_dwarf_name on x86_64: DW_OP_regN of the argument registers */
static const char *md_dwarf_reg(int atom)
{
	switch (atom) {
	case DW_OP_reg1:
		return "rdx";
	case DW_OP_reg2:
		return "rcx";
	case DW_OP_reg4:
		return "rsi";
	case DW_OP_reg5:
		return "rdi";
	case DW_OP_reg8:
		return "r8";
	case DW_OP_reg9:
		return "r9";
	case DW_OP_reg17:
		return "xmm0";
	case DW_OP_reg18:
		return "xmm1";
	case DW_OP_reg19:
		return "xmm2";
	case DW_OP_reg20:
		return "xmm3";
	case DW_OP_reg21:
		return "xmm4";
	case DW_OP_reg22:
		return "xmm5";
	case DW_OP_reg23:
		return "xmm6";
	case DW_OP_reg24:
		return "xmm7";
	default:
		return NULL;
	}
}

enum { MD_LOC_INDEX, MD_LOC_REG, MD_LOC_STACK };

/* uftrace's add_location */
static void md_add_location(char *spec, size_t len, Dwarf_Die *die, struct md_arg *ad)
{
	int type = MD_LOC_INDEX, reg = 0, ofs = 0;
	Dwarf_Attribute loc;
	const char *name = NULL;

	if (dw.hasattr(die, DW_AT_location) && dw.attr(die, DW_AT_location, &loc)) {
		Dwarf_Op *ops = NULL;
		size_t n = 0;
		Dwarf_Addr base, start, end;

		if (dw.getlocation(&loc, &ops, &n) == -1 &&
		    dw.getlocations(&loc, 0, &base, &start, &end, &ops, &n) == -1)
			n = 0;
		/* uftrace reads the first operation (its loop never moves on) */
		if (n && ops) {
			if (ops->atom == DW_OP_fbreg) {
				if ((int)ops->number >= 0) {
					type = MD_LOC_STACK;
					ofs = (int)((ops->number + 7) / 8) + 1;
				}
			} else if (ops->atom >= DW_OP_reg0 && ops->atom <= DW_OP_reg31) {
				type = MD_LOC_REG;
				reg = ops->atom;
			} else if (ops->atom == DW_OP_regx) {
				type = MD_LOC_REG;
				reg = (int)ops->number;
			}
		}
	}
	if (ad->struct_passed && type == MD_LOC_INDEX) {
		switch (ad->last_fmt) {
		case MD_STRUCT:
			for (int i = 0; i < ad->struct_reg_cnt; i++) {
				int cls = ad->struct_regs[i];
				char buf[16];

				if (cls == MD_CLS_INT || cls == MD_CLS_PTR)
					name = ad->reg_pos < 6 ? md_iregs[ad->reg_pos] : "";
				else
					snprintf(buf, sizeof(buf), "XMM%d", ad->fpreg_pos),
						name = buf;
				if (cls == MD_CLS_INT || cls == MD_CLS_PTR)
					ad->reg_pos++;
				else
					ad->fpreg_pos++;
				md_cat(spec, len, "%s%s", i ? "+" : "%", name);
			}
			return;
		case MD_FLOAT:
			if (ad->fpreg_pos < 8) {
				md_cat(spec, len, "%%XMM%d", ad->fpreg_pos);
				ad->fpreg_pos++;
			}
			return;
		default:
			if (ad->reg_pos < 6) {
				md_cat(spec, len, "%%%s", md_iregs[ad->reg_pos]);
				ad->reg_pos++;
			}
			return;
		}
	}
	switch (type) {
	case MD_LOC_REG:
		name = md_dwarf_reg(reg);
		if (name) {
			md_cat(spec, len, "%%%s", name);
			if (ad->last_fmt == MD_FLOAT)
				ad->fpreg_pos++;
			else
				ad->reg_pos++;
		}
		break;
	case MD_LOC_STACK:
		md_cat(spec, len, "%%stack+%d", ofs);
		break;
	default:
		if (ad->last_fmt == MD_FLOAT)
			ad->fpreg_pos++;
		else
			ad->reg_pos++;
		break;
	}
}

/* uftrace's get_retspec: "retval[/FMT]" into OUT ("" for a function without a type) */
static void md_retspec(Dwarf_Die *die, struct md_arg *ad, char *out, size_t len)
{
	Dwarf_Die spec;

	ad->has_retspec = 1;
	out[0] = '\0';
	if (!dw.hasattr(die, DW_AT_type)) {
		Dwarf_Attribute a;

		if (!dw.hasattr(die, DW_AT_specification))
			return;
		dw.attr(die, DW_AT_specification, &a);
		if (!dw.formref_die(&a, &spec))
			return;
		die = &spec;
		if (!dw.hasattr(die, DW_AT_type))
			return;
	}
	snprintf(out, len, "retval");
	md_add_type(out, len, die, ad);
	if ((ad->last_fmt == MD_STRUCT && ad->struct_reg_cnt == 1 &&
	     ad->struct_regs[0] == MD_CLS_PTR) ||
	    ad->last_fmt == MD_STDSTR) {
		ad->struct_passed = 1;
		ad->reg_pos = 1;
	}
}

/* uftrace's get_argspec: "arg1,arg2/s,..." (malloc'ed) or NULL without parameters */
static char *md_argspec(Dwarf_Die *die, struct md_arg *ad)
{
	Dwarf_Die arg;
	char *out = NULL;
	size_t olen = 0;

	if (!ad->has_retspec) {
		char tmp[MD_SPEC_MAX];
		md_retspec(die, ad, tmp, sizeof(tmp)); /* for the registers a return takes */
	}
	ad->has_retspec = 0;
	if (dw.child(die, &arg) != 0)
		return NULL;
	do {
		char buf[MD_SPEC_MAX];
		size_t n;
		char *p;

		if (dw.tag(&arg) != DW_TAG_formal_parameter)
			continue;
		snprintf(buf, sizeof(buf), "arg%d", ++ad->idx);
		if (!md_add_type(buf, sizeof(buf), &arg, ad)) {
			ad->idx--;
			continue;
		}
		md_add_location(buf, sizeof(buf), &arg, ad);
		n = strlen(buf);
		p = realloc(out, olen + n + 2);
		if (!p) {
			ad->c->oom = 1;
			free(out);
			return NULL;
		}
		out = p;
		if (olen)
			out[olen++] = ',';
		memcpy(out + olen, buf, n + 1);
		olen += n;
	} while (dw.siblingof(&arg, &arg) == 0);
	return out;
}

/* ---- the walk ---- */

static int md_func_cb(Dwarf_Die *die, void *data)
{
	struct md_ctx *c = data;
	struct mc_dwarf *d = c->d;
	struct mc_dwfn *f;
	Dwarf_Addr lowpc;
	Dwarf_Attribute a;
	const char *name = NULL, *want_name;
	int line = 0, kinds = MC_DW_ARG | MC_DW_RET;

	if (c->oom)
		return DWARF_CB_ABORT;
	if (dw.tag(die) != DW_TAG_subprogram || dw.hasattr(die, DW_AT_declaration) ||
	    !dw.hasattr(die, DW_AT_low_pc) || dw.lowpc(die, &lowpc) != 0)
		return DWARF_CB_OK;
	if (dw.hasattr_integrate(die, DW_AT_linkage_name) &&
	    dw.attr_integrate(die, DW_AT_linkage_name, &a))
		name = dw.formstring(&a);
	if (!name)
		name = dw.diename(die);
	if (!name)
		return DWARF_CB_OK;
	want_name = c->want ? c->want(c->data, lowpc, name, &kinds) : name;
	if (!want_name)
		return DWARF_CB_OK;
	if (d->nfn == c->cfn) {
		f = realloc(d->fn, (c->cfn = c->cfn ? c->cfn * 2 : 64) * sizeof(*f));
		if (!f)
			goto oom;
		d->fn = f;
	}
	f = &d->fn[d->nfn];
	memset(f, 0, sizeof(*f));
	f->addr = lowpc;
	f->name = md_strdup(want_name);
	if (!f->name)
		goto oom;
	d->nfn++;
	if (dw.hasattr(die, DW_AT_decl_file)) {
		if (dw.decl_line(die, &line) == 0) {
			f->file = md_strdup(dw.decl_file(die));
			f->line = line;
		}
	} else {
		/* an out-of-line copy (foo.part.0): the line table at its first instructions,
		 * stepping over the nops gcc gives no line to (uftrace: 10 tries, 1 byte each) */
		Dwarf_Die cu;
		Dwarf_Line *l = NULL;

		if (dw.diecu(die, &cu, NULL, NULL))
			for (int i = 0; i < 10 && !l; i++)
				l = dw.getsrc_die(&cu, lowpc + (Dwarf_Addr)i);
		if (l && dw.lineno(l, &line) == 0) {
			f->file = md_strdup(dw.linesrc(l, NULL, NULL));
			f->line = line;
		}
	}
	if (f->file)
		c->cu_locs++;
	/* the .dbg lists only the functions with a line: specs of the others could not be read
	 * back, so none is recorded either */
	if (kinds && f->file) {
		/* uftrace's order: the return spec first (its hidden pointer moves the arguments
		 * on); the argument spec works it out itself when only that is wanted */
		struct md_arg ad = {.c = c};
		char ret[MD_SPEC_MAX];

		if (kinds & MC_DW_RET) {
			md_retspec(die, &ad, ret, sizeof(ret));
			if (ret[0] && !(f->ret = strdup(ret)))
				goto oom;
		}
		if (kinds & MC_DW_ARG)
			f->arg = md_argspec(die, &ad);
	}
	return c->oom ? DWARF_CB_ABORT : DWARF_CB_OK;
oom:
	c->oom = 1;
	return DWARF_CB_ABORT;
}

static void md_add_dir(struct md_ctx *c, const char *dir)
{
	for (size_t i = 0; i < c->ndirs; i++) {
		if (!strcmp(c->dirs[i].dir, dir)) {
			c->dirs[i].nused++;
			c->dirs[i].nlocs += c->cu_locs;
			return;
		}
	}
	if (c->ndirs == sizeof(c->dirs) / sizeof(c->dirs[0]))
		return;
	c->dirs[c->ndirs].dir = strdup(dir);
	if (!c->dirs[c->ndirs].dir)
		return;
	c->dirs[c->ndirs].nused = 1;
	c->dirs[c->ndirs].nlocs = c->cu_locs;
	c->ndirs++;
}

static int md_dir_cmp(const void *a, const void *b)
{
	/* an entry of md_ctx.dirs starts with its name */
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* uftrace's get_base_comp_dir: in name order, a directory under the previous one counts for
 * it; the most used wins (then the one with the most functions) */
static char *md_base_dir(struct md_ctx *c)
{
	size_t prev, max, i;

	if (!c->ndirs)
		return NULL;
	qsort(c->dirs, c->ndirs, sizeof(c->dirs[0]), md_dir_cmp);
	max = prev = 0;
	for (i = 1; i < c->ndirs; i++) {
		if (!strncmp(c->dirs[i].dir, c->dirs[prev].dir, strlen(c->dirs[prev].dir))) {
			c->dirs[prev].nused += c->dirs[i].nused;
			c->dirs[prev].nlocs += c->dirs[i].nlocs;
		} else {
			if (!(c->dirs[max].nused > c->dirs[prev].nused ||
			      (c->dirs[max].nused == c->dirs[prev].nused &&
			       c->dirs[max].nlocs > c->dirs[prev].nlocs)))
				max = prev;
			prev = i;
		}
	}
	if (!(c->dirs[max].nused > c->dirs[prev].nused ||
	      (c->dirs[max].nused == c->dirs[prev].nused &&
	       c->dirs[max].nlocs > c->dirs[prev].nlocs)))
		max = prev;
	return strdup(c->dirs[max].dir);
}

static int md_fn_cmp(const void *a, const void *b)
{
	const struct mc_dwfn *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* uftrace's enum tree puts a greater name on the left: its walk is in descending order */
static int md_en_cmp(const void *a, const void *b)
{
	return strcmp(((const struct mc_dwenum *)b)->name, ((const struct mc_dwenum *)a)->name);
}

int mc_dwarf_read(struct mc_dwarf *d, const char *path, mc_dwarf_want_fn want, void *data,
		  char *why, size_t len)
{
	struct md_ctx *c;
	Dwarf_Off cur = 0, next;
	size_t hsz;
	Dwarf *dbg;
	int fd, ret = 1;

	memset(d, 0, sizeof(*d));
	snprintf(d->path, sizeof(d->path), "%s", path);
	if (md_load(why, len) < 0)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, len, "%s cannot be read: arguments from DWARF are not recorded",
			 path);
		return -1;
	}
	dbg = dw.begin(fd, DWARF_C_READ);
	if (!dbg) {
		close(fd);
		return 0; /* no DWARF: the table's prototypes only, as uftrace */
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		ret = -1;
		goto out;
	}
	c->d = d;
	c->want = want;
	c->data = data;
	while (dw.nextcu(dbg, cur, &next, &hsz, NULL, NULL, NULL) == 0 && !c->oom) {
		Dwarf_Die cu;
		Dwarf_Attribute a;
		const char *dir;

		if (!dw.offdie(dbg, cur + hsz, &cu) || dw.tag(&cu) != DW_TAG_compile_unit)
			break;
		c->cu_locs = 0;
		dw.getfuncs(&cu, md_func_cb, c, 0);
		if (dw.hasattr(&cu, DW_AT_comp_dir) && dw.attr(&cu, DW_AT_comp_dir, &a) &&
		    (dir = dw.formstring(&a)) != NULL)
			md_add_dir(c, dir);
		cur = next;
	}
	d->base_dir = md_base_dir(c);
	for (size_t i = 0; i < c->ndirs; i++)
		free(c->dirs[i].dir);
	if (c->oom) {
		snprintf(why, len, "out of memory reading the DWARF of %s", path);
		ret = -1;
	}
	free(c);
	qsort(d->fn, d->nfn, sizeof(*d->fn), md_fn_cmp);
	qsort(d->en, d->nen, sizeof(*d->en), md_en_cmp);
out:
	dw.end(dbg);
	close(fd);
	if (ret < 0)
		mc_dwarf_free(d);
	return ret;
}

#else /* !MC_HAVE_LIBDW */

int mc_dwarf_read(struct mc_dwarf *d, const char *path, mc_dwarf_want_fn want, void *data,
		  char *why, size_t len)
{
	(void)want;
	(void)data;
	memset(d, 0, sizeof(*d));
	snprintf(d->path, sizeof(d->path), "%s", path);
	snprintf(why, len,
		 "libmcount was built without libdw's headers (libdw-dev): arguments "
		 "from DWARF are not recorded");
	return -1;
}

#endif

const struct mc_dwfn *mc_dwarf_find(const struct mc_dwarf *d, uint64_t addr)
{
	size_t lo = 0, hi = d->nfn;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->fn[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < d->nfn && d->fn[lo].addr == addr ? &d->fn[lo] : NULL;
}

struct md_buf {
	char *p;
	size_t n, cap;
	int oom;
};

static void md_put(struct md_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void md_put(struct md_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = 1;
			return;
		}
		if (b->p && b->n + (size_t)n < b->cap) {
			b->n += (size_t)n;
			return;
		}
		size_t cap = (b->cap ? b->cap * 2 : 4096) + (size_t)n;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
}

char *mc_dwarf_dbg_text(const struct mc_dwarf *d)
{
	struct md_buf b = {0};
	size_t blen = d->base_dir ? strlen(d->base_dir) : 0;

	md_put(&b, "# path name: %s\n", d->path);
	for (size_t i = 0; i < d->nen; i++)
		md_put(&b, "E: enum %s {%s}\n", d->en[i].name, d->en[i].vals);
	for (size_t i = 0; i < d->nfn; i++) {
		const struct mc_dwfn *f = &d->fn[i];
		const char *file = f->file;

		if (!file)
			continue; /* uftrace keeps the functions it has a source line for */
		/* the file name past the base compilation directory (and its '/') */
		if (blen && !strncmp(file, d->base_dir, blen))
			file += blen + 1;
		md_put(&b, "F: %llx %s\n", (unsigned long long)(f->addr - d->sym_base), f->name);
		md_put(&b, "L: %d %s\n", f->line, file);
		if (f->arg)
			md_put(&b, "A: @%s\n", f->arg);
		if (f->ret)
			md_put(&b, "R: @%s\n", f->ret);
	}
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

void mc_dwarf_free(struct mc_dwarf *d)
{
	for (size_t i = 0; i < d->nfn; i++) {
		free(d->fn[i].name);
		free(d->fn[i].file);
		free(d->fn[i].arg);
		free(d->fn[i].ret);
	}
	for (size_t i = 0; i < d->nen; i++) {
		free(d->en[i].name);
		free(d->en[i].vals);
	}
	free(d->fn);
	free(d->en);
	free(d->base_dir);
	d->fn = NULL;
	d->en = NULL;
	d->base_dir = NULL;
	d->nfn = d->nen = 0;
}
