/*
 * cli_dump: `flightrec dump` for a uftrace.data directory.
 *
 * Role: print everything a reader needs to see to debug a writer, in this order:
 *   == header               the 40 header bytes, decoded (feature and info bits named)
 *   == info                 the text sections, verbatim (plus the decoded exit status)
 *   == task.txt             verbatim
 *   == map sid-<sid>.map    per session: pid, start time, [stack], modules
 *   == records <tid>.dat    one line per record:
 *        <sec.nsec> <tid> <type> depth=<d> addr=0x<hex> [<symbol>] [payload=<n>
 *        [args=(<v>, ...) | retval=<v>]]
 *      LOST records end in "count=<n>" instead of addr, EVENT records in "id=<n>" (a
 *      read=/diff: event with its name and values after its payload size).
 *
 * The directory is opened leniently: dump prints what it can read, runs the per-thread rules
 * alongside, and if anything is broken prints the first broken rule on stderr at the end and
 * exits 1. `verify` remains the complete check (it also checks the .sym files).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "formats/common/rd_fmt.h"
#include "formats/uftrace/cli_uftrace.h"
#include "formats/uftrace/read_uftrace.h"

static void print_time(uint64_t t)
{
	char buf[RD_TIME_LEN];

	fputs(rd_time_str(t, buf), stdout);
}

static void print_bits(uint64_t mask, const char *(*name)(unsigned))
{
	const char *sep = "";

	printf("0x%" PRIx64 " (", mask);
	for (unsigned b = 0; b < 64; b++) {
		if (!(mask & (1ull << b)))
			continue;
		if (name(b))
			printf("%s%s", sep, name(b));
		else
			printf("%sbit%u", sep, b);
		sep = "|";
	}
	printf(")\n");
}

static void dump_header(const struct ufr_header *h)
{
	printf("== header\n");
	printf("  magic        %.7s\n", h->magic);
	printf("  version      %u\n", h->version);
	printf("  header_size  %u\n", h->header_size);
	printf("  endian       %u (%s)\n", h->endian, h->endian == 2 ? "big" : "little");
	printf("  elf_class    %u (%s)\n", h->elf_class, h->elf_class == 1 ? "32-bit" : "64-bit");
	printf("  feat_mask    ");
	print_bits(h->feat_mask, ufr_feat_name);
	printf("  info_mask    ");
	print_bits(h->info_mask, ufr_info_name);
	printf("  max_stack    %u\n", h->max_stack);
	if (h->unused1 || h->unused2)
		printf("  reserved     0x%x 0x%x (not zero)\n", h->unused1, h->unused2);
}

/* FILE's lines, indented; TEXT_OFF skips a binary prefix */
static void dump_text_file(const char *file, size_t text_off)
{
	struct rd_error err;
	struct rd_buf buf;
	struct rd_lines it;
	struct rd_line line;

	rd_error_clear(&err);
	if (rd_load_file(file, 64u << 20, &buf, UFR_E_IO, UFR_E_TOO_BIG, &err) < 0) {
		printf("  (%s)\n", err.msg);
		return;
	}
	if (buf.len > text_off) {
		rd_lines_init(&it, buf.data + text_off, buf.len - text_off, text_off);
		while (rd_lines_next(&it, &line)) {
			/* NUL bytes would cut the line short: show them */
			printf("  ");
			for (size_t i = 0; i < line.len; i++) {
				if (line.p[i] == '\0')
					fputs("\\0", stdout);
				else
					putchar(line.p[i]);
			}
			putchar('\n');
		}
	}
	rd_buf_free(&buf);
}

static void dump_exit_status(const struct ufr_info *info)
{
	int st = info->exit_status;

	if (!info->has_exit_status)
		return;
	if (WIFEXITED(st))
		printf("  # exit status: exited with code %d\n", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		printf("  # exit status: terminated by signal %d%s\n", WTERMSIG(st),
		       WCOREDUMP(st) ? " (core dumped)" : "");
	else
		printf("  # exit status: raw wait status %d\n", st);
}

static void dump_maps(const struct ufr_data *d)
{
	for (size_t i = 0; i < d->nr_sess; i++) {
		const struct ufr_session *s = &d->sess[i];
		const char *base = strrchr(s->map_file, '/');

		printf("== map %s\n", base ? base + 1 : s->map_file);
		printf("  session pid=%d start=", s->line->pid);
		print_time(s->line->time);
		printf(" exename=\"%s\"\n", s->line->name);
		if (!s->map_ok) {
			printf("  (unreadable)\n");
			continue;
		}
		if (s->map.has_stack)
			printf("  [stack] at 0x%" PRIx64 "\n", s->map.stack_start);
		else
			printf("  (no [stack] line)\n");
		for (size_t m = 0; m < s->map.nr; m++)
			printf("  0x%" PRIx64 "-0x%" PRIx64 " %s\n", s->map.mods[m].start,
			       s->map.mods[m].end, s->map.mods[m].path);
		for (size_t k = 0; k < s->nr_dlopens; k++)
			printf("  dlopen base=0x%" PRIx64 " %s\n", s->dlopens[k].line->base,
			       s->dlopens[k].line->name);
	}
}

static void print_record(struct ufr_data *d, const struct ufr_thread *t, const struct ufr_rec *r,
			 struct ufcli_addr_cache *cache, bool offsets)
{
	/* the fixed part of the line, built without printf (it dominated dump's time) */
	char line[160], *p = line;
	const char *name = NULL;

	if (offsets)
		printf("0x%06" PRIx64 ": ", r->offset);
	p = rd_fmt_time(p, r->time);
	*p++ = ' ';
	if (t->tid < 0)
		*p++ = '-';
	p = rd_fmt_dec(p, t->tid < 0 ? -(uint64_t)t->tid : (uint64_t)t->tid);
	*p++ = ' ';
	p = rd_fmt_str(p, ufr_rec_type_name(r->type));
	p = rd_fmt_str(p, " depth=");
	p = rd_fmt_dec(p, r->depth);
	switch (r->type) {
	case UFR_LOST:
		p = rd_fmt_dec(rd_fmt_str(p, " count="), r->addr);
		break;
	case UFR_EVENT:
		p = rd_fmt_dec(rd_fmt_str(p, " id="), r->addr);
		break;
	default:
		name = ufcli_addr_name(d, t, r, cache);
		p = rd_fmt_hex(rd_fmt_str(p, " addr=0x"), r->addr);
		if (name)
			*p++ = ' ';
		break;
	}
	fwrite_unlocked(line, 1, (size_t)(p - line), stdout);
	if (name)
		fputs_unlocked(name, stdout);
	if (r->more) {
		char vals[1024];

		printf(" payload=%zu", r->payload_len);
		/* -A/-R values, laid out by the trace's argspec */
		if ((r->type == UFR_ENTRY || r->type == UFR_EXIT) &&
		    ufr_args_format(d, t, r, vals, sizeof(vals)) == 0)
			printf(r->type == UFR_ENTRY ? " args=(%s)" : " retval=%s", vals);
		/* read= triggers' events: their name and values, as uftrace dump shows them */
		if (r->type == UFR_EVENT &&
		    ufr_event_format(r, d->info.hdr.endian == 2, vals, sizeof(vals)) == 0)
			printf(" %s", vals);
	}
	putchar_unlocked('\n');
}

/* one thread's records; the first broken rule goes to FIRST */
static void dump_thread(struct ufr_data *d, struct ufr_thread *t, struct ufr_check *ck,
			struct ufcli_addr_cache *cache, const struct cli_dump_opts *o,
			struct rd_error *first)
{
	struct ufr_dat_iter it;
	struct ufr_rec rec;
	struct rd_error ierr, cerr; /* the stream's error, the first rule broken */
	const char *base = strrchr(t->dat_file, '/');
	int r;

	printf("== records %s (%" PRId64 " bytes)%s\n", base ? base + 1 : t->dat_file, t->dat_size,
	       t->task ? "" : " (no TASK/FORK line: symbols unknown)");
	rd_error_clear(&ierr);
	rd_error_clear(&cerr);
	if (ufr_thread_open(d, t, &it, &ierr) < 0) {
		if (!rd_error_isset(first))
			*first = ierr;
		return;
	}
	ufr_thread_check_init(d, t, ck);
	memset(cache, 0, UFCLI_SYMCACHE_SLOTS * sizeof(*cache));
	while ((r = ufr_dat_next(&it, &rec, &ierr)) > 0) {
		print_record(d, t, &rec, cache, o->offsets);
		/* keep printing after a broken rule: the rest is what one wants to see */
		if (!rd_error_isset(&cerr) && ufr_check_rec(ck, &rec, t->dat_file, &cerr) < 0)
			printf("# ^ %s\n", cerr.msg);
	}
	if (r < 0)
		printf("# stopped at offset 0x%" PRIx64 ": %s\n", (uint64_t)ierr.offset, ierr.msg);
	if (!rd_error_isset(first))
		*first = rd_error_isset(&cerr) ? cerr : ierr;
	ufr_check_fini(ck);
	ufr_dat_iter_close(&it);
}

int ufcli_dump(const char *path, const struct cli_dump_opts *o)
{
	struct ufr_data *d;
	struct ufr_check *ck;
	struct ufcli_addr_cache *cache;
	struct rd_error err, first;
	char *task_file;

	/* one write per MiB rather than per 4 KiB when the lines go to a file or pipe */
	if (!isatty(STDOUT_FILENO)) {
		static char obuf[1 << 20];

		setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
	}
	rd_error_clear(&err);
	rd_error_clear(&first);
	if (ufr_open(path, UFR_OPEN_LENIENT, &d, &err) < 0) {
		rd_error_print(stderr, &err);
		return CLI_BAD_TRACE;
	}
	first = d->err;

	dump_header(&d->info.hdr);
	printf("== info\n");
	dump_text_file(d->info_file, UFR_HEADER_SIZE);
	dump_exit_status(&d->info);
	printf("== task.txt\n");
	task_file = rd_path_join(path, "task.txt");
	if (task_file)
		dump_text_file(task_file, 0);
	free(task_file);
	dump_maps(d);

	ck = malloc(sizeof(*ck));
	cache = malloc(UFCLI_SYMCACHE_SLOTS * sizeof(*cache));
	if (ck == NULL || cache == NULL) {
		free(ck);
		free(cache);
		cli_err("out of memory");
		ufr_close(d);
		return CLI_BAD_TRACE;
	}
	for (size_t i = 0; !o->headers_only && i < d->nr_threads; i++) {
		if (d->threads[i].dat_size >= 0)
			dump_thread(d, &d->threads[i], ck, cache, o, &first);
	}
	/* .dat files taskinfo does not list (uftrace ignores them; show them anyway) */
	for (size_t i = 0; !o->headers_only && i < d->nr_dat_names; i++) {
		struct ufr_thread t = { .owner = d };

		t.tid = atoi(d->dat_names[i]);
		if (ufr_find_thread(d, t.tid) != NULL)
			continue;
		t.dat_file = rd_path_join(path, d->dat_names[i]);
		if (t.dat_file == NULL)
			continue;
		t.dat_size = rd_file_size(t.dat_file);
		t.task = ufr_find_task(d, t.tid);
		dump_thread(d, &t, ck, cache, o, &first);
		free(t.dat_file);
	}
	free(ck);
	free(cache);
	fflush(stdout);
	ufr_close(d);
	if (rd_error_isset(&first)) {
		rd_error_print(stderr, &first);
		return CLI_BAD_TRACE;
	}
	return CLI_OK;
}
