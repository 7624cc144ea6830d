/*
 * stub_libovni: a libovni.so.1 that records nothing. The runner links programs against it
 * (with a run path), then runs them with LD_PRELOAD or LD_LIBRARY_PATH pointing at ovni-rt:
 * if a trace appears, ovni-rt replaced the library the program was linked with, unchanged.
 */
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

struct ovni_ev;

void ovni_version_check_str(const char *v) { (void)v; }
void ovni_version_get(const char **v, const char **c) { *v = "1.14.0"; *c = "stub"; }
void ovni_proc_init(int a, const char *l, int p) { (void)a; (void)l; (void)p; }
void ovni_proc_set_rank(int r, int n) { (void)r; (void)n; }
void ovni_proc_fini(void) {}
void ovni_thread_init(pid_t t) { (void)t; }
void ovni_thread_require(const char *m, const char *v) { (void)m; (void)v; }
void ovni_thread_free(void) {}
int ovni_thread_isready(void) { return 0; }
void ovni_ev_set_mcv(struct ovni_ev *e, const char *m) { (void)e; (void)m; }
uint64_t ovni_ev_get_clock(const struct ovni_ev *e) { (void)e; return 0; }
void ovni_ev_set_clock(struct ovni_ev *e, uint64_t c) { (void)e; (void)c; }
uint64_t ovni_clock_now(void) { return 0; }
void ovni_payload_add(struct ovni_ev *e, const uint8_t *b, int s) { (void)e; (void)b; (void)s; }
int ovni_ev_size(const struct ovni_ev *e) { (void)e; return 12; }
int ovni_payload_size(const struct ovni_ev *e) { (void)e; return 0; }
void ovni_add_cpu(int i, int p) { (void)i; (void)p; }
void ovni_ev_emit(struct ovni_ev *e) { (void)e; }
void ovni_ev_jumbo_emit(struct ovni_ev *e, const uint8_t *b, uint32_t s) { (void)e; (void)b; (void)s; }
void ovni_flush(void) {}
int ovni_attr_has(const char *k) { (void)k; return 0; }
void ovni_attr_set_double(const char *k, double n) { (void)k; (void)n; }
void ovni_attr_set_boolean(const char *k, int v) { (void)k; (void)v; }
void ovni_attr_set_str(const char *k, const char *v) { (void)k; (void)v; }
void ovni_attr_set_json(const char *k, const char *j) { (void)k; (void)j; }
double ovni_attr_get_double(const char *k) { (void)k; return 0; }
int ovni_attr_get_boolean(const char *k) { (void)k; return 0; }
const char *ovni_attr_get_str(const char *k) { (void)k; return ""; }
char *ovni_attr_get_json(const char *k) { (void)k; return strdup("null"); }
void ovni_attr_flush(void) {}
void ovni_mark_type(int32_t t, long f, const char *s) { (void)t; (void)f; (void)s; }
void ovni_mark_label(int32_t t, int64_t v, const char *l) { (void)t; (void)v; (void)l; }
void ovni_mark_push(int32_t t, int64_t v) { (void)t; (void)v; }
void ovni_mark_pop(int32_t t, int64_t v) { (void)t; (void)v; }
void ovni_mark_set(int32_t t, int64_t v) { (void)t; (void)v; }
