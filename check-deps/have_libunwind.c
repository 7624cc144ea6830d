/* probe: libunwind local unwinding */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
int main(void) { unw_context_t c; unw_cursor_t cu; unw_getcontext(&c); return unw_init_local(&cu, &c); }
