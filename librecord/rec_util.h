/*
 * rec_util: small helpers shared by librecord and the runtimes: one-line warnings that never
 * allocate, whole writes that survive EINTR and short writes, and file creation that never
 * follows a symbolic link (the runtime writes only below the directory it was given; that
 * directory itself may be a link the user made, see rec_mkdir_p).
 *
 * Everything here is slow-path code; none of it may be called from a hot path.
 */
#ifndef REC_UTIL_H
#define REC_UTIL_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* Print "flightrec: <msg>\n" to stderr with one write(). A format ending in ':' appends
 * strerror(errno), as in ovni's helpers. Safe in signal handlers for simple formats. */
void rec_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Like rec_warn, but only when FLIGHTREC_DEBUG is set in the environment. */
void rec_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern int rec_debug_enabled;

/* write()/pwrite() all of buf, retrying on EINTR; 0 on success, -1 with errno. */
int rec_write_all(int fd, const void *buf, size_t len);
/* Append LEN bytes at the end of FD, or none: a write that fails (disk full) is cut back to
 * where it began, so the file still ends on a whole record. 0, or -1 with errno. */
int rec_append_whole(int fd, const void *buf, size_t len);
/* The same for the N pieces of IOV, one after the other (one writev when it can). */
struct iovec;
int rec_appendv_whole(int fd, const struct iovec *iov, int n);
/* The same when the caller knows where FD ends (START, its lseek(SEEK_END)): one lseek less
 * per write. */
int rec_appendv_whole_at(int fd, const struct iovec *iov, int n, off_t start);
int rec_pwrite_all(int fd, const void *buf, size_t len, off_t off);

/* Room on disk past the end of FD for LEN more bytes, the size left as it is
 * (FALLOC_FL_KEEP_SIZE): a writer that takes room for each write plus the record that tells a
 * loss (a LOST record) keeps that record's room when the disk fills, since a write that finds
 * no room is never made. 0 when the room is there or the file system cannot reserve (nothing
 * is promised then); -1 with errno (ENOSPC, EDQUOT) when it is not. */
int rec_room_ahead(int fd, size_t len);
/* Give back the room past the end of FD (its last write is done). */
void rec_room_trim(int fd);

/* Create dir (and missing parents) with mode 0777 & ~umask; a final component that is a
 * symbolic link is followed when rec_link_trusted, else refused (ENOTDIR). 0 on success, -1
 * with errno. */
int rec_mkdir_p(const char *dir);
/* a symbolic link (lstat ST) owned by our effective user or by root: one we may follow */
bool rec_link_trusted(const struct stat *st);

/* open(dirfd-relative) for writing without following a final symlink; flags are OR-ed to
 * O_WRONLY|O_CREAT|O_NOFOLLOW|O_CLOEXEC. Mode 0666 & ~umask. */
int rec_open_write(int dirfd, const char *name, int flags);

/* A descriptor the runtime keeps, as it was when opened: the program may close any descriptor
 * or dup2 one of its own over it (daemons do), so before each use the runtime checks that the
 * number still names the same file (rec_fd_is), and never writes to or closes one that does
 * not. */
struct rec_fd_id {
	uint64_t dev, ino;
};
/* Remember what FD names; -1 if fstat fails. */
int rec_fd_id_get(int fd, struct rec_fd_id *id);
/* 1 if FD is open and names the file ID was taken from. One fstat: slow paths only. */
int rec_fd_is(int fd, const struct rec_fd_id *id);
/* FD moved (F_DUPFD_CLOEXEC) to a number near the top of RLIMIT_NOFILE's soft limit, away
 * from the low numbers a program's open() gets and dup2() targets (it would have closed ours
 * and given the number to a file of its own), and at least off 0..2, which a program that
 * closed its standard streams expects back; FD itself if it cannot be moved. */
int rec_fd_above_stdio(int fd);
/* close(FD) if it still names the file TWIN (a descriptor we hold) names */
void rec_close_same(int fd, int twin);
/* rec_fd_above_stdio's duplicate alone (FD stays open; FD itself if it cannot be moved) */
int rec_fd_above_stdio_dup(int fd);
/* FD, just opened on the file WANT names, moved as rec_fd_above_stdio does, but FD is closed
 * only if it still names WANT, and the result is checked to name WANT: the program may have
 * dup2'ed a file of its own over FD meanwhile. -1 (errno EBADF) when it did. */
int rec_fd_move_checked(int fd, const struct rec_fd_id *want);

/*
 * 1 on a thread (the flusher) that has a descriptor table of its own (rec_fd_private_enter):
 * what it opens, checks, writes and closes there the program cannot close, replace or reuse,
 * so a check there is not raced. Its warnings go to the program's standard error by
 * /proc/<pid>/fd/2, opened for each.
 */
extern __thread uint8_t rec_fd_private __attribute__((tls_model("initial-exec")));
/* N bytes of BUF to the program's standard error, from any thread of ours: on one with a
 * table of its own (the flusher, the helper: finish runs there), through /proc/<pid>/fd/2 */
void rec_stderr_write(const void *buf, size_t n);
/* unshare(CLONE_FILES) for the calling thread, then close every descriptor of the copy but
 * the N numbers in KEEP (the runtime's own: a copy of the program's pipe would keep its
 * reader from seeing the end). 0, or -1 (errno) and nothing changed. */
int rec_fd_private_enter(const int *keep, int n);

/* rec_open_write, the descriptor moved by rec_fd_above_stdio, and checked to still be NAME
 * (the program may have dup2'ed a file of its own over the number open() gave, before it was
 * moved): -1 if it cannot be opened or is not NAME. */
int rec_open_write_kept(int dirfd, const char *name, int flags);
/* the same with openat's own FLAGS and MODE */
int rec_openat_kept(int dirfd, const char *name, int flags, mode_t mode);

/* snprintf that returns the length actually written (never more than size - 1). */
size_t rec_snprintf(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* gettid() without glibc 2.30's wrapper dependency. */
pid_t rec_gettid(void);
struct timespec;
/* futex(2) on a private word: FUTEX_WAIT_PRIVATE / FUTEX_WAKE_PRIVATE (async-signal-safe). */
long rec_futex(uint32_t *addr, int op, uint32_t val, const struct timespec *ts);

/* A listing of the directory open as DIRFD, from its first entry, with an offset of its own
 * (DIRFD's, which another listing may be using, is left alone); NULL with errno set. */
DIR *rec_opendir_at(int dirfd);

/* getenv, also before libc has set `environ`: a hook in the program's .preinit_array may start
 * the session then (environ is NULL), and the variables come from /proc/self/environ, read
 * once with system calls into a static buffer (the environment the process started with). */
const char *rec_getenv(const char *name);

/* Call fn(arg, name) for each entry of the directory open as DIRFD whose name starts with the
 * PLEN bytes of PREFIX, until fn returns nonzero. getdents64 on a descriptor of its own, since
 * opendir would malloc. fn's nonzero value when it stopped the walk, 0 when it saw every
 * entry, -1 when the directory cannot be opened. */
int rec_dir_each(int dirfd, const char *prefix, size_t plen, int (*fn)(void *arg, const char *name),
		 void *arg);

/*
 * Without malloc: the runtime's slow paths (session start, finish, the flusher) may not call
 * the program's malloc, which may be the program's own (instrumented: it enters a hook; not
 * thread-safe; with locks the interrupted thread holds), nor libc functions that call it
 * (stdio, opendir, qsort on more than a few hundred bytes, ctime). These stand in for them.
 */

/* realloc/free with whole pages from mmap (mremap to grow); P NULL allocates. NULL on failure,
 * P unchanged. The memory is zero where it is new. */
void *rec_mem_grow(void *p, size_t bytes);
void rec_mem_free(void *p);

/* qsort's contract, in place (heapsort: no allocation, no recursion); not stable. */
void rec_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

/* A buffered writer on a descriptor: rec_out_printf formats into the buffer (vsnprintf, which
 * does not allocate for plain conversions), a full buffer is written out. rec_out_close writes
 * the rest and closes the descriptor: 0, or -1 if any write failed. */
struct rec_out {
	int fd;
	int failed;
	size_t len;
	char buf[8192];
};
void rec_out_init(struct rec_out *o, int fd);
void rec_out_printf(struct rec_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int rec_out_close(struct rec_out *o);

/* The lines of a file, read(2) into a fixed buffer. */
struct rec_lines {
	int fd;
	size_t pos, len;
	char buf[8192];
};
void rec_lines_init(struct rec_lines *l, int fd);
/* The next line, without its '\n', NUL-terminated in LINE (SIZE bytes; a longer line is cut
 * there, its rest skipped): its length, or -1 at the end of the file. */
long rec_lines_next(struct rec_lines *l, char *line, size_t size);

/* ctime_r's text ("Thu Jan  1 00:00:00 1970", no newline) of T in UTC: ctime and localtime read
 * the zone file with stdio the first time. */
void rec_ctime_utc(long long t, char buf[32]);

/* The dynamic loader's count of modules loaded so far (dl_iterate_phdr's dlpi_adds): it moves
 * when dlopen maps a new one. */
unsigned long long rec_dl_adds(void);

#endif
