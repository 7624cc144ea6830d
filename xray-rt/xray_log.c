/*
 * xray_log: compiler-rt 14's logging-mode API (xray/xray_log_interface.h): the registry of
 * modes (register, select, current mode), the current implementation (__xray_set_log_impl,
 * __xray_remove_log_impl) and its lifecycle calls (init, init_mode[_bin], finalize, flushLog),
 * and the buffer iterator behind __xray_log_process_buffers, with compiler-rt's semantics and
 * status codes: a mode the program registers works exactly as under compiler-rt.
 *
 * compiler-rt's FDR mode is registered as "xray-fdr" (xray_fdrmode.c), the current mode from
 * the start when XRAY_OPTIONS says xray_mode=xray-fdr (or xray_fdr_log=true), as compiler-rt's
 * would be (else no mode is current, as in compiler-rt). Selected that way, our own recording
 * keeps the sleds (it is what a program that asks nothing gets: one log at exit). Selected by
 * the program, its handler takes the sleds, as compiler-rt's select does; initialized by the
 * program, the mode is compiler-rt's own: its buffers, options, process_buffers and one log
 * per flushLog.
 *
 * compiler-rt's basic mode is registered as "xray-basic": our recording again (same hooks),
 * written at exit as a basic log (formats/xray/sink_xray_basic.c). XRAY_OPTIONS'
 * xray_mode=xray-basic (or xray_naive_log=true) selects and initializes it at start, as
 * compiler-rt does; init parses XRAY_BASIC_OPTIONS (or the xray_naive_log_* flags) and the
 * configuration string, and creates the log; finalize turns our recording off as FDR's does.
 *
 * One lock (a mutex) around the registry and the current implementation, held while the
 * implementation's calls run, as compiler-rt's spin lock is; none of this is on the hot path.
 */
#include "xray-rt/internal.h"
#include "formats/xray/sink_xray_basic.h"
#include "librecord/rec_clock.h"
#include "librecord/rec_util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define XR_EXPORT __attribute__((visibility("default")))

/* XRayLogInitStatus, XRayLogFlushStatus, XRayLogRegisterStatus */
enum { XR_LOG_UNINITIALIZED = 0, XR_LOG_INITIALIZED = 2, XR_LOG_FINALIZED = 4 };
enum { XR_LOG_NOT_FLUSHING = 0, XR_LOG_FLUSHED = 2 };
enum { XR_REG_OK = 0, XR_REG_DUPLICATE = 1, XR_REG_NOT_FOUND = 2, XR_REG_INCOMPLETE = 3 };

/* struct XRayLogImpl and struct XRayBuffer, as the header lays them out */
struct xr_log_impl {
	int (*log_init)(size_t, size_t, void *, size_t);
	int (*log_finalize)(void);
	void (*handle_arg0)(int32_t, int);
	int (*flush_log)(void);
};

struct xr_mode {
	struct xr_mode *next;
	const char *name;
	struct xr_log_impl impl;
};

static pthread_mutex_t xr_log_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xr_mode *xr_modes; /* newest first */
static const struct xr_mode *xr_cur_mode;
static struct xr_log_impl xr_cur_impl;
static int xr_have_impl; /* compiler-rt's GlobalXRayImpl != NULL */
static int xr_log_ready;

static struct xr_buffer xr_null_iterator(struct xr_buffer b)
{
	(void)b;
	return (struct xr_buffer){NULL, 0};
}

static uintptr_t xr_buffer_iterator = (uintptr_t)xr_null_iterator;

/* --- compiler-rt's FDR mode, "xray-fdr" (xray_fdrmode.c) ------------------------------ */

/* never called: it names our recording in a handler slot (xr_api_set_fn) */
void xr_fdr_arg0(int32_t fid, int type)
{
	(void)fid;
	(void)type;
}

static struct xr_mode xr_fdr_mode = {
	.name = "xray-fdr",
	.impl = {xf_init, xf_finalize, xf_handle_arg0, xf_flush},
};

static struct xr_mode xr_prof_mode = {
	.name = "xray-profiling",
	.impl = {xp_init, xp_finalize, xp_handle_arg0, xp_flush},
};

/* --- compiler-rt's basic mode, "xray-basic": our recording, written as a basic log ------ */

static int xr_basic_status = XR_LOG_UNINITIALIZED;

/* compiler-rt's order: the defaults, XRAY_BASIC_OPTIONS (or, when it is unset or empty, the
 * deprecated xray_naive_log_* of XRAY_OPTIONS), then the configuration string given to init */
static int xr_basic_init(size_t buffer_size, size_t max_buffers, void *config, size_t size)
{
	const char *env = rec_getenv("XRAY_BASIC_OPTIONS"), *opts = rec_getenv("XRAY_OPTIONS");
	struct xb_options o;

	(void)size;
	if (xr_basic_status == XR_LOG_INITIALIZED)
		return XR_LOG_INITIALIZED; /* compiler-rt: "already initialized", and says so */
	xb_options_default(&o);
	if (env && *env)
		xb_options_parse(&o, env, NULL);
	else if (opts)
		xb_options_parse(&o, opts, "xray_naive_log_");
	if (buffer_size == 0 && max_buffers == 0 && config)
		xb_options_parse(&o, config, NULL);
	/* the log is created now (compiler-rt: at the first event), announced at verbosity=1 */
	if (rec_sess.state == REC_SESSION_ACTIVE && rec_sess.sink == &xray_sink) {
		xr_log_announce = xr_verbosity() > 0;
		xb_log_create(&o, rec_clock_g.tsc_hz, rec_clock_tsc_invariant() ? 3 : 0);
		xr_log_announce = 0;
	}
	xr_api_ours(1);
	xr_basic_status = XR_LOG_INITIALIZED;
	return XR_LOG_INITIALIZED;
}

static int xr_basic_finalize(void)
{
	if (xr_basic_status == XR_LOG_INITIALIZED)
		xr_api_ours(0);
	xr_basic_status = XR_LOG_FINALIZED;
	return XR_LOG_FINALIZED;
}

/* the records stay in the session's spools, written to the log at exit */
static int xr_basic_flush(void)
{
	return XR_LOG_FLUSHED;
}

static struct xr_mode xr_basic_mode = {
	.name = "xray-basic",
	.impl = {xr_basic_init, xr_basic_finalize, xr_fdr_arg0, xr_basic_flush},
};

static int xr_yes(const char *v)
{
	return !strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes");
}

/* XRAY_OPTIONS asks for compiler-rt's FDR mode: xray_mode=xray-fdr, or the deprecated
 * xray_fdr_log=true */
static int xr_fdr_chosen(void)
{
	const char *opts = rec_getenv("XRAY_OPTIONS");
	char v[32];

	if (!opts)
		return 0;
	if (xr_flag(opts, "xray_mode", v, sizeof(v)) == 0 && strcmp(v, "xray-fdr") == 0)
		return 1;
	return xr_flag(opts, "xray_fdr_log", v, sizeof(v)) == 0 && xr_yes(v);
}

/* ... or its basic mode: xray_mode=xray-basic, or the deprecated xray_naive_log=true */
static int xr_basic_chosen(void)
{
	const char *opts = rec_getenv("XRAY_OPTIONS");
	char v[32];

	if (!opts)
		return 0;
	if (xr_flag(opts, "xray_mode", v, sizeof(v)) == 0 && strcmp(v, "xray-basic") == 0)
		return 1;
	return xr_flag(opts, "xray_naive_log", v, sizeof(v)) == 0 && xr_yes(v);
}

/* first use, with the lock held: our mode registered, and selected (not initialized: the
 * program calls __xray_log_init_mode) when XRAY_OPTIONS chose it, as compiler-rt does */
static void xr_log_setup(void)
{
	if (xr_log_ready)
		return;
	xr_log_ready = 1;
	xr_prof_mode.next = xr_modes;
	xr_fdr_mode.next = &xr_prof_mode;
	xr_basic_mode.next = &xr_fdr_mode;
	xr_modes = &xr_basic_mode;
	if (xr_fdr_chosen()) {
		xr_cur_mode = &xr_fdr_mode;
		xr_cur_impl = xr_fdr_mode.impl;
		xr_have_impl = 1;
	} else if (xr_basic_chosen()) {
		/* compiler-rt selects and initializes basic mode at start, with
		 * XRAY_BASIC_OPTIONS */
		const char *env = rec_getenv("XRAY_BASIC_OPTIONS");
		xr_cur_mode = &xr_basic_mode;
		xr_cur_impl = xr_basic_mode.impl;
		xr_have_impl = 1;
		xr_basic_init(0, 0, (void *)(env ? env : ""), 0);
	}
}

static void xr_log_enter(void)
{
	pthread_mutex_lock(&xr_log_lock);
	xr_log_setup();
}

static void xr_log_leave(void)
{
	pthread_mutex_unlock(&xr_log_lock);
}

/* start-up, with the session active: the mode XRAY_OPTIONS chose is set up now (basic mode
 * creates its log), not at the program's first API call */
void xr_log_start(void)
{
	xr_log_enter();
	xr_log_leave();
}

static int xr_impl_complete(const struct xr_log_impl *impl)
{
	return impl->log_init && impl->log_finalize && impl->handle_arg0 && impl->flush_log;
}

XR_EXPORT int __xray_log_register_mode(const char *mode, struct xr_log_impl impl)
{
	struct xr_mode *m;

	if (!xr_impl_complete(&impl))
		return XR_REG_INCOMPLETE;
	xr_log_enter();
	for (m = xr_modes; m; m = m->next)
		if (strcmp(m->name, mode) == 0) {
			xr_log_leave();
			return XR_REG_DUPLICATE;
		}
	m = calloc(1, sizeof(*m));
	if (m && !(m->name = strdup(mode))) {
		free(m);
		m = NULL;
	}
	if (m) {
		m->impl = impl;
		m->next = xr_modes;
		xr_modes = m;
	}
	xr_log_leave();
	/* compiler-rt cannot fail here (its allocator dies instead): say the mode is missing */
	return m ? XR_REG_OK : XR_REG_NOT_FOUND;
}

XR_EXPORT int __xray_log_select_mode(const char *mode)
{
	const struct xr_mode *m;

	xr_log_enter();
	for (m = xr_modes; m; m = m->next)
		if (strcmp(m->name, mode) == 0)
			break;
	if (m) {
		xr_cur_mode = m;
		xr_cur_impl = m->impl;
		xr_have_impl = 1;
		xr_api_set_fn((uintptr_t)m->impl.handle_arg0);
	}
	xr_log_leave();
	return m ? XR_REG_OK : XR_REG_NOT_FOUND;
}

/* without the lock (finish may run in a signal handler): the mode chosen by XRAY_OPTIONS counts
 * even when the program never called the API */
int xr_log_mode_current(void)
{
	if (!__atomic_load_n(&xr_log_ready, __ATOMIC_ACQUIRE))
		return xr_fdr_chosen();
	return __atomic_load_n(&xr_have_impl, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&xr_cur_mode, __ATOMIC_ACQUIRE) != NULL;
}

XR_EXPORT const char *__xray_log_get_current_mode(void)
{
	const char *name;

	xr_log_enter();
	name = xr_cur_mode ? xr_cur_mode->name : NULL;
	xr_log_leave();
	return name;
}

/* an incomplete implementation removes the current one (and the current mode) */
XR_EXPORT void __xray_set_log_impl(struct xr_log_impl impl)
{
	xr_log_enter();
	if (!xr_impl_complete(&impl)) {
		xr_have_impl = 0;
		xr_cur_mode = NULL;
		xr_api_set_fn(0);
		xr_api_set_arg1(0);
	} else {
		xr_cur_impl = impl;
		xr_have_impl = 1;
		xr_api_set_fn((uintptr_t)impl.handle_arg0);
	}
	xr_log_leave();
}

XR_EXPORT void __xray_remove_log_impl(void)
{
	xr_log_enter();
	xr_have_impl = 0;
	xr_api_set_fn(0);
	xr_api_set_arg1(0);
	xr_log_leave();
}

XR_EXPORT int __xray_log_init(size_t buffer_size, size_t max_buffers, void *args, size_t size)
{
	int r = XR_LOG_UNINITIALIZED;

	xr_log_enter();
	if (xr_have_impl)
		r = xr_cur_impl.log_init(buffer_size, max_buffers, args, size);
	xr_log_leave();
	return r;
}

/* init_mode and init_mode_bin: only the current mode, by name, with a configuration */
static int xr_log_init_named(const char *mode, const char *config, size_t size)
{
	int r = XR_LOG_UNINITIALIZED;

	xr_log_enter();
	if (xr_have_impl && config && mode && xr_cur_mode && strcmp(xr_cur_mode->name, mode) == 0)
		r = xr_cur_impl.log_init(0, 0, (void *)config, size);
	xr_log_leave();
	return r;
}

XR_EXPORT int __xray_log_init_mode(const char *mode, const char *config)
{
	return xr_log_init_named(mode, config, 0);
}

XR_EXPORT int __xray_log_init_mode_bin(const char *mode, const char *config, size_t size)
{
	return xr_log_init_named(mode, config, size);
}

XR_EXPORT int __xray_log_finalize(void)
{
	int r = XR_LOG_UNINITIALIZED;

	xr_log_enter();
	if (xr_have_impl)
		r = xr_cur_impl.log_finalize();
	xr_log_leave();
	return r;
}

XR_EXPORT int __xray_log_flushLog(void)
{
	int r = XR_LOG_NOT_FLUSHING;

	xr_log_enter();
	if (xr_have_impl)
		r = xr_cur_impl.flush_log();
	xr_log_leave();
	return r;
}

void xr_log_set_iterator(struct xr_buffer (*it)(struct xr_buffer))
{
	__atomic_store_n(&xr_buffer_iterator, (uintptr_t)(it ? it : xr_null_iterator),
			 __ATOMIC_RELEASE);
}

XR_EXPORT void __xray_log_set_buffer_iterator(struct xr_buffer (*it)(struct xr_buffer))
{
	__atomic_store_n(&xr_buffer_iterator, (uintptr_t)it, __ATOMIC_RELEASE);
}

XR_EXPORT void __xray_log_remove_buffer_iterator(void)
{
	xr_log_set_iterator(NULL);
}

/* each buffer the current iterator gives, to `proc` with the current mode's name (compiler-rt
 * takes no lock here either: the iterator belongs to a finalized mode) */
XR_EXPORT int __xray_log_process_buffers(void (*proc)(const char *, struct xr_buffer))
{
	struct xr_buffer (*it)(struct xr_buffer);
	struct xr_buffer b;
	const char *mode;

	if (!__atomic_load_n(&xr_have_impl, __ATOMIC_ACQUIRE))
		return XR_LOG_NOT_FLUSHING;
	it = (struct xr_buffer(*)(struct xr_buffer))__atomic_load_n(&xr_buffer_iterator,
								    __ATOMIC_ACQUIRE);
	mode = xr_cur_mode ? xr_cur_mode->name : NULL;
	for (b = it((struct xr_buffer){NULL, 0}); b.data; b = it(b))
		proc(mode, b);
	return XR_LOG_FLUSHED;
}
