/*
 * xray_api: compiler-rt 14's public XRay API (xray/xray_interface.h) for a program that links
 * libxray-rt.a in place of compiler-rt's runtime (or preloads libxray-rt.so with none linked):
 * its own handlers, patching on demand and the function-id utilities, with compiler-rt's
 * semantics and return codes.
 *
 * Handlers: one slot per kind (xr_api_fn for entry, exit and tail sleds, xr_api_arg1 for
 * log-args sleds, xr_api_custom for custom events), read by the trampolines
 * (xray_trampoline.S). 0 is our own recording, the "handler" a program that set none gets;
 * once the program sets one, the patched sleds call it (fid, XRayEntryType[, arg1]) and we
 * record none of those events; once it removes it, nothing is called and nothing recorded,
 * as with compiler-rt, whose removal empties the slot that its logging mode had filled. An
 * empty arg1 slot hands log-args sleds to xr_api_fn (type LOG_ARGS_ENTRY), as compiler-rt
 * does. Typed-event sleds are never patched (xray_patch.c), so no typed-event handler can
 * ever be called: its setters only say yes.
 *
 * Patching: we patch every sled at start for our own recording; compiler-rt patches none
 * unless XRAY_OPTIONS says patch_premain=true. The program's first call that changes anything
 * (a handler set or removed, a patch or unpatch) puts the sleds where compiler-rt would have
 * them: all patched with patch_premain=true, none otherwise; then the call takes effect. From
 * then on the program decides which sleds run, and our recording takes what its patched sleds
 * leave us (a slot at 0). What was recorded before stays in our log, which stays balanced
 * (exits without their entry are never written; frames left open end at exit).
 * With FLIGHTREC_FORMAT=tfile the sleds belong to the tracepoints: the API never unpatches
 * them and the patch calls fail.
 *
 * One patching call at a time (compiler-rt's ONGOING); a handler setter that must take the
 * sleds over waits for a patching call in another thread to finish. None of this is on the
 * hot path: the trampolines only load a slot.
 */
#include "xray-rt/internal.h"
#include "formats/tfile/sink_tfile.h"
#include "librecord/rec_util.h"

#include <sched.h>
#include <string.h>

#define XR_EXPORT __attribute__((visibility("default")))

/* XRayPatchingStatus */
enum { XR_NOT_INITIALIZED = 0, XR_SUCCESS = 1, XR_ONGOING = 2, XR_FAILED = 3 };

uintptr_t xr_api_fn, xr_api_arg1, xr_api_custom;
int xr_api_driven;
static uint8_t xr_patching; /* a patching call is under way */

/* what a removed handler's slot holds: called, does nothing (any arguments) */
static void xr_api_none(void)
{
}

static int xr_tp_mode(void)
{
	return rec_sess.sink == &tfile_sink;
}

static int xr_lock(void)
{
	uint8_t no = 0;
	return __atomic_compare_exchange_n(&xr_patching, &no, 1, 0, __ATOMIC_ACQ_REL,
					   __ATOMIC_ACQUIRE);
}

static void xr_unlock(void)
{
	__atomic_store_n(&xr_patching, 0, __ATOMIC_RELEASE);
}

/* the shared objects' registration (dlopen, dlclose) waits where an API call says ONGOING */
void xr_patch_lock(void)
{
	while (!xr_lock())
		sched_yield();
}

void xr_patch_unlock(void)
{
	xr_unlock();
}

/* XRAY_OPTIONS patch_premain, parsed as compiler-rt's flag parser does (default false) */
static int xr_premain(void)
{
	const char *opts = rec_getenv("XRAY_OPTIONS");
	char v[8];

	if (!opts || xr_flag(opts, "patch_premain", v, sizeof(v)) < 0)
		return 0;
	return !strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes");
}

/* The program takes XRay over (see the top): the patching lock is held. `all`: the call will
 * patch every sled anyway, nothing to undo first. */
static void xr_api_take_locked(const char *why, int all)
{
	int premain;

	if (xr_api_driven)
		return;
	premain = xr_premain();
	rec_debug("xray-rt: the program drives XRay itself (%s): its sleds are patched as "
		  "compiler-rt's would be (patch_premain=%s)%s",
		  why, premain ? "true" : "false",
		  premain || all || xr_tp_mode() ? "" : ": all unpatched for now");
	if (!premain && !all && !xr_tp_mode())
		xr_unpatch_all();
	__atomic_store_n(&xr_api_driven, 1, __ATOMIC_RELEASE);
}

static void xr_api_take(const char *why)
{
	if (__atomic_load_n(&xr_api_driven, __ATOMIC_ACQUIRE))
		return;
	while (!xr_lock())
		sched_yield();
	xr_api_take_locked(why, 0);
	xr_unlock();
}

static int xr_api_set(uintptr_t *slot, uintptr_t fn, uintptr_t none, const char *why)
{
	if (!xr_map_ready())
		return 0; /* compiler-rt: not initialized (no instrumentation map) */
	xr_api_take(why);
	__atomic_store_n(slot, fn ? fn : none, __ATOMIC_RELEASE);
	return 1;
}

/* our FDR mode's handle_arg0 (xray_log.c) stands for our recording: its slot value is 0 */
int xr_api_set_fn(uintptr_t fn)
{
	if (fn == (uintptr_t)xr_fdr_arg0)
		return xr_api_set(&xr_api_fn, 0, 0, "xray-fdr");
	return xr_api_set(&xr_api_fn, fn, (uintptr_t)xr_api_none, "__xray_set_handler");
}

/* an empty arg1 slot is compiler-rt's null: log-args sleds go to the entry handler */
int xr_api_set_arg1(uintptr_t fn)
{
	return xr_api_set(&xr_api_arg1, fn, 0, "__xray_set_handler_arg1");
}

/* Our recording on (every slot ours) or off (the slots that were ours now call nothing): our
 * FDR mode's init and finalize (xray_log.c); handlers the program set stay. */
void xr_api_ours(int on)
{
	uintptr_t *slots[] = {&xr_api_fn, &xr_api_custom};

	for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
		uintptr_t ours = 0;
		if (on)
			__atomic_store_n(slots[i], 0, __ATOMIC_RELEASE);
		else
			__atomic_compare_exchange_n(slots[i], &ours, (uintptr_t)xr_api_none, 0,
						    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	}
	if (on)
		__atomic_store_n(&xr_api_arg1, 0, __ATOMIC_RELEASE);
}

XR_EXPORT int __xray_set_handler(void (*entry)(int32_t, int))
{
	return xr_api_set_fn((uintptr_t)entry);
}

XR_EXPORT int __xray_remove_handler(void)
{
	return xr_api_set_fn(0);
}

XR_EXPORT int __xray_set_handler_arg1(void (*entry)(int32_t, int, uint64_t))
{
	return xr_api_set_arg1((uintptr_t)entry);
}

XR_EXPORT int __xray_remove_handler_arg1(void)
{
	return xr_api_set_arg1(0);
}

int xr_api_set_custom(uintptr_t fn)
{
	return xr_api_set(&xr_api_custom, fn, (uintptr_t)xr_api_none,
			  "__xray_set_customevent_handler");
}

XR_EXPORT int __xray_set_customevent_handler(void (*entry)(void *, size_t))
{
	return xr_api_set_custom((uintptr_t)entry);
}

XR_EXPORT int __xray_remove_customevent_handler(void)
{
	return __xray_set_customevent_handler(NULL);
}

/* typed-event sleds are never patched: the handler could never be called */
XR_EXPORT int __xray_set_typedevent_handler(void (*entry)(uint16_t, const void *, size_t))
{
	(void)entry;
	return xr_map_ready();
}

XR_EXPORT int __xray_remove_typedevent_handler(void)
{
	return xr_map_ready();
}

static int xr_api_patch(int enable)
{
	int r;

	if (!xr_map_ready())
		return XR_NOT_INITIALIZED;
	if (!xr_lock())
		return XR_ONGOING;
	xr_api_take_locked(enable ? "__xray_patch" : "__xray_unpatch", 1);
	if (xr_tp_mode())
		r = -1;
	else
		r = enable ? xr_patch_all() : xr_unpatch_all();
	xr_unlock();
	return r == 0 ? XR_SUCCESS : XR_FAILED;
}

XR_EXPORT int __xray_patch(void)
{
	return xr_api_patch(1);
}

XR_EXPORT int __xray_unpatch(void)
{
	return xr_api_patch(0);
}

static int xr_api_patch_function(int32_t id, int enable)
{
	int r = XR_FAILED;

	if (!xr_map_ready())
		return XR_NOT_INITIALIZED;
	if (!xr_lock())
		return XR_ONGOING;
	xr_api_take_locked(enable ? "__xray_patch_function" : "__xray_unpatch_function", 0);
	/* compiler-rt: an id out of 1 .. max is FAILED, and so is a function none of whose
	 * entry, exit or tail sleds could be patched */
	if (id > 0 && (uint32_t)id <= xr_max_fid() && !xr_tp_mode() &&
	    xr_patch_function((uint32_t)id, enable) > 0)
		r = XR_SUCCESS;
	xr_unlock();
	return r;
}

XR_EXPORT int __xray_patch_function(int32_t id)
{
	return xr_api_patch_function(id, 1);
}

XR_EXPORT int __xray_unpatch_function(int32_t id)
{
	return xr_api_patch_function(id, 0);
}

XR_EXPORT uintptr_t __xray_function_address(int32_t id)
{
	if (id <= 0 || (uint32_t)id > xr_max_fid())
		return 0;
	return xr_fn_addr((uint32_t)id);
}

XR_EXPORT size_t __xray_max_function_id(void)
{
	return xr_max_fid();
}

/* compiler-rt's explicit initialisation (for runtimes built without a preinit entry): the
 * map is loaded on first use here, nothing else to do */
XR_EXPORT void __xray_init(void)
{
	(void)xr_map_ready();
}
