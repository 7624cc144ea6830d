/*
 * rec_dlcaller: calling the real dlopen on the program's behalf so that the dynamic loader still
 * takes the program's code for the caller.
 *
 * glibc's dlopen looks at its own return address to learn who called it, and searches that
 * object's DT_RUNPATH (or its DT_RPATH chain) and expands $ORIGIN in the file name relative to
 * it. A runtime that wraps dlopen (to learn of new modules) and calls the real one itself makes
 * the runtime the caller: a program whose RUNPATH names its plug-in directory then loads nothing
 * ("libx.so: cannot open shared object file"), or loads another library of the same name.
 *
 * rec_dlopen_as_caller calls the real dlopen with a return address inside the caller's object:
 * a `ret` instruction there (preferably the one of the object's _fini, which has no unwind
 * entry), below which lies the return into the runtime. The loader sees the caller's object;
 * the ret hands control back to us. Invariant: only the slow path (a dlopen) runs this, and a
 * caller whose object has no readable `ret` byte gets the plain call.
 */
#ifndef REC_DLCALLER_H
#define REC_DLCALLER_H

typedef void *(*rec_dlopen_fn)(const char *file, int mode);

/* REAL(FILE, MODE) as if called from the code at return address CALLER. */
void *rec_dlopen_as_caller(rec_dlopen_fn real, const char *file, int mode, const void *caller);

/* rec_dlopen_as_caller, and in *ADDED the link map of the module the call loaded: NULL when
 * it failed, FILE is NULL (the program's own handle), or the module was loaded already (the
 * loader's count of modules did not move). errno as the loader left it. */
struct link_map;
void *rec_dlopen_tracked(rec_dlopen_fn real, const char *file, int mode, const void *caller,
			 struct link_map **added);

/* The address rec_dlopen_as_caller would return through for CALLER, or NULL (tests). */
const void *rec_dl_ret_gadget(const void *caller);

#endif
