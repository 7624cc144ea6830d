/*
 * xray_patch: turn the executable's XRay sleds into calls to our trampolines, and back; and
 * those of the shared objects that have their own map (the section "shared objects" below).
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
#include "librecord/rec_symtab.h"
#include "librecord/rec_tp.h"
#include "librecord/rec_util.h"
#include "formats/tfile/sink_tfile.h"
#include "formats/uftrace/sink_uftrace.h"
#include "formats/xray/sink_xray.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
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

/* What the sleds in [lo, hi] call (tgt): the trampolines, or stubs on a page (*stub, mapped
 * once) within their reach. `what` names the text in the warning. */
static int xr_setup_targets_for(uintptr_t lo, uintptr_t hi, uint8_t **stub, uintptr_t tgt[],
				const char *what)
{
	uintptr_t t[XR_T_COUNT];

	xr_tramps(t);
	if (xr_all_in_reach(t, lo, hi)) {
		memcpy(tgt, t, sizeof(t));
		return 0;
	}
	if (*stub && !(xr_in_reach(lo, (uintptr_t)*stub) && xr_in_reach(hi, (uintptr_t)*stub)))
		*stub = NULL; /* a shared object loaded again elsewhere: its old page stays */
	if (!*stub) {
		uint8_t *page = xr_map_near(lo, hi);
		if (!page) {
			rec_warn(
				"xray-rt: no free page within 2 GB of %s for the trampoline stubs; "
				"its sleds are not recorded",
				what);
			return -1;
		}
		for (int i = 0; i < XR_T_COUNT; i++) {
			uint8_t *s = page + i * XR_STUB_SIZE;
			static const uint8_t jmp_rip[6] = {0xff, 0x25, 0, 0, 0, 0};
			memcpy(s, jmp_rip, sizeof(jmp_rip));
			memcpy(s + 6, &t[i], 8);
			memset(s + 14, 0xcc, 2);
		}
		if (mprotect(page, (size_t)xr_page, PROT_READ | PROT_EXEC) < 0) {
			rec_warn("xray-rt: cannot make the trampoline stubs executable:");
			munmap(page, (size_t)xr_page);
			return -1;
		}
		*stub = page;
	}
	for (int i = 0; i < XR_T_COUNT; i++)
		tgt[i] = (uintptr_t)(*stub + i * XR_STUB_SIZE);
	return 0;
}

static int xr_setup_targets(void)
{
	return xr_setup_targets_for(xr_sled_lo, xr_sled_hi, &xr_stub_page, xr_target,
				    "the program's text");
}

/* the pages from lo to hi (sled addresses) */
static int xr_protect(uintptr_t lo, uintptr_t hi, int prot)
{
	lo &= ~((uintptr_t)xr_page - 1);
	hi = (hi + (uintptr_t)xr_page - 1) & ~((uintptr_t)xr_page - 1);
	return mprotect((void *)lo, hi - lo, prot);
}

static int xr_text_protect(int prot)
{
	return xr_protect(xr_sled_lo, xr_sled_hi, prot);
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
static int xr_patch_fn_sled(struct xr_sled *s, const uintptr_t *tgt, enum xr_tramp which,
			    uint8_t opcode)
{
	uint8_t *p = (uint8_t *)s->addr;
	int32_t rel = xr_rel32(s->addr + XR_SLED_SIZE, tgt[which]);
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
static int xr_patch_custom_sled(struct xr_sled *s, const uintptr_t *tgt, int has_crt)
{
	uint8_t *p = (uint8_t *)s->addr;
	int32_t rel = xr_rel32(s->addr + 15, tgt[XR_T_CUSTOM]);
	uint16_t head;
	int32_t orig;

	memcpy(&head, p, 2);
	/* clang 14 at -O1 and above can emit a malformed sled (4-byte nops instead of the
	 * pushes, the call elsewhere): only the layout below is safe to turn on */
	if ((head != 0x0feb && head != 0x9066) || p[2] != 0x57 || p[3] != 0x56 || p[10] != 0xe8 ||
	    p[15] != 0x5e || p[16] != 0x5f)
		return -1;
	memcpy(&orig, p + 11, 4);
	if (has_crt && !xr_crt_custom && s->addr + 15 + (intptr_t)orig != tgt[XR_T_CUSTOM])
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

/* Where a sled (entry-like or exit) goes: 0 not patched, 1 to our trampolines (tgt), 2
 * elsewhere (patched by compiler-rt's runtime since we patched it). */
static int xr_sled_owner_of(uintptr_t addr, const uintptr_t *tgt)
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
		if (to == tgt[i])
			return 1;
	return 2;
}

/* the same, for a sled of the executable */
static int xr_sled_owner(uintptr_t addr)
{
	return xr_sled_owner_of(addr, xr_target);
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

static uintptr_t xr_dso_fn_addr(uint32_t fid);

uintptr_t xr_fn_addr(uint32_t fid)
{
	if (fid >> XR_OBJ_SHIFT)
		return xr_dso_fn_addr(fid);
	return xr_fid_func && fid <= xr_map.max_id ? xr_fid_func[fid] : 0;
}

/* The tfile format: the entry sleds of the tracepoints' functions call xray_tramp_tp; no
 * other sled is patched (the rest of the program runs at full speed). 0 when patched. */
static int xr_patch_tp_sled(struct xr_sled *s, const uintptr_t *tgt)
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
	return xr_patch_fn_sled(s, tgt, XR_T_TP, 0xe8);
}

/* one sled, to our trampolines; 0 when patched. One that already calls them is left as it is
 * (rewriting it would switch it off for a moment: a thread passing then would miss an event) */
static int xr_patch_sled_to(struct xr_sled *s, const uintptr_t *tgt, int has_crt)
{
	if (s->kind != XR_SLED_CUSTOM && s->kind != XR_SLED_TYPED &&
	    xr_sled_owner_of(s->addr, tgt) == 1)
		return 0;
	switch (s->kind) {
	case XR_SLED_ENTRY:
		return xr_patch_fn_sled(s, tgt, XR_T_ENTRY, 0xe8);
	case XR_SLED_EXIT:
		return xr_patch_fn_sled(s, tgt, XR_T_EXIT, 0xe9);
	case XR_SLED_TAIL:
		return xr_patch_fn_sled(s, tgt, XR_T_TAIL, 0xe8);
	case XR_SLED_LOG_ARGS:
		return xr_patch_fn_sled(s, tgt, XR_T_ARGS, 0xe8);
	case XR_SLED_CUSTOM:
		return xr_patch_custom_sled(s, tgt, has_crt);
	default:
		return -1;
	}
}

static int xr_patch_sled(struct xr_sled *s)
{
	return xr_patch_sled_to(s, xr_target, xr_map.has_crt);
}

static void xr_unpatch_sled(struct xr_sled *s)
{
	if (s->kind == XR_SLED_CUSTOM)
		xr_store16((uint8_t *)s->addr, 0x0feb);
	else
		xr_unpatch_fn_sled(s);
}

/* v[0..n) to our trampolines (tgt), or to the tracepoints' (tfile format); the text is
 * writable. How many were patched; *skipped: how many could not be. */
static uint32_t xr_patch_sleds(struct xr_sled *v, size_t n, const uintptr_t *tgt, int has_crt,
			       uint32_t *skipped)
{
	int tp_mode = rec_sess.sink == &tfile_sink;
	uint32_t done = 0;

	for (size_t i = 0; i < n; i++) {
		struct xr_sled *s = &v[i];
		int r;

		if (tp_mode) {
			r = xr_patch_tp_sled(s, tgt);
			if (r == 0) {
				s->patched = 1;
				done++;
			} else if (r < 0) {
				(*skipped)++;
			}
			continue;
		}
		r = xr_patch_sled_to(s, tgt, has_crt);
		if (r == 0) {
			s->patched = 1;
			done++;
		} else {
			(*skipped)++;
		}
	}
	return done;
}

static void xr_unpatch_sleds(struct xr_sled *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!v[i].patched)
			continue;
		xr_unpatch_sled(&v[i]);
		v[i].patched = 0;
	}
}

static void xr_dso_set_all(int enable);

int xr_patch_all(void)
{
	uint32_t done, skipped = 0;

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
	done = xr_patch_sleds(xr_map.sleds, xr_map.count, xr_target, xr_map.has_crt, &skipped);
	xr_text_protect(PROT_READ | PROT_EXEC);
	xr_patched = done;
	rec_debug("xray-rt: patched %u of %zu sleds (%u functions), %u left alone%s", done,
		  xr_map.count, xr_map.max_id, skipped,
		  xr_stub_page ? ", through a stub page" : "");
	xr_dso_set_all(1);
	return 0;
}

int xr_unpatch_all(void)
{
	if (xr_load() <= 0)
		return -1;
	if (xr_text_protect(PROT_READ | PROT_WRITE | PROT_EXEC) < 0)
		return -1;
	xr_unpatch_sleds(xr_map.sleds, xr_map.count);
	xr_text_protect(PROT_READ | PROT_EXEC);
	xr_patched = 0;
	xr_dso_set_all(0);
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

/* --- shared objects ------------------------------------------------------------------- */

/*
 * A shared object built with -fxray-instrument has its own map (clang 14 links no runtime into
 * it, and compiler-rt 14 patches only the executable's). Each one found gets an object id,
 * 1 .. XR_OBJ_MAX - 1, and its functions the ids (object << XR_OBJ_SHIFT) | (its own id), as
 * later compiler-rt numbers them (__xray_register_dso): the executable's ids stay what
 * llvm-xray reads from its map. An FDR function record has 28 bits of id, hence 15 objects.
 *
 * Found at start and after each dlopen that loaded something (xr_dso_sync, dl_iterate_phdr
 * and the file's section headers); their sleds follow the executable's global state (patched
 * by our recording at start and by __xray_patch, unpatched by __xray_unpatch). A dlclose may
 * unmap any object (the one closed and what it alone needed), so while one is under way no
 * object's sleds are written (a patch-all meanwhile is caught up when it ends), and after it
 * the objects no longer loaded are forgotten: never written again, their ids kept for the
 * records already taken. The same file loaded again gets its old id back (the same map), so
 * its functions keep their ids and names across dlclose/dlopen cycles.
 *
 * Everything here runs under the patching lock (xray_api.c), on the slow path. xr_fn_addr (the
 * flusher, decoding records) reads without a lock: an object is published once complete, its
 * function offsets never change, only its bias (one aligned store).
 */
struct xr_obj {
	char path[REC_PATH_MAX];
	uintptr_t bias;	   /* load bias (atomic: read by xr_fn_addr) */
	struct xr_map map; /* sleds of the current load, ids packed */
	uintptr_t *fn_off; /* [local id]: function address - bias, [0 .. map.max_id] */
	uintptr_t sled_lo, sled_hi;
	uintptr_t text_lo, text_hi;
	uintptr_t target[XR_T_COUNT];
	uint8_t *stub_page;
	uint32_t k; /* its object id */
	int loaded; /* mapped now: its sleds may be written */
};

static struct xr_obj *xr_objs[XR_OBJ_MAX]; /* [0]: the executable, which is xr_map */
static uint32_t xr_nobjs = 1;
static int xr_dso_on;	   /* xr_dso_start ran: this copy of the runtime records */
static int xr_dso_want;	   /* the global state: sleds to our trampolines */
static int xr_dso_closing; /* dlclose calls under way */
static int xr_dso_resync;  /* a state change waits for them to end */
static int xr_dso_full;	   /* said once: no object id left */
/* modules without a map, by load bias (not read again until a dlclose) */
static uintptr_t *xr_nomap;
static size_t xr_nnomap, xr_cnomap;

static uintptr_t xr_dso_fn_addr(uint32_t fid)
{
	uint32_t k = fid >> XR_OBJ_SHIFT, local = fid & ((1u << XR_OBJ_SHIFT) - 1);
	const struct xr_obj *o;

	if (k >= XR_OBJ_MAX)
		return 0;
	o = __atomic_load_n(&xr_objs[k], __ATOMIC_ACQUIRE);
	if (!o || local == 0 || local > o->map.max_id)
		return 0;
	return __atomic_load_n(&o->bias, __ATOMIC_RELAXED) + o->fn_off[local];
}

/* the object's sleds to the wanted state; the patching lock is held, no dlclose under way */
static void xr_dso_apply(struct xr_obj *o, int enable)
{
	uint32_t done = 0, skipped = 0;

	if (!o->loaded || !o->map.count)
		return; /* unloaded, or its map was refused (xr_dso_register) */
	if (enable &&
	    xr_setup_targets_for(o->sled_lo, o->sled_hi, &o->stub_page, o->target, o->path) < 0)
		return;
	if (xr_protect(o->sled_lo, o->sled_hi, PROT_READ | PROT_WRITE | PROT_EXEC) < 0) {
		rec_warn("xray-rt: cannot make the text of %s writable to patch its sleds:",
			 o->path);
		return;
	}
	if (enable)
		done = xr_patch_sleds(o->map.sleds, o->map.count, o->target, 0, &skipped);
	else
		xr_unpatch_sleds(o->map.sleds, o->map.count);
	xr_protect(o->sled_lo, o->sled_hi, PROT_READ | PROT_EXEC);
	if (enable)
		rec_debug("xray-rt: %s (object %u): patched %u of %zu sleds (%u functions), %u "
			  "left alone%s",
			  o->path, o->k, done, o->map.count, o->map.max_id, skipped,
			  o->stub_page ? ", through a stub page" : "");
}

/* xr_patch_all / xr_unpatch_all: the objects follow (the patching lock is held) */
static void xr_dso_set_all(int enable)
{
	xr_dso_want = enable;
	if (xr_dso_closing) {
		xr_dso_resync = 1;
		return;
	}
	for (uint32_t k = 1; k < xr_nobjs; k++)
		xr_dso_apply(xr_objs[k], enable);
}

static int xr_dso_nomap(uintptr_t bias)
{
	for (size_t i = 0; i < xr_nnomap; i++)
		if (xr_nomap[i] == bias)
			return 1;
	return 0;
}

static void xr_dso_add_nomap(uintptr_t bias)
{
	if (xr_nnomap == xr_cnomap) {
		size_t n = xr_cnomap ? 2 * xr_cnomap : 16;
		uintptr_t *v = realloc(xr_nomap, n * sizeof(*v));
		if (!v)
			return; /* read again next time */
		xr_nomap = v;
		xr_cnomap = n;
	}
	xr_nomap[xr_nnomap++] = bias;
}

/* the object loaded from `path` at `bias`, if known and loaded */
static struct xr_obj *xr_dso_find(const char *path, uintptr_t bias)
{
	for (uint32_t k = 1; k < xr_nobjs; k++)
		if (xr_objs[k]->loaded && xr_objs[k]->bias == bias &&
		    strcmp(xr_objs[k]->path, path) == 0)
			return xr_objs[k];
	return NULL;
}

/* A module with a map, just found: its object (an old one of the same file, or a new one),
 * ids packed, loaded. NULL when it cannot be recorded (said). */
static struct xr_obj *xr_dso_register(const char *path, struct dl_phdr_info *info, struct xr_map *m)
{
	struct xr_obj *o = NULL;
	uint32_t k;

	for (k = 1; k < xr_nobjs; k++) {
		struct xr_obj *old = xr_objs[k];
		if (!old->loaded && old->map.max_id == m->max_id && old->map.count == m->count &&
		    strcmp(old->path, path) == 0) {
			o = old;
			break;
		}
	}
	if (!o) {
		if (xr_nobjs == XR_OBJ_MAX) {
			if (!xr_dso_full++)
				rec_warn("xray-rt: more than %d shared objects with XRay sleds: %s "
					 "and any later one are not recorded",
					 XR_OBJ_MAX - 1, path);
			return NULL;
		}
		o = calloc(1, sizeof(*o));
		if (o)
			o->fn_off = calloc(m->max_id + 1, sizeof(*o->fn_off));
		if (!o || !o->fn_off) {
			free(o);
			rec_warn("xray-rt: no memory for the XRay map of %s: not recorded", path);
			return NULL;
		}
		k = xr_nobjs;
		o->k = k;
		rec_snprintf(o->path, sizeof(o->path), "%s", path);
		for (size_t i = 0; i < m->count; i++)
			o->fn_off[m->sleds[i].id] = m->sleds[i].func - m->bias;
	}
	free(o->map.sleds);
	o->map = *m;
	for (size_t i = 0; i < m->count; i++)
		o->map.sleds[i].id |= k << XR_OBJ_SHIFT;
	o->sled_lo = UINTPTR_MAX;
	o->sled_hi = 0;
	for (size_t i = 0; i < m->count; i++) {
		const struct xr_sled *s = &m->sleds[i];
		uintptr_t end =
			s->addr + (s->kind == XR_SLED_CUSTOM ? XR_CUSTOM_SLED_SIZE : XR_SLED_SIZE);
		o->sled_lo = s->addr < o->sled_lo ? s->addr : o->sled_lo;
		o->sled_hi = end > o->sled_hi ? end : o->sled_hi;
	}
	o->text_lo = UINTPTR_MAX;
	o->text_hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		o->text_lo = lo < o->text_lo ? lo : o->text_lo;
		o->text_hi = lo + ph->p_memsz > o->text_hi ? lo + ph->p_memsz : o->text_hi;
	}
	if (o->sled_lo < o->text_lo || o->sled_hi > o->text_hi) {
		rec_warn("xray-rt: the instrumentation map of %s names sleds outside its text: "
			 "not recorded",
			 path);
		o->map.count = 0;
	}
	__atomic_store_n(&o->bias, m->bias, __ATOMIC_RELAXED);
	o->loaded = 1;
	if (k == xr_nobjs) {
		__atomic_store_n(&xr_objs[k], o, __ATOMIC_RELEASE);
		__atomic_store_n(&xr_nobjs, xr_nobjs + 1, __ATOMIC_RELEASE);
	}
	return o;
}

struct xr_dso_scan {
	int first_seen;
	struct xr_obj *found[XR_OBJ_MAX];
	uintptr_t bias[XR_OBJ_MAX]; /* where each was found */
	size_t nfound;
};

static int xr_dso_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct xr_dso_scan *sc = arg;
	struct xr_map m;
	struct xr_obj *o;
	int r;

	(void)size;
	if (!sc->first_seen) {
		sc->first_seen = 1; /* the executable: xr_map */
		return 0;
	}
	if (!info->dlpi_name || !strchr(info->dlpi_name, '/') || xr_dso_nomap(info->dlpi_addr) ||
	    xr_dso_find(info->dlpi_name, info->dlpi_addr))
		return 0; /* the vDSO (no file: no slash), or known */
	r = xr_map_load_dso(info->dlpi_name, info->dlpi_addr, &m);
	if (r <= 0 || m.count == 0) {
		free(m.sleds);
		xr_dso_add_nomap(info->dlpi_addr);
		return 0;
	}
	o = xr_dso_register(info->dlpi_name, info, &m);
	if (!o) {
		free(m.sleds);
		xr_dso_add_nomap(info->dlpi_addr); /* said once; not read again */
	} else if (sc->nfound < XR_OBJ_MAX) {
		sc->bias[sc->nfound] = info->dlpi_addr;
		sc->found[sc->nfound++] = o;
	}
	return 0;
}

/*
 * The shared objects loaded now that have a map and are not known yet: registered, and their
 * sleds patched when the global state says so (at start: when our recording patched the
 * executable), in sc. The patching lock is held.
 */
static void xr_dso_sync_locked(struct xr_dso_scan *sc)
{
	if (xr_load() <= 0)
		return;
	dl_iterate_phdr(xr_dso_cb, sc);
	for (size_t i = 0; i < sc->nfound; i++) {
		if (xr_dso_closing)
			xr_dso_resync = 1;
		else if (xr_dso_want)
			xr_dso_apply(sc->found[i], 1);
	}
}

/* New objects' symbols are read now (rec_symtab), while they are loaded: the sinks name
 * functions by address, maybe after a dlclose, and <log>.yaml is written at finish, maybe
 * in a signal handler. Outside the patching lock: the API's calls meanwhile are not ONGOING. */
static void xr_dso_symbols(size_t nfound)
{
	if (nfound && rec_symtab_load() < 0)
		rec_debug("xray-rt: cannot read the symbols of the shared objects");
}

void xr_dso_start(void)
{
	struct xr_dso_scan sc = {0};

	xr_patch_lock();
	__atomic_store_n(&xr_dso_on, 1, __ATOMIC_RELEASE);
	xr_dso_sync_locked(&sc);
	xr_patch_unlock();
	xr_dso_symbols(sc.nfound);
	for (uint32_t k = 1; k < xr_dso_count() + 1; k++)
		uftrace_note_module(xr_objs[k]->path); /* the uftrace format: their .sym files */
}

void xr_dso_sync(const char *opened, uintptr_t opened_bias)
{
	struct xr_dso_scan sc = {0};
	int noted = 0;

	if (!__atomic_load_n(&xr_dso_on, __ATOMIC_ACQUIRE))
		return; /* not started, or this copy of the runtime stood down */
	xr_patch_lock();
	xr_dso_sync_locked(&sc);
	xr_patch_unlock();
	xr_dso_symbols(sc.nfound);
	/* the uftrace format: a DLOP line and a .sym for every new object, the library opened
	 * and those it brought along (uftrace cannot name a module its maps file lacks) */
	for (size_t i = 0; i < sc.nfound; i++) {
		uftrace_note_dlopen(sc.found[i]->path, sc.bias[i]);
		noted |= opened && sc.bias[i] == opened_bias;
	}
	if (opened && !noted)
		uftrace_note_dlopen(opened, opened_bias);
}

void xr_dso_close_begin(void)
{
	if (!__atomic_load_n(&xr_dso_on, __ATOMIC_ACQUIRE))
		return;
	xr_patch_lock();
	xr_dso_closing++;
	xr_patch_unlock();
}

static int xr_dso_present_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	const struct xr_obj *o = arg;

	(void)size;
	return info->dlpi_addr == o->bias && info->dlpi_name &&
	       strcmp(info->dlpi_name, o->path) == 0;
}

/* A dlclose returned: the objects it unmapped are forgotten; once none is under way, the
 * others catch up with the global state if it changed meanwhile. */
void xr_dso_close_end(void)
{
	if (!__atomic_load_n(&xr_dso_on, __ATOMIC_ACQUIRE))
		return;
	xr_patch_lock();
	if (xr_dso_closing)
		xr_dso_closing--;
	for (uint32_t k = 1; k < xr_nobjs; k++) {
		struct xr_obj *o = xr_objs[k];
		if (o->loaded && !dl_iterate_phdr(xr_dso_present_cb, o)) {
			o->loaded = 0; /* its text is gone: never written again */
			for (size_t i = 0; i < o->map.count; i++)
				o->map.sleds[i].patched = 0;
			rec_debug("xray-rt: %s (object %u) unloaded", o->path, k);
		}
	}
	xr_nnomap = 0; /* another module may come at one of those addresses */
	if (!xr_dso_closing && xr_dso_resync) {
		xr_dso_resync = 0;
		for (uint32_t k = 1; k < xr_nobjs; k++)
			xr_dso_apply(xr_objs[k], xr_dso_want);
	}
	xr_patch_unlock();
}

/* the shared objects with sleds found so far (loaded or not), 0 when none */
uint32_t xr_dso_count(void)
{
	return __atomic_load_n(&xr_nobjs, __ATOMIC_ACQUIRE) - 1;
}

/* any log-args sled in a map */
static int xr_map_logs_args(const struct xr_map *m)
{
	for (size_t i = 0; i < m->count; i++)
		if (m->sleds[i].kind == XR_SLED_LOG_ARGS)
			return 1;
	return 0;
}

/*
 * uftrace's -A spec of the arguments a uftrace.data written from our records carries: every
 * log-args entry's first argument is a payload (sink_uftrace), laid out by "arg1" (8 bytes,
 * shown as uftrace shows a long). "." matches every function: only the entries that have the
 * payload (the `more` bit) are read by it, and no list of names can fall short of a function
 * (a payload with no spec would make the trace unreadable). NULL when no object found so far
 * has a log-args sled, so the info of such a program is as before.
 */
const char *xr_uftrace_argspec(void)
{
	uint32_t nobjs = __atomic_load_n(&xr_nobjs, __ATOMIC_ACQUIRE);

	if (xr_map_state > 0 && xr_map_logs_args(&xr_map))
		return ".@arg1";
	for (uint32_t k = 1; k < nobjs; k++)
		if (xr_objs[k] && xr_map_logs_args(&xr_objs[k]->map))
			return ".@arg1";
	return NULL;
}

/* one function's two lines of <log>.yaml: its id, its address in its file, its name */
static int xr_map_fn(int fd, uint32_t id, uintptr_t fn, uintptr_t bias)
{
	char line[1200], name[900];
	const struct rec_module *mod;
	struct rec_sym *sym = fn ? rec_symtab_find(fn, &mod) : NULL;

	if (!sym)
		rec_snprintf(name, sizeof(name), "''");
	else
		xr_yaml_name(name, sizeof(name), rec_symtab_name(mod, sym));
	for (int kind = 0; kind < 2; kind++) {
		size_t len = rec_snprintf(
			line, sizeof(line),
			"- { id: %u, address: 0x%llX, function: 0x%llX, kind: %s, "
			"always-instrument: false, function-name: %s, version: 2 }\n",
			id, (unsigned long long)(fn - bias), (unsigned long long)(fn - bias),
			kind ? "function-exit" : "function-enter", name);
		if (rec_write_all(fd, line, len) < 0)
			return -1;
	}
	return 0;
}

/*
 * <log>.yaml beside xray-rt's own FDR log when shared objects had sleds: every function of
 * the executable and of each object, by the id its records carry, in `llvm-xray extract`'s
 * YAML (addresses relative to the function's own file), which `flightrec convert/dump` read
 * (a single ELF map cannot name an object's functions; llvm-xray 14 takes one --instr_map).
 * Finish time, maybe in a fatal-signal handler: no stdio, no allocation (the objects' symbols
 * were read when they were found).
 */
int xr_write_objects_map(const char *log)
{
	char path[REC_PATH_MAX + 16];
	uint32_t nobjs = __atomic_load_n(&xr_nobjs, __ATOMIC_ACQUIRE);
	int fd, bad;

	if (nobjs <= 1 || xr_map_state <= 0)
		return 0;
	rec_snprintf(path, sizeof(path), "%s.yaml", log);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd < 0)
		return -1;
	bad = rec_write_all(fd, "---\n", 4) < 0;
	for (uint32_t id = 1; id <= xr_map.max_id && !bad; id++)
		bad = xr_map_fn(fd, id, xr_fid_func ? xr_fid_func[id] : 0, xr_map.bias) < 0;
	for (uint32_t k = 1; k < nobjs && !bad; k++) {
		const struct xr_obj *o = xr_objs[k];
		for (uint32_t id = 1; id <= o->map.max_id && !bad; id++)
			bad = xr_map_fn(fd, (k << XR_OBJ_SHIFT) | id, o->bias + o->fn_off[id],
					o->bias) < 0;
	}
	if (!bad)
		bad = rec_write_all(fd, "...\n", 4) < 0;
	if (close(fd) < 0)
		bad = 1;
	return bad ? -1 : 0;
}
