/*
 * salvage_ovni: salvage for ovni traces (ovni-rt's rings, format "ovni"), layouts v2 and v3.
 *
 * What a dead ovni-rt process leaves: per thread that had called ovni_thread_init and not yet
 * finished, its ring and, beside it, .flightrec/ring.<pid>.<tid>.ovni (sink_ovni.c), which
 * names the thread's stream file and metadata file (in $OVNI_TMPDIR when set), where both go
 * once finished, and the layout. The stream holds what was written so far; the metadata is
 * the latest the runtime wrote (rewritten after a change, at most every 100 ms), without
 * ovni.finished.
 * Salvage, per ring:
 *   1. the stream is cut back to write_pos when the kill came in the middle of a write, the
 *      unwritten chunks' committed bytes are appended, and the stream is cut at its last
 *      whole event (a jumbo event may be split across chunks);
 *   2. the stream is finished the way ovniemu wants every stream to end, with the thread
 *      dead: OHe after a running or cooling thread, OHr OHe after a paused or warming one, at
 *      the clock of the last event (a thread that never ran, with no OHx, is left as it is);
 *   3. the metadata gets ovni.finished = 1 and flightrec.finished_by = "salvage", written to
 *      a temporary name and renamed;
 *   4. stream and metadata move to their final place (from OVNI_TMPDIR), and the side file
 *      goes.
 * A ring with no event whose stream holds at most the header (killed in ovni_thread_init,
 * which writes the side file before any file it names) has its stream, metadata (if written
 * yet) and v3 directories removed instead: nothing was recorded, and a stream that never
 * ends, or an unfinished metadata file, is refused by ovniemu.
 * The side file is checked first: the live files must be below the directory being salvaged
 * and the final ones at the same loom/proc/thread place in an existing directory, so a
 * forged side file cannot make salvage write elsewhere (os_side_check).
 *   5. v2: when no process of the loom has the loom's CPUs in its metadata.json (they reach
 *      it when a thread that added them finishes), the CPUs the side files recorded are
 *      written into the process's metadata.json.
 */
#include "formats/salvagers.h"
#include "librecord/rec_salvage_spool.h"
#include "librecord/rec_util.h"

/* the writer's JSON tree (parse, edit, serialize), the one the sink writes the metadata with */
#include "formats/ovni/ovni_json.h"
/* the end a stream gets, the same as the sink gives a thread that did not free itself */
#include "formats/ovni/ovni_stream_end.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define OS_SIDE_MAX (64u << 10)
#define OS_META_MAX (64u << 20)

struct os_side {
	int layout;
	char stream[PATH_MAX], metadata[PATH_MAX];
	char final_stream[PATH_MAX], final_metadata[PATH_MAX];
	char procdir[PATH_MAX]; /* v2: the process directory (metadata.json) */
	struct oj *loom_cpus;	/* the CPUs the thread added, or NULL */
};

/* v2 processes whose metadata.json may lack the loom's CPUs */
struct os_proc {
	char dir[PATH_MAX];
	struct oj *cpus;
};

static char *os_read(const char *path, int dirfd, size_t max, size_t *len)
{
	int fd = dirfd >= 0 ? openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
			    : open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	char *buf;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max ||
	    !(buf = malloc((size_t)st.st_size + 1))) {
		close(fd);
		return NULL;
	}
	if (pread(fd, buf, (size_t)st.st_size, 0) != st.st_size) {
		free(buf);
		close(fd);
		return NULL;
	}
	close(fd);
	buf[st.st_size] = '\0';
	*len = (size_t)st.st_size;
	return buf;
}

static int os_str(const struct oj *d, const char *key, char *out, size_t size)
{
	const struct oj *v = oj_get(d, key);
	if (!v || v->type != OJ_STRING || v->u.string[0] != '/' || strlen(v->u.string) >= size)
		return -1;
	snprintf(out, size, "%s", v->u.string);
	return 0;
}

/* the part of PATH from its "loom." component on ("loom.L/proc.P/thread.T/stream.obs"), or
 * NULL when it has none or holds a ".." component */
static const char *os_layout_tail(const char *path)
{
	const char *tail = strstr(path, "/loom.");

	if (!tail || strstr(path, "/../") || strstr(path, "/./") || strstr(path, "//"))
		return NULL;
	return tail + 1;
}

/* Where the side file says to write must be where ovni-rt writes: the live files below the
 * directory being salvaged (the one holding .flightrec, which is OVNI_TMPDIR when set, else
 * the trace), the final ones at the same loom/proc/thread place in a directory that exists
 * (the trace's), with the same name. A damaged or forged side file cannot make salvage write
 * anywhere else. */
static int os_side_check(struct rec_salvage_ctx *ctx, struct os_side *sd, char *why,
			 size_t why_size)
{
	char base[PATH_MAX], dir[PATH_MAX], *slash;
	const char *live[2] = { sd->stream, sd->metadata };
	const char *fin[2] = { sd->final_stream, sd->final_metadata };
	size_t n;

	if (!realpath(ctx->dir, base)) {
		snprintf(why, why_size, "%s: %s", ctx->dir, strerror(errno));
		return -1;
	}
	n = strlen(base);
	for (int i = 0; i < 2; i++) {
		const char *lt = os_layout_tail(live[i]), *ft = os_layout_tail(fin[i]);
		if (!lt || strncmp(live[i], base, n) != 0 || live[i][n] != '/' || !ft ||
		    strcmp(lt, ft) != 0) {
			snprintf(why, why_size, "the side file names %s and %s: not where ovni-rt "
						"writes below %s", live[i], fin[i], base);
			return -1;
		}
		snprintf(dir, sizeof(dir), "%s", fin[i]);
		slash = strrchr(dir, '/');
		*slash = '\0';
		if (access(dir, F_OK) < 0) {
			snprintf(why, why_size, "%s: %s", dir, strerror(errno));
			return -1;
		}
	}
	if (sd->layout == 2 && sd->procdir[0]) {
		/* metadata.json lives beside the final thread files */
		snprintf(dir, sizeof(dir), "%s", sd->final_stream);
		slash = strrchr(dir, '/');
		*slash = '\0';
		if (strcmp(dir, sd->procdir) != 0)
			sd->procdir[0] = '\0';
	}
	return 0;
}

/* the side file of ring R; -1 when there is none or it does not parse */
static int os_side_load(struct rec_salvage_ctx *ctx, const struct rec_salvage_ring *r,
			struct os_side *sd, char *why, size_t why_size)
{
	char name[96], *text;
	size_t len;
	struct oj *d;
	const struct oj *v;
	int bad;

	snprintf(name, sizeof(name), "%s.ovni", r->name);
	text = os_read(name, ctx->ringdirfd, OS_SIDE_MAX, &len);
	if (!text) {
		snprintf(why, why_size, ".flightrec/%s: %s", name, strerror(errno ? errno : EINVAL));
		return -1;
	}
	d = oj_parse(text, len);
	free(text);
	v = d ? oj_get(d, "layout") : NULL;
	bad = !d || !v || v->type != OJ_NUMBER || (v->u.number != 2 && v->u.number != 3) ||
	      os_str(d, "stream", sd->stream, sizeof(sd->stream)) ||
	      os_str(d, "metadata", sd->metadata, sizeof(sd->metadata)) ||
	      os_str(d, "final_stream", sd->final_stream, sizeof(sd->final_stream)) ||
	      os_str(d, "final_metadata", sd->final_metadata, sizeof(sd->final_metadata));
	if (!bad) {
		const struct oj *c = oj_get(d, "loom_cpus");
		sd->layout = (int)v->u.number;
		sd->procdir[0] = '\0';
		if (sd->layout == 2)
			os_str(d, "process_metadata", sd->procdir, sizeof(sd->procdir));
		sd->loom_cpus = c && c->type == OJ_ARRAY ? oj_copy(c) : NULL;
	}
	oj_free(d);
	if (bad) {
		snprintf(why, why_size, ".flightrec/%s: not the side file ovni-rt writes", name);
		return -1;
	}
	if (os_side_check(ctx, sd, why, why_size) < 0) {
		oj_free(sd->loom_cpus);
		sd->loom_cpus = NULL;
		return -1;
	}
	return 0;
}

/* rename, or copy and unlink across file systems */
static int os_move(const char *src, const char *dst)
{
	char buf[1 << 16];
	int in, out, ret = -1;
	ssize_t n;

	if (!strcmp(src, dst) || rename(src, dst) == 0)
		return 0;
	if (errno != EXDEV)
		return -1;
	in = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return -1;
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (out >= 0) {
		while ((n = read(in, buf, sizeof(buf))) > 0)
			if (rec_write_all(out, buf, (size_t)n) < 0)
				break;
		if (n == 0)
			ret = 0;
		if (close(out) < 0)
			ret = -1;
	}
	close(in);
	if (ret == 0)
		unlink(src);
	return ret;
}

static int os_finish_meta(struct rec_salvage_ctx *ctx, const struct os_side *sd)
{
	char tmp[PATH_MAX + 16], *text;
	size_t len;
	struct oj *d;
	int fd, bad;

	text = os_read(sd->metadata, -1, OS_META_MAX, &len);
	if (!text) {
		rec_salvage_log(ctx, "%s: %s", sd->metadata, strerror(errno ? errno : EINVAL));
		return -1;
	}
	d = oj_parse(text, len);
	free(text);
	if (!d || d->type != OJ_OBJECT || oj_dotset(d, "ovni.finished", oj_number(1)) ||
	    oj_dotset(d, "flightrec.finished_by", oj_string("salvage")) ||
	    !(text = oj_serialize(d, 1, &len))) {
		rec_salvage_log(ctx, "%s: not a JSON object ovni-rt wrote", sd->metadata);
		oj_free(d);
		return -1;
	}
	oj_free(d);
	snprintf(tmp, sizeof(tmp), "%s.salvage.tmp", sd->metadata);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
	bad = fd < 0 || rec_write_all(fd, text, len) < 0;
	if (fd >= 0 && close(fd) < 0)
		bad = 1;
	free(text);
	if (bad || rename(tmp, sd->metadata) < 0) {
		rec_salvage_log(ctx, "%s: %s", sd->metadata, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* The temporary file ovni-rt writes a thread's metadata to before the rename (sink_ovni.c:
 * ".stream.json.tmp" beside stream.json, ".thread.T.json.tmp" beside thread.T.json), left by
 * a kill between the two: the process is dead, nobody finishes it. In the trace it would keep
 * the thread's directory from going with an empty stream; in OVNI_TMPDIR, the directory from
 * going once the files moved. */
static void os_unlink_meta_tmp(const char *metadata)
{
	char tmp[PATH_MAX];
	const char *base = strrchr(metadata, '/');

	if (base && snprintf(tmp, sizeof(tmp), "%.*s/.%s.tmp", (int)(base - metadata), metadata,
			     base + 1) < (int)sizeof(tmp))
		unlink(tmp);
}

static int os_salvage_thread(struct rec_salvage_ctx *ctx, struct rec_salvage_ring *r,
			     struct os_side *sdp)
{
	struct os_side sd;
	char why[PATH_MAX + 128], side[96];
	struct stat st;
	enum ovni_se_state state;
	uint64_t clock, events;
	size_t end, from;
	uint8_t *m;
	off_t pos;
	int fd;

	if (os_side_load(ctx, r, &sd, why, sizeof(why)) < 0) {
		/* a thread that never called ovni_thread_init has no stream and wrote nothing */
		bool empty = true;
		for (size_t i = 0; i < r->nr_chunks; i++)
			empty &= r->chunks[i].len == r->chunks[i].off;
		if (empty) {
			/* nothing lost; a side file torn by a kill goes with the ring */
			snprintf(side, sizeof(side), "%s.ovni", r->name);
			unlinkat(ctx->ringdirfd, side, 0);
			snprintf(side, sizeof(side), "%s.ovni.tmp", r->name);
			unlinkat(ctx->ringdirfd, side, 0);
			return 0;
		}
		rec_salvage_log(ctx, "%s: %s: its events have nowhere to go", r->name, why);
		return -1;
	}
	*sdp = sd; /* its loom CPUs, for the process's metadata.json (v2) */
	os_unlink_meta_tmp(sd.metadata);
	if (access(sd.stream, F_OK) < 0 && strcmp(sd.stream, sd.final_stream) &&
	    access(sd.final_stream, F_OK) == 0) {
		/* an earlier salvage moved them already */
		memcpy(sd.stream, sd.final_stream, sizeof(sd.stream));
		memcpy(sd.metadata, sd.final_metadata, sizeof(sd.metadata));
	}
	fd = open(sd.stream, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		rec_salvage_log(ctx, "%s: %s", sd.stream, fd < 0 ? strerror(errno) : "not a file");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	{
		/* the stream belongs to whoever wrote the ring */
		struct stat rs;
		if (fstat(r->fd, &rs) < 0 || rs.st_uid != st.st_uid) {
			rec_salvage_log(ctx, "%s: not owned by the owner of %s: left alone",
					sd.stream, r->name);
			close(fd);
			return -1;
		}
	}
	if (st.st_size < 8) {
		/* killed before ovni-rt wrote the stream header (it is not in the ring) */
		static const uint8_t hdr[8] = { 'o', 'v', 'n', 'i', 1, 0, 0, 0 };
		if (rec_pwrite_all(fd, hdr, sizeof(hdr), 0) < 0) {
			rec_salvage_log(ctx, "%s: %s", sd.stream, strerror(errno));
			close(fd);
			return -1;
		}
		st.st_size = sizeof(hdr);
	}
	{
		/* the stream holds the ring's bytes as they are; its events are counted below */
		struct rec_salvage_spool sp = {.label = sd.stream};
		off_t start;

		if (rec_salvage_spool_append(ctx, r, fd, st.st_size, &sp, &start, &pos) < 0) {
			close(fd);
			return -1;
		}
		from = (size_t)start;
	}

	/* whole events only, then the thread dead */
	end = 0;
	state = OVNI_SE_UNKNOWN;
	clock = events = 0;
	if (pos > 0) {
		m = mmap(NULL, (size_t)pos, PROT_READ, MAP_SHARED, fd, 0);
		if (m != MAP_FAILED) {
			end = ovni_se_walk(m, (size_t)pos, from, &state, &clock, &events);
			munmap(m, (size_t)pos);
		}
	}
	if (end < (size_t)pos) {
		if (end)
			rec_salvage_log(ctx, "%s: %lld bytes of an event cut short removed", sd.stream,
					(long long)((size_t)pos - end));
		else
			rec_salvage_log(ctx, "%s: no stream header: left as it is", sd.stream);
		if (end && ftruncate(fd, (off_t)end) < 0) {
			close(fd);
			return -1;
		}
	}
	r->events += events;
	if (events == 0 && state == OVNI_SE_UNKNOWN && (size_t)pos <= 8) {
		/* killed in ovni_thread_init, between the side file (written before anything it
		 * names) and the thread's first event (the program thread waits for the runtime's
		 * helper there): a header that never ends is no stream to ovniemu, and nothing was
		 * recorded or lost. Removed with its metadata (if it was written yet) and, v3, the
		 * thread's directories, as the runtime drops a stream whose every event was
		 * lost. */
		close(fd);
		unlink(sd.stream);
		unlink(sd.metadata);
		for (int i = 0; sd.layout == 3 && i < 2; i++) {
			char dir[PATH_MAX], *slash;
			snprintf(dir, sizeof(dir), "%s", i ? sd.final_stream : sd.stream);
			slash = strrchr(dir, '/');
			if (slash) {
				*slash = '\0';
				rmdir(dir); /* the same one twice without OVNI_TMPDIR */
			}
		}
		rec_salvage_log(ctx, "%s: no event (killed in ovni_thread_init): removed",
				sd.stream);
		snprintf(side, sizeof(side), "%s.ovni", r->name);
		unlinkat(ctx->ringdirfd, side, 0);
		snprintf(side, sizeof(side), "%s.ovni.tmp", r->name);
		unlinkat(ctx->ringdirfd, side, 0);
		return 0;
	}
	if (end) {
		uint8_t ending[2 * OVNI_SE_HDR];
		size_t n = ovni_se_ending(state, clock, ending);
		if (n) {
			lseek(fd, 0, SEEK_END);
			if (rec_write_all(fd, ending, n) < 0) {
				close(fd);
				return -1;
			}
			rec_salvage_log(ctx, "%s: the thread's end (%s) added", sd.stream,
					n > OVNI_SE_HDR ? "OHr OHe" : "OHe");
		}
	}
	if (close(fd) < 0)
		return -1;
	if (os_finish_meta(ctx, &sd) < 0)
		return -1;
	if (os_move(sd.stream, sd.final_stream) < 0 || os_move(sd.metadata, sd.final_metadata) < 0) {
		rec_salvage_log(ctx, "%s: cannot move it to %s: %s", sd.stream, sd.final_stream,
				strerror(errno));
		return -1;
	}
	if (sd.layout == 3 && strcmp(sd.stream, sd.final_stream)) {
		/* the thread's directory in OVNI_TMPDIR, now empty */
		char dir[PATH_MAX], *slash;
		snprintf(dir, sizeof(dir), "%s", sd.stream);
		slash = strrchr(dir, '/');
		if (slash) {
			*slash = '\0';
			rmdir(dir);
		}
	}
	snprintf(side, sizeof(side), "%s.ovni", r->name);
	unlinkat(ctx->ringdirfd, side, 0);
	snprintf(side, sizeof(side), "%s.ovni.tmp", r->name);
	unlinkat(ctx->ringdirfd, side, 0);
	return 0;
}

/* Does any process of the loom holding PROCDIR have "cpus" in its metadata.json? */
static int os_loom_has_cpus(const char *procdir)
{
	char loom[PATH_MAX], path[PATH_MAX * 2], *slash, *text;
	struct dirent *de;
	size_t len;
	int found = 0;
	DIR *d;

	snprintf(loom, sizeof(loom), "%s", procdir);
	slash = strrchr(loom, '/');
	if (!slash)
		return 0;
	*slash = '\0';
	d = opendir(loom);
	while (d && !found && (de = readdir(d))) {
		struct oj *m;
		if (strncmp(de->d_name, "proc.", 5) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s/metadata.json", loom, de->d_name);
		text = os_read(path, -1, OS_META_MAX, &len);
		m = text ? oj_parse(text, len) : NULL;
		found = m && oj_get(m, "cpus");
		oj_free(m);
		free(text);
	}
	if (d)
		closedir(d);
	return found;
}

/* v2: the loom's CPUs into the process's metadata.json when no process of the loom has them
 * (ovniemu 1.10 wants them in exactly one) */
static int os_proc_cpus(struct rec_salvage_ctx *ctx, const struct os_proc *p)
{
	char path[PATH_MAX + 32], tmp[PATH_MAX + 48], *text;
	struct oj *m;
	size_t len;
	int fd, bad;

	if (os_loom_has_cpus(p->dir))
		return 0;
	snprintf(path, sizeof(path), "%s/metadata.json", p->dir);
	text = os_read(path, -1, OS_META_MAX, &len);
	m = text ? oj_parse(text, len) : NULL;
	free(text);
	if (!m || m->type != OJ_OBJECT || oj_dotset(m, "cpus", oj_copy(p->cpus)) ||
	    !(text = oj_serialize(m, 1, &len))) {
		rec_salvage_log(ctx, "%s: cannot add the loom's CPUs", path);
		oj_free(m);
		return -1;
	}
	oj_free(m);
	snprintf(tmp, sizeof(tmp), "%s.salvage.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
	bad = fd < 0 || rec_write_all(fd, text, len) < 0;
	if (fd >= 0 && close(fd) < 0)
		bad = 1;
	free(text);
	if (bad || rename(tmp, path) < 0) {
		unlink(tmp);
		rec_salvage_log(ctx, "%s: %s", path, strerror(errno));
		return -1;
	}
	rec_salvage_log(ctx, "%s: the loom's CPUs added", path);
	return 0;
}

static int os_salvage(struct rec_salvage_ctx *ctx, struct rec_salvage_ring **rings, size_t nr)
{
	struct os_proc *procs = calloc(nr ? nr : 1, sizeof(*procs));
	size_t nprocs = 0;
	int ret = 0;

	if (!procs)
		return -1;
	for (size_t i = 0; i < nr; i++) {
		struct os_side sd = { 0 };
		if (os_salvage_thread(ctx, rings[i], &sd) < 0)
			ret = -1;
		else
			rings[i]->ok = true;
		if (sd.layout == 2 && sd.procdir[0] && sd.loom_cpus) {
			size_t k;
			for (k = 0; k < nprocs && strcmp(procs[k].dir, sd.procdir); k++)
				;
			if (k == nprocs) {
				snprintf(procs[nprocs].dir, sizeof(procs[nprocs].dir), "%s", sd.procdir);
				procs[nprocs++].cpus = sd.loom_cpus;
				sd.loom_cpus = NULL;
			}
		}
		oj_free(sd.loom_cpus);
	}
	for (size_t k = 0; k < nprocs; k++) {
		if (os_proc_cpus(ctx, &procs[k]) < 0)
			ret = -1;
		oj_free(procs[k].cpus);
	}
	free(procs);
	return ret;
}

const struct rec_salvage_format ovni_salvager = {
	.name = "ovni",
	.salvage = os_salvage,
};
