/*
 * read_instrmap: XRay function ids to names, for the readers (prefix xim_): from an
 * executable's `xray_instr_map` section and its symbol table, or from llvm-xray's YAML map
 * (`- { id: N, ..., function-name: NAME, ... }`, what `llvm-xray extract` prints and what
 * flightrec writes beside a transcoded log).
 *
 * A YAML map may name the functions of several objects (xray-rt's map beside a log whose
 * shared objects had sleds: their ids carry the object id in their upper bits).
 * Ids are given as llvm-xray's InstrumentationMap gives them: walking the map's entries in
 * order, the first entry's function is id 1, and the id goes up whenever an entry's function
 * differs from the previous entry's. Written apart from xray-rt's own map decoder on purpose.
 */
#ifndef FLIGHTREC_XRAY_INSTRMAP_H
#define FLIGHTREC_XRAY_INSTRMAP_H

#include <stddef.h>
#include <stdint.h>

#include "formats/common/rd_common.h"

/* ids are (object << XIM_OBJ_SHIFT) | function: object 0 is the executable, 1 .. 15 the shared
 * objects xray-rt numbers as later compiler-rt does (an FDR record holds 28 bits of id) */
#define XIM_OBJ_SHIFT 24
#define XIM_OBJS 16

struct xim {
	char **names[XIM_OBJS]; /* by object, then by function id; NULL where none is named */
	size_t nr[XIM_OBJS];	/* function ids 0 .. nr-1 of each object (0 is never used) */
};

/* Load PATH (an ELF file or a YAML map); 0, or -1 with ERR set. */
int xim_load(const char *path, struct xim *m, struct rd_error *err);
/* the name of FID, or NULL */
const char *xim_name(const struct xim *m, uint32_t fid);
void xim_free(struct xim *m);

#endif
