/*
 * mcount_args: recording function arguments and return values (uftrace's -A/-R), for the
 * -pg and -pg -mfentry hooks and for library calls through the PLT, whatever the caller's
 * flavour (uftrace 0.13 records those, and none for -finstrument-functions functions).
 *
 * FLIGHTREC_ARGUMENT and FLIGHTREC_RETVAL hold uftrace's own spec strings (mcount_argspec.h);
 * they are resolved once, at the session start, against the function symbols of the modules
 * loaded then (and the program's PLT entries, by the name of the function each calls; an
 * entry naming the module "PLT" applies to those only), into a table of address ranges built
 * and searched by the filter machinery
 * (struct mc_ftable, mcount_filter.h), each range's `mode` naming the spec list of its
 * function. When the table is not empty the filtering paths are on (mc_fconf.active), so
 * every call takes the complete hooks, which ask here only where they write an entry or an
 * exit record: without -A/-R nothing changes anywhere.
 *
 * A recorded value is written as uftrace writes it: the ENTRY (or EXIT) record with its
 * `more` bit, then the values of the spec list in order (each rounded up to 4 bytes; a string
 * as a u16 length and its bytes), padded to 8.
 *
 * Invariants (hook side): no lock, no allocation, no libc call (memcpy and friends may use
 * the vector registers, which still hold the instrumented function's arguments: this file is
 * built with -mgeneral-regs-only and reads xmm0-7 only through inline asm); memory the
 * program names (strings, stack slots) is read with one process_vm_readv system call, so an
 * unreadable address is recorded as uftrace does ("<0x...>") and never faults.
 */
#ifndef MCOUNT_ARGS_H
#define MCOUNT_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "librecord/rec_thread.h"

#pragma GCC visibility push(hidden)

/* any argument or return value to record (set once at the session start) */
extern uint32_t mc_args_on;

/* FLIGHTREC_TRIGGER's argument actions (argN, fpargN, retval, auto-args: a plain LD_PRELOAD's
 * -T) taken out into the -A/-R lists, before FLIGHTREC_ARGUMENT's and _RETVAL's entries, as
 * `flightrec record` and uftrace 0.13 put them; the rest of the list is mc_trigger_list.
 * Before mc_filter_setup. 0, or -1 with the reason in why (a list too long). */
int mc_args_split_trigger(char *why, size_t len);
/* the -A and -R lists recorded by (FLIGHTREC_ARGUMENT/_RETVAL with the triggers' argument
 * actions), as info must carry them; NULL: none */
const char *mc_args_argspec(void);
const char *mc_args_retspec(void);

/* Read FLIGHTREC_ARGUMENT, FLIGHTREC_RETVAL (and FLIGHTREC_MATCH) and resolve them against
 * the modules loaded now; turns the filtering paths on when some function has a spec. 0, or
 * -1 with the reason in why. */
int mc_args_setup(char *why, size_t len);

/*
 * The registers the entry trampolines saved (SAVE_ARGS, mcount_save_asm.h: the slow entry
 * paths of mcount and __fentry__, and the PLT hooker), in memory order: r10 rax r9 r8 rcx rdx
 * rsi rdi.
 */
enum { MC_SAVED_R10, MC_SAVED_RAX, MC_SAVED_R9, MC_SAVED_R8, MC_SAVED_RCX, MC_SAVED_RDX,
       MC_SAVED_RSI, MC_SAVED_RDI };

/*
 * The entry of function IP at uftrace depth DEPTH, with its arguments when it has an argspec:
 * REGS are the saved registers, STACK the slot of its return address (its stack arguments
 * are above). 1 when the record was written (or dropped, counted) here, 0 when the function
 * has no argument spec (the caller writes its plain record).
 */
int mc_args_entry(struct rec_thread *t, unsigned depth, uintptr_t ip, const uintptr_t *regs,
		  const uintptr_t *stack);

/* The exit of IP at TIME with its return value: RV[0] is rax, RV[-1] rdx (mcount_return's
 * pushes). 1 when written here, 0 when it has no return spec. */
int mc_args_exit(struct rec_thread *t, unsigned depth, uintptr_t ip, uint64_t time,
		 const uintptr_t *rv);

/*
 * -t, -C or a time= trigger holds a frame's entry until its exit or a descendant decides
 * (mcount_hooks.c, mc_filter_enter): the arguments are kept with it, in slot
 * D (the shadow-stack index) of a per-thread area mapped at the thread's first held entry
 * with arguments (MC_HELD_SLOT bytes a frame; a payload larger than that is not kept).
 * mc_args_write_held writes the held entry of frame D with them: 1, or 0 when it has none
 * (the caller writes the plain record).
 */
void mc_args_hold(struct rec_thread *t, unsigned d, uintptr_t ip, const uintptr_t *regs,
		  const uintptr_t *stack);
int mc_args_write_held(struct rec_thread *t, unsigned d, unsigned depth, uintptr_t ip,
		       uint64_t time);
/* the area of the exiting thread goes back */
void mc_args_thread_exit(void);

/*
 * The entry point for other hooks (PLT calls): record an ENTRY of IP at DEPTH and TIME with
 * the argument list that FLIGHTREC_ARGUMENT gives the function at IP, reading the values from
 * REGS (same layout) and STACK. Same return as mc_args_entry.
 */
int mcount_args_capture(struct rec_thread *t, unsigned depth, uintptr_t ip, uint64_t time,
			const uintptr_t *regs, const uintptr_t *stack);

/* --srcline (FLIGHTREC_SRCLINE=1) or -L (FLIGHTREC_LOC_FILTER): read the DWARF of every
 * module loaded now that has a .debug_info (but libmcount), for the source line of each of
 * its functions; nothing else (the variables read once) without them. A module that cannot be
 * read is one warning, the others go on. */
void mc_srcline_setup(void);
/* The source file (the whole path) of the function at run-time ADDR of module M, from the
 * reading above; NULL if unknown (mc_filter_locate, for -L) */
struct rec_module;
const char *mc_srcline_file(const struct rec_module *m, uintptr_t addr);

/* Once the session's directory (DIRFD) is open: the executable's DWARF-described functions
 * as uftrace's <exe>.dbg, which its readers take the argument formats from (enum names,
 * strings), and with --srcline every module's <module>.dbg (F: and L: lines: replay
 * --srcline and -L read them); nothing without DWARF specs nor --srcline */
void mc_args_started(int dirfd);

#pragma GCC visibility pop

#endif
