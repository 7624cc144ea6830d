/*
 * mcount_read: uftrace's read= trigger action (-T FUNC@read=proc/statm, page-fault, pmu-cycle,
 * pmu-cache, pmu-branch). At the entry of a function with the action, what it names is read
 * and kept with the frame; the values are written as uftrace 0.13's builtin events
 * (EVENT_ID_READ_*) right after the frame's ENTRY record, whenever that is written (a time
 * filter holds it until the exit or a descendant decides). At its exit the same is read
 * again and written, before the EXIT record, as the difference (EVENT_ID_DIFF_*), or as a
 * READ event where the entry's read failed; if the frame is not written (-t), neither are its
 * events. The kinds go in the order of uftrace's read_events[] table.
 *
 * An event is uftrace's: a 16-byte record (time, type EVENT, the `more` bit, the id in the
 * address bits), then a u16 payload size and the payload (u64 values), padded to 8.
 *
 * Invariants: only the filtering paths of the hooks call here, only for a frame whose merged
 * trigger has MC_TR_READ: a function without read= pays nothing new. No allocation and no
 * libc call but system calls through syscall(2), which touch no vector register (the hook
 * files are -mgeneral-regs-only); the program's errno is kept. Per-thread state: a slot per
 * shadow-stack depth, mapped at the thread's first read (MC_RD_SLOT bytes each), and the
 * thread's perf_event descriptors, opened at its first pmu-* read (on the slow path, as
 * uftrace opens them); where the kernel refuses one, that kind records nothing, as in uftrace,
 * and the process says so once on stderr.
 */
#ifndef MCOUNT_READ_H
#define MCOUNT_READ_H

#include <stddef.h>
#include <stdint.h>

#include "librecord/rec_thread.h"

#pragma GCC visibility push(hidden)

/* uftrace 0.13's enum uftrace_event_id, its builtin part */
enum {
	MC_EVENT_READ_PROC_STATM = 100001,
	MC_EVENT_READ_PAGE_FAULT,
	MC_EVENT_DIFF_PROC_STATM,
	MC_EVENT_DIFF_PAGE_FAULT,
	MC_EVENT_READ_PMU_CYCLE,
	MC_EVENT_DIFF_PMU_CYCLE,
	MC_EVENT_READ_PMU_CACHE,
	MC_EVENT_DIFF_PMU_CACHE,
	MC_EVENT_READ_PMU_BRANCH,
	MC_EVENT_DIFF_PMU_BRANCH,
};

/* Parse /proc/self/statm's text (N bytes at S): its first three numbers, in pages, into
 * OUT. 0, or -1 if they are not there. */
int mc_read_parse_statm(const char *s, size_t n, uint64_t out[3]);

/* the event id of kind bit K (MC_READ_*) read (diff 0) or as a difference (diff 1); the
 * payload's size in bytes into *size */
uint32_t mc_read_event_id(uint32_t k, int diff, uint16_t *size);

/* Frame D enters with read mask MASK (MC_READ_*): read now, kept with the frame. */
void mc_read_enter(struct rec_thread *t, uint32_t d, uint32_t mask);
/* Frame D's ENTRY record was just written at TIME: its READ events follow. */
void mc_read_write_entry(struct rec_thread *t, uint32_t d, uint64_t time);
/* Frame D exits at TIME: WRITE, read again and write its DIFF events now (its EXIT record
 * follows); else the frame's reading is dropped with it. */
void mc_read_exit(struct rec_thread *t, uint32_t d, uint64_t time, int write);
/* The thread ends: its slots and descriptors go. */
void mc_read_thread_exit(void);

#pragma GCC visibility pop

#endif
