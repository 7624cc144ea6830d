/*
 * rec_stats: the runtime's stats file (see rec_stats.h).
 *
 * Invariant: every number that goes into a thread's line is read once, and the same value is
 * added to the totals, so the lines add up to the totals exactly even while threads still
 * count (a thread that outlives finish drops and counts its events; what it counts after its
 * line was taken is in neither).
 */
#include "librecord/rec_stats.h"
#include "librecord/rec_session.h"
#include "librecord/rec_util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* one thread's counters, read once */
struct rec_stats_snap {
	uint64_t events, bytes, lost[REC_LOST_KINDS];
};

static void rec_stats_take(const struct rec_thread *t, struct rec_stats_snap *s)
{
	uint64_t unwritten = __atomic_load_n(&t->unwritten, __ATOMIC_RELAXED);

	s->events = __atomic_load_n(&t->events, __ATOMIC_RELAXED) -
		    __atomic_load_n(&t->overwritten, __ATOMIC_RELAXED) - unwritten;
	s->bytes = __atomic_load_n(&t->bytes, __ATOMIC_RELAXED);
	for (int k = 0; k < REC_LOST_KINDS; k++)
		s->lost[k] = __atomic_load_n(&t->lost[k], __ATOMIC_RELAXED);
	s->lost[REC_LOST_FULL] += unwritten; /* the sink could not write them */
}

static size_t rec_stats_line(char *buf, size_t size, pid_t tid, const struct rec_stats_snap *s)
{
	return rec_snprintf(buf, size,
			    "thread=%d events=%llu bytes=%llu lost_full=%llu lost_nested=%llu "
			    "lost_dead=%llu lost_depth=%llu\n",
			    (int)tid, (unsigned long long)s->events, (unsigned long long)s->bytes,
			    (unsigned long long)s->lost[REC_LOST_FULL],
			    (unsigned long long)s->lost[REC_LOST_NESTED],
			    (unsigned long long)s->lost[REC_LOST_DEAD],
			    (unsigned long long)s->lost[REC_LOST_DEPTH]);
}

static void rec_stats_name(char *buf, size_t size, const char *suffix)
{
	rec_snprintf(buf, size, "stats.%d.%llu%s", (int)rec_sess.pid,
		     (unsigned long long)rec_sess.start_ns, suffix);
}

void rec_stats_final_name(char *buf, size_t size)
{
	rec_stats_name(buf, size, "");
}

/* 0, or -1 with nothing appended (a write cut short is cut back: a line is never torn) */
static int rec_stats_append(const char *buf, size_t n)
{
	char name[96];
	int fd, ret;

	if (rec_sess.ringdirfd < 0)
		return -1;
	rec_stats_name(name, sizeof(name), ".part");
	fd = rec_open_write_kept(rec_sess.ringdirfd, name, O_APPEND);
	if (fd < 0)
		return -1;
	ret = rec_append_whole(fd, buf, n);
	close(fd);
	return ret;
}

/* the lines of the threads reaped in one pass of the flusher, written together by
 * rec_stats_reap_flush (under rec_sess.lock, as rec_stats_reap) */
static char rec_stats_batch[16384];
static size_t rec_stats_batched;

void rec_stats_reap(struct rec_thread *t)
{
	struct rec_stats_snap s;
	char buf[256];
	size_t n;

	rec_stats_take(t, &s);
	rec_sess.closed_events += s.events;
	rec_sess.closed_unwritten += t->unwritten;
	rec_sess.closed_bytes += s.bytes;
	for (int k = 0; k < REC_LOST_KINDS; k++)
		rec_sess.closed_lost[k] += s.lost[k];
	n = rec_stats_line(buf, sizeof(buf), t->tid, &s);
	if (rec_stats_batched + n > sizeof(rec_stats_batch))
		rec_stats_reap_flush();
	if (rec_stats_batched + n > sizeof(rec_stats_batch)) {
		(void)rec_stats_append(buf, n); /* the disk stays full: this line's own chance */
		return;
	}
	memcpy(rec_stats_batch + rec_stats_batched, buf, n);
	rec_stats_batched += n;
}

void rec_stats_fork_child(void)
{
	rec_stats_batched = 0;
}

void rec_stats_reap_flush(void)
{
	/* a full disk (the trace filled it; the rings are still there): the lines wait for
	 * the next pass, or for finish, which removes the rings first. Lost, they left the
	 * stats file without the threads that ended while it was full (e2e-stress
	 * tracefull/mcount: 2 of 4 thread lines, 1 run in 20) */
	if (rec_stats_batched && rec_stats_append(rec_stats_batch, rec_stats_batched) == 0)
		rec_stats_batched = 0;
}

/* rec_stats_unwritten's counts for threads whose line is written already (rec_stats_fix) */
struct rec_stats_fix {
	pid_t tid;
	uint64_t n;
};
static struct rec_stats_fix *rec_stats_fixes;
static size_t rec_stats_nfix;

void rec_stats_unwritten(pid_t tid, uint64_t n)
{
	struct rec_stats_fix *f;

	if (!n)
		return;
	for (struct rec_thread *t = rec_sess.threads; t; t = t->next)
		if (t->tid == tid) {
			/* its line is still to be written: rec_stats_take moves them */
			__atomic_fetch_add(&t->unwritten, n, __ATOMIC_RELAXED);
			return;
		}
	f = rec_mem_grow(rec_stats_fixes, (rec_stats_nfix + 1) * sizeof(*f));
	if (!f)
		return; /* no memory: the counts stay as they were */
	rec_stats_fixes = f;
	f[rec_stats_nfix].tid = tid;
	f[rec_stats_nfix].n = n;
	rec_stats_nfix++;
	rec_sess.closed_events -= n < rec_sess.closed_events ? n : rec_sess.closed_events;
	rec_sess.closed_unwritten += n;
	rec_sess.closed_lost[REC_LOST_FULL] += n;
}

/* the count rec_stats_unwritten gave for TID, 0 if none */
static uint64_t rec_stats_fix_of(pid_t tid)
{
	for (size_t i = 0; i < rec_stats_nfix; i++)
		if (rec_stats_fixes[i].tid == tid)
			return rec_stats_fixes[i].n;
	return 0;
}

/* A number after KEY= in line [p, end), or 0 when absent. */
static uint64_t rec_stats_field(const char *p, const char *end, const char *key)
{
	size_t klen = strlen(key);

	for (p++; p + klen < end; p++) /* keys after the first: a space before each */
		if (p[-1] == ' ' && !memcmp(p, key, klen) && p[klen] == '=')
			return strtoull(p + klen + 1, NULL, 10);
	return 0;
}

/* The lines of freed threads that rec_stats_unwritten corrected, rewritten in the .part file
 * (read whole: a line per thread, about 100 bytes each). */
static void rec_stats_apply_fixes(void)
{
	char part[96], tmp[104], line[256];
	struct stat st;
	struct rec_out o;
	char *m;
	int in, out;

	if (!rec_stats_nfix || rec_sess.ringdirfd < 0)
		return;
	rec_stats_name(part, sizeof(part), ".part");
	rec_stats_name(tmp, sizeof(tmp), ".part.tmp");
	in = openat(rec_sess.ringdirfd, part, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return;
	if (fstat(in, &st) < 0 || st.st_size <= 0 ||
	    (m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, in, 0)) == MAP_FAILED) {
		close(in);
		return;
	}
	close(in);
	out = rec_open_write_kept(rec_sess.ringdirfd, tmp, O_TRUNC);
	if (out >= 0) {
		rec_out_init(&o, out);
		for (char *p = m, *end = m + st.st_size; p < end;) {
			char *nl = memchr(p, '\n', (size_t)(end - p));
			char *next = nl ? nl + 1 : end;
			uint64_t fix = 0;
			if (next - p > 7 && !memcmp(p, "thread=", 7))
				fix = rec_stats_fix_of((pid_t)strtol(p + 7, NULL, 10));
			if (fix) {
				struct rec_stats_snap s;
				s.events = rec_stats_field(p, next, "events");
				s.bytes = rec_stats_field(p, next, "bytes");
				s.lost[REC_LOST_FULL] = rec_stats_field(p, next, "lost_full") + fix;
				s.lost[REC_LOST_NESTED] = rec_stats_field(p, next, "lost_nested");
				s.lost[REC_LOST_DEAD] = rec_stats_field(p, next, "lost_dead");
				s.lost[REC_LOST_DEPTH] = rec_stats_field(p, next, "lost_depth");
				s.events -= fix < s.events ? fix : s.events;
				rec_stats_line(line, sizeof(line), (pid_t)strtol(p + 7, NULL, 10),
					       &s);
				rec_out_printf(&o, "%s", line);
			} else {
				rec_out_printf(&o, "%.*s", (int)(next - p), p);
			}
			p = next;
		}
		if (rec_out_close(&o) == 0)
			renameat(rec_sess.ringdirfd, tmp, rec_sess.ringdirfd, part);
		else
			unlinkat(rec_sess.ringdirfd, tmp, 0);
	}
	munmap(m, (size_t)st.st_size);
}

void rec_stats_finish(void)
{
	struct rec_stats_snap sum, s;
	char buf[2048], part[96], name[96];
	size_t n = 0;

	rec_stats_reap_flush(); /* what a full disk kept back (the flusher has stopped) */
	rec_stats_apply_fixes();
	memset(&sum, 0, sizeof(sum));
	sum.events = rec_sess.closed_events;
	sum.bytes = rec_sess.closed_bytes;
	for (int k = 0; k < REC_LOST_KINDS; k++)
		sum.lost[k] = rec_sess.closed_lost[k];
	for (struct rec_thread *t = rec_sess.threads; t; t = t->next) {
		rec_stats_take(t, &s);
		sum.events += s.events;
		sum.bytes += s.bytes;
		for (int k = 0; k < REC_LOST_KINDS; k++)
			sum.lost[k] += s.lost[k];
		n += rec_stats_line(buf + n, sizeof(buf) - n, t->tid, &s);
		if (sizeof(buf) - n < 256) { /* a few lines at a time */
			rec_stats_append(buf, n);
			n = 0;
		}
	}
	if (n)
		rec_stats_append(buf, n);
	sum.lost[REC_LOST_DEAD] += __atomic_load_n(&rec_sess.lost_dead, __ATOMIC_RELAXED);
	n = rec_snprintf(buf, sizeof(buf),
			  "pid=%d\nppid=%d\nexe=%s\nformat=%s\nthreads=%llu\nevents=%llu\n"
			  "bytes=%llu\nlost_full=%llu\nlost_nested=%llu\nlost_dead=%llu\n"
			  "lost_depth=%llu\n",
			  (int)rec_sess.pid, (int)rec_sess.ppid, rec_sess.exe, rec_sess.sink->name,
			  (unsigned long long)rec_sess.nthreads, (unsigned long long)sum.events,
			  (unsigned long long)sum.bytes, (unsigned long long)sum.lost[REC_LOST_FULL],
			  (unsigned long long)sum.lost[REC_LOST_NESTED],
			  (unsigned long long)sum.lost[REC_LOST_DEAD],
			  (unsigned long long)sum.lost[REC_LOST_DEPTH]);
	rec_stats_append(buf, n);
	rec_stats_name(part, sizeof(part), ".part");
	rec_stats_name(name, sizeof(name), "");
	if (rec_sess.ringdirfd >= 0)
		renameat(rec_sess.ringdirfd, part, rec_sess.ringdirfd, name);
}
