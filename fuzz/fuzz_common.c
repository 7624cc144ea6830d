/*
 * fuzz_common: template loading, the work copy and the input protocol of fuzz.h.
 *
 * Invariants: the work copy is private to the process (/dev/shm/flightrec-fuzz.<pid>) and is
 * the template again after every input (one file rewritten, or everything when
 * fuzz_restore_all); stdout goes to /dev/null (dump output), stderr is left to libFuzzer's
 * -close_fd_mask (sanitizer reports still reach the log).
 */
#include "fuzz/fuzz.h"
#include "cli/format.h"
#include "formats/common/rd_common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool fuzz_restore_all;

static struct fuzz_template *templates;
static size_t ntemplates;
static char workdir[256];

static void die(const char *what)
{
	fprintf(stderr, "fuzz: %s: %s\n", what, strerror(errno));
	exit(1);
}

const char *fuzz_join(const char *dir, const char *name)
{
	static char buf[8192];
	snprintf(buf, sizeof(buf), "%s/%s", dir, name);
	return buf;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p)
		die("realloc");
	return p;
}

static uint8_t *load(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0, got;

	if (!f)
		die(path);
	do {
		if (n == cap)
			buf = xrealloc(buf, cap = cap ? cap * 2 : 4096);
		got = fread(buf + n, 1, cap - n, f);
		n += got;
	} while (got);
	fclose(f);
	*len = n;
	return buf;
}

static void store(const char *path, const uint8_t *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die(path);
	while (len) {
		ssize_t w = write(fd, data, len);
		if (w < 0)
			die(path);
		data += w;
		len -= (size_t)w;
	}
	close(fd);
}

/* every regular file under root/rel, as relative paths */
static void walk(struct fuzz_template *t, const char *root, const char *rel)
{
	char path[4096];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s%s%s", root, *rel ? "/" : "", rel);
	d = opendir(path);
	if (!d)
		die(path);
	while ((de = readdir(d))) {
		char sub[4096];
		struct stat st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", de->d_name);
		if (lstat(fuzz_join(root, sub), &st) < 0)
			die(sub);
		if (S_ISDIR(st.st_mode)) {
			walk(t, root, sub);
		} else if (S_ISREG(st.st_mode)) {
			t->files = xrealloc(t->files, (t->nfiles + 1) * sizeof(*t->files));
			t->files[t->nfiles++] = strdup(sub);
		}
	}
	closedir(d);
}

static void mkdirs_for(const char *path)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(buf, 0755);
		*p = '/';
	}
}

static void copy_template(const struct fuzz_template *t)
{
	for (size_t i = 0; i < t->nfiles; i++) {
		const char *p = fuzz_join(t->root, t->files[i]);
		mkdirs_for(p);
		store(p, t->data[i], t->len[i]);
	}
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)f;
	return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static void cleanup(void)
{
	if (workdir[0])
		nftw(workdir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("FUZZ_TEMPLATES");
	struct dirent *de;
	char **names = NULL;
	size_t n = 0;
	DIR *d;
	int null;

	(void)argc;
	(void)argv;
	if (!dir) {
		fprintf(stderr, "fuzz: set FUZZ_TEMPLATES to the target's template directory "
				"(fuzz/run does)\n");
		exit(1);
	}
	d = opendir(dir);
	if (!d)
		die(dir);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		names = xrealloc(names, (n + 1) * sizeof(*names));
		names[n++] = strdup(de->d_name);
	}
	closedir(d);
	if (!n) {
		fprintf(stderr, "fuzz: no template in %s\n", dir);
		exit(1);
	}
	qsort(names, n, sizeof(*names), cmp_str);
	snprintf(workdir, sizeof(workdir), "/dev/shm/flightrec-fuzz.%d", (int)getpid());
	if (mkdir(workdir, 0700) < 0)
		die(workdir);
	atexit(cleanup);
	templates = calloc(n, sizeof(*templates));
	ntemplates = n;
	for (size_t i = 0; i < n; i++) {
		struct fuzz_template *t = &templates[i];
		char src[4096];
		t->name = names[i];
		snprintf(src, sizeof(src), "%s/%s", dir, names[i]);
		t->root = strdup(fuzz_join(workdir, names[i]));
		walk(t, src, "");
		if (!t->nfiles) {
			fprintf(stderr, "fuzz: template %s has no file\n", src);
			exit(1);
		}
		qsort(t->files, t->nfiles, sizeof(*t->files), cmp_str);
		t->data = calloc(t->nfiles, sizeof(*t->data));
		t->len = calloc(t->nfiles, sizeof(*t->len));
		for (size_t f = 0; f < t->nfiles; f++) {
			char p[8192];
			snprintf(p, sizeof(p), "%s/%s", src, t->files[f]);
			t->data[f] = load(p, &t->len[f]);
		}
		mkdir(t->root, 0755);
		copy_template(t);
	}
	free(names);
	/* dump's output */
	null = open("/dev/null", O_WRONLY);
	if (null >= 0) {
		fflush(stdout);
		dup2(null, STDOUT_FILENO);
		close(null);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_template *t;
	char path[8192];
	size_t f;

	if (size < 2)
		return 0;
	t = &templates[data[0] % ntemplates];
	f = data[1] % t->nfiles;
	snprintf(path, sizeof(path), "%s/%s", t->root, t->files[f]);
	store(path, data + 2, size - 2);
	fuzz_target_run(t, path, f);
	if (fuzz_restore_all) {
		nftw(t->root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
		mkdir(t->root, 0755);
		copy_template(t);
	} else {
		store(path, t->data[f], t->len[f]);
	}
	return 0;
}

void fuzz_cli(const struct cli_format *fmt, const char *path)
{
	struct cli_verify_opts vq = { .quiet = true }, v = { 0 };
	struct cli_dump_opts d0 = { 0 }, d1 = { .offsets = true }, d2 = { .headers_only = true };
	struct cli_stats_opts s0 = { 0 }, s1 = { .calls = true };

	(void)cli_format_detect(path);
	(void)fmt->sniff(path);
	(void)fmt->verify(path, &vq);
	(void)fmt->verify(path, &v);
	(void)fmt->dump(path, &d0);
	(void)fmt->dump(path, &d1);
	(void)fmt->dump(path, &d2);
	(void)fmt->stats(path, &s0);
	(void)fmt->stats(path, &s1);
	fflush(stdout);
}

void fuzz_check_error(int ret, const struct rd_error *err, const char *what)
{
	if (ret >= 0)
		return;
	if (err->rule <= 0 || !err->file[0] || !err->msg[0]) {
		fprintf(stderr, "fuzz: %s failed without naming the file, offset and rule "
				"(rule %d, file '%s', offset %lld, message '%s')\n",
			what, err->rule, err->file, (long long)err->offset, err->msg);
		abort();
	}
}
