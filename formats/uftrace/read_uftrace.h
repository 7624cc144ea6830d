/*
 * read_uftrace: the offline reader and linter for uftrace.data directories (prefix ufr_).
 *
 * Role: parse every file of a uftrace.data directory exactly as far as uftrace 0.13 depends
 * on it, and check the rules 0.13 enforces (shared/anchors/uftrace.md) plus the nesting and
 * ordering rules a correct writer keeps. It is written apart from the runtime's writer on
 * purpose: no encoding code is shared, so a writer bug is not mirrored by its checker.
 *
 * Layers, each usable alone (a fuzzer can drive any of them with a buffer):
 *   ufr_header_parse / ufr_info_parse   info: 40-byte header, then the info_mask sections
 *   ufr_tasks_parse                     task.txt: SESS / TASK / FORK / DLOP lines
 *   ufr_map_parse, ufr_sym_parse        sid-<sid>.map and <module>.sym
 *   ufr_dat_iter_* + ufr_check_*        <tid>.dat record stream and its per-thread checks
 *   ufr_open / ufr_verify / ufr_close   a whole directory, with the cross-file rules
 *
 * Fuzzing: a libFuzzer target can feed one buffer to ufr_info_parse, ufr_tasks_parse,
 * ufr_map_parse (lenient or not), ufr_sym_parse, or ufr_check_buffer (a .dat stream); or write
 * the buffer as one file of a copied sample directory and run ufr_open + ufr_verify +
 * ufr_symbolize. Every entry point returns 0 or -1 with an error, never aborts.
 *
 * Invariants:
 *  - no size or count read from a file is trusted: text files are loaded with a cap, record
 *    streams are read through a fixed window, loops are bounded by the bytes actually present,
 *    the depth stack is a fixed 1024-entry array (the depth field has 10 bits).
 *  - every error names a file, a byte offset (-1 when it concerns the whole file) and one rule
 *    (enum ufr_rule); the first error found is the one reported.
 *  - in lenient mode (UFR_OPEN_LENIENT, used by dump/stats) ufr_open keeps loading after an
 *    error where it safely can and keeps the first error in ufr_data.err.
 */
#ifndef FLIGHTREC_UFTRACE_READER_H
#define FLIGHTREC_UFTRACE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/common/rd_common.h"

enum ufr_rule {
	UFR_OK = 0,
	UFR_E_IO, /* a file cannot be opened or read, or the path is not a directory */
	UFR_E_FILE_MISSING, /* a required file is absent: info, task.txt, a session's map */
	UFR_E_TOO_BIG, /* a text file is larger than the reader's limit */
	/* info, binary header */
	UFR_E_HDR_SHORT,
	UFR_E_HDR_MAGIC,
	UFR_E_HDR_VERSION,
	UFR_E_HDR_SIZE,
	UFR_E_HDR_ENDIAN,
	UFR_E_HDR_CLASS,
	UFR_E_FEAT_MASK, /* TASK_SESSION or SYM_REL_ADDR missing */
	UFR_E_INFO_MASK, /* TASKINFO missing */
	/* info, text sections */
	UFR_E_INFO_SECTION, /* a section whose bit is set is missing or has another key */
	UFR_E_INFO_LINES, /* a bad or too large lines=N */
	UFR_E_INFO_LONG, /* a line that does not fit uftrace's 4096-byte fgets buffer */
	UFR_E_INFO_VALUE, /* a value uftrace parses is malformed */
	UFR_E_TASKINFO_COUNT, /* nr_tid differs from the number of tids */
	/* task.txt */
	UFR_E_TASK_LINE, /* malformed or unknown line */
	UFR_E_TASK_SID, /* sid is not 16 hex digits */
	UFR_E_TASK_REF, /* DLOP names an unknown session, TASK an unknown process */
	UFR_E_TASK_NO_SESSION, /* no SESS line at all */
	/* sid-<sid>.map */
	UFR_E_MAP_LINE,
	UFR_E_MAP_NO_STACK,
	/* <module>.sym */
	UFR_E_SYM_LINE,
	UFR_E_SYM_NEW_FORMAT,
	UFR_E_SYM_UNSORTED,
	UFR_E_SYM_NO_END,
	UFR_E_SYM_TYPE, /* a type letter 0.13 does not read: the line is dropped */
	/* <tid>.dat and the records */
	UFR_E_DAT_NONE, /* no non-empty <tid>.dat at all */
	UFR_E_DAT_UNLISTED, /* a <tid>.dat whose tid is not in taskinfo */
	UFR_E_DAT_NO_TASK, /* a <tid>.dat without TASK or FORK line */
	UFR_E_DAT_TRUNCATED, /* the last record is cut short */
	UFR_E_REC_MAGIC,
	UFR_E_REC_TYPE, /* a flag combination no writer produces (payload bit where none can be) */
	UFR_E_REC_PAYLOAD, /* a payload that cannot be sized or runs past the end */
	UFR_E_REC_TIME, /* time goes backwards within a thread */
	UFR_E_REC_EARLY, /* a record before its task's SESS / TASK / FORK timestamp */
	UFR_E_REC_DEPTH, /* nesting broken */
	UFR_RULE_MAX
};

/* short stable name of a rule ("record-magic", ...) */
const char *ufr_rule_name(int rule);

/* feat_mask bits (uftrace.h feat_bits) */
enum {
	UFR_FEAT_PLTHOOK = 1u << 0,
	UFR_FEAT_TASK_SESSION = 1u << 1,
	UFR_FEAT_KERNEL = 1u << 2,
	UFR_FEAT_ARGUMENT = 1u << 3,
	UFR_FEAT_RETVAL = 1u << 4,
	UFR_FEAT_SYM_REL_ADDR = 1u << 5,
	UFR_FEAT_MAX_STACK = 1u << 6,
	UFR_FEAT_EVENT = 1u << 7,
	UFR_FEAT_PERF_EVENT = 1u << 8,
	UFR_FEAT_AUTO_ARGS = 1u << 9,
	UFR_FEAT_DEBUG_INFO = 1u << 10,
	UFR_FEAT_ESTIMATE_RETURN = 1u << 11,
};
const char *ufr_feat_name(unsigned bit); /* NULL for an unknown bit */

/* info_mask bits, in the order the sections follow the header */
enum ufr_info_bit {
	UFR_INFO_EXE_NAME,
	UFR_INFO_EXE_BUILD_ID,
	UFR_INFO_EXIT_STATUS,
	UFR_INFO_CMDLINE,
	UFR_INFO_CPUINFO,
	UFR_INFO_MEMINFO,
	UFR_INFO_OSINFO,
	UFR_INFO_TASKINFO,
	UFR_INFO_USAGEINFO,
	UFR_INFO_LOADINFO,
	UFR_INFO_ARG_SPEC,
	UFR_INFO_RECORD_DATE,
	UFR_INFO_PATTERN_TYPE,
	UFR_INFO_VERSION,
	UFR_INFO_NR_KNOWN, /* bits from here on are unknown to 0.13, which ignores them */
};
const char *ufr_info_name(unsigned bit); /* NULL for an unknown bit */

#define UFR_HEADER_SIZE 40
#define UFR_RECORD_SIZE 16
#define UFR_RECORD_MAGIC 5
#define UFR_MAX_DEPTH 1024 /* the depth field has 10 bits */
#define UFR_SID_LEN 16

struct ufr_header {
	char magic[8];
	uint32_t version;
	uint16_t header_size;
	uint8_t endian; /* 1 little, 2 big (ELF EI_DATA) */
	uint8_t elf_class; /* 1 32-bit, 2 64-bit */
	uint64_t feat_mask;
	uint64_t info_mask;
	uint16_t max_stack;
	uint16_t unused1;
	uint32_t unused2;
};

/* a parsed info file; strings are NUL-terminated copies (NULL when their section is absent) */
struct ufr_info {
	struct ufr_header hdr;
	char *exename;
	char *build_id;
	bool has_exit_status;
	int exit_status; /* raw wait status */
	char *cmdline;
	int nr_tid;
	int *tids;
	char *argspec, *retspec, *argauto, *retauto, *enumauto;
	bool auto_args;
	char *record_date, *elapsed_time;
	char *pattern_type;
	char *version;
	size_t sections_end; /* offset just past the last section read */
};

/*
 * Header only (BUF holds at least the file's first bytes). FILE names the file in errors.
 * On success the header's integers are in host order.
 */
int ufr_header_parse(const void *buf, size_t len, const char *file, struct ufr_header *hdr,
		     struct rd_error *err);
/*
 * The whole info file: header, the rules on it, then every section its info_mask announces.
 * INFO is filled as far as parsing got; call ufr_info_free() whatever the result.
 */
int ufr_info_parse(const char *buf, size_t len, const char *file, struct ufr_info *info,
		   struct rd_error *err);
void ufr_info_free(struct ufr_info *info);

/* task.txt */
enum ufr_task_kind { UFR_SESS, UFR_TASK, UFR_FORK, UFR_DLOP };

struct ufr_task_line {
	enum ufr_task_kind kind;
	uint64_t time; /* ns */
	int pid; /* SESS, TASK: pid; FORK: the child pid */
	int tid; /* TASK, DLOP: tid; FORK: the child pid; SESS: pid */
	int ppid; /* FORK only */
	char sid[UFR_SID_LEN + 1]; /* SESS, DLOP */
	uint64_t base; /* DLOP */
	char *name; /* SESS exename, DLOP libname */
	size_t off;
	unsigned lineno;
};

struct ufr_tasks {
	struct ufr_task_line *lines;
	size_t nr;
};

/* Strict: the first malformed line is an error (lenient: skipped, first error kept in ERR). */
int ufr_tasks_parse(const char *buf, size_t len, const char *file, bool lenient,
		    struct ufr_tasks *tasks, struct rd_error *err);
void ufr_tasks_free(struct ufr_tasks *tasks);

/* sid-<sid>.map: one module per path (consecutive lines merged), plus the [stack] line */
struct ufr_module {
	uint64_t start, end;
	char *path;
	char *build_id; /* from " build-id:<hex>", or NULL */
	const struct ufr_symtab *symtab; /* resolved on first lookup; owned by the data's cache */
	bool symtab_tried;
};

struct ufr_map {
	struct ufr_module *mods; /* sorted by start */
	size_t nr;
	bool has_stack;
	uint64_t stack_start;
};

int ufr_map_parse(const char *buf, size_t len, const char *file, bool lenient, struct ufr_map *map,
		  struct rd_error *err);
void ufr_map_free(struct ufr_map *map);
/* the module holding ADDR, or NULL */
struct ufr_module *ufr_map_find(struct ufr_map *map, uint64_t addr);

/* <module>.sym in the old format "<hex addr> <type> <name>" */
struct ufr_sym {
	uint64_t addr;
	uint64_t size; /* next line's address minus this one, in file order; 0 for the last */
	char type;
	char *name;
};

struct ufr_symtab {
	struct ufr_sym *syms; /* sorted by addr; '?' end markers are not kept */
	size_t nr;
	char *path_name; /* "# path name:" header, or NULL */
	char *build_id; /* "# build-id:" header, or NULL */
};

int ufr_sym_parse(const char *buf, size_t len, const char *file, bool lenient,
		  struct ufr_symtab *tab, struct rd_error *err);
/* from an ELF file (symtab, else dynsym), relative to the first PT_LOAD when REL is set */
int ufr_sym_load_elf(const char *path, bool rel, struct ufr_symtab *tab);
const struct ufr_sym *ufr_sym_find(const struct ufr_symtab *tab, uint64_t addr);
void ufr_sym_free(struct ufr_symtab *tab);

/* one decoded record */
enum ufr_rec_type { UFR_ENTRY = 0, UFR_EXIT = 1, UFR_LOST = 2, UFR_EVENT = 3 };

struct ufr_rec {
	uint64_t time;
	unsigned type;
	bool more;
	unsigned magic;
	unsigned depth;
	uint64_t addr; /* LOST: number of lost records; EVENT: event id */
	uint64_t offset; /* of the record in its file */
	const uint8_t *payload; /* valid until the next ufr_dat_next */
	size_t payload_len; /* bytes after the 16-byte record, padding included */
};

/* decode 16 raw bytes (BIG: the trace is big-endian) */
void ufr_rec_decode(const uint8_t raw[UFR_RECORD_SIZE], bool big, struct ufr_rec *rec);
const char *ufr_rec_type_name(unsigned type);
/* An EVENT record of uftrace's builtin read=/diff: events (ids 100001-100010, as its
 * dump shows them): "read:proc/statm vmsize=20944KB vmrss=5364KB shared=4896KB" (a diff:
 * event's values signed, "+0KB") into OUT; 0, or -1 for any other id or a payload of another
 * size (OUT then empty). BIG: the trace is big-endian. */
int ufr_event_format(const struct ufr_rec *rec, bool big, char *out, size_t len);

/*
 * Size of an ENTRY/EXIT argument payload: given the record and the bytes that follow it,
 * return how many of them belong to it (padding included), or -1 with ERR set.
 */
typedef long (*ufr_args_size_fn)(void *ctx, const struct ufr_rec *rec, const uint8_t *p,
				 size_t avail, const char *file, struct rd_error *err);

#define UFR_ITER_WINDOW (256 * 1024)
/* the largest payload one record may carry here: an EVENT's u16 length + 65535 bytes, padded */
#define UFR_MAX_PAYLOAD 65544

/* the record stream of one .dat file, from memory or from a file through a fixed window */
struct ufr_dat_iter {
	const char *file;
	bool big;
	uint64_t feat_mask;
	ufr_args_size_fn args_size;
	void *args_ctx;
	const uint8_t *mem; /* memory source, or NULL */
	size_t mem_len;
	int fd; /* file source, or -1 */
	uint8_t *win;
	size_t win_pos, win_len;
	bool eof;
	uint64_t offset; /* file offset of win[win_pos] (or of mem[offset]) */
};

void ufr_dat_iter_mem(struct ufr_dat_iter *it, const void *buf, size_t len, const char *file,
		      bool big, uint64_t feat_mask);
int ufr_dat_iter_open(struct ufr_dat_iter *it, const char *path, bool big, uint64_t feat_mask,
		      struct rd_error *err);
/* 1: a record in REC; 0: clean end of stream; -1: ERR set (the stream cannot go on) */
int ufr_dat_next(struct ufr_dat_iter *it, struct ufr_rec *rec, struct rd_error *err);
void ufr_dat_iter_close(struct ufr_dat_iter *it);

/* per-thread rules over a record stream */
struct ufr_check_cfg {
	bool forked; /* a forked child: its file may start inside frames entered by the parent */
	bool has_task_time; /* TASK line time: the first record may not precede it */
	uint64_t task_time;
	const char *task_what; /* the line named in the message ("TASK") */
	bool has_sess_time; /* earliest session this task can use */
	uint64_t sess_time;
	const uint64_t *resets; /* exec: sorted times at which a new image starts with no frames */
	size_t nr_resets;
};

struct ufr_counts {
	uint64_t records, entries, exits, events, lost_records, lost;
	bool has_time;
	uint64_t first_time, last_time;
};

struct ufr_check {
	struct ufr_check_cfg cfg;
	uint64_t *owned_resets; /* freed by ufr_check_fini */
	size_t next_reset;
	bool floating; /* the next record may sit at any depth (file start of a child, after LOST) */
	int top; /* number of open frames */
	uint64_t frame_addr[UFR_MAX_DEPTH];
	bool frame_known[UFR_MAX_DEPTH];
	struct ufr_counts counts;
};

void ufr_check_init(struct ufr_check *ck, const struct ufr_check_cfg *cfg);
void ufr_check_fini(struct ufr_check *ck);
/*
 * Count REC and check it against what came before; -1 with ERR set when a rule is broken (the
 * record is counted either way). After an error the nesting state is unreliable: callers that
 * go on should only count (ufr_count_rec).
 */
int ufr_check_rec(struct ufr_check *ck, const struct ufr_rec *rec, const char *file,
		  struct rd_error *err);
/* count only (dump/stats in lenient mode) */
void ufr_count_rec(struct ufr_counts *c, const struct ufr_rec *rec);
/* SUM += C (times: the earliest first, the latest last) */
void ufr_counts_add(struct ufr_counts *sum, const struct ufr_counts *c);

/*
 * A whole .dat stream in memory through the iterator and the per-thread rules (CFG may be
 * NULL: a plain thread); COUNTS (optional) gets what was counted up to the first error.
 */
int ufr_check_buffer(const void *buf, size_t len, bool big, uint64_t feat_mask,
		     const struct ufr_check_cfg *cfg, struct ufr_counts *counts,
		     struct rd_error *err);

/* a whole directory */
struct ufr_dlopen {
	const struct ufr_task_line *line; /* its DLOP line */
	const struct ufr_symtab *symtab; /* resolved on first use */
	bool symtab_tried;
};

struct ufr_session {
	const struct ufr_task_line *line; /* its SESS line */
	char *map_file;
	struct ufr_map map;
	bool map_ok;
	struct ufr_dlopen *dlopens; /* DLOP lines naming this session, in file order */
	size_t nr_dlopens;
};

struct ufr_task {
	int tid, pid, ppid; /* ppid: forked children only */
	bool forked;
	const struct ufr_task_line *first; /* first TASK/FORK line of this tid */
};

struct ufr_thread {
	struct ufr_data *owner;
	int tid; /* from taskinfo */
	char *dat_file;
	int64_t dat_size; /* -1: missing */
	struct ufr_task *task; /* NULL: no TASK/FORK line */
};

struct ufr_symcache;

struct ufr_data {
	char *dir;
	char *info_file;
	struct ufr_info info;
	bool info_ok;
	struct ufr_tasks tasks;
	struct ufr_session *sess;
	size_t nr_sess;
	struct ufr_task *task;
	size_t nr_task;
	struct ufr_thread *threads; /* in taskinfo order */
	size_t nr_threads;
	struct ufr_thread **threads_by_tid; /* the same, sorted by tid */
	char **dat_names; /* every [0-9]*.dat in the directory, sorted by tid */
	size_t nr_dat_names;
	char **sym_names; /* every *.sym in the directory, sorted */
	size_t nr_sym_names;
	struct ufr_symcache *symcache;
	struct ufr_argspecs *argspecs; /* from ARG_SPEC, NULL without it */
	bool lenient;
	struct rd_error err; /* lenient mode: the first error seen */
};

#define UFR_OPEN_LENIENT 1

/* the tid of a "<tid>.dat" file name (canonical positive decimal), or 0 for any other name */
int ufr_dat_file_tid(const char *name);

/* is PATH a uftrace.data directory? (a directory holding `info` or `task.txt`) */
bool ufr_sniff(const char *path);

/*
 * Open DIR: info, task.txt, the sessions' maps, the list of .dat and .sym files and the
 * rules between them. Strict mode returns -1 at the first error (*OUT is then NULL);
 * lenient mode returns -1 only when nothing can be read (no usable info) and otherwise keeps
 * the first error in (*OUT)->err.
 */
int ufr_open(const char *dir, int flags, struct ufr_data **out, struct rd_error *err);
/* every remaining rule: the .sym files, then each thread's records; fills COUNTS if given */
int ufr_verify(struct ufr_data *d, struct ufr_counts *total, struct rd_error *err);
/* the same with up to JOBS threads checking the threads' files at once (1: alone; one alone
 * too when the trace has argument specs, whose sizing shares d's symbol caches): the same
 * answer, the first error in thread order, the same counts */
int ufr_verify_jobs(struct ufr_data *d, unsigned jobs, struct ufr_counts *total,
		    struct rd_error *err);
void ufr_close(struct ufr_data *d);

struct ufr_task *ufr_find_task(struct ufr_data *d, int tid);
/* the taskinfo thread TID, or NULL when taskinfo does not list it */
struct ufr_thread *ufr_find_thread(struct ufr_data *d, int tid);

/* CK set up for thread T: forked or not, TASK line and session times, exec resets */
void ufr_thread_check_init(struct ufr_data *d, const struct ufr_thread *t, struct ufr_check *ck);

/* open T's record stream with everything needed to size payloads */
int ufr_thread_open(struct ufr_data *d, struct ufr_thread *t, struct ufr_dat_iter *it,
		    struct rd_error *err);

/* the session thread T used at TIME, or NULL */
struct ufr_session *ufr_session_at(struct ufr_data *d, const struct ufr_task *task, uint64_t time);

/*
 * Name of the function at ADDR for thread T at TIME: through the session's map to a module and
 * its .sym file (or the ELF file itself when there is no usable .sym), then DLOP libraries.
 * Returns NULL when it cannot be resolved.
 */
const char *ufr_symbolize(struct ufr_data *d, const struct ufr_thread *t, uint64_t time,
			  uint64_t addr);

/* The values an ENTRY's (arguments) or EXIT's (return value) payload carries, as text
 * ("7, \"flightrec\", 1.5") laid out by the argspec of the record's function: 0, or -1 when
 * the record has none or it cannot be read (BUF then holds what was decoded). */
int ufr_args_format(struct ufr_data *d, const struct ufr_thread *t, const struct ufr_rec *rec,
		    char *buf, size_t len);
/* The same values as uftrace 0.13's `uftrace dump --chrome` writes them in an event's "args"
 * (the contents of a JSON string: "(7, \"flightrec\", 1.500000)" for an ENTRY, "-35" for an
 * EXIT), so that a converted trace shows what uftrace's own conversion shows; 0, or -1 as
 * ufr_args_format. */
int ufr_args_format_json(struct ufr_data *d, const struct ufr_thread *t, const struct ufr_rec *rec,
			 char *buf, size_t len);

#endif /* FLIGHTREC_UFTRACE_READER_H */
