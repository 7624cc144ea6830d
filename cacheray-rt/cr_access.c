/*
 * cr_access: the plain memory-access callbacks of ThreadSanitizer instrumentation, as clang 14
 * and gcc 12 emit them, each one READ or WRITE record (cr_access, internal.h).
 *
 *   __tsan_{read,write}N              N = 1, 2, 4, 8, 16
 *   __tsan_volatile_{read,write}N     (-mllvm -tsan-distinguish-volatile=1,
 *                                      gcc --param tsan-distinguish-volatile=1)
 *   __tsan_unaligned_{read,write}N    (clang: an access it cannot prove aligned)
 *   __tsan_unaligned_volatile_{read,write}N
 *   __tsan_{,unaligned_}read_writeN   a compound read-modify-write (clang's
 *                                      -tsan-compound-read-before-write): READ then WRITE
 *   __tsan_{read,write}_range         gcc: struct copies, packed fields, bit-field spans
 *   __tsan_{read,write}N_pc, _range_pc  the same with a caller PC (other front ends)
 *   __tsan_vptr_update, __tsan_vptr_read  the store / load of a C++ object's vtable pointer
 *   __tsan_func_entry/exit, __tsan_ignore_thread_begin/end  nothing to record
 *
 * The UNALIGNED flag says what happened: the address is not a multiple of the access's size.
 * Cacheray flags every __tsan_unaligned_* call instead, which is what clang could not prove;
 * gcc reports the same packed fields through __tsan_{read,write}_range of 2, 4, 8 or 16 bytes.
 * With the flag taken from the address, both compilers give the same records for the same
 * accesses (a packed field that happens to sit aligned is an aligned access). Ranges longer
 * than CR_SIZE_MAX (255,
 * the u8 size field) are cut into pieces that end on 64-byte boundaries, so that no cache line
 * is counted twice for one range; an empty range records nothing.
 */
#include "cacheray-rt/internal.h"

/* --- ranges -------------------------------------------------------------------------------- */

void cr_range(unsigned tag, uintptr_t addr, size_t n)
{
	if (n == 0)
		return;
	if (n <= CR_SIZE_MAX) {
		unsigned flag = 0;
		if (n >= 2 && n <= 16 && (n & (n - 1)) == 0)
			flag = cr_misaligned(addr, (unsigned)n);
		cr_access(tag | flag, addr, (unsigned)n);
		return;
	}
	while (n) {
		size_t piece = cr_range_piece(addr, n);
		cr_access(tag, addr, (unsigned)piece);
		addr += piece;
		n -= piece;
	}
}

CR_EXPORT void __tsan_read_range(void *addr, unsigned long size)
{
	cr_range(CR_READ, (uintptr_t)addr, size);
}

CR_EXPORT void __tsan_write_range(void *addr, unsigned long size)
{
	cr_range(CR_WRITE, (uintptr_t)addr, size);
}

CR_EXPORT void __tsan_read_range_pc(void *addr, unsigned long size, void *pc)
{
	(void)pc;
	cr_range(CR_READ, (uintptr_t)addr, size);
}

CR_EXPORT void __tsan_write_range_pc(void *addr, unsigned long size, void *pc)
{
	(void)pc;
	cr_range(CR_WRITE, (uintptr_t)addr, size);
}

/* --- fixed-size accesses ------------------------------------------------------------------- */

#define CR_SIZED(N)                                                                                \
	CR_EXPORT void __tsan_read##N(void *a)                                                     \
	{                                                                                          \
		cr_access(CR_READ | cr_misaligned((uintptr_t)a, N), (uintptr_t)a, N);              \
	}                                                                                          \
	CR_EXPORT void __tsan_write##N(void *a)                                                    \
	{                                                                                          \
		cr_access(CR_WRITE | cr_misaligned((uintptr_t)a, N), (uintptr_t)a, N);             \
	}                                                                                          \
	CR_EXPORT void __tsan_read##N##_pc(void *a, void *pc)                                      \
	{                                                                                          \
		(void)pc;                                                                          \
		cr_access(CR_READ | cr_misaligned((uintptr_t)a, N), (uintptr_t)a, N);              \
	}                                                                                          \
	CR_EXPORT void __tsan_write##N##_pc(void *a, void *pc)                                     \
	{                                                                                          \
		(void)pc;                                                                          \
		cr_access(CR_WRITE | cr_misaligned((uintptr_t)a, N), (uintptr_t)a, N);             \
	}                                                                                          \
	CR_EXPORT void __tsan_volatile_read##N(void *a)                                            \
	{                                                                                          \
		cr_access(CR_READ | cr_misaligned((uintptr_t)a, N), (uintptr_t)a, N);              \
	}                                                                                          \
	CR_EXPORT void __tsan_volatile_write##N(void *a)                                           \
	{                                                                                          \
		cr_access(CR_WRITE | cr_misaligned((uintptr_t)a, N), (uintptr_t)a, N);             \
	}                                                                                          \
	CR_EXPORT void __tsan_unaligned_read##N(void *a)                                           \
	{                                                                                          \
		cr_access(CR_READ | cr_misaligned((uintptr_t)a, N), (uintptr_t)a, N);              \
	}                                                                                          \
	CR_EXPORT void __tsan_unaligned_write##N(void *a)                                          \
	{                                                                                          \
		cr_access(CR_WRITE | cr_misaligned((uintptr_t)a, N), (uintptr_t)a, N);             \
	}                                                                                          \
	CR_EXPORT void __tsan_unaligned_volatile_read##N(void *a)                                  \
	{                                                                                          \
		cr_access(CR_READ | cr_misaligned((uintptr_t)a, N), (uintptr_t)a, N);              \
	}                                                                                          \
	CR_EXPORT void __tsan_unaligned_volatile_write##N(void *a)                                 \
	{                                                                                          \
		cr_access(CR_WRITE | cr_misaligned((uintptr_t)a, N), (uintptr_t)a, N);             \
	}                                                                                          \
	CR_EXPORT void __tsan_read_write##N(void *a)                                               \
	{                                                                                          \
		unsigned f = cr_misaligned((uintptr_t)a, N);                                       \
		cr_access(CR_READ | f, (uintptr_t)a, N);                                           \
		cr_access(CR_WRITE | f, (uintptr_t)a, N);                                          \
	}                                                                                          \
	CR_EXPORT void __tsan_unaligned_read_write##N(void *a)                                     \
	{                                                                                          \
		cr_access(CR_READ | cr_misaligned((uintptr_t)a, N), (uintptr_t)a, N);              \
		cr_access(CR_WRITE | cr_misaligned((uintptr_t)a, N), (uintptr_t)a, N);             \
	}

CR_SIZED(1)
CR_SIZED(2)
CR_SIZED(4)
CR_SIZED(8)
CR_SIZED(16)

/* --- C++ vtable pointers ------------------------------------------------------------------- */

/* The constructor's store of the vtable pointer (TSan reports it only when the value changes;
 * the store happens either way, so it is always recorded). */
CR_EXPORT void __tsan_vptr_update(void **vptr_p, void *new_val)
{
	(void)new_val;
	cr_access(CR_WRITE | cr_misaligned((uintptr_t)vptr_p, 8), (uintptr_t)vptr_p, 8);
}

/* The load of the vtable pointer before a virtual call (clang). */
CR_EXPORT void __tsan_vptr_read(void **vptr_p)
{
	cr_access(CR_READ | cr_misaligned((uintptr_t)vptr_p, 8), (uintptr_t)vptr_p, 8);
}

/* --- function entry and exit --------------------------------------------------------------- */

/* Nothing to record (Cacheray records none). The entry of a thread's first instrumented
 * function attaches the thread, so that the memcpy or malloc it may call first is recorded. */
CR_EXPORT void __tsan_func_entry(void *caller_pc)
{
	(void)caller_pc;
	if (unlikely(rec_self == NULL))
		cr_thread(CR_ATTACH);
}

CR_EXPORT void __tsan_func_exit(void)
{
}

/* TSan stops reporting races between these (clang, around calls from functions it must not
 * check); the accesses in between still happen, so they are still recorded. */
CR_EXPORT void __tsan_ignore_thread_begin(void)
{
}

CR_EXPORT void __tsan_ignore_thread_end(void)
{
}

/* --- the annotation API of <sanitizer/tsan_interface.h> ----------------------------------------
 * Programs that describe their own synchronisation to TSan link and run unchanged: these say
 * nothing about memory accesses, so they record nothing. */
CR_EXPORT void __tsan_acquire(void *addr)
{
	(void)addr;
}

CR_EXPORT void __tsan_release(void *addr)
{
	(void)addr;
}

CR_EXPORT void __tsan_mutex_create(void *addr, unsigned flags)
{
	(void)addr;
	(void)flags;
}

CR_EXPORT void __tsan_mutex_destroy(void *addr, unsigned flags)
{
	(void)addr;
	(void)flags;
}

CR_EXPORT void __tsan_mutex_pre_lock(void *addr, unsigned flags)
{
	(void)addr;
	(void)flags;
}

CR_EXPORT void __tsan_mutex_post_lock(void *addr, unsigned flags, int recursion)
{
	(void)addr;
	(void)flags;
	(void)recursion;
}

CR_EXPORT int __tsan_mutex_pre_unlock(void *addr, unsigned flags)
{
	(void)addr;
	(void)flags;
	return 0;
}

CR_EXPORT void __tsan_mutex_post_unlock(void *addr, unsigned flags)
{
	(void)addr;
	(void)flags;
}

CR_EXPORT void __tsan_mutex_pre_signal(void *addr, unsigned flags)
{
	(void)addr;
	(void)flags;
}

CR_EXPORT void __tsan_mutex_post_signal(void *addr, unsigned flags)
{
	(void)addr;
	(void)flags;
}

CR_EXPORT void __tsan_mutex_pre_divert(void *addr, unsigned flags)
{
	(void)addr;
	(void)flags;
}

CR_EXPORT void __tsan_mutex_post_divert(void *addr, unsigned flags)
{
	(void)addr;
	(void)flags;
}
