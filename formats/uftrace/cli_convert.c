/*
 * cli_convert: `flightrec convert` for a uftrace.data directory: every thread's records, in
 * tid order, as function entries and exits (formats/common/conv.h).
 *
 * uftrace's EXIT carries the depth of the frame it ends: frames entered deeper and never
 * exited (their exits lost) end with it, and an EXIT with no frame at its depth (its entry
 * before a LOST record, or in a forked child's parent) is left out. A LOST record ends the
 * thread's open frames there: what follows it may sit at any depth. EVENT records are not
 * function calls and are skipped. The directory is read leniently, as dump and stats read
 * it: the first broken rule is printed at the end and the exit status is then 1. Values
 * recorded with -A/-R reach the writers that have a place for them (Chrome's args), written
 * as `uftrace dump --chrome` writes them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "formats/common/conv.h"
#include "formats/uftrace/cli_uftrace.h"
#include "formats/uftrace/read_uftrace.h"

/*
 * The values a record carries (-A/-R), as the members of the event's JSON args under uftrace's
 * keys ("arguments", "retval"), in VALS; NULL when it has none (or they cannot be read: the
 * call is still converted). uftrace writes its text into a 2048-byte buffer.
 */
static const char *convert_values(struct ufr_data *d, const struct ufr_thread *t,
				  const struct ufr_rec *rec, char *vals, size_t len)
{
	static char text[2048];
	int n;

	if (!rec->more || ufr_args_format_json(d, t, rec, text, sizeof(text)) < 0)
		return NULL;
	n = snprintf(vals, len, "\"%s\":\"%s\"", rec->type == UFR_ENTRY ? "arguments" : "retval",
		     text);
	return n > 0 && (size_t)n < len ? vals : NULL;
}

static int convert_thread(struct ufr_data *d, struct ufr_thread *t, struct conv_stream *cs,
			  struct ufcli_addr_cache *cache, struct rd_error *first)
{
	static unsigned depths[CONV_MAX_DEPTH];
	static char vals[2048 + 32];
	const char *args;
	struct ufr_dat_iter it;
	struct ufr_rec rec;
	struct rd_error ierr;
	size_t n = 0;
	char buf[32];
	int r;

	rd_error_clear(&ierr);
	memset(cache, 0, UFCLI_SYMCACHE_SLOTS * sizeof(*cache));
	if (ufr_thread_open(d, t, &it, &ierr) < 0) {
		if (!rd_error_isset(first))
			*first = ierr;
		return 0;
	}
	if (conv_thread(cs, t->task ? t->task->pid : t->tid, t->tid) < 0)
		goto fail;
	while ((r = ufr_dat_next(&it, &rec, &ierr)) > 0) {
		if (rec.type == UFR_ENTRY) {
			if (n < CONV_MAX_DEPTH)
				depths[n++] = rec.depth;
			args = convert_values(d, t, &rec, vals, sizeof(vals));
			if (conv_enter_args(cs, rec.time,
					    ufcli_entry_name(d, t, &rec, cache, buf, sizeof(buf)),
					    args) < 0)
				goto fail;
		} else if (rec.type == UFR_EXIT) {
			while (n && depths[n - 1] > rec.depth) {
				n--;
				if (conv_exit(cs, rec.time) < 0)
					goto fail;
			}
			if (n && depths[n - 1] == rec.depth) {
				n--;
				args = convert_values(d, t, &rec, vals, sizeof(vals));
				if (conv_exit_args(cs, rec.time, args) < 0)
					goto fail;
			}
		} else if (rec.type == UFR_LOST) {
			n = 0;
			if (conv_close_all(cs) < 0)
				goto fail;
		}
	}
	if (r < 0 && !rd_error_isset(first))
		*first = ierr;
	ufr_dat_iter_close(&it);
	return conv_close_all(cs);
fail:
	ufr_dat_iter_close(&it);
	return -1;
}

int ufcli_convert(const char *path, const struct cli_convert_opts *o,
		  struct conv_stream *cs)
{
	struct ufr_data *d;
	struct ufcli_addr_cache *cache;
	struct rd_error err, first;
	int ret = CLI_OK;

	(void)o;
	rd_error_clear(&err);
	rd_error_clear(&first);
	if (ufr_open(path, UFR_OPEN_LENIENT, &d, &err) < 0) {
		rd_error_print(stderr, &err);
		return CLI_BAD_TRACE;
	}
	cache = malloc(UFCLI_SYMCACHE_SLOTS * sizeof(*cache));
	if (!cache) {
		cli_err("convert: out of memory");
		ufr_close(d);
		return CLI_BAD_TRACE;
	}
	for (size_t i = 0; i < d->nr_threads; i++) {
		struct ufr_thread *t = d->threads_by_tid[i];
		if (t->dat_size <= 0)
			continue;
		if (convert_thread(d, t, cs, cache, &first) < 0) {
			ret = CLI_BAD_TRACE;
			break;
		}
	}
	if (rd_error_isset(&d->err) && !rd_error_isset(&first))
		first = d->err;
	if (rd_error_isset(&first)) {
		rd_error_print(stderr, &first);
		ret = CLI_BAD_TRACE;
	}
	free(cache);
	ufr_close(d);
	return ret;
}
