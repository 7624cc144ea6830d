/*
 * xray_patch: turn the executable's XRay sleds into calls to our trampolines, and back.
 *
 * Sleds (clang 14, x86_64; shared/anchors/xray.md §2.3), 2-byte aligned:
 *   entry, tail, log-args  EB 09 + 9-byte nop            -> 41 BA <id> E8 <rel32>  (call)
 *   exit                   C3 + 10-byte nop (was `ret`)  -> 41 BA <id> E9 <rel32>  (jmp)
 *   custom event (17 B)    EB 0F, push rdi, push rsi, 2 moves, E8 <__xray_CustomEvent>,
 *                          pop rsi, pop rdi              -> 66 90 (nop) + the call redirected
 * rel32 counts from the end of the sled (sled + 11; for the custom event's call, sled + 15).
 * Bytes 2..10 are written first, then bytes 0..1 with one atomic 16-bit store, so a thread
 * running through the sled sees either the old jump or the complete new code. A sled that
 * compiler-rt's own runtime already patched (patch_premain) is first put back to its jump
 * (only where compiler-rt goes unnoticed, in a stripped executable: see below).
 *
 * Reach: a call or jmp rel32 reaches +-2 GB. When the runtime is a preloaded shared object
 * the trampolines are tens of TB away from a PIE's text, so a stub page is mapped within
 * 2 GB of every sled (probing below the text with MAP_FIXED_NOREPLACE, then above it), holding
 * one `jmp *0(%rip); .quad target` per trampoline. Linked statically (libxray-rt.a) the
 * trampolines are in the executable and are called directly.
 *
 * Text pages become writable only while patching (PROT_READ|PROT_WRITE|PROT_EXEC, then back
 * to PROT_READ|PROT_EXEC), one mprotect over the pages from the lowest sled to the highest, as
 * compiler-rt does; the sleds must lie in the executable's own executable segments.
 * Typed-event sleds are left alone (llvm-xray 14 cannot load a map that has them).
 * The program's own patching calls (compiler-rt's API, xray_api.c) come here too: everything
 * (xr_patch_all, xr_unpatch_all) or one function id (xr_patch_function, one mprotect over the
 * pages of its sleds); a sled that already calls our trampolines is not rewritten.
 *
 * compiler-rt's runtime linked in as well (a stock `clang -fxray-instrument` binary, with us
 * preloaded): the program's __xray_* calls bind to compiler-rt's copies inside the executable,
 * never to ours, so the program's own use of XRay is compiler-rt's and must work as without
 * us. We never take a sled back from it:
 *  - at start, when compiler-rt has already patched the sleds (patch_premain) or a handler
 *    is installed, we stand aside for good: no session, nothing patched (said with
 *    FLIGHTREC_DEBUG);
 *  - later, the program's __xray_patch/__xray_unpatch rewrite the function sleds whole, so
 *    its calls take effect and our recording of those sleds stops. A custom-event sled's
 *    patch only flips its first two bytes, and its call we redirected stays ours: our custom
 *    trampoline hands the event to compiler-rt's __xray_CustomEvent (the sled's original
 *    target) whenever compiler-rt owns the entry sled of the event's function, so the
 *    program's custom-event handler is called as without us (xr_custom_to_crt). At the end
 *    FLIGHTREC_DEBUG says how many of our sleds compiler-rt took.
 */
#include "xray-rt/internal.h"
#include "xray-rt/xray_map.h"
#include "librecord/rec_tp.h"
#include "librecord/rec_util.h"
#include "formats/tfile/sink_tfile.h"
#include "formats/xray/sink_xray.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define XR_SLED_SIZE 11
#define XR_CUSTOM_SLED_SIZE 17
#define XR_REACH 0x7fff0000ll /* a little under 2 GB, for margin */
#define XR_STUB_SIZE 16

enum xr_tramp {
	XR_T_ENTRY,
	XR_T_EXIT,
	XR_T_TAIL,
	XR_T_ARGS,
	XR_T_CUSTOM,
	XR_T_TP,
	XR_T_COUNT,
};

static struct xr_map xr_map;
static int xr_map_state;		/* 0 not loaded, 1 loaded, -1 none or failed */
static uintptr_t *xr_fid_func;		/* function address of each id, [0 .. max_id] */
static uintptr_t xr_target[XR_T_COUNT]; /* what sleds call: trampolines or their stubs */
static uint8_t *xr_stub_page;
static long xr_page;
uint32_t xr_patched;

/* compiler-rt linked in: its __xray_CustomEvent (the custom sleds' original call target), and
 * for each custom sled we patched, its return address (sled + 15) and the address of its
 * function's entry sled, sorted by return address (read by xr_custom_to_crt) */
static void (*xr_crt_custom)(const void *, size_t);
struct xr_custom_owner {
	uintptr_t ret;
	uintptr_t entry; /* 0: no entry sled */
};
static struct xr_custom_owner *xr_customs;
static size_t xr_ncustoms;

static void xr_tramps(uintptr_t t[XR_T_COUNT])
{
	t[XR_T_ENTRY] = (uintptr_t)xray_tramp_entry;
	t[XR_T_EXIT] = (uintptr_t)xray_tramp_exit;
	t[XR_T_TAIL] = (uintptr_t)xray_tramp_tail;
	t[XR_T_ARGS] = (uintptr_t)xray_tramp_args;
	t[XR_T_CUSTOM] = (uintptr_t)xray_tramp_custom;
	t[XR_T_TP] = (uintptr_t)xray_tramp_tp;
}

static int xr_in_reach(uintptr_t from, uintptr_t to)
{
	long long d = (long long)to - (long long)from;
	return d > -XR_REACH && d < XR_REACH;
}

static uintptr_t xr_sled_lo, xr_sled_hi; /* lowest sled, end of the highest one */

static void xr_sled_span(void)
{
	xr_sled_lo = UINTPTR_MAX;
	xr_sled_hi = 0;
	for (size_t i = 0; i < xr_map.count; i++) {
		if (xr_map.sleds[i].addr < xr_sled_lo)
			xr_sled_lo = xr_map.sleds[i].addr;
		uintptr_t end = xr_map.sleds[i].addr + (xr_map.sleds[i].kind == XR_SLED_CUSTOM
								? XR_CUSTOM_SLED_SIZE
								: XR_SLED_SIZE);
		if (end > xr_sled_hi)
			xr_sled_hi = end;
	}
}

/* Does every sled reach every target from where it jumps? */
static int xr_all_in_reach(const uintptr_t t[XR_T_COUNT], uintptr_t lo, uintptr_t hi)
{
	for (int i = 0; i < XR_T_COUNT; i++)
		if (!xr_in_reach(lo, t[i]) || !xr_in_reach(hi, t[i]))
			return 0;
	return 1;
}

/* A page within reach of [lo, hi], below the text if possible (the heap grows above it). */
static uint8_t *xr_map_near(uintptr_t lo, uintptr_t hi)
{
	uintptr_t step = 0x10000, cand;
	void *p;

	for (int dir = 0; dir < 2; dir++) {
		cand = dir == 0 ? ((lo & ~(step - 1)) - step) : ((hi + step) & ~(step - 1));
		for (;;) {
			if (!xr_in_reach(hi, cand) || !xr_in_reach(lo, cand + (uintptr_t)xr_page) ||
			    cand < (uintptr_t)xr_page * 16)
				break;
			p = mmap((void *)cand, (size_t)xr_page, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (p == (void *)cand)
				return p;
			if (p != MAP_FAILED) /* a kernel before 4.17 took it as a hint */
				munmap(p, (size_t)xr_page);
			cand = dir == 0 ? cand - step : cand + step;
		}
	}
	return NULL;
}

static int xr_setup_targets(void)
{
	uintptr_t t[XR_T_COUNT], lo = xr_sled_lo, hi = xr_sled_hi;

	xr_tramps(t);
	if (xr_all_in_reach(t, lo, hi)) {
		memcpy(xr_target, t, sizeof(t));
		return 0;
	}
	if (!xr_stub_page) {
		xr_stub_page = xr_map_near(lo, hi);
		if (!xr_stub_page) {
			rec_warn("xray-rt: no free page within 2 GB of the program's text for the "
				 "trampoline stubs; recording is off");
			return -1;
		}
		for (int i = 0; i < XR_T_COUNT; i++) {
			uint8_t *s = xr_stub_page + i * XR_STUB_SIZE;
			static const uint8_t jmp_rip[6] = {0xff, 0x25, 0, 0, 0, 0};
			memcpy(s, jmp_rip, sizeof(jmp_rip));
			memcpy(s + 6, &t[i], 8);
			memset(s + 14, 0xcc, 2);
		}
		if (mprotect(xr_stub_page, (size_t)xr_page, PROT_READ | PROT_EXEC) < 0) {
			rec_warn("xray-rt: cannot make the trampoline stubs executable:");
			return -1;
		}
	}
	for (int i = 0; i < XR_T_COUNT; i++)
		xr_target[i] = (uintptr_t)(xr_stub_page + i * XR_STUB_SIZE);
	return 0;
}

static int xr_text_protect(int prot)
{
	uintptr_t lo = xr_sled_lo & ~((uintptr_t)xr_page - 1);
	uintptr_t hi = (xr_sled_hi + (uintptr_t)xr_page - 1) & ~((uintptr_t)xr_page - 1);

	return mprotect((void *)lo, hi - lo, prot);
}

static void xr_store16(uint8_t *p, uint16_t v)
{
	__atomic_store_n((uint16_t *)p, v, __ATOMIC_RELEASE);
}

static int32_t xr_rel32(uintptr_t from_end, uintptr_t to)
{
	return (int32_t)((long long)to - (long long)from_end);
}

/* entry-like and exit sleds; 0 when patched, -1 when the bytes are not a sled we know */
static int xr_patch_fn_sled(struct xr_sled *s, enum xr_tramp which, uint8_t opcode)
{
	uint8_t *p = (uint8_t *)s->addr;
	int32_t rel = xr_rel32(s->addr + XR_SLED_SIZE, xr_target[which]);
	uint16_t head;

	memcpy(&head, p, 2);
	if (head == 0xba41) {
		/* patched before us (compiler-rt's patch_premain): put the jump/ret back first */
		xr_store16(p, s->kind == XR_SLED_EXIT ? 0x2ec3 : 0x09eb);
	} else if (s->kind == XR_SLED_EXIT ? p[0] != 0xc3 : head != 0x09eb) {
		return -1;
	}
	memcpy(p + 2, &s->id, 4);
	p[6] = opcode;
	memcpy(p + 7, &rel, 4);
	xr_store16(p, 0xba41); /* mov $id, %r10d */
	return 0;
}

static int xr_unpatch_fn_sled(struct xr_sled *s)
{
	xr_store16((uint8_t *)s->addr, s->kind == XR_SLED_EXIT ? 0x2ec3 : 0x09eb);
	return 0;
}

/* custom event: the call to __xray_CustomEvent goes to our trampoline, then the jump over the
 * sled becomes a 2-byte nop */
static int xr_patch_custom_sled(struct xr_sled *s)
{
	uint8_t *p = (uint8_t *)s->addr;
	int32_t rel = xr_rel32(s->addr + 15, xr_target[XR_T_CUSTOM]);
	uint16_t head;
	int32_t orig;

	memcpy(&head, p, 2);
	/* clang 14 at -O1 and above can emit a malformed sled (4-byte nops instead of the
	 * pushes, the call elsewhere): only the layout below is safe to turn on */
	if ((head != 0x0feb && head != 0x9066) || p[2] != 0x57 || p[3] != 0x56 || p[10] != 0xe8 ||
	    p[15] != 0x5e || p[16] != 0x5f)
		return -1;
	memcpy(&orig, p + 11, 4);
	if (xr_map.has_crt && !xr_crt_custom &&
	    s->addr + 15 + (intptr_t)orig != xr_target[XR_T_CUSTOM])
		xr_crt_custom = (void (*)(const void *, size_t))(s->addr + 15 + (intptr_t)orig);
	if (head == 0x9066)
		xr_store16(p, 0x0feb);
	memcpy(p + 11, &rel, 4);
	xr_store16(p, 0x9066);
	return 0;
}

static int xr_load(void)
{
	if (xr_map_state == 0) {
		int r = xr_map_load(&xr_map);
		xr_map_state = r > 0 && xr_map.count > 0 ? 1 : -1;
		xr_page = sysconf(_SC_PAGESIZE);
		if (xr_map_state > 0) {
			xr_fid_func = calloc(xr_map.max_id + 1, sizeof(*xr_fid_func));
			for (size_t i = 0; xr_fid_func && i < xr_map.count; i++)
				xr_fid_func[xr_map.sleds[i].id] = xr_map.sleds[i].func;
			xr_sled_span();
			if (xr_sled_lo < xr_map.text_lo || xr_sled_hi > xr_map.text_hi) {
				rec_warn("xray-rt: the instrumentation map names sleds outside the "
					 "program's text; recording is off");
				xr_map_state = -1;
			}
		}
	}
	return xr_map_state;
}

/* Is compiler-rt's runtime (linked in) already in use: a handler installed, or sleds it
 * patched (patch_premain=true, done before our constructor)? What, or NULL. */
static const char *xr_crt_in_use(void)
{
	static const char *const what[XR_CRT_HANDLERS] = {
		"__xray_set_handler", "__xray_set_handler_arg1", "__xray_set_customevent_handler",
		"__xray_set_typedevent_handler"
	};

	for (int k = 0; k < XR_CRT_HANDLERS; k++)
		if (xr_map.crt_handler[k] &&
		    __atomic_load_n((const uintptr_t *)xr_map.crt_handler[k], __ATOMIC_ACQUIRE))
			return what[k];
	for (size_t i = 0; i < xr_map.count; i++) {
		const uint8_t *p = (const uint8_t *)xr_map.sleds[i].addr;
		uint16_t head;
		memcpy(&head, p, 2);
		if (xr_map.sleds[i].kind == XR_SLED_CUSTOM ? head == 0x9066 : head == 0xba41)
			return "its sleds patched (patch_premain)";
	}
	return NULL;
}

/* Has the executable an instrumentation map, and is this copy of the runtime the one to
 * patch it? A preloaded libxray-rt.so stands down when the executable links libxray-rt.a
 * (`flightrec record` preloads it into every XRay program), and when the executable's own
 * compiler-rt runtime is in use already. Constructor time. */
int xr_should_run(void);
int xr_should_run(void)
{
	uintptr_t self = (uintptr_t)xr_should_run;
	const char *why;

	if (xr_load() <= 0)
		return 0;
	/* before any session (which reads it with the rest of the configuration): the two
	 * messages below are FLIGHTREC_DEBUG's too */
	if (getenv("FLIGHTREC_DEBUG") && *getenv("FLIGHTREC_DEBUG"))
		rec_debug_enabled = 1;
	if (xr_map.has_runtime && (self < xr_map.text_lo || self >= xr_map.text_hi)) {
		rec_debug(
			"xray-rt: the program links libxray-rt.a; the preloaded copy stands down");
		return 0;
	}
	if (xr_map.has_crt && (why = xr_crt_in_use())) {
		rec_debug("xray-rt: the program uses its own XRay runtime (compiler-rt: %s); "
			  "xray-rt steps aside and records nothing, so that its handlers get every "
			  "sled",
			  why);
		return 0;
	}
	return 1;
}

static int xr_owner_cmp(const void *a, const void *b)
{
	uintptr_t x = ((const struct xr_custom_owner *)a)->ret;
	uintptr_t y = ((const struct xr_custom_owner *)b)->ret;
	return x < y ? -1 : x > y;
}

/* compiler-rt linked in: where each custom sled returns to, and its function's entry sled */
static void xr_custom_owners(void)
{
	size_t n = 0;

	if (!xr_map.has_crt || xr_customs)
		return;
	for (size_t i = 0; i < xr_map.count; i++)
		n += xr_map.sleds[i].kind == XR_SLED_CUSTOM;
	if (!n || !(xr_customs = calloc(n, sizeof(*xr_customs))))
		return;
	for (size_t i = 0; i < xr_map.count; i++) {
		const struct xr_sled *c = &xr_map.sleds[i];
		if (c->kind != XR_SLED_CUSTOM)
			continue;
		xr_customs[xr_ncustoms].ret = c->addr + 15;
		for (size_t j = 0; j < xr_map.count; j++) {
			const struct xr_sled *e = &xr_map.sleds[j];
			if (e->func == c->func &&
			    (e->kind == XR_SLED_ENTRY || e->kind == XR_SLED_LOG_ARGS)) {
				xr_customs[xr_ncustoms].entry = e->addr;
				break;
			}
		}
		xr_ncustoms++;
	}
	qsort(xr_customs, xr_ncustoms, sizeof(*xr_customs), xr_owner_cmp);
}

/* The two functions below run inside our custom-event trampoline, which saves no SSE/x87
 * register: they must not touch them either (as the hooks, xray_hooks.c). */
#pragma GCC push_options
#pragma GCC target("general-regs-only")

/* Where a sled (entry-like or exit) goes: 0 not patched, 1 to our trampolines, 2 elsewhere
 * (patched by compiler-rt's runtime since we patched it). */
static int xr_sled_owner(uintptr_t addr)
{
	const uint8_t *p = (const uint8_t *)addr;
	uintptr_t to;
	uint16_t head;
	int32_t rel;

	memcpy(&head, p, 2);
	if (head != 0xba41)
		return 0;
	memcpy(&rel, p + 7, 4);
	to = addr + XR_SLED_SIZE + (intptr_t)rel;
	for (int i = 0; i < XR_T_COUNT; i++)
		if (to == xr_target[i])
			return 1;
	return 2;
}

/*
 * A custom event reached our trampoline from the sled that returns to `ret`: is it
 * compiler-rt's (its __xray_patch took the event's function: it goes to compiler-rt's
 * __xray_CustomEvent, which calls the program's handler if one is set)? Then the function is
 * called with the event and 1 is returned. No lock, no allocation: a binary search and a
 * look at the entry sled's bytes.
 */
int xr_custom_to_crt(const void *data, size_t size, uintptr_t ret)
{
	size_t lo = 0, hi = xr_ncustoms;

	if (!xr_crt_custom)
		return 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (xr_customs[mid].ret < ret) {
			lo = mid + 1;
		} else if (xr_customs[mid].ret > ret) {
			hi = mid;
		} else {
			if (!xr_customs[mid].entry || xr_sled_owner(xr_customs[mid].entry) != 2)
				return 0;
			xr_crt_custom(data, size);
			return 1;
		}
	}
	return 0;
}

#pragma GCC pop_options

/* At the end, with FLIGHTREC_DEBUG: how many of our sleds compiler-rt's runtime took (its
 * __xray_patch or __xray_unpatch rewrote them: they no longer come to us). All of them: the
 * program drives XRay itself and its runtime writes its log; ours would be a second
 * xray-log.<program>.* holding only what came before (compiler-rt's own profiling tests count
 * those files), so none is written. */
void xr_patch_report(void)
{
	uint32_t taken = 0, ours = 0;

	if (!xr_map.has_crt || xr_map_state <= 0)
		return;
	for (size_t i = 0; i < xr_map.count; i++) {
		const struct xr_sled *s = &xr_map.sleds[i];
		if (!s->patched || s->kind == XR_SLED_CUSTOM)
			continue; /* a custom sled's call stays ours (xr_custom_to_crt) */
		ours++;
		if (xr_sled_owner(s->addr) != 1)
			taken++;
	}
	if (taken)
		rec_debug("xray-rt: the program patched or unpatched %u of our %u sleds with its "
			  "own XRay runtime (compiler-rt): from then on they, and their custom events, "
			  "were its, not recorded",
			  taken, xr_patched);
	if (taken && taken == ours)
		xr_log_dropped_why = "the program's own XRay runtime (compiler-rt) took every sled";
}

uintptr_t xr_fn_addr(uint32_t fid)
{
	return xr_fid_func && fid <= xr_map.max_id ? xr_fid_func[fid] : 0;
}

/* The tfile format: the entry sleds of the tracepoints' functions call xray_tramp_tp; no
 * other sled is patched (the rest of the program runs at full speed). 0 when patched. */
static int xr_patch_tp_sled(struct xr_sled *s)
{
	struct rec_tp *tp;

	if (s->kind != XR_SLED_ENTRY && s->kind != XR_SLED_LOG_ARGS)
		return 1;
	tp = rec_tp_find(s->func);
	if (!tp || tp->addr != s->func)
		return 1;
	/* hits are taken right after the sled: the same registers as at the function's first
	 * instruction (the sled only loads r10), and where clang's debug information starts
	 * saying where the arguments are (its location lists skip the sled) */
	tp->pc = s->addr + XR_SLED_SIZE;
	return xr_patch_fn_sled(s, XR_T_TP, 0xe8);
}

/* one sled, to our trampolines; 0 when patched. One that already calls them is left as it is
 * (rewriting it would switch it off for a moment: a thread passing then would miss an event) */
static int xr_patch_sled(struct xr_sled *s)
{
	if (s->kind != XR_SLED_CUSTOM && s->kind != XR_SLED_TYPED && xr_sled_owner(s->addr) == 1)
		return 0;
	switch (s->kind) {
	case XR_SLED_ENTRY:
		return xr_patch_fn_sled(s, XR_T_ENTRY, 0xe8);
	case XR_SLED_EXIT:
		return xr_patch_fn_sled(s, XR_T_EXIT, 0xe9);
	case XR_SLED_TAIL:
		return xr_patch_fn_sled(s, XR_T_TAIL, 0xe8);
	case XR_SLED_LOG_ARGS:
		return xr_patch_fn_sled(s, XR_T_ARGS, 0xe8);
	case XR_SLED_CUSTOM:
		return xr_patch_custom_sled(s);
	default:
		return -1;
	}
}

static void xr_unpatch_sled(struct xr_sled *s)
{
	if (s->kind == XR_SLED_CUSTOM)
		xr_store16((uint8_t *)s->addr, 0x0feb);
	else
		xr_unpatch_fn_sled(s);
}

int xr_patch_all(void)
{
	uint32_t done = 0, skipped = 0;
	int tp_mode = rec_sess.sink == &tfile_sink;

	if (xr_load() <= 0)
		return -1;
	if (xr_setup_targets() < 0)
		return -1;
	xr_custom_owners();
	if (xr_text_protect(PROT_READ | PROT_WRITE | PROT_EXEC) < 0) {
		rec_warn("xray-rt: cannot make the program's text writable to patch its sleds "
			 "(recording is off):");
		return -1;
	}
	for (size_t i = 0; i < xr_map.count; i++) {
		struct xr_sled *s = &xr_map.sleds[i];
		int r;

		if (tp_mode) {
			r = xr_patch_tp_sled(s);
			if (r == 0) {
				s->patched = 1;
				done++;
			} else if (r < 0) {
				skipped++;
			}
			continue;
		}
		r = xr_patch_sled(s);
		if (r == 0) {
			s->patched = 1;
			done++;
		} else {
			skipped++;
		}
	}
	xr_text_protect(PROT_READ | PROT_EXEC);
	xr_patched = done;
	rec_debug("xray-rt: patched %u of %zu sleds (%u functions), %u left alone%s", done,
		  xr_map.count, xr_map.max_id, skipped,
		  xr_stub_page ? ", through a stub page" : "");
	return 0;
}

int xr_unpatch_all(void)
{
	if (xr_load() <= 0)
		return -1;
	if (xr_text_protect(PROT_READ | PROT_WRITE | PROT_EXEC) < 0)
		return -1;
	for (size_t i = 0; i < xr_map.count; i++) {
		struct xr_sled *s = &xr_map.sleds[i];
		if (!s->patched)
			continue;
		xr_unpatch_sled(s);
		s->patched = 0;
	}
	xr_text_protect(PROT_READ | PROT_EXEC);
	xr_patched = 0;
	return 0;
}

/*
 * __xray_patch_function / __xray_unpatch_function: the sleds of function `id` alone, with one
 * mprotect over the pages they lie on. Returns how many of its entry, exit and tail sleds now
 * are as asked (its custom-event sleds are switched too but, as in compiler-rt, not counted),
 * -1 when the text could not be made writable or the trampolines cannot be reached.
 */
int xr_patch_function(uint32_t id, int enable)
{
	uintptr_t lo = UINTPTR_MAX, hi = 0, plo, phi;
	int done = 0;

	if (xr_load() <= 0 || (enable && xr_setup_targets() < 0))
		return -1;
	for (size_t i = 0; i < xr_map.count; i++) {
		const struct xr_sled *s = &xr_map.sleds[i];
		if (s->id != id)
			continue;
		uintptr_t end =
			s->addr + (s->kind == XR_SLED_CUSTOM ? XR_CUSTOM_SLED_SIZE : XR_SLED_SIZE);
		lo = s->addr < lo ? s->addr : lo;
		hi = end > hi ? end : hi;
	}
	if (hi == 0)
		return 0;
	plo = lo & ~((uintptr_t)xr_page - 1);
	phi = (hi + (uintptr_t)xr_page - 1) & ~((uintptr_t)xr_page - 1);
	if (mprotect((void *)plo, phi - plo, PROT_READ | PROT_WRITE | PROT_EXEC) < 0)
		return -1;
	for (size_t i = 0; i < xr_map.count; i++) {
		struct xr_sled *s = &xr_map.sleds[i];
		if (s->id != id)
			continue;
		if (enable && xr_patch_sled(s) == 0) {
			xr_patched += !s->patched;
			s->patched = 1;
			done += s->kind != XR_SLED_CUSTOM;
		} else if (!enable) {
			if (s->patched)
				xr_unpatch_sled(s);
			xr_patched -= s->patched;
			s->patched = 0;
			done += s->kind != XR_SLED_CUSTOM;
		}
	}
	mprotect((void *)plo, phi - plo, PROT_READ | PROT_EXEC);
	return done;
}

/* the map is there and valid (compiler-rt's "XRay is initialized") */
int xr_map_ready(void)
{
	return xr_load() > 0;
}

/* the highest function id (ids are 1 .. this), 0 without a map */
uint32_t xr_max_fid(void)
{
	return xr_load() > 0 ? xr_map.max_id : 0;
}
