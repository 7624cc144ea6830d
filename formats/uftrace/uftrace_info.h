/*
 * uftrace_info: the uftrace.data `info` file (40-byte header, then the sections its info_mask
 * announces) and the directory facts it lists, written the way uftrace 0.13 reads it.
 *
 * Shared by the runtime's sink (sink_uftrace.c, at finish) and by salvage
 * (formats/uftrace/salvage_uftrace.c), so that a salvaged trace's info is the one a finishing process
 * would have written. Everything works on a directory descriptor; nothing here touches the
 * session state.
 */
#ifndef UFTRACE_INFO_H
#define UFTRACE_INFO_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct uftrace_info_desc {
	const char *exename;  /* the recorded program (task.txt's first SESS exename) */
	const char *cmdline;  /* arguments separated by NULs (as /proc/PID/cmdline) or spaces */
	size_t cmdline_len;
	const int *tids;      /* every thread with data, sorted */
	int ntids;
	time_t date;          /* record_date */
	uint64_t elapsed_ns;  /* elapsed_time */
	unsigned max_stack;   /* the header's max_stack (clamped to 65535) */
	const char *argspec;  /* -A (FLIGHTREC_ARGUMENT) as given, NULL: none */
	const char *retspec;  /* -R (FLIGHTREC_RETVAL) */
	const char *pattern_type; /* "regex" or "glob": how those patterns match */
	int auto_args;        /* -a/--auto-args (FLIGHTREC_AUTO_ARGS) */
};

/* The -A/-R specs of a trace (and -a), kept in its .flightrec directory (RINGDIRFD) from the
 * session's start so that salvage can write them into `info` too (uftrace cannot size the
 * payloads without them). Nothing is written when both are NULL and AUTO_ARGS is 0. 0, or -1
 * with errno. */
#define UFTRACE_SPEC_FILE "uftrace.argspec"
int uftrace_info_save_spec(int ringdirfd, const char *argspec, const char *retspec,
			   const char *pattern_type, int auto_args);
/* Read them back into BUF (LEN bytes) and point D's argspec, retspec and pattern_type into
 * it, and set its auto_args; D is left alone when there is no such file. */
void uftrace_info_load_spec(int ringdirfd, char *buf, size_t len, struct uftrace_info_desc *d);

/* Write DIRFD/info through TMPNAME renamed into place. 0, or -1 with errno. */
int uftrace_info_write(int dirfd, const char *tmpname, const struct uftrace_info_desc *d);

/*
 * The inode `info` needs, reserved (RINGDIRFD/UFTRACE_INFO_SPARE, an empty file) from the
 * session's start: on a file system out of inodes the last one could otherwise go to a
 * thread's <tid>.dat, and a trace without `info` is unreadable while one without that .dat
 * only lost a thread (counted lost_dead). 0 when the spare is there or `info` is already (a
 * later process of the trace rewrites that one in place if it must), -1 with errno else.
 */
#define UFTRACE_INFO_SPARE "info.spare"
int uftrace_info_reserve(int dirfd, int ringdirfd);

/* Write DIRFD/info as uftrace_info_write does, through TMPNAME made from the spare when there
 * is one (no new inode); without one and without a free inode, `info` rewritten in place when
 * it exists. 0, or -1 with errno. Callers hold flock(DIRFD) (the spare is taken once). */
int uftrace_info_put(int dirfd, int ringdirfd, const char *tmpname,
		     const struct uftrace_info_desc *d);

/* Every non-empty regular <tid>.dat in DIRFD, sorted; *OUT is rec_mem_grow'n memory (give it
 * to rec_mem_free, even when the count is 0). Returns the count, or -1. */
int uftrace_info_scan_tids(int dirfd, int **out);

/* The exename of task.txt's first SESS line into BUF (the program the user recorded, even
 * after exec). 0 when found, -1 otherwise (BUF untouched). */
int uftrace_info_first_exename(int dirfd, char *buf, size_t size);

#endif
