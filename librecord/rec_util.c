/*
 * rec_util: warnings, whole writes and symlink-safe file creation (see rec_util.h).
 * Invariant: nothing here allocates on the heap, so it is usable from a fork child, a
 * signal handler (for plain formats) and the flusher thread alike.
 */
#include "librecord/rec_util.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int rec_debug_enabled;

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
	(void)!write(STDERR_FILENO, buf, n);
	errno = saved;
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
