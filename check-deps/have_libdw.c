/* probe: libdw's headers (arguments from DWARF; the library itself is dlopen'ed at run time) */
#include <dwarf.h>
#include <elfutils/libdw.h>
int main(void) { return DW_TAG_subprogram != 0x2e; }
