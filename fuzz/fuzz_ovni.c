/*
 * fuzz_ovni: the ovni trace reader (formats/ovni/read_*.c, layouts v2 and v3) through `flightrec
 * verify/dump/stats` of the trace directory, then the JSON parser alone on a replaced
 * metadata file, and every stream walked with a cursor.
 */
#include "fuzz/fuzz.h"
#include "cli/format.h"
#include "formats/ovni/read_ovni.h"

#include <string.h>

static volatile unsigned fuzz_sink; /* every payload byte is read into it */

void fuzz_target_run(const struct fuzz_template *t, const char *path, size_t f)
{
	struct ovr_trace *tr = NULL;
	struct rd_error err;
	size_t n = strlen(t->files[f]);

	fuzz_cli(&cli_format_ovni, t->root);
	if (n > 5 && !strcmp(t->files[f] + n - 5, ".json")) {
		struct rd_buf buf;
		size_t off;
		rd_error_clear(&err);
		if (rd_load_file(path, 16u << 20, &buf, 1, 2, &err) == 0) {
			struct ovj *v = ovj_parse(buf.data, buf.len, &off);
			if (v) {
				(void)ovj_dotget_string(v, "ovni.lib.version");
				ovj_free(v);
			}
			rd_buf_free(&buf);
		}
	}
	rd_error_clear(&err);
	int r = ovr_open(t->root, &tr, &err);
	fuzz_check_error(r, &err, "ovr_open");
	if (r == 0) {
		struct ovr_totals tot;
		rd_error_clear(&err);
		fuzz_check_error(ovr_verify(tr, &tot, &err), &err, "ovr_verify");
		for (size_t s = 0; s < tr->nstreams; s++) {
			struct ovr_cursor c;
			struct ovr_event ev;
			ovr_cursor_init(&c, tr, &tr->streams[s]);
			rd_error_clear(&err);
			while ((r = ovr_cursor_next(&c, &ev, &err)) > 0) {
				for (size_t i = 0; i < ev.payload_size; i++)
					fuzz_sink += ev.payload[i];
				for (size_t i = 0; ev.jumbo && i < ev.jumbo_size; i++)
					fuzz_sink += ev.jumbo[i];
			}
			fuzz_check_error(r, &err, "ovr_cursor_next");
		}
		ovr_close(tr);
	}
}
