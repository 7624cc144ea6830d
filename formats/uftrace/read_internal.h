/*
 * read_internal.h: what the uftrace reader's files share and nobody else sees.
 *
 * Role: the argument-payload sizing built from the ARG_SPEC info section (read_args.c),
 * used by the directory reader (read_uftrace.c) as the record iterator's payload callback.
 */
#ifndef FLIGHTREC_READERS_INTERNAL_H
#define FLIGHTREC_READERS_INTERNAL_H

#include "formats/uftrace/read_uftrace.h"

/* NULL only when out of memory; DIR holds the .dbg files read on first need */
struct ufr_argspecs *ufr_argspecs_build(const struct ufr_info *info, const char *dir);
void ufr_argspecs_free(struct ufr_argspecs *as);
/* a ufr_args_size_fn; CTX is the struct ufr_thread whose stream is read */
long ufr_args_size(void *ctx, const struct ufr_rec *rec, const uint8_t *p, size_t avail,
		   const char *file, struct rd_error *err);

#endif /* FLIGHTREC_READERS_INTERNAL_H */
