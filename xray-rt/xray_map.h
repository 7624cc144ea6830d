/*
 * xray_map: the XRay instrumentation map (section `xray_instr_map`) of the executable, or of
 * a shared object built with -fxray-instrument (clang 14 gives a .so its own map, version 2
 * entries relative to themselves, so it needs no relocation, and links no runtime into it).
 *
 * Entry layout on x86_64 (32 bytes, not aligned: the section's alignment is 1):
 *   0  u64  sled address      (version >= 2: signed offset from this field's own address)
 *   8  u64  function address  (version >= 2: signed offset from this field's own address)
 *  16  u8   kind: 0 entry, 1 exit, 2 tail, 3 log-args entry, 4 custom event, 5 typed event
 *  17  u8   always_instrument
 *  18  u8   version
 *  19  13 bytes padding
 * Function ids are assigned exactly as compiler-rt's runtime and llvm-xray's
 * InstrumentationMap do: walking the map in order, the first entry's function gets id 1 and
 * the id goes up by one whenever an entry's function differs from the previous entry's (so a
 * function whose sleds are not contiguous in the map gets two ids, as in both of them).
 */
#ifndef XRAY_RT_XRAY_MAP_H
#define XRAY_RT_XRAY_MAP_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

#define XR_MAP_ENTRY_SIZE 32

enum xr_sled_kind {
	XR_SLED_ENTRY = 0,
	XR_SLED_EXIT = 1,
	XR_SLED_TAIL = 2,
	XR_SLED_LOG_ARGS = 3,
	XR_SLED_CUSTOM = 4,
	XR_SLED_TYPED = 5,
};

struct xr_sled {
	uintptr_t addr; /* run-time address of the sled */
	uintptr_t func; /* run-time address of its function */
	uint32_t id;	/* function id (1-based) */
	uint8_t kind;	/* enum xr_sled_kind */
	uint8_t version;
	uint8_t always;
	uint8_t patched;
};

/*
 * Decode `size` bytes of map found at run-time address `map_addr` (the bytes themselves are at
 * `map`, normally the same place) into out[] (room for size / 32 entries). Returns the number
 * of entries, or -1 when size is not a multiple of 32. Absolute entries (version < 2) are
 * taken as they are in memory (already relocated by the dynamic loader).
 */
long xr_map_decode(const uint8_t *map, size_t size, uintptr_t map_addr, struct xr_sled *out);

#define XR_CRT_HANDLERS 4

struct xr_map {
	struct xr_sled *sleds;
	size_t count;
	uint32_t max_id;
	uintptr_t bias;	   /* load bias of the executable */
	uintptr_t text_lo; /* lowest and highest address of its executable segments */
	uintptr_t text_hi;
	int has_runtime; /* the executable holds xray-rt itself (libxray-rt.a) */
	/* compiler-rt's XRay runtime linked in (clang's default): run-time addresses of its
	 * handler variables (__xray::XRayPatchedFunction, XRayArgLogger, XRayPatchedCustomEvent,
	 * XRayPatchedTypedEvent; 0 when not found), from the file's symbol table */
	uintptr_t crt_handler[XR_CRT_HANDLERS];
	int has_crt;
};

/* Name of a section every xray-rt object file has: found in an executable, it says the
 * runtime is linked in (and a preloaded copy must stand down). */
#define XR_MARKER_SECTION "flightrec_xray_rt"

/* Find and decode the executable's map (ELF section headers of /proc/self/exe, libelf).
 * 1 when found, 0 when the executable has none, -1 on error (said with rec_debug).
 * m->has_runtime, m->has_crt, m->crt_handler and the text bounds are set whenever the file
 * could be read (compiler-rt's variables only when the file has a symbol table). */
int xr_map_load(struct xr_map *m);

/* The map of the shared object read from `path` and loaded at `bias` (section headers of the
 * file, the entries read where they are mapped): m->sleds, count, max_id (ids local to the
 * object, from 1) and bias. 1 when found, 0 when it has none, -1 on error. */
int xr_map_load_dso(const char *path, uintptr_t bias, struct xr_map *m);

#pragma GCC visibility pop

#endif
