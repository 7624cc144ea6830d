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
 * compiler-rt's own runtime already patched (patch_premain) is first put back to its jump.
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
 */
#include "xray-rt/internal.h"
#include "xray-rt/xray_map.h"
#include "librecord/rec_tp.h"
#include "librecord/rec_util.h"
#include "formats/tfile/sink_tfile.h"

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

	memcpy(&head, p, 2);
	/* clang 14 at -O1 and above can emit a malformed sled (4-byte nops instead of the
	 * pushes, the call elsewhere): only the layout below is safe to turn on */
	if ((head != 0x0feb && head != 0x9066) || p[2] != 0x57 || p[3] != 0x56 || p[10] != 0xe8 ||
	    p[15] != 0x5e || p[16] != 0x5f)
		return -1;
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

/* Has the executable an instrumentation map, and is this copy of the runtime the one to
 * patch it? A preloaded libxray-rt.so stands down when the executable links libxray-rt.a
 * (`flightrec record` preloads it into every XRay program). Constructor time. */
int xr_should_run(void);
int xr_should_run(void)
{
	uintptr_t self = (uintptr_t)xr_should_run;

	if (xr_load() <= 0)
		return 0;
	if (xr_map.has_runtime && (self < xr_map.text_lo || self >= xr_map.text_hi)) {
		rec_debug(
			"xray-rt: the program links libxray-rt.a; the preloaded copy stands down");
		return 0;
	}
	return 1;
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

int xr_patch_all(void)
{
	uint32_t done = 0, skipped = 0;
	int tp_mode = rec_sess.sink == &tfile_sink;

	if (xr_load() <= 0)
		return -1;
	if (xr_setup_targets() < 0)
		return -1;
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
		switch (s->kind) {
		case XR_SLED_ENTRY:
			r = xr_patch_fn_sled(s, XR_T_ENTRY, 0xe8);
			break;
		case XR_SLED_EXIT:
			r = xr_patch_fn_sled(s, XR_T_EXIT, 0xe9);
			break;
		case XR_SLED_TAIL:
			r = xr_patch_fn_sled(s, XR_T_TAIL, 0xe8);
			break;
		case XR_SLED_LOG_ARGS:
			r = xr_patch_fn_sled(s, XR_T_ARGS, 0xe8);
			break;
		case XR_SLED_CUSTOM:
			r = xr_patch_custom_sled(s);
			break;
		default:
			r = -1;
			break;
		}
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
		if (s->kind == XR_SLED_CUSTOM)
			xr_store16((uint8_t *)s->addr, 0x0feb);
		else
			xr_unpatch_fn_sled(s);
		s->patched = 0;
	}
	xr_text_protect(PROT_READ | PROT_EXEC);
	xr_patched = 0;
	return 0;
}
