/*
 * read_account: what `llvm-xray account` (LLVM 14, default options) rejects in a log the
 * grammar accepts (read_xray.c), so that `flightrec verify` says ok only where account does
 * (xfr_verify, rules in read_xray.h). From llvm/tools/llvm-xray/xray-account.cpp
 * (LatencyAccountant::accountRecord, and the loop that stops at the first record it cannot
 * account) and lib/XRay/Trace.cpp (the order of the records):
 *  - records are replayed thread by thread: the threads in the iteration order of the block
 *    index, a DenseMap keyed by (pid, tid) (formats/xray/xray_order.h models it), a thread's
 *    blocks sorted by WallClock (file order when the clocks go forward and there are <= 16);
 *  - the first record with a non-zero TSC sets the base: any later record below it fails;
 *  - an entry pushes its function on the stack of its tid (tid alone is the key there); an
 *    exit or a tail exit needs a non-empty stack with its function on top, and pops it
 *    (--deduce-sibling-calls would pop down to it when it is deeper: not the default);
 *  - custom and typed events are records (the TSC rule applies); CallArguments are not.
 *  - a basic-mode log (read_xray_basic.c) has no block index: its records are replayed in
 *    file order, so the base is the file's first record's TSC.
 * One pass over the bytes, with the grammar's walk: the stacks, the threads, their first TSC
 * in file order and the lowest TSC of each thread's records (after its base, for the thread
 * that sets it); the first thread known, those minima say whether the TSC rule breaks, and
 * only then a second pass finds the first record that breaks it. Invariant: a grammar error
 * anywhere wins over an accounting error (the accounting's first is kept aside until the walk
 * ends), as when the grammar was walked on its own first; a record accounted is well formed up
 * to the point the walk reached.
 */
#include "formats/xray/read_xray.h"
#include "formats/xray/xray_order.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct acct_key {
	int32_t pid;
	int32_t tid;
	bool has_base;
	uint64_t base;	   /* its first non-zero TSC */
	uint64_t base_off; /* and where that record is */
	bool has_min;
	uint64_t min;	   /* the lowest TSC of its records (after base_off once has_base) */
	bool has_min_all;
	uint64_t min_all;  /* the lowest TSC of all its records */
};

struct acct_stack {
	int32_t tid;
	uint32_t *fid;
	size_t n, cap;
};

struct acct {
	const char *file;
	struct rd_error *err;
	struct acct_key *keys;
	size_t nkeys, capkeys;
	struct acct_stack *stacks;
	size_t nstacks, capstacks;
	size_t last_key, last_stack; /* the last found (indices: the arrays move) */
	bool failed; /* pass 1 found its first error (in err); it accounts no more */
	/* pass 2 */
	const struct acct_key *first;
	uint64_t base;
};

static bool acct_is_record(const struct xfr_rec *r)
{
	return r->kind == XFR_FUNCTION || r->kind == XFR_CUSTOM_EVENT || r->kind == XFR_TYPED_EVENT;
}

static int acct_oom(struct acct *a)
{
	return rd_error_set(a->err, XFR_RULE_IO, a->file, -1, "out of memory");
}

/* the key (pid, tid) of the record's block, added in the order of first appearance: the
 * order in which llvm-xray's index inserts them */
static struct acct_key *acct_key(struct acct *a, const struct xfr_rec *r)
{
	/* a block's records share their key: try the last one first */
	if (a->last_key < a->nkeys && a->keys[a->last_key].pid == r->pid &&
	    a->keys[a->last_key].tid == r->tid)
		return &a->keys[a->last_key];
	for (size_t i = a->nkeys; i-- > 0;)
		if (a->keys[i].pid == r->pid && a->keys[i].tid == r->tid) {
			a->last_key = i;
			return &a->keys[i];
		}
	if (a->nkeys == a->capkeys) {
		size_t cap = a->capkeys ? a->capkeys * 2 : 16;
		struct acct_key *k = realloc(a->keys, cap * sizeof(*k));

		if (!k)
			return NULL;
		a->keys = k;
		a->capkeys = cap;
	}
	memset(&a->keys[a->nkeys], 0, sizeof(a->keys[0]));
	a->keys[a->nkeys].pid = r->pid;
	a->keys[a->nkeys].tid = r->tid;
	return &a->keys[a->nkeys++];
}

static struct acct_stack *acct_stack(struct acct *a, int32_t tid)
{
	if (a->last_stack < a->nstacks && a->stacks[a->last_stack].tid == tid)
		return &a->stacks[a->last_stack];
	for (size_t i = a->nstacks; i-- > 0;)
		if (a->stacks[i].tid == tid) {
			a->last_stack = i;
			return &a->stacks[i];
		}
	if (a->nstacks == a->capstacks) {
		size_t cap = a->capstacks ? a->capstacks * 2 : 16;
		struct acct_stack *s = realloc(a->stacks, cap * sizeof(*s));

		if (!s)
			return NULL;
		a->stacks = s;
		a->capstacks = cap;
	}
	memset(&a->stacks[a->nstacks], 0, sizeof(a->stacks[0]));
	a->stacks[a->nstacks].tid = tid;
	return &a->stacks[a->nstacks++];
}

static int acct_push(struct acct *a, struct acct_stack *s, uint32_t fid)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		uint32_t *v = realloc(s->fid, cap * sizeof(*v));

		if (!v)
			return acct_oom(a);
		s->fid = v;
		s->cap = cap;
	}
	s->fid[s->n++] = fid;
	return 0;
}

static int acct_exit(struct acct *a, struct acct_stack *s, const struct xfr_rec *r)
{
	const char *what;
	size_t depth = 0;

	/* the common case first: the exit of the innermost entry */
	if (s->n && s->fid[s->n - 1] == r->fid) {
		s->n--;
		return 0;
	}
	what = xfr_fn_type_name(r->fn_type);
	if (s->n == 0)
		return rd_error_set(a->err, XFR_RULE_EXIT_EMPTY, a->file, (int64_t)r->off,
				    "%s of function %" PRIu32 " on thread %d, whose stack has no "
				    "open entry: llvm-xray account rejects the log",
				    what, r->fid, (int)r->tid);
	for (size_t i = s->n; i-- > 0;) {
		if (s->fid[i] == r->fid) {
			depth = s->n - i;
			break;
		}
	}
	if (depth)
		return rd_error_set(a->err, XFR_RULE_EXIT_MISMATCH, a->file, (int64_t)r->off,
				    "%s of function %" PRIu32 " on thread %d, whose innermost open "
				    "entry is function %" PRIu32 ": llvm-xray account rejects the "
				    "log (with --deduce-sibling-calls it would close %zu frames)",
				    what, r->fid, (int)r->tid, s->fid[s->n - 1], depth);
	return rd_error_set(a->err, XFR_RULE_EXIT_MISMATCH, a->file, (int64_t)r->off,
			    "%s of function %" PRIu32 " on thread %d, which has no open entry "
			    "of it (innermost: function %" PRIu32 "): llvm-xray account rejects "
			    "the log, even with --deduce-sibling-calls",
			    what, r->fid, (int)r->tid, s->fid[s->n - 1]);
}

/* pass 1 runs inside the grammar's walk: its first error is kept and the walk goes on, so
 * that a grammar error later in the file still wins */
static int acct_fail(struct acct *a, int ret)
{
	if (ret < 0)
		a->failed = true;
	return 0;
}

/* a record's TSC into its key's first and lowest */
static inline void acct_tsc(struct acct_key *k, const struct xfr_rec *r)
{
	if (!k->has_min_all || r->tsc < k->min_all) {
		k->has_min_all = true;
		k->min_all = r->tsc;
	}
	if (!k->has_base && r->tsc != 0) {
		k->has_base = true;
		k->base = r->tsc;
		k->base_off = r->off;
	} else if (k->has_base && (!k->has_min || r->tsc < k->min)) {
		k->has_min = true;
		k->min = r->tsc;
	}
}

/* pass 1: stacks, keys, each key's first non-zero TSC and lowest TSCs */
static int acct_pass1(void *ctx, const struct xfr_header *h, const struct xfr_rec *r)
{
	struct acct *a = ctx;
	struct acct_key *k;
	struct acct_stack *s;

	(void)h;
	if (a->failed || (r->kind != XFR_NEW_CPU && !acct_is_record(r)))
		return 0;
	k = acct_key(a, r);
	if (!k)
		return acct_fail(a, acct_oom(a));
	if (!acct_is_record(r))
		return 0;
	acct_tsc(k, r);
	if (r->kind != XFR_FUNCTION)
		return 0;
	s = acct_stack(a, r->tid);
	if (!s)
		return acct_fail(a, acct_oom(a));
	if (r->fn_type == XFR_ENTER || r->fn_type == XFR_ENTER_ARGS)
		return acct_fail(a, acct_push(a, s, r->fid));
	return acct_fail(a, acct_exit(a, s, r));
}

/* pass 1 over a run of function records of one block (xfr_walk_runs): what acct_pass1 does
 * for each, the key and the stack found once */
static int acct_pass1_run(void *ctx, const struct xfr_header *h, int32_t pid, int32_t tid,
			  uint64_t off, uint64_t tsc, const uint8_t *recs, size_t n)
{
	struct acct *a = ctx;
	struct acct_key *k;
	struct acct_stack *s;
	struct xfr_rec r;

	(void)h;
	if (a->failed)
		return 0;
	memset(&r, 0, sizeof(r));
	r.kind = XFR_FUNCTION;
	r.pid = pid;
	r.tid = tid;
	k = acct_key(a, &r);
	s = acct_stack(a, tid);
	if (!k || !s)
		return acct_fail(a, acct_oom(a));
	for (size_t i = 0; i < n; i++, recs += 8) {
		uint32_t word = rd_le32(recs);
		int ret;

		r.off = off + 8 * i;
		r.fn_type = (word >> 1) & 7;
		r.fid = word >> 4;
		r.delta = rd_le32(recs + 4);
		tsc += r.delta;
		r.tsc = tsc;
		acct_tsc(k, &r);
		if (r.fn_type == XFR_ENTER || r.fn_type == XFR_ENTER_ARGS)
			ret = acct_push(a, s, r.fid);
		else
			ret = acct_exit(a, s, &r);
		if (ret < 0)
			return acct_fail(a, ret);
	}
	return 0;
}

/* whether any record pass 2 would look at is below the base (from pass 1's minima) */
static bool acct_tsc_rule_breaks(const struct acct *a)
{
	for (size_t i = 0; i < a->nkeys; i++) {
		const struct acct_key *k = &a->keys[i];

		if (k == a->first ? k->has_min && k->min < a->base
				  : k->has_min_all && k->min_all < a->base)
			return true;
	}
	return false;
}

/* pass 2: every record replayed after the base must not be below it */
static int acct_pass2(void *ctx, const struct xfr_header *h, const struct xfr_rec *r)
{
	struct acct *a = ctx;
	const struct acct_key *f = a->first;

	(void)h;
	if (!acct_is_record(r))
		return 0;
	/* the first thread's records up to the base come before it (their TSC is 0) */
	if (r->pid == f->pid && r->tid == f->tid && r->off <= f->base_off)
		return 0;
	if (r->tsc >= a->base)
		return 0;
	return rd_error_set(a->err, XFR_RULE_TSC_ORDER, a->file, (int64_t)r->off,
			    "%s record of thread %d at TSC %" PRIu64 ", below %" PRIu64 ", the "
			    "first TSC llvm-xray account replays (thread %d's record at offset "
			    "0x%" PRIx64 ", its block index iterating that thread first): account "
			    "rejects the log",
			    r->kind == XFR_FUNCTION ? xfr_fn_type_name(r->fn_type)
						    : xfr_kind_name(r->kind),
			    (int)r->tid, r->tsc, a->base, (int)f->tid, f->base_off);
}

/* the key llvm-xray iterates first; NULL when the model does not apply (several pids) */
static const struct acct_key *acct_first(struct acct *a)
{
	const struct acct_key *first = NULL;
	int32_t *tids;
	uint32_t *scratch;

	for (size_t i = 1; i < a->nkeys; i++)
		if (a->keys[i].pid != a->keys[0].pid)
			return NULL;
	tids = malloc(a->nkeys * sizeof(*tids));
	scratch = malloc(xr_llvm_scratch_words(a->nkeys) * sizeof(*scratch));
	if (tids && scratch) {
		for (size_t i = 0; i < a->nkeys; i++)
			tids[i] = a->keys[i].tid;
		first = &a->keys[xr_llvm_first_key((uint64_t)(int64_t)a->keys[0].pid, tids,
						   a->nkeys, scratch)];
	}
	free(tids);
	free(scratch);
	return first;
}

int xfr_verify_win(struct rd_win *src, const char *file, struct xfr_header *h, struct xfr_counts *c,
		   struct rd_error *err)
{
	struct acct a;
	struct rd_error acct_err;
	struct xfr_header hd;
	int ret;

	memset(&a, 0, sizeof(a));
	rd_error_clear(&acct_err);
	a.file = file;
	a.err = &acct_err;
	ret = xfr_walk_runs(src, file, &hd, c, acct_pass1, acct_pass1_run, &a, err);
	if (ret >= 0 && h)
		*h = hd;
	if (ret >= 0 && a.failed) {
		*err = acct_err;
		ret = -1;
	}
	a.err = err;
	if (ret == 0 && a.nkeys > 0) {
		/* a basic log is replayed in file order: its first record sets the base */
		a.first = hd.type == 0 ? &a.keys[0] : acct_first(&a);
		/* a first thread without a non-zero TSC: the base would come from the next
		 * thread in the index's order, which the model does not give; not checked */
		if (a.first && a.first->has_base) {
			a.base = a.first->base;
			if (acct_tsc_rule_breaks(&a))
				ret = xfr_walk_win(src, file, NULL, NULL, acct_pass2, &a, err);
		}
	}
	for (size_t i = 0; i < a.nstacks; i++)
		free(a.stacks[i].fid);
	free(a.stacks);
	free(a.keys);
	return ret < 0 ? -1 : ret;
}

int xfr_verify_buf(const uint8_t *data, size_t len, const char *file, struct xfr_header *h,
		   struct xfr_counts *c, struct rd_error *err)
{
	struct rd_win src;

	rd_win_mem(&src, data, len);
	return xfr_verify_win(&src, file, h, c, err);
}
