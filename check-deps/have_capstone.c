/* probe: libcapstone (prologue relocation for -P on code without patchable nops) */
#include <capstone/capstone.h>
int main(void) { csh h; return cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK; }
