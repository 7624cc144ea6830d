/*
 * read_chrome: Chrome trace event JSON reader (see read_chrome.h).
 */
#include "formats/chrome/read_chrome.h"
#include "formats/common/rd_json.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CTR_FILE_MAX (2048ull << 20)

bool ctr_sniff_file(const char *path)
{
	char buf[64];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;
	size_t i = 0;

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	while (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\t' || buf[i] == '\r')
		i++;
	if (buf[i] == '[')
		return strstr(buf + i, "\"ph\"") != NULL || buf[i + 1] == ']' || buf[i + 1] == '\n';
	return buf[i] == '{' && strstr(buf + i, "\"traceEvents\"") != NULL;
}

/* open B events of one thread */
struct ctr_thread {
	int64_t pid, tid;
	uint64_t open;
};

struct ctr_threads {
	struct ctr_thread *v;
	size_t n, cap;
};

static struct ctr_thread *ctr_thread(struct ctr_threads *t, int64_t pid, int64_t tid)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].pid == pid && t->v[i].tid == tid)
			return &t->v[i];
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		struct ctr_thread *nv = realloc(t->v, cap * sizeof(*nv));
		if (!nv)
			return NULL;
		t->v = nv;
		t->cap = cap;
	}
	t->v[t->n] = (struct ctr_thread){pid, tid, 0};
	return &t->v[t->n++];
}

static bool ctr_num(const struct ovj *ev, const char *key, double *out)
{
	const struct ovj *v = ovj_get(ev, key);

	if (!v || v->type != OVJ_NUMBER)
		return false;
	*out = v->number;
	return true;
}

int ctr_walk(const char *path, struct ctr_counts *c, ctr_event_cb cb, void *arg,
	     struct rd_error *err)
{
	struct ctr_threads th = {0};
	struct rd_buf b;
	struct ovj *root;
	const struct ovj *events;
	size_t off = 0;
	int ret = 0;

	memset(c, 0, sizeof(*c));
	if (rd_load_file(path, CTR_FILE_MAX, &b, CTR_RULE_IO, CTR_RULE_IO, err) < 0)
		return -1;
	root = ovj_parse(b.data, b.len, &off);
	rd_buf_free(&b);
	if (!root)
		return rd_error_set(err, CTR_RULE_JSON, path, (int64_t)off, "not JSON");
	events = root->type == OVJ_ARRAY ? root : ovj_get(root, "traceEvents");
	if (!events || events->type != OVJ_ARRAY) {
		ovj_free(root);
		return rd_error_set(err, CTR_RULE_JSON, path, -1,
				    "neither an object with a \"traceEvents\" array nor an array");
	}
	for (size_t i = 0; i < events->n && ret == 0; i++) {
		const struct ovj *e = events->items[i], *ph, *name;
		struct ctr_event ev = {.index = i};
		double pid = 0, tid = 0;
		struct ctr_thread *t;

		if (e->type != OVJ_OBJECT) {
			ret = rd_error_set(err, CTR_RULE_EVENT, path, -1,
					   "event %zu is not an object", i);
			break;
		}
		ph = ovj_get(e, "ph");
		if (!ph || ph->type != OVJ_STRING || strlen(ph->string) != 1) {
			ret = rd_error_set(err, CTR_RULE_EVENT, path, -1,
					   "event %zu has no one-letter \"ph\"", i);
			break;
		}
		ev.ph = ph->string[0];
		name = ovj_get(e, "name");
		ev.name = name && name->type == OVJ_STRING ? name->string : NULL;
		if (ev.ph != 'M' && !ctr_num(e, "ts", &ev.ts)) {
			ret = rd_error_set(err, CTR_RULE_EVENT, path, -1,
					   "event %zu (ph %c) has no numeric ts", i, ev.ph);
			break;
		}
		/* pid and tid may be left out (uftrace writes no tid: the pid's thread) */
		if ((ovj_get(e, "pid") && !ctr_num(e, "pid", &pid)) ||
		    (ovj_get(e, "tid") && !ctr_num(e, "tid", &tid))) {
			ret = rd_error_set(
				err, CTR_RULE_EVENT, path, -1,
				"event %zu (ph %c) has a pid or tid that is not a number", i,
				ev.ph);
			break;
		}
		if (!ovj_get(e, "tid"))
			tid = pid;
		/* converting an out-of-range double is undefined behaviour: untrusted input */
		if (!(pid > -9.0e18 && pid < 9.0e18 && tid > -9.0e18 && tid < 9.0e18)) {
			ret = rd_error_set(err, CTR_RULE_EVENT, path, -1,
					   "event %zu (ph %c) has a pid or tid out of range", i, ev.ph);
			break;
		}
		ev.pid = (int64_t)pid;
		ev.tid = (int64_t)tid;
		c->events++;
		switch (ev.ph) {
		case 'B':
		case 'E':
			t = ctr_thread(&th, ev.pid, ev.tid);
			if (!t) {
				ret = rd_error_set(err, CTR_RULE_IO, path, -1, "out of memory");
				break;
			}
			if (ev.ph == 'B') {
				t->open++;
				c->begins++;
			} else if (t->open == 0) {
				ret = rd_error_set(
					err, CTR_RULE_NEST, path, -1,
					"event %zu: an E with no open B on thread %lld/%lld", i,
					(long long)ev.pid, (long long)ev.tid);
			} else {
				t->open--;
				c->ends++;
			}
			break;
		case 'X':
			if (!ctr_num(e, "dur", &ev.dur) || ev.dur < 0)
				ret = rd_error_set(
					err, CTR_RULE_NEST, path, -1,
					"event %zu: an X without a duration of 0 or more", i);
			c->completes++;
			break;
		case 'i':
		case 'I':
			c->instants++;
			break;
		case 'M':
			c->metadata++;
			break;
		default:
			c->other++;
			break;
		}
		if (ret == 0 && cb)
			ret = cb(arg, &ev);
	}
	for (size_t i = 0; i < th.n; i++)
		c->open += th.v[i].open;
	c->threads = th.n;
	free(th.v);
	ovj_free(root);
	return ret;
}
