/* probe: libelf can open an ELF file and read its header */
#include <gelf.h>
int main(void) { elf_version(EV_CURRENT); Elf *e = elf_memory(0, 0); GElf_Ehdr h; return e && gelf_getehdr(e, &h) ? 0 : 1; }
