/*
 * conv_uftrace: `flightrec convert --to uftrace -o DIR`, a uftrace.data directory that
 * uftrace 0.13 replays, reports and graphs (shared/formats/uftrace-data.md), from any trace
 * convert reads (made for XRay logs: their function ids named through the instrumentation
 * map, the functions are llvm-xray account's).
 *
 * A converted trace has names, not addresses: each distinct function name gets an address of
 * its own in one made-up module, the executable TITLE (the XRay -m EXE, else the trace's path;
 * the file need not exist: uftrace reads <basename>.sym from the directory), 16 bytes apart
 * from 0x1000 on, mapped at 0x400000 in sid-<sid>.map. Files:
 *   <tid>.dat   one per thread (two tracks of one tid share it), ENTRY and EXIT records at
 *               the stream's depth, written as they come; frames deeper than uftrace's 10-bit
 *               depth (1023) lose both ends and are counted;
 *   TITLE.sym   the names, one 16-byte function each, then the `?` line closing the last;
 *   sid-<sid>.map, task.txt (one SESS per process, one TASK per thread), info (exename,
 *   tids, elapsed time), written at the end.
 * Times are the stream's plus one second: uftrace's SESS and TASK lines come before a task's
 * first record, so they are stamped a moment before. Memory: the distinct names and threads.
 */
#include "formats/common/conv.h"
#include "cli/namecount.h"
#include "formats/uftrace/uftrace_format.h"
#include "formats/uftrace/uftrace_info.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CVU_BASE_NS   1000000000ull /* added to every time */
#define CVU_MOD_START 0x400000ull   /* the module's load address */
#define CVU_FN0	      0x1000ull	    /* the first function's address in the module */
#define CVU_SID	      "f11e0c0de0000001"

struct cvu_thread {
	int pid, tid;
	uint64_t records;
};

struct cvu {
	int dirfd;
	char *exename;
	struct nc_table index; /* name -> its number + 1 */
	char **names;
	size_t nr, cap;
	FILE *dat;
	struct cvu_thread *th; /* every track's thread, in order of appearance */
	size_t nth, capth, cur;
	uint64_t addr[UFTRACE_DEPTH_MAX + 1]; /* the open frames' addresses */
	size_t depth, skipped;
	uint64_t first, last, too_deep;
	int have_time, err;
};

static void *cvu_open_dir(const char *dir, const char *title)
{
	struct cvu *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	u->exename = strdup(title && *title ? title : "flightrec-convert");
	if (u->dirfd < 0 || !u->exename) {
		if (u->dirfd >= 0)
			close(u->dirfd);
		free(u->exename);
		free(u);
		return NULL;
	}
	nc_init(&u->index);
	return u;
}

static int cvu_close_dat(struct cvu *u)
{
	int r = 0;

	if (u->dat && fclose(u->dat) != 0)
		r = -1;
	u->dat = NULL;
	return r;
}

static int cvu_thread(void *w, int pid, int tid, const char *pname, const char *tname)
{
	struct cvu *u = w;
	char name[32];
	size_t i;
	int fd;

	(void)pname;
	(void)tname;
	if (cvu_close_dat(u) < 0)
		return -1;
	for (i = 0; i < u->nth; i++)
		if (u->th[i].tid == tid)
			break;
	if (i == u->nth) {
		if (u->nth == u->capth) {
			size_t n = u->capth ? 2 * u->capth : 16;
			void *p = realloc(u->th, n * sizeof(*u->th));
			if (!p)
				return -1;
			u->th = p;
			u->capth = n;
		}
		u->th[u->nth].pid = pid;
		u->th[u->nth].tid = tid;
		u->th[u->nth].records = 0;
		u->nth++;
	}
	u->cur = i;
	u->depth = u->skipped = 0;
	snprintf(name, sizeof(name), "%d.dat", tid);
	fd = openat(u->dirfd, name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0 || !(u->dat = fdopen(fd, "a"))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return 0;
}

/* the address of NAME's function; 0: out of memory */
static uint64_t cvu_addr(struct cvu *u, const char *name)
{
	uint64_t *slot = nc_slot(&u->index, name);

	if (!slot)
		return 0;
	if (!*slot) {
		if (u->nr == u->cap) {
			size_t n = u->cap ? 2 * u->cap : 256;
			char **p = realloc(u->names, n * sizeof(*p));
			if (!p)
				return 0;
			u->names = p;
			u->cap = n;
		}
		if (!(u->names[u->nr] = strdup(name)))
			return 0;
		*slot = ++u->nr;
	}
	return CVU_MOD_START + CVU_FN0 + 16 * (*slot - 1);
}

static int cvu_put(struct cvu *u, uint64_t ns, unsigned type, uint64_t addr)
{
	struct uftrace_record r;

	r.time = ns + CVU_BASE_NS;
	r.word = uftrace_record_word(type, (unsigned)u->depth, addr);
	if (!u->have_time || r.time < u->first)
		u->first = r.time;
	if (r.time > u->last)
		u->last = r.time;
	u->have_time = 1;
	u->th[u->cur].records++;
	return fwrite(&r, sizeof(r), 1, u->dat) == 1 ? 0 : -1;
}

static int cvu_enter(void *w, uint64_t ns, const char *name)
{
	struct cvu *u = w;
	uint64_t addr;

	if (u->skipped || u->depth > UFTRACE_DEPTH_MAX) {
		u->skipped++;
		u->too_deep++;
		return 0;
	}
	if (!(addr = cvu_addr(u, name)))
		return -1;
	if (cvu_put(u, ns, UFTRACE_ENTRY, addr) < 0)
		return -1;
	u->addr[u->depth++] = addr;
	return 0;
}

static int cvu_exit(void *w, uint64_t ns)
{
	struct cvu *u = w;

	if (u->skipped) {
		u->skipped--;
		return 0;
	}
	if (!u->depth)
		return -1; /* conv.c never lets this happen */
	u->depth--;
	return cvu_put(u, ns, UFTRACE_EXIT, u->addr[u->depth]);
}

static int cvu_printf_file(int dirfd, const char *name, const char *text)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	size_t len = strlen(text);
	int r;

	if (fd < 0)
		return -1;
	r = write(fd, text, len) == (ssize_t)len ? 0 : -1;
	if (close(fd) != 0)
		r = -1;
	return r;
}

static int cvu_int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

static int cvu_write_meta(struct cvu *u)
{
	const char *base = strrchr(u->exename, '/');
	char name[512], *text = NULL;
	size_t len = 0;
	FILE *m;
	struct uftrace_info_desc d = { 0 };
	int *tids, ntids = 0, r = 0;

	/* the module's symbols */
	snprintf(name, sizeof(name), "%s.sym", base ? base + 1 : u->exename);
	m = open_memstream(&text, &len);
	if (!m)
		return -1;
	fprintf(m, "# symbols: %zu\n# path name: %s\n", u->nr, u->exename);
	for (size_t i = 0; i < u->nr; i++)
		fprintf(m, "%016" PRIx64 " T %s\n", (uint64_t)(CVU_FN0 + 16 * i), u->names[i]);
	fprintf(m, "%016" PRIx64 " ? __func_end\n", (uint64_t)(CVU_FN0 + 16 * u->nr));
	if (fclose(m) != 0 || cvu_printf_file(u->dirfd, name, text) < 0)
		r = -1;
	free(text);
	/* the session's map: the module, then the stack uftrace's reader expects last */
	text = NULL;
	m = open_memstream(&text, &len);
	if (!m)
		return -1;
	fprintf(m, "%llx-%llx r-xp 00000000 00:00 0 %s\n", CVU_MOD_START,
		CVU_MOD_START + CVU_FN0 + 16 * u->nr + 0x1000, u->exename);
	fputs("7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n", m);
	if (fclose(m) != 0 || cvu_printf_file(u->dirfd, "sid-" CVU_SID ".map", text) < 0)
		r = -1;
	free(text);
	/* task.txt: a SESS per process before its first TASK; threads with no record left out */
	text = NULL;
	m = open_memstream(&text, &len);
	tids = calloc(u->nth ? u->nth : 1, sizeof(*tids));
	if (!m || !tids) {
		if (m)
			fclose(m);
		free(text);
		free(tids);
		return -1;
	}
	for (size_t i = 0; i < u->nth; i++) {
		int seen = 0;

		if (!u->th[i].records)
			continue;
		for (size_t k = 0; k < i; k++)
			seen |= u->th[k].records && u->th[k].pid == u->th[i].pid;
		if (!seen)
			fprintf(m,
				"SESS timestamp=0.999999000 pid=%d sid=" CVU_SID
				" exename=\"%s\"\n",
				u->th[i].pid, u->exename);
		fprintf(m, "TASK timestamp=0.999999500 tid=%d pid=%d\n", u->th[i].tid,
			u->th[i].pid);
		tids[ntids++] = u->th[i].tid;
	}
	if (fclose(m) != 0 || cvu_printf_file(u->dirfd, "task.txt", text) < 0)
		r = -1;
	free(text);
	qsort(tids, (size_t)ntids, sizeof(*tids), cvu_int_cmp);
	d.exename = u->exename;
	d.cmdline = "flightrec convert --to=uftrace";
	d.cmdline_len = strlen(d.cmdline);
	d.tids = tids;
	d.ntids = ntids;
	d.date = time(NULL);
	d.elapsed_ns = u->have_time ? u->last - u->first : 0;
	d.max_stack = UFTRACE_DEPTH_MAX + 1;
	if (uftrace_info_write(u->dirfd, ".info.tmp", &d) < 0)
		r = -1;
	free(tids);
	return r;
}

static int cvu_finish(void *w)
{
	struct cvu *u = w;
	int r = cvu_close_dat(u);

	/* a track that never had a record leaves no .dat behind */
	for (size_t i = 0; i < u->nth; i++) {
		char name[32];

		snprintf(name, sizeof(name), "%d.dat", u->th[i].tid);
		if (!u->th[i].records)
			unlinkat(u->dirfd, name, 0);
	}
	if (cvu_write_meta(u) < 0)
		r = -1;
	if (u->too_deep)
		fprintf(stderr,
			"flightrec: convert: %" PRIu64 " frames deeper than uftrace's %u levels "
			"left out\n",
			u->too_deep, UFTRACE_DEPTH_MAX + 1);
	for (size_t i = 0; i < u->nr; i++)
		free(u->names[i]);
	free(u->names);
	free(u->th);
	free(u->exename);
	nc_free(&u->index);
	close(u->dirfd);
	free(u);
	return r;
}

const struct conv_writer conv_uftrace = {
	.name = "uftrace",
	.what = "a uftrace.data directory (-o DIR), one .dat per thread",
	.open = NULL,
	.thread = cvu_thread,
	.enter = cvu_enter,
	.exit = cvu_exit,
	.finish = cvu_finish,
	.keeps_names = 1,
	.open_dir = cvu_open_dir,
};
