/*
 * uftrace_sym: write an ELF module's functions as a uftrace 0.13 old-format .sym file.
 */
#ifndef UFTRACE_SYM_H
#define UFTRACE_SYM_H

/* Write `symname` (e.g. "prog.sym") in dirfd for the ELF file at path. 0 on success. */
int uftrace_sym_write(int dirfd, const char *path, const char *symname);

#endif
