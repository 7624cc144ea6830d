/*
 * rec_util: warnings, whole writes and symlink-safe file creation (see rec_util.h).
 * Invariant: nothing here allocates on the heap, so it is usable from a fork child, a
 * signal handler (for plain formats) and the flusher thread alike.
 */
#include "librecord/rec_util.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

int rec_debug_enabled;
__thread uint8_t rec_fd_private __attribute__((tls_model("initial-exec")));

/* The program's standard error from a thread with a table of its own: its fd 2 opened anew
 * through the main thread's table (a pipe or terminal reopens; a socket does not: then the
 * warning is lost), appending. -1 if it cannot be. */
static int rec_stderr_open(void)
{
	char path[48];

	rec_snprintf(path, sizeof(path), "/proc/%d/fd/2", (int)getpid());
	return open(path, O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
}

static void rec_vwarn(const char *fmt, va_list ap)
{
	char buf[512];
	int saved = errno;
	size_t n = rec_snprintf(buf, sizeof(buf), "flightrec: ");
	int m = vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	if (m > 0)
		n = n + (size_t)m < sizeof(buf) ? n + (size_t)m : sizeof(buf) - 1;
	if (n > 0 && buf[n - 1] == ':')
		n += rec_snprintf(buf + n, sizeof(buf) - n, " %s", strerror(saved));
	if (n >= sizeof(buf) - 1)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	rec_stderr_write(buf, n);
	errno = saved;
}

void rec_stderr_write(const void *buf, size_t n)
{
	if (rec_fd_private) {
		int fd = rec_stderr_open();
		if (fd >= 0) {
			(void)!write(fd, buf, n);
			close(fd);
		}
	} else {
		(void)!write(STDERR_FILENO, buf, n);
	}
}

void rec_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	rec_vwarn(fmt, ap);
	va_end(ap);
}

void rec_debug(const char *fmt, ...)
{
	va_list ap;
	if (!rec_debug_enabled)
		return;
	va_start(ap, fmt);
	rec_vwarn(fmt, ap);
	va_end(ap);
}

size_t rec_snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;
	if (size == 0)
		return 0;
	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	if (n < 0)
		return 0;
	return (size_t)n < size ? (size_t)n : size - 1;
}

int rec_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int rec_appendv_whole(int fd, const struct iovec *iov, int n)
{
	return rec_appendv_whole_at(fd, iov, n, lseek(fd, 0, SEEK_END));
}

int rec_appendv_whole_at(int fd, const struct iovec *iov, int n, off_t start)
{
	size_t skip = 0; /* bytes of iov[i] already written */
	int i = 0;

	/* one writev for all of it, the common case; a short write goes on from where it
	 * stopped */
	while (i < n) {
		struct iovec v[8];
		int k = 0;

		if (iov[i].iov_len == skip) {
			/* nothing (left) of this part: a writev of nothing returns 0, which is
			 * no failure (an empty chunk) */
			i++;
			skip = 0;
			continue;
		}
		for (int j = i; j < n && k < 8; j++, k++)
			v[k] = iov[j];
		v[0].iov_base = (char *)v[0].iov_base + skip;
		v[0].iov_len -= skip;
		ssize_t w = writev(fd, v, k);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			goto fail;
		}
		size_t left = (size_t)w;
		while (i < n && left >= iov[i].iov_len - skip) {
			left -= iov[i].iov_len - skip;
			skip = 0;
			i++;
		}
		skip += left;
	}
	return 0;
fail:
	if (start >= 0) {
		int err = errno;
		(void)!ftruncate(fd, start);
		errno = err;
	}
	return -1;
}

int rec_append_whole(int fd, const void *buf, size_t len)
{
	struct iovec v = { (void *)buf, len };

	return rec_appendv_whole(fd, &v, 1);
}

int rec_room_ahead(int fd, size_t len)
{
	struct stat st;

	/* the size, not the file offset: that stays where the writer keeps it */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	while (fallocate(fd, FALLOC_FL_KEEP_SIZE, st.st_size, (off_t)len) < 0) {
		if (errno == EINTR)
			continue;
		/* a file system that reserves nothing (EOPNOTSUPP), a pipe or device: writes
		 * find out for themselves */
		if (errno == ENOSPC || errno == EDQUOT || errno == EFBIG) {
			/* ext4 says "no space" once an error made it read-only: say which */
			struct statvfs sv;
			if (fstatvfs(fd, &sv) == 0 && (sv.f_flag & ST_RDONLY))
				errno = EROFS;
			return -1;
		}
		return 0;
	}
	return 0;
}

void rec_room_trim(int fd)
{
	struct stat st;
	int err = errno;

	/* a hole punched past the end, and a truncate to its own size: ext4 ignores the hole
	 * there and gives the blocks back on the truncate; file systems that keep them through
	 * a same-size truncate free them with the hole. 1 GiB is more than any writer takes
	 * ahead (ovni-rt's steps are at most 64 MiB and a chunk). */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		(void)fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, st.st_size,
				(off_t)1 << 30);
		(void)!ftruncate(fd, st.st_size);
	}
	errno = err;
}

int rec_pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		off += n;
		len -= (size_t)n;
	}
	return 0;
}

bool rec_link_trusted(const struct stat *st)
{
	return st->st_uid == geteuid() || st->st_uid == 0;
}

int rec_mkdir_p(const char *dir)
{
	char path[4096];
	struct stat st;
	size_t len = strlen(dir);

	if (len == 0 || len >= sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(path, dir, len + 1);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0777) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(path, 0777) < 0 && errno != EEXIST)
		return -1;
	if (lstat(path, &st) < 0)
		return -1;
	/* a symbolic link the user made (or root did) is the directory they chose: followed;
	 * one another user planted where our directory should be is refused. What we create
	 * below it is opened with O_NOFOLLOW, relative to the directory. */
	if (S_ISLNK(st.st_mode) && rec_link_trusted(&st) && stat(path, &st) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

int rec_open_write(int dirfd, const char *name, int flags)
{
	return openat(dirfd, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | flags, 0666);
}

int rec_fd_private_enter(const int *keep, int n)
{
	unsigned int lo = 0;
	int sorted[8], k = 0;

#if defined(__SANITIZE_THREAD__)
	/* ThreadSanitizer keeps one descriptor table per process: the flusher and the helper
	 * using the same number in their own tables look to it like a race on that number (a
	 * close in one, an fstat in the other). Under TSan (unit tests only) our threads keep
	 * the shared table, as when unshare is refused, so what it reports is real. */
	(void)keep;
	(void)n;
	(void)lo;
	(void)sorted;
	(void)k;
	errno = ENOSYS;
	return -1;
#endif
	if (n > 8 || unshare(CLONE_FILES) < 0)
		return -1;
	for (int i = 0; i < n; i++) /* the kept numbers in order, each once */
		if (keep[i] >= 0) {
			int j = k++;
			for (; j > 0 && sorted[j - 1] > keep[i]; j--)
				sorted[j] = sorted[j - 1];
			sorted[j] = keep[i];
		}
	for (int i = 0; i <= k; i++) {
		unsigned int hi = i < k ? (unsigned int)sorted[i] : ~0u;
		/* the gap below the next kept number */
		if (hi > lo && syscall(SYS_close_range, lo, hi - 1, 0) < 0) {
			struct rlimit rl;
			unsigned int top = getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
							   rl.rlim_cur < (1u << 20)
						   ? (unsigned int)rl.rlim_cur
						   : 1u << 20;
			for (unsigned int fd = lo; fd < hi && fd < top; fd++) /* before Linux 5.9 */
				close((int)fd);
		}
		if (i < k)
			lo = (unsigned int)sorted[i] + 1;
	}
	rec_fd_private = 1;
	return 0;
}

int rec_fd_id_get(int fd, struct rec_fd_id *id)
{
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0)
		return -1;
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	return 0;
}

int rec_fd_is(int fd, const struct rec_fd_id *id)
{
	struct rec_fd_id now;

	return rec_fd_id_get(fd, &now) == 0 && now.dev == id->dev && now.ino == id->ino;
}

void rec_close_same(int fd, int twin)
{
	struct rec_fd_id a, b;

	/* the program may have dup2'ed a file of its own over FD since we opened it */
	if (rec_fd_id_get(fd, &a) == 0 && rec_fd_id_get(twin, &b) == 0 && a.dev == b.dev &&
	    a.ino == b.ino)
		close(fd);
}

int rec_fd_above_stdio(int fd)
{
	int hi = rec_fd_above_stdio_dup(fd);

	if (hi != fd)
		rec_close_same(fd, hi);
	return hi;
}

int rec_fd_above_stdio_dup(int fd)
{
	static int floor; /* racy first computation: every thread finds the same value */
	struct rlimit rl;
	int hi, min = __atomic_load_n(&floor, __ATOMIC_RELAXED);

	if (fd < 0)
		return fd;
	if (!min) {
		min = 3;
		/* the top eighth of the soft limit, the first 1024 at most: select() users
		 * keep theirs below FD_SETSIZE, and so do we */
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur >= 64) {
			rlim_t top = rl.rlim_cur < 1024 ? rl.rlim_cur : 1024;
			min = (int)(top - top / 8);
		}
		__atomic_store_n(&floor, min, __ATOMIC_RELAXED);
	}
	if (fd >= min)
		return fd;
	hi = fcntl(fd, F_DUPFD_CLOEXEC, min);
	if (hi < 0 && fd <= 2)
		hi = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	return hi < 0 ? fd : hi;
}

int rec_fd_move_checked(int fd, const struct rec_fd_id *want)
{
	int hi = rec_fd_above_stdio_dup(fd);

	if (fd < 0)
		return -1;
	if (hi != fd && rec_fd_is(fd, want))
		close(fd); /* else the program dup2'ed its own file over it: its number now */
	if (!rec_fd_is(hi, want)) {
		if (hi != fd)
			close(hi); /* our duplicate, of whatever it was */
		errno = EBADF;
		return -1;
	}
	return hi;
}

int rec_open_write_kept(int dirfd, const char *name, int flags)
{
	return rec_openat_kept(dirfd, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | flags,
			       0666);
}

int rec_openat_kept(int dirfd, const char *name, int flags, mode_t mode)
{
	int fd = openat(dirfd, name, flags, mode);
	struct rec_fd_id want;
	struct stat st;

	if (fd < 0)
		return -1;
	/* a table of our own (the flusher's, the helper's): the program can neither take nor
	 * replace a number there, so the descriptor is the file just opened. The moves and
	 * checks below cost five syscalls per open, three opens per new thread. */
	if (rec_fd_private)
		return fd;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -1; /* removed meanwhile: the descriptor is left alone */
	want.dev = st.st_dev;
	want.ino = st.st_ino;
	return rec_fd_move_checked(fd, &want);
}

pid_t rec_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

long rec_futex(uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, addr, op, val, ts, NULL, 0);
}

struct rec_dirent64 {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

int rec_dir_each(int dirfd, const char *prefix, size_t plen, int (*fn)(void *arg, const char *name),
		 void *arg)
{
	char buf[8192];
	long got;
	int ret = 0;
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while (!ret && (got = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < got && !ret;) {
			struct rec_dirent64 *de = (struct rec_dirent64 *)(buf + off);

			off += de->reclen;
			if (strncmp(de->name, prefix, plen) == 0)
				ret = fn(arg, de->name);
		}
	}
	close(fd);
	return ret;
}

DIR *rec_opendir_at(int dirfd)
{
	/* "." opens the directory afresh: a dup'ed descriptor would share DIRFD's offset */
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return d;
}

static int rec_dl_adds_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(unsigned long long *)arg = info->dlpi_adds;
	return 1; /* the first module says it */
}

unsigned long long rec_dl_adds(void)
{
	unsigned long long adds = 0;

	dl_iterate_phdr(rec_dl_adds_cb, &adds);
	return adds;
}

/* --- without malloc (rec_util.h) ---------------------------------------------------------- */

#define REC_MEM_HDR 16 /* the mapping's size, before the memory handed out */

void *rec_mem_grow(void *p, size_t bytes)
{
	size_t want, have;
	uint8_t *m;

	if (bytes > SIZE_MAX / 2)
		return NULL;
	want = (bytes + REC_MEM_HDR + 4095) & ~(size_t)4095;
	if (!p) {
		m = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	} else {
		m = (uint8_t *)p - REC_MEM_HDR;
		memcpy(&have, m, sizeof(have));
		if (want <= have)
			return p;
		m = mremap(m, have, want, MREMAP_MAYMOVE);
	}
	if (m == MAP_FAILED)
		return NULL;
	memcpy(m, &want, sizeof(want));
	return m + REC_MEM_HDR;
}

void rec_mem_free(void *p)
{
	uint8_t *m;
	size_t have;

	if (!p)
		return;
	m = (uint8_t *)p - REC_MEM_HDR;
	memcpy(&have, m, sizeof(have));
	munmap(m, have);
}

static void rec_sort_swap(uint8_t *a, uint8_t *b, size_t size)
{
	while (size--) {
		uint8_t t = *a;
		*a++ = *b;
		*b++ = t;
	}
}

static void rec_sort_sift(uint8_t *v, size_t root, size_t n, size_t size,
			  int (*cmp)(const void *, const void *))
{
	for (size_t child; (child = 2 * root + 1) < n; root = child) {
		if (child + 1 < n && cmp(v + child * size, v + (child + 1) * size) < 0)
			child++;
		if (cmp(v + root * size, v + child * size) >= 0)
			return;
		rec_sort_swap(v + root * size, v + child * size, size);
	}
}

void rec_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	uint8_t *v = base;

	if (n < 2)
		return;
	for (size_t i = n / 2; i-- > 0;)
		rec_sort_sift(v, i, n, size, cmp);
	for (size_t end = n - 1; end > 0; end--) {
		rec_sort_swap(v, v + end * size, size);
		rec_sort_sift(v, 0, end, size, cmp);
	}
}

void rec_out_init(struct rec_out *o, int fd)
{
	o->fd = fd;
	o->failed = fd < 0;
	o->len = 0;
}

static void rec_out_flush(struct rec_out *o)
{
	if (o->len && !o->failed && rec_write_all(o->fd, o->buf, o->len) < 0)
		o->failed = 1;
	o->len = 0;
}

void rec_out_printf(struct rec_out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (int tries = 0; tries < 2; tries++) {
		va_start(ap, fmt);
		n = vsnprintf(o->buf + o->len, sizeof(o->buf) - o->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			o->failed = 1;
			return;
		}
		if (o->len + (size_t)n < sizeof(o->buf)) {
			o->len += (size_t)n;
			return;
		}
		/* did not fit: write what came before, and format it again at the start */
		rec_out_flush(o);
	}
	o->failed = 1; /* longer than the whole buffer */
}

int rec_out_close(struct rec_out *o)
{
	int saved;

	rec_out_flush(o);
	if (o->fd >= 0 && close(o->fd) < 0)
		o->failed = 1;
	saved = errno;
	o->fd = -1;
	errno = saved;
	return o->failed ? -1 : 0;
}

void rec_lines_init(struct rec_lines *l, int fd)
{
	l->fd = fd;
	l->pos = l->len = 0;
}

/* The next byte, or -1 at the end (or on a read error). */
static int rec_lines_getc(struct rec_lines *l)
{
	if (l->pos == l->len) {
		ssize_t n;

		do
			n = read(l->fd, l->buf, sizeof(l->buf));
		while (n < 0 && errno == EINTR);
		if (n <= 0)
			return -1;
		l->pos = 0;
		l->len = (size_t)n;
	}
	return (unsigned char)l->buf[l->pos++];
}

long rec_lines_next(struct rec_lines *l, char *line, size_t size)
{
	size_t n = 0;
	int c = rec_lines_getc(l);

	if (c < 0)
		return -1;
	for (; c >= 0 && c != '\n'; c = rec_lines_getc(l))
		if (n + 1 < size)
			line[n++] = (char)c;
	if (size)
		line[n] = '\0';
	return (long)n;
}

void rec_ctime_utc(long long t, char buf[32])
{
	static const char days[] = "ThuFriSatSunMonTueWed", months[] = "JanFebMarAprMayJunJulAug"
								  "SepOctNovDec";
	long long d = t >= 0 ? t / 86400 : (t - 86399) / 86400, secs = t - d * 86400;
	int wd = (int)(((d % 7) + 7) % 7);
	/* civil from days (H. Hinnant's algorithm): the proleptic Gregorian date of day d */
	long long z = d + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
	long long doe = z - era * 146097;
	long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
	int day = (int)(doy - (153 * mp + 2) / 5 + 1), mon = (int)(mp < 10 ? mp + 3 : mp - 9);
	long long year = yoe + era * 400 + (mon <= 2);

	rec_snprintf(buf, 32, "%.3s %.3s %2d %02d:%02d:%02d %lld", days + 3 * wd,
		     months + 3 * (mon - 1), day, (int)(secs / 3600), (int)(secs / 60 % 60),
		     (int)(secs % 60), year);
}

/* the environment the process started with, for rec_getenv before libc set `environ`: read
 * once, single-threaded (a .preinit_array runs before any thread can start) */
#define REC_ENVIRON_MAX (64u << 10)
static char rec_environ_buf[REC_ENVIRON_MAX];
static size_t rec_environ_len;
static int rec_environ_read;

const char *rec_getenv(const char *name)
{
	extern char **environ;
	size_t n = strlen(name);

	if (environ)
		return getenv(name);
	if (!rec_environ_read) {
		int fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC);
		rec_environ_read = 1;
		if (fd >= 0) {
			ssize_t r;
			/* a variable cut by the buffer's end is dropped: only whole ones count */
			while (rec_environ_len < sizeof(rec_environ_buf) - 1 &&
			       (r = read(fd, rec_environ_buf + rec_environ_len,
					 sizeof(rec_environ_buf) - 1 - rec_environ_len)) > 0)
				rec_environ_len += (size_t)r;
			close(fd);
		}
	}
	for (size_t i = 0; i < rec_environ_len;) {
		const char *e = rec_environ_buf + i;
		size_t l = strnlen(e, rec_environ_len - i);
		if (i + l == rec_environ_len)
			break; /* no NUL: cut short */
		if (l > n && !memcmp(e, name, n) && e[n] == '=')
			return e + n + 1;
		i += l + 1;
	}
	return NULL;
}
