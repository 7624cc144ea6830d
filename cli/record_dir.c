/*
 * record_dir: prepare and summarise the output directory of `flightrec record`
 * (see record_dir.h for the rules).
 */
#include "cli/record_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "formats/common/rd_common.h"
#include "formats/common/rtstats.h"
#include "formats/uftrace/read_uftrace.h"

/* the list of what a finished `flightrec record` left in its directory */
#define RECDIR_LIST "record.list" /* in .flightrec */
#define RECDIR_LIST_MAX (1u << 20)

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if ((flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT) {
		cli_err("cannot remove %s:", path);
		return -1;
	}
	return 0;
}

/* the names of DIRFD, '.' and '..' left out, in one malloc'ed "a\0b\0...\0" block; NULL on
 * error (printed) */
static char *list_names(int dirfd, const char *dir, size_t *len)
{
	struct dirent *de;
	char *buf = NULL;
	size_t n = 0;
	int fd = dup(dirfd);
	DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;

	if (dp == NULL) {
		cli_err("%s:", dir);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	rewinddir(dp);
	while ((de = readdir(dp)) != NULL) {
		size_t k = strlen(de->d_name) + 1;
		char *nb;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		nb = realloc(buf, n + k + 1);
		if (nb == NULL) {
			cli_err("out of memory");
			free(buf);
			closedir(dp);
			return NULL;
		}
		buf = nb;
		memcpy(buf + n, de->d_name, k);
		n += k;
	}
	closedir(dp);
	if (buf == NULL)
		buf = calloc(1, 1);
	*len = n;
	return buf;
}

/* NAME is a line of LIST (LEN bytes of "name\n" lines) */
static bool listed(const char *list, size_t len, const char *name)
{
	size_t k = strlen(name);

	for (const char *p = list, *end = list + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (nl == NULL)
			return false; /* a cut line names nothing */
		if ((size_t)(nl - p) == k && !memcmp(p, name, k))
			return true;
		p = nl + 1;
	}
	return false;
}

/* record.list in .flightrec (RINGFD), malloc'ed; NULL if it is not there or not a plain file */
static char *read_list(int ringfd, size_t *len)
{
	int fd = openat(ringfd, RECDIR_LIST, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	char *buf;
	ssize_t n;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > RECDIR_LIST_MAX ||
	    (buf = malloc((size_t)st.st_size + 1)) == NULL) {
		close(fd);
		return NULL;
	}
	n = read(fd, buf, (size_t)st.st_size);
	close(fd);
	if (n != st.st_size) {
		free(buf);
		return NULL;
	}
	*len = (size_t)n;
	return buf;
}

/* remove SUB/NAME of DIR for each of the LEN bytes of NAMES ("a\0b\0"), SKIP left out */
static int remove_names(const char *dir, const char *sub, const char *names, size_t len,
			const char *skip)
{
	for (const char *p = names; p < names + len; p += strlen(p) + 1) {
		char *base = sub ? rd_path_join(dir, sub) : NULL;
		char *path = rd_path_join(base ? base : dir, p);
		int ret;

		free(base);
		if (path == NULL) {
			cli_err("out of memory");
			return -1;
		}
		/* FTW_PHYS: a symbolic link is removed, never followed */
		ret = skip && !strcmp(p, skip) ? 0 : nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		free(path);
		if (ret != 0)
			return -1;
	}
	return 0;
}

/* a previous trace of ours in DIR (DIRFD; its .flightrec RINGFD, locked by us): remove what
 * its list names and what .flightrec holds, or refuse */
static int empty_previous(int ringfd, const char *dir, char *names, size_t len)
{
	size_t llen = 0, rlen = 0;
	char *list = read_list(ringfd, &llen), *rnames;
	int ret;

	if (list == NULL) {
		cli_err("%s is not empty and is not a trace `flightrec record` finished (no "
			".flightrec/%s): nothing removed (choose another -d DIR, or remove it "
			"yourself)",
			dir, RECDIR_LIST);
		return -1;
	}
	for (char *p = names; p < names + len; p += strlen(p) + 1) {
		if (strcmp(p, ".flightrec") && !listed(list, llen, p)) {
			cli_err("%s holds '%s', which the trace recorded there did not write: "
				"nothing removed (choose another -d DIR, or remove it yourself)",
				dir, p);
			free(list);
			return -1;
		}
	}
	free(list);
	rnames = list_names(ringfd, dir, &rlen);
	if (rnames == NULL)
		return -1;
	/* .flightrec itself stays: it holds our lock */
	ret = remove_names(dir, NULL, names, len, ".flightrec");
	if (ret == 0)
		ret = remove_names(dir, ".flightrec", rnames, rlen, NULL);
	free(rnames);
	return ret;
}

int recdir_prepare(const char *dir)
{
	struct stat st;
	size_t len = 0;
	char *names;
	int dfd, fd;

	if (stat(dir, &st) < 0) {
		if (errno != ENOENT) {
			cli_err("%s:", dir);
			return -1;
		}
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			cli_err("cannot create %s:", dir);
			return -1;
		}
	} else if (!S_ISDIR(st.st_mode)) {
		cli_err("%s exists and is not a directory: not overwriting it", dir);
		return -1;
	}
	/* a symbolic link the user gave as DIR is followed: it is the directory they chose */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		cli_err("%s:", dir);
		return -1;
	}
	names = list_names(dfd, dir, &len);
	if (names == NULL) {
		close(dfd);
		return -1;
	}
	/* only an empty directory gets a .flightrec from us before the runtime makes it */
	if (len == 0 && mkdirat(dfd, ".flightrec", 0777) < 0 && errno != EEXIST) {
		cli_err("cannot create %s/.flightrec:", dir);
		goto fail;
	}
	fd = openat(dfd, ".flightrec", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP)
			cli_err("%s is not empty and is not a trace `flightrec record` finished "
				"(no .flightrec directory): nothing removed (choose another -d DIR, "
				"or remove it yourself)",
				dir);
		else
			cli_err("%s/.flightrec:", dir);
		goto fail;
	}
	/*
	 * Held until we exit: a second record into DIR would empty the first one's live trace,
	 * or mix its own into it. On .flightrec, not on DIR: the runtimes flock DIR itself
	 * around their metadata writes.
	 */
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			cli_err("%s is in use by another `flightrec record`: not touching it "
				"(choose another -d DIR)",
				dir);
		else
			cli_err("cannot lock %s/.flightrec:", dir);
		close(fd);
		goto fail;
	}
	if (len > 0 && empty_previous(fd, dir, names, len) < 0) {
		close(fd);
		goto fail;
	}
	free(names);
	close(dfd);
	return fd;
fail:
	free(names);
	close(dfd);
	return -1;
}

void recdir_finish(int ringfd, const char *dir)
{
	size_t len = 0, n = 0;
	int dfd = openat(ringfd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd;
	char *names = dfd >= 0 ? list_names(dfd, dir, &len) : NULL, *text;

	if (dfd >= 0)
		close(dfd);
	if (names == NULL)
		return;
	text = malloc(len + 1);
	if (text == NULL) {
		free(names);
		return;
	}
	for (char *p = names; p < names + len; p += strlen(p) + 1) {
		/* a name with a newline cannot be listed: unlisted, it makes the next record
		 * refuse rather than remove something it cannot name */
		if (!strcmp(p, ".flightrec") || strchr(p, '\n'))
			continue;
		n += (size_t)sprintf(text + n, "%s\n", p);
	}
	free(names);
	/* written whole, then renamed: a cut list would name less than the trace holds */
	unlinkat(ringfd, RECDIR_LIST ".tmp", 0);
	fd = openat(ringfd, RECDIR_LIST ".tmp",
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd >= 0 && write(fd, text, n) != (ssize_t)n) {
		close(fd);
		fd = -1;
	}
	if (fd < 0 || close(fd) < 0 ||
	    renameat(ringfd, RECDIR_LIST ".tmp", ringfd, RECDIR_LIST) < 0)
		cli_err("cannot write %s/.flightrec/%s (the next record into it will refuse to "
			"empty it):",
			dir, RECDIR_LIST);
	free(text);
}

/* without the runtime's counters: count what the .dat files hold */
static void scan_dat_files(const char *dir, struct recdir_summary *s)
{
	struct dirent *de;
	DIR *dp = opendir(dir);

	if (dp == NULL)
		return;
	while ((de = readdir(dp)) != NULL) {
		struct ufr_dat_iter it;
		struct ufr_rec rec;
		struct rd_error err;
		char *path;
		int64_t size;

		if (ufr_dat_file_tid(de->d_name) == 0)
			continue;
		path = rd_path_join(dir, de->d_name);
		if (path == NULL)
			break;
		size = rd_file_size(path);
		if (size >= 0) {
			s->threads++;
			s->bytes += (uint64_t)size;
		}
		rd_error_clear(&err);
		/* plain 16-byte records: a payload or a broken record ends the count */
		if (ufr_dat_iter_open(&it, path, false, 0, &err) == 0) {
			while (ufr_dat_next(&it, &rec, &err) > 0) {
				if (rec.type == UFR_LOST)
					s->lost += rec.addr;
				else
					s->events++;
			}
			ufr_dat_iter_close(&it);
		}
		free(path);
	}
	closedir(dp);
}

void recdir_summarize(const char *dir, struct recdir_summary *s)
{
	struct rts_set set;
	struct rd_error err;

	memset(s, 0, sizeof(*s));
	rd_error_clear(&err);
	if (rts_load(dir, &set, &err) == 0 && set.nr > 0) {
		for (size_t i = 0; i < set.nr; i++) {
			s->threads += set.procs[i].threads;
			s->events += set.procs[i].events;
			s->bytes += set.procs[i].bytes;
			s->lost += rts_lost(&set.procs[i]);
		}
		s->from_runtime = 1;
		rts_free(&set);
		return;
	}
	if (rd_error_isset(&err))
		rd_error_print(stderr, &err);
	scan_dat_files(dir, s);
}
