/*
 * read_info: the `info` file of a uftrace.data directory.
 *
 * Role: decode the 40-byte binary header and walk the text sections in info_mask bit order,
 * the way uftrace 0.13's read_uftrace_info() does: a set bit means its section must come next
 * and be well-formed, a clear bit means it is absent. Multi-line sections start with
 * "<key>:lines=N" and uftrace rejects an N above what it knows (cpuinfo 2, osinfo 3,
 * taskinfo 2, usageinfo 6, argspec 6).
 *
 * Invariants:
 *  - sections read by uftrace with fgets() into a PATH_MAX (4096) buffer must fit in it; a
 *    longer line would be split and desynchronise every later section.
 *  - taskinfo: nr_tid comes before tids (uftrace sizes its array from it), the tids line ends
 *    with '\n' (uftrace scans to it), every tid is a positive decimal and the count matches.
 *  - bits above VERSION (13) are unknown to 0.13, which never reads their text: ignored here.
 */
#include "formats/uftrace/read_uftrace.h"

#include <stdlib.h>
#include <string.h>

#define FGETS_MAX 4095 /* characters fgets(buf, 4096) returns, the '\n' included */

static const char *const info_names[UFR_INFO_NR_KNOWN] = {
	"EXE_NAME", "EXE_BUILD_ID", "EXIT_STATUS",  "CMDLINE",	 "CPUINFO",
	"MEMINFO",  "OSINFO",	    "TASKINFO",	    "USAGEINFO", "LOADINFO",
	"ARG_SPEC", "RECORD_DATE",  "PATTERN_TYPE", "VERSION",
};

static const char *const feat_names[] = {
	"PLTHOOK",   "TASK_SESSION", "KERNEL",	   "ARGUMENT",	"RETVAL",     "SYM_REL_ADDR",
	"MAX_STACK", "EVENT",	     "PERF_EVENT", "AUTO_ARGS", "DEBUG_INFO", "ESTIMATE_RETURN",
};

const char *ufr_info_name(unsigned bit)
{
	return bit < UFR_INFO_NR_KNOWN ? info_names[bit] : NULL;
}

const char *ufr_feat_name(unsigned bit)
{
	return bit < sizeof(feat_names) / sizeof(feat_names[0]) ? feat_names[bit] : NULL;
}

int ufr_header_parse(const void *buf, size_t len, const char *file, struct ufr_header *hdr,
		     struct rd_error *err)
{
	static const char magic[8] = "Ftrace!";
	const uint8_t *p = buf;
	bool big;

	memset(hdr, 0, sizeof(*hdr));
	if (len < UFR_HEADER_SIZE)
		return rd_error_set(err, UFR_E_HDR_SHORT, file, (int64_t)len,
				    "info is %zu bytes, shorter than the %d-byte header", len,
				    UFR_HEADER_SIZE);
	memcpy(hdr->magic, p, 8);
	if (memcmp(p, magic, 8) != 0) {
		char shown[8 * 4 + 1];
		size_t n = 0;

		for (int i = 0; i < 8; i++)
			n += (size_t)snprintf(
				shown + n, sizeof(shown) - n,
				p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\' ? "%c" : "\\x%02x",
				p[i]);
		return rd_error_set(err, UFR_E_HDR_MAGIC, file, 0,
				    "magic is \"%s\", expected \"Ftrace!\\0\"", shown);
	}
	hdr->endian = p[14];
	hdr->elf_class = p[15];
	if (hdr->endian != 1 && hdr->endian != 2)
		return rd_error_set(err, UFR_E_HDR_ENDIAN, file, 14,
				    "endian is %u, expected 1 (little) or 2 (big)", hdr->endian);
	big = hdr->endian == 2;
	hdr->version = rd_get32(p + 8, big);
	hdr->header_size = rd_get16(p + 12, big);
	hdr->feat_mask = rd_get64(p + 16, big);
	hdr->info_mask = rd_get64(p + 24, big);
	hdr->max_stack = rd_get16(p + 32, big);
	hdr->unused1 = rd_get16(p + 34, big);
	hdr->unused2 = rd_get32(p + 36, big);

	if (hdr->version < 3 || hdr->version > 4)
		return rd_error_set(err, UFR_E_HDR_VERSION, file, 8,
				    "version is %u, uftrace 0.13 reads 3..4", hdr->version);
	if (hdr->header_size != UFR_HEADER_SIZE)
		return rd_error_set(err, UFR_E_HDR_SIZE, file, 12, "header_size is %u, expected %d",
				    hdr->header_size, UFR_HEADER_SIZE);
	if (hdr->elf_class != 1 && hdr->elf_class != 2)
		return rd_error_set(err, UFR_E_HDR_CLASS, file, 15,
				    "elf class is %u, expected 1 (32-bit) or 2 (64-bit)",
				    hdr->elf_class);
	return 0;
}

/* where the sections are being read */
struct sect {
	struct rd_lines lines;
	const char *file;
	size_t eof_off;
	unsigned bit;
	struct rd_error *err;
};

static int sect_missing(struct sect *s)
{
	return rd_error_set(s->err, UFR_E_INFO_SECTION, s->file, (int64_t)s->eof_off,
			    "info_mask bit %u (%s) is set but the text ends before its section",
			    s->bit, info_names[s->bit]);
}

/*
 * Next line of the section, which must start with KEY. FGETS: uftrace reads it with fgets into
 * a 4096-byte buffer. VALUE/VLEN get the text after the key.
 */
static int sect_line(struct sect *s, const char *key, bool fgets_read, struct rd_line *line,
		     const char **value, size_t *vlen)
{
	size_t klen = strlen(key);

	if (!rd_lines_next(&s->lines, line))
		return sect_missing(s);
	if (fgets_read && line->len + (line->has_nl ? 1 : 0) > FGETS_MAX)
		return rd_error_set(s->err, UFR_E_INFO_LONG, s->file, (int64_t)line->off,
				    "%s line is %zu bytes; uftrace reads it with fgets into a "
				    "4096-byte buffer",
				    info_names[s->bit], line->len + 1);
	if (line->len < klen || memcmp(line->p, key, klen) != 0)
		return rd_error_set(s->err, UFR_E_INFO_SECTION, s->file, (int64_t)line->off,
				    "info_mask bit %u (%s) is set but the line does not start with "
				    "\"%s\"",
				    s->bit, info_names[s->bit], key);
	*value = line->p + klen;
	*vlen = line->len - klen;
	return 0;
}

static int sect_string(struct sect *s, const char *key, bool fgets_read, char **out)
{
	struct rd_line line;
	const char *v;
	size_t vl;

	if (sect_line(s, key, fgets_read, &line, &v, &vl) < 0)
		return -1;
	free(*out);
	*out = rd_strndup(v, vl);
	return 0;
}

/* "<key>lines=N" with 0 <= N <= MAX */
static int sect_lines_count(struct sect *s, const char *key, bool fgets_read, unsigned max,
			    unsigned *n)
{
	struct rd_line line;
	struct rd_scan sc;
	const char *v;
	size_t vl;
	uint64_t x;

	if (sect_line(s, key, fgets_read, &line, &v, &vl) < 0)
		return -1;
	rd_scan_init(&sc, v, vl);
	if (!rd_scan_lit(&sc, "lines=") || !rd_scan_dec(&sc, &x, NULL) || !rd_scan_eol(&sc))
		return rd_error_set(s->err, UFR_E_INFO_LINES, s->file, (int64_t)line.off,
				    "%s section must start with \"%slines=N\"", info_names[s->bit],
				    key);
	if (x > max)
		return rd_error_set(s->err, UFR_E_INFO_LINES, s->file, (int64_t)line.off,
				    "%slines=%llu, uftrace 0.13 reads at most %u", key,
				    (unsigned long long)x, max);
	*n = (unsigned)x;
	return 0;
}

/* the N lines of a multi-line section whose sub-keys uftrace ignores */
static int sect_plain_lines(struct sect *s, const char *key, unsigned max)
{
	struct rd_line line;
	const char *v;
	size_t vl;
	unsigned n;

	if (sect_lines_count(s, key, true, max, &n) < 0)
		return -1;
	for (unsigned i = 0; i < n; i++)
		if (sect_line(s, key, true, &line, &v, &vl) < 0)
			return -1;
	return 0;
}

static int parse_build_id(struct sect *s, struct ufr_info *info)
{
	struct rd_line line;
	const char *v;
	size_t vl;

	if (sect_line(s, "build_id:", true, &line, &v, &vl) < 0)
		return -1;
	if (vl != 40 || !rd_is_hex_string(v, vl))
		return rd_error_set(s->err, UFR_E_INFO_VALUE, s->file, (int64_t)line.off,
				    "build_id is not 40 hex digits");
	info->build_id = rd_strndup(v, vl);
	return 0;
}

static int parse_exit_status(struct sect *s, struct ufr_info *info)
{
	struct rd_line line;
	struct rd_scan sc;
	const char *v;
	size_t vl;
	int64_t x;

	if (sect_line(s, "exit_status:", true, &line, &v, &vl) < 0)
		return -1;
	rd_scan_init(&sc, v, vl);
	if (!rd_scan_int(&sc, &x) || !rd_scan_eol(&sc) || x < INT32_MIN || x > INT32_MAX)
		return rd_error_set(s->err, UFR_E_INFO_VALUE, s->file, (int64_t)line.off,
				    "exit_status is not a decimal wait status");
	info->has_exit_status = true;
	info->exit_status = (int)x;
	return 0;
}

static int int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* a tid listed twice, found on a sorted copy: O(n log n) however long the list */
static int check_duplicates(struct sect *s, const struct rd_line *line, const int *tids, size_t nr)
{
	int *sorted = malloc((nr ? nr : 1) * sizeof(*sorted));
	int dup = 0;

	if (sorted == NULL)
		return rd_error_set(s->err, UFR_E_IO, s->file, (int64_t)line->off, "out of memory");
	memcpy(sorted, tids, nr * sizeof(*sorted));
	rd_sort(sorted, nr, sizeof(*sorted), int_cmp);
	for (size_t i = 1; i < nr && !dup; i++)
		if (sorted[i] == sorted[i - 1])
			dup = sorted[i];
	free(sorted);
	if (dup)
		return rd_error_set(s->err, UFR_E_INFO_VALUE, s->file, (int64_t)line->off,
				    "taskinfo:tids= lists tid %d twice", dup);
	return 0;
}

static int parse_tids(struct sect *s, const struct rd_line *line, const char *v, size_t vl,
		      struct ufr_info *info, bool have_nr)
{
	struct rd_scan sc;
	int *tids = NULL;
	size_t nr = 0, cap = 0;

	if (!have_nr)
		return rd_error_set(s->err, UFR_E_INFO_VALUE, s->file, (int64_t)line->off,
				    "taskinfo:tids= comes before taskinfo:nr_tid= (uftrace sizes "
				    "the tid array from nr_tid)");
	if (!line->has_nl)
		return rd_error_set(s->err, UFR_E_INFO_VALUE, s->file, (int64_t)line->off,
				    "taskinfo:tids= line does not end with a newline");
	rd_scan_init(&sc, v, vl);
	do {
		uint64_t x;

		if (!rd_scan_dec(&sc, &x, NULL) || x == 0 || x > INT32_MAX) {
			free(tids);
			return rd_error_set(
				s->err, UFR_E_INFO_VALUE, s->file, (int64_t)line->off,
				"taskinfo:tids= entry %zu is not a positive decimal tid", nr + 1);
		}
		if (nr == cap) {
			/* grows with the text actually present, never from nr_tid */
			size_t ncap = cap ? cap * 2 : 16;
			int *n = realloc(tids, ncap * sizeof(*tids));

			if (n == NULL) {
				free(tids);
				return rd_error_set(s->err, UFR_E_IO, s->file, (int64_t)line->off,
						    "out of memory");
			}
			tids = n;
			cap = ncap;
		}
		tids[nr++] = (int)x;
	} while (rd_scan_char(&sc, ','));
	if (!rd_scan_eol(&sc)) {
		free(tids);
		return rd_error_set(s->err, UFR_E_INFO_VALUE, s->file, (int64_t)line->off,
				    "taskinfo:tids= has a character other than digits and ','");
	}
	if (check_duplicates(s, line, tids, nr) < 0) {
		free(tids);
		return -1;
	}
	if ((int64_t)nr != info->nr_tid) {
		free(tids);
		return rd_error_set(s->err, UFR_E_TASKINFO_COUNT, s->file, (int64_t)line->off,
				    "taskinfo:nr_tid=%d but tids= lists %zu tids", info->nr_tid,
				    nr);
	}
	free(info->tids);
	info->tids = tids;
	return 0;
}

static int parse_taskinfo(struct sect *s, struct ufr_info *info)
{
	struct rd_line line = { 0 };
	bool have_nr = false, have_tids = false;
	const char *v;
	size_t vl;
	unsigned n;

	/* uftrace reads taskinfo with getline: no line length limit */
	if (sect_lines_count(s, "taskinfo:", false, 2, &n) < 0)
		return -1;
	for (unsigned i = 0; i < n; i++) {
		struct rd_scan sc;
		uint64_t x;

		if (sect_line(s, "taskinfo:", false, &line, &v, &vl) < 0)
			return -1;
		rd_scan_init(&sc, v, vl);
		if (rd_scan_lit(&sc, "nr_tid=")) {
			if (!rd_scan_dec(&sc, &x, NULL) || !rd_scan_eol(&sc) || x > INT32_MAX)
				return rd_error_set(s->err, UFR_E_INFO_VALUE, s->file,
						    (int64_t)line.off,
						    "taskinfo:nr_tid= is not a decimal count");
			if (x == 0)
				return rd_error_set(s->err, UFR_E_INFO_VALUE, s->file,
						    (int64_t)line.off,
						    "taskinfo:nr_tid=0: uftrace reports \"No data "
						    "available\"");
			info->nr_tid = (int)x;
			have_nr = true;
		} else if (rd_scan_lit(&sc, "tids=")) {
			if (parse_tids(s, &line, sc.p, (size_t)(sc.end - sc.p), info, have_nr) < 0)
				return -1;
			have_tids = true;
		} else {
			return rd_error_set(s->err, UFR_E_INFO_SECTION, s->file, (int64_t)line.off,
					    "taskinfo line is neither nr_tid= nor tids=");
		}
	}
	if (!have_tids)
		return rd_error_set(s->err, UFR_E_INFO_VALUE, s->file,
				    (int64_t)(n ? line.off : s->eof_off),
				    "taskinfo section has no tids= line");
	return 0;
}

static int parse_argspec(struct sect *s, struct ufr_info *info)
{
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
		{ "argspec:", offsetof(struct ufr_info, argspec) },
		{ "retspec:", offsetof(struct ufr_info, retspec) },
		{ "argauto:", offsetof(struct ufr_info, argauto) },
		{ "retauto:", offsetof(struct ufr_info, retauto) },
		{ "enumauto:", offsetof(struct ufr_info, enumauto) },
	};
	struct rd_line line;
	struct rd_scan sc;
	const char *v;
	size_t vl;
	uint64_t x;

	if (sect_line(s, "argspec:", false, &line, &v, &vl) < 0)
		return -1;
	rd_scan_init(&sc, v, vl);
	if (!rd_scan_lit(&sc, "lines")) {
		/* old format: a single argspec line */
		info->argspec = rd_strndup(v, vl);
		return 0;
	}
	if (!rd_scan_char(&sc, '=') || !rd_scan_dec(&sc, &x, NULL) || !rd_scan_eol(&sc))
		return rd_error_set(s->err, UFR_E_INFO_LINES, s->file, (int64_t)line.off,
				    "ARG_SPEC section must start with \"argspec:lines=N\"");
	if (x > 6)
		return rd_error_set(s->err, UFR_E_INFO_LINES, s->file, (int64_t)line.off,
				    "argspec:lines=%llu, uftrace 0.13 reads at most 6",
				    (unsigned long long)x);
	for (unsigned i = 0; i < (unsigned)x; i++) {
		size_t k;

		if (!rd_lines_next(&s->lines, &line))
			return sect_missing(s);
		if (line.len >= 11 && memcmp(line.p, "auto-args:1", 11) == 0) {
			info->auto_args = true;
			continue;
		}
		for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			size_t kl = strlen(keys[k].key);

			if (line.len >= kl && memcmp(line.p, keys[k].key, kl) == 0) {
				char **slot = (char **)((char *)info + keys[k].off);

				free(*slot);
				*slot = rd_strndup(line.p + kl, line.len - kl);
				break;
			}
		}
		if (k == sizeof(keys) / sizeof(keys[0]))
			return rd_error_set(
				s->err, UFR_E_INFO_SECTION, s->file, (int64_t)line.off,
				"ARG_SPEC line is none of argspec:, retspec:, argauto:, "
				"retauto:, enumauto:, auto-args:1");
	}
	return 0;
}

static int parse_record_date(struct sect *s, struct ufr_info *info)
{
	if (sect_string(s, "record_date:", true, &info->record_date) < 0)
		return -1;
	return sect_string(s, "elapsed_time:", true, &info->elapsed_time);
}

static int parse_pattern_type(struct sect *s, struct ufr_info *info)
{
	struct rd_line line;
	const char *v;
	size_t vl;

	if (sect_line(s, "pattern_type:", true, &line, &v, &vl) < 0)
		return -1;
	if (!((vl == 5 && !memcmp(v, "regex", 5)) || (vl == 4 && !memcmp(v, "glob", 4)) ||
	      (vl == 6 && !memcmp(v, "simple", 6))))
		return rd_error_set(s->err, UFR_E_INFO_VALUE, s->file, (int64_t)line.off,
				    "pattern_type is not regex, glob or simple");
	info->pattern_type = rd_strndup(v, vl);
	return 0;
}

static int parse_section(struct sect *s, struct ufr_info *info)
{
	switch (s->bit) {
	case UFR_INFO_EXE_NAME:
		return sect_string(s, "exename:", true, &info->exename);
	case UFR_INFO_EXE_BUILD_ID:
		return parse_build_id(s, info);
	case UFR_INFO_EXIT_STATUS:
		return parse_exit_status(s, info);
	case UFR_INFO_CMDLINE:
		return sect_string(s, "cmdline:", true, &info->cmdline);
	case UFR_INFO_CPUINFO:
		return sect_plain_lines(s, "cpuinfo:", 2);
	case UFR_INFO_MEMINFO: {
		char *ignored = NULL;
		int ret = sect_string(s, "meminfo:", true, &ignored);

		free(ignored);
		return ret;
	}
	case UFR_INFO_OSINFO:
		return sect_plain_lines(s, "osinfo:", 3);
	case UFR_INFO_TASKINFO:
		return parse_taskinfo(s, info);
	case UFR_INFO_USAGEINFO:
		return sect_plain_lines(s, "usageinfo:", 6);
	case UFR_INFO_LOADINFO: {
		char *ignored = NULL;
		int ret = sect_string(s, "loadinfo:", true, &ignored);

		free(ignored);
		return ret;
	}
	case UFR_INFO_ARG_SPEC:
		return parse_argspec(s, info);
	case UFR_INFO_RECORD_DATE:
		return parse_record_date(s, info);
	case UFR_INFO_PATTERN_TYPE:
		return parse_pattern_type(s, info);
	case UFR_INFO_VERSION:
		return sect_string(s, "uftrace_version:", true, &info->version);
	}
	return 0;
}

int ufr_info_parse(const char *buf, size_t len, const char *file, struct ufr_info *info,
		   struct rd_error *err)
{
	struct ufr_header *hdr = &info->hdr;
	struct sect s;

	memset(info, 0, sizeof(*info));
	if (ufr_header_parse(buf, len, file, hdr, err) < 0)
		return -1;
	if (!(hdr->feat_mask & UFR_FEAT_TASK_SESSION))
		return rd_error_set(err, UFR_E_FEAT_MASK, file, 16,
				    "feat_mask 0x%llx lacks TASK_SESSION (bit 1): uftrace then "
				    "resolves no symbols and report/graph crash",
				    (unsigned long long)hdr->feat_mask);
	if (!(hdr->feat_mask & UFR_FEAT_SYM_REL_ADDR))
		return rd_error_set(err, UFR_E_FEAT_MASK, file, 16,
				    "feat_mask 0x%llx lacks SYM_REL_ADDR (bit 5)",
				    (unsigned long long)hdr->feat_mask);
	if (!(hdr->info_mask & (1u << UFR_INFO_TASKINFO)))
		return rd_error_set(err, UFR_E_INFO_MASK, file, 24,
				    "info_mask 0x%llx lacks TASKINFO (bit 7): uftrace reports \"No "
				    "data available\"",
				    (unsigned long long)hdr->info_mask);

	rd_lines_init(&s.lines, buf + UFR_HEADER_SIZE, len - UFR_HEADER_SIZE, UFR_HEADER_SIZE);
	s.file = file;
	s.eof_off = len;
	s.err = err;
	for (s.bit = 0; s.bit < UFR_INFO_NR_KNOWN; s.bit++) {
		if (!(hdr->info_mask & (1ull << s.bit)))
			continue;
		if (parse_section(&s, info) < 0)
			return -1;
	}
	info->sections_end = s.lines.base + s.lines.pos;
	return 0;
}

void ufr_info_free(struct ufr_info *info)
{
	free(info->exename);
	free(info->build_id);
	free(info->cmdline);
	free(info->tids);
	free(info->argspec);
	free(info->retspec);
	free(info->argauto);
	free(info->retauto);
	free(info->enumauto);
	free(info->record_date);
	free(info->elapsed_time);
	free(info->pattern_type);
	free(info->version);
	memset(info, 0, sizeof(*info));
}
