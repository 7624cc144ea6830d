/*
 * mcount_dynsel: the -P/-U pattern list and the patch sites' byte forms (mcount_dynsel.h).
 * Plain C over the caller's buffers: no allocation, no system call.
 */
#include "libmcount/mcount_dynsel.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void dyn_err(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void dyn_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

/* one item "[!]PATTERN[@MODULE]" of LEN bytes at P */
static int dyn_add(struct mc_dyn_spec *s, const char *p, size_t len, int patch, int glob, char *err,
		   size_t errlen)
{
	const char *at;
	size_t plen, mlen;
	char why[160];

	if (len && *p == '!') {
		patch = 0;
		p++;
		len--;
	}
	if (len == 0) {
		dyn_err(err, errlen, "an empty pattern");
		return -1;
	}
	if (s->n >= MC_DYN_MAX) {
		dyn_err(err, errlen, "more than %d patterns", MC_DYN_MAX);
		return -1;
	}
	at = memchr(p, '@', len);
	plen = at ? (size_t)(at - p) : len;
	mlen = at ? len - plen - 1 : 0;
	if (at && mlen == 0) {
		dyn_err(err, errlen, "'%.*s': no module after '@'", (int)len, p);
		return -1;
	}
	if (mlen >= MC_MODULE_LEN) {
		dyn_err(err, errlen, "'%.*s': a module name longer than %d bytes", (int)len, p,
			MC_MODULE_LEN - 1);
		return -1;
	}
	if (mc_pattern_compile(&s->p[s->n], p, plen, glob, why, sizeof(why)) < 0) {
		dyn_err(err, errlen, "'%.*s': %s", (int)plen, p, why);
		return -1;
	}
	memcpy(s->module[s->n], at ? at + 1 : "", mlen);
	s->module[s->n][mlen] = '\0';
	s->patch[s->n] = (uint8_t)patch;
	s->n++;
	return 0;
}

static int dyn_add_list(struct mc_dyn_spec *s, const char *list, int patch, int glob, char *err,
			size_t errlen)
{
	const char *p = list;

	while (p && *p) {
		const char *e = strchr(p, ';');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len && dyn_add(s, p, len, patch, glob, err, errlen) < 0)
			return -1;
		if (!e)
			break;
		p = e + 1;
	}
	return 0;
}

int mc_dyn_parse(struct mc_dyn_spec *s, const char *patch, const char *unpatch, int glob, char *err,
		 size_t errlen)
{
	int any_patch = 0;

	s->n = 0;
	if (dyn_add_list(s, patch, 1, glob, err, errlen) < 0 ||
	    dyn_add_list(s, unpatch, 0, glob, err, errlen) < 0)
		return -1;
	for (size_t i = 0; i < s->n; i++)
		any_patch |= s->patch[i];
	if (s->n && !any_patch) {
		/* only -U: everything else in the executable (uftrace prepends "." or "*") */
		if (s->n >= MC_DYN_MAX) {
			dyn_err(err, errlen, "more than %d patterns", MC_DYN_MAX - 1);
			return -1;
		}
		memmove(&s->p[1], &s->p[0], s->n * sizeof(s->p[0]));
		memmove(&s->module[1], &s->module[0], s->n * sizeof(s->module[0]));
		memmove(&s->patch[1], &s->patch[0], s->n * sizeof(s->patch[0]));
		if (mc_pattern_compile(&s->p[0], glob ? "*" : ".", 1, glob, err, errlen) < 0)
			return -1;
		s->module[0][0] = '\0';
		s->patch[0] = 1;
		s->n++;
	}
	return 0;
}

static int dyn_module_is(const struct mc_dyn_spec *s, size_t i, const char *base, int is_exe)
{
	if (!s->module[i][0])
		return is_exe;
	return !strncmp(base, s->module[i], strlen(s->module[i]));
}

int mc_dyn_names_module(const struct mc_dyn_spec *s, const char *base, int is_exe)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->patch[i] && dyn_module_is(s, i, base, is_exe))
			return 1;
	return 0;
}

int mc_dyn_selected(const struct mc_dyn_spec *s, const char *base, int is_exe, const char *name)
{
	int sel = 0;

	for (size_t i = 0; i < s->n; i++)
		if (dyn_module_is(s, i, base, is_exe) && mc_pattern_match(&s->p[i], name))
			sel = s->patch[i];
	return sel;
}

int mc_dyn_is_nop5(const uint8_t *code, size_t avail)
{
	static const uint8_t forms[][5] = {
		{0x90, 0x90, 0x90, 0x90, 0x90}, /* gcc -fpatchable-function-entry */
		{0x0f, 0x1f, 0x44, 0x00, 0x00}, /* nopl 0(%rax,%rax,1): gcc -mnop-mcount */
		{0x0f, 0x1f, 0x44, 0x00, 0x08}, /* clang's patchable entry */
	};

	if (avail < 5)
		return 0;
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
		if (!memcmp(code, forms[i], 5))
			return 1;
	return 0;
}

static const uint8_t endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};

enum mc_dyn_target mc_dyn_entry_site(const uint8_t *fn, size_t avail, size_t *off)
{
	size_t o = avail >= 4 && !memcmp(fn, endbr64, 4) ? 4 : 0;

	if (!mc_dyn_is_nop5(fn + o, avail - o))
		return MC_DYN_NONE;
	*off = o;
	return MC_DYN_FENTRY;
}

enum mc_dyn_target mc_dyn_mcount_site(const uint8_t *fn, size_t avail, size_t off, const char **why)
{
	static const uint8_t frame[4] = {0x55, 0x48, 0x89, 0xe5}; /* push %rbp; mov %rsp,%rbp */
	size_t entry = avail >= 4 && !memcmp(fn, endbr64, 4) ? 4 : 0;

	if (off >= avail || !mc_dyn_is_nop5(fn + off, avail - off)) {
		*why = "its __mcount_loc site is not a nop (a call to mcount, or patched)";
		return MC_DYN_NONE;
	}
	if (off == entry)
		return MC_DYN_FENTRY;
	if (avail - entry < 4 || memcmp(fn + entry, frame, 4) || off < entry + 4) {
		*why = "its __mcount_loc site is not at the entry nor after push %rbp; "
		       "mov %rsp,%rbp";
		return MC_DYN_NONE;
	}
	return MC_DYN_MCOUNT;
}
