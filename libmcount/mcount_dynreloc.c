/*
 * mcount_dynreloc: prologue relocation with libcapstone (mcount_dynamic.c's last resort, for
 * modules without patchable nops; see mcount_dynreloc.h). Set-up only: called while patching,
 * never from a hook. The decoder's memory is an mmap'ed arena of its own (its handle and one
 * instruction buffer live for the process; nothing is freed).
 */
#include "libmcount/mcount_dynreloc.h"

#include <string.h>

#ifndef MC_HAVE_CAPSTONE

int mc_reloc_ready(const char **why)
{
	*why = "libmcount was built without libcapstone (needed where a function has no "
	       "patchable nops)";
	return -1;
}

int mc_reloc_prologue(uintptr_t fn, size_t size, uintptr_t entry, uintptr_t at, struct mc_reloc *r,
		      const char **why)
{
	(void)fn;
	(void)size;
	(void)entry;
	(void)at;
	(void)r;
	return mc_reloc_ready(why);
}

#else

#include <capstone/capstone.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/mman.h>

/* ---- the decoder's allocator: a bump arena (capstone allocates at cs_open and cs_malloc) */

#define RELOC_ARENA (1u << 20)
static uint8_t *reloc_arena;
static size_t reloc_used;

static void *reloc_malloc(size_t n)
{
	size_t *p;

	n = (n + sizeof(size_t) + 15) & ~(size_t)15;
	if (!reloc_arena) {
		void *a = mmap(NULL, RELOC_ARENA, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (a == MAP_FAILED)
			return NULL;
		reloc_arena = a;
	}
	if (n > RELOC_ARENA - reloc_used)
		return NULL;
	p = (size_t *)(reloc_arena + reloc_used);
	reloc_used += n;
	*p = n - sizeof(size_t);
	return p + 1;
}

static void *reloc_calloc(size_t k, size_t n)
{
	void *p = n && k > SIZE_MAX / n ? NULL : reloc_malloc(k * n);

	if (p)
		memset(p, 0, k * n);
	return p;
}

static void *reloc_realloc(void *old, size_t n)
{
	void *p = reloc_malloc(n);
	size_t had = old ? ((size_t *)old)[-1] : 0;

	if (p && old)
		memcpy(p, old, had < n ? had : n);
	return p;
}

static void reloc_free(void *p)
{
	(void)p;
}

/* ---- libcapstone, loaded once ---- */

static struct {
	int tried, ok;
	const char *why;
	csh h;
	cs_insn *insn;
	cs_err (*open)(cs_arch, cs_mode, csh *);
	cs_err (*option)(csh, cs_opt_type, size_t);
	cs_insn *(*malloc)(csh);
	bool (*iter)(csh, const uint8_t **, size_t *, uint64_t *, cs_insn *);
} cs;

int mc_reloc_ready(const char **why)
{
	static const char *const names[] = {"libcapstone.so.4", "libcapstone.so.5",
					    "libcapstone.so"};
	cs_opt_mem mem = {.malloc = reloc_malloc,
			  .calloc = reloc_calloc,
			  .realloc = reloc_realloc,
			  .free = reloc_free,
			  .vsnprintf = vsnprintf};
	void *lib = NULL;

	if (cs.tried) {
		*why = cs.why;
		return cs.ok ? 0 : -1;
	}
	cs.tried = 1;
	cs.why = "libcapstone cannot be loaded (libcapstone4): needed where a function has no "
		 "patchable nops";
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !lib; i++)
		lib = dlmopen(LM_ID_BASE, names[i], RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		goto out;
	cs.open = (cs_err(*)(cs_arch, cs_mode, csh *))dlsym(lib, "cs_open");
	cs.option = (cs_err(*)(csh, cs_opt_type, size_t))dlsym(lib, "cs_option");
	cs.malloc = (cs_insn * (*)(csh)) dlsym(lib, "cs_malloc");
	cs.iter = (bool (*)(csh, const uint8_t **, size_t *, uint64_t *, cs_insn *))dlsym(
		lib, "cs_disasm_iter");
	if (!cs.open || !cs.option || !cs.malloc || !cs.iter)
		goto out;
	cs.why = "libcapstone does not start";
	if (cs.option(0, CS_OPT_MEM, (size_t)&mem) != CS_ERR_OK ||
	    cs.open(CS_ARCH_X86, CS_MODE_64, &cs.h) != CS_ERR_OK ||
	    cs.option(cs.h, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK || !(cs.insn = cs.malloc(cs.h)))
		goto out;
	cs.ok = 1;
	cs.why = NULL;
out:
	*why = cs.why;
	return cs.ok ? 0 : -1;
}

static int reloc_in_group(const cs_insn *in, uint8_t g)
{
	for (uint8_t i = 0; i < in->detail->groups_count; i++)
		if (in->detail->groups[i] == g)
			return 1;
	return 0;
}

/* the target of a relative branch, 0 if it is not one */
static uintptr_t reloc_branch_target(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;

	if (!reloc_in_group(in, CS_GRP_BRANCH_RELATIVE) && !reloc_in_group(in, CS_GRP_JUMP) &&
	    !reloc_in_group(in, CS_GRP_CALL))
		return 0;
	if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM)
		return (uintptr_t)x->operands[0].imm;
	return 0;
}

static void reloc_put(struct mc_reloc *r, const void *p, size_t n)
{
	memcpy(r->code + r->code_len, p, n);
	r->code_len += n;
}

/* `movabs $v, %r11` */
static void reloc_put_r11(struct mc_reloc *r, uintptr_t v)
{
	static const uint8_t op[2] = {0x49, 0xbb};

	reloc_put(r, op, 2);
	reloc_put(r, &v, 8);
}

/* `jmp *0(%rip); .quad to` */
static void reloc_put_jmp(struct mc_reloc *r, uintptr_t to)
{
	static const uint8_t op[6] = {0xff, 0x25, 0, 0, 0, 0};

	reloc_put(r, op, 6);
	reloc_put(r, &to, 8);
}

/*
 * A direct call, jmp or jcc that ends the bytes replaced, rewritten for the copy (which then
 * needs no jump back). A call pushes the original return address, so that the callee returns
 * into the function itself (unwinders find its frame as before); %r11 is free there, as the
 * call clobbers it anyway. 0, or -1 for any other transfer.
 */
static int reloc_transfer(const cs_insn *in, struct mc_reloc *r)
{
	uintptr_t to = reloc_branch_target(in), next = (uintptr_t)in->address + in->size;
	const uint8_t *b = in->bytes;
	size_t o = 0;

	if (!to || r->code_len + 40 > MC_RELOC_MAX)
		return -1;
	while (o < in->size && (b[o] == 0x3e || b[o] == 0x2e || b[o] == 0xf2))
		o++; /* branch hints, bnd */
	if (o >= in->size)
		return -1;
	if (b[o] == 0xe8) { /* call rel32 */
		static const uint8_t push_r11[2] = {0x41, 0x53}, jmp_r11[3] = {0x41, 0xff, 0xe3};

		reloc_put_r11(r, next);
		reloc_put(r, push_r11, 2);
		reloc_put_r11(r, to);
		reloc_put(r, jmp_r11, 3);
	} else if (b[o] == 0xe9 || b[o] == 0xeb) { /* jmp rel32 / rel8 */
		reloc_put_jmp(r, to);
	} else if ((b[o] & 0xf0) == 0x70 ||
		   (b[o] == 0x0f && o + 1 < in->size && (b[o + 1] & 0xf0) == 0x80)) {
		/* jcc: taken -> `jmp *to` (14 bytes on), not taken -> `jmp *next` */
		uint8_t jcc[2] = {(uint8_t)(0x70 | ((b[o] == 0x0f ? b[o + 1] : b[o]) & 0xf)), 14};

		reloc_put(r, jcc, 2);
		reloc_put_jmp(r, next);
		reloc_put_jmp(r, to);
	} else {
		return -1;
	}
	r->ends = 1;
	return 0;
}

int mc_reloc_prologue(uintptr_t fn, size_t size, uintptr_t entry, uintptr_t at, struct mc_reloc *r,
		      const char **why)
{
	const uint8_t *code;
	size_t left;
	uint64_t addr;

	if (mc_reloc_ready(why) < 0)
		return -1;
	r->len = r->code_len = 0;
	r->ends = 0;
	/* the instructions replaced: whole ones, 5 bytes or more */
	code = (const uint8_t *)entry;
	left = fn + size - entry;
	addr = entry;
	while (r->len < 5) {
		const cs_x86 *x;

		if (!cs.iter(cs.h, &code, &left, &addr, cs.insn)) {
			*why = "its first instructions cannot be decoded";
			return -1;
		}
		if (reloc_in_group(cs.insn, CS_GRP_JUMP) || reloc_in_group(cs.insn, CS_GRP_CALL) ||
		    reloc_in_group(cs.insn, CS_GRP_RET) || reloc_in_group(cs.insn, CS_GRP_IRET) ||
		    reloc_in_group(cs.insn, CS_GRP_INT) ||
		    reloc_in_group(cs.insn, CS_GRP_BRANCH_RELATIVE)) {
			if (r->len + cs.insn->size >= 5 && reloc_transfer(cs.insn, r) == 0) {
				r->len += cs.insn->size;
				break;
			}
			*why = "a branch, call or return in its first 5 bytes (other than a direct "
			       "call, jmp or jcc ending them)";
			return -1;
		}
		if (r->code_len + cs.insn->size > MC_RELOC_MAX) {
			*why = "its first instructions are too long";
			return -1;
		}
		memcpy(r->code + r->code_len, cs.insn->bytes, cs.insn->size);
		x = &cs.insn->detail->x86;
		for (uint8_t i = 0; i < x->op_count; i++) {
			const cs_x86_op *op = &x->operands[i];
			int64_t target, disp;
			int32_t d32;

			if (op->type != X86_OP_MEM || op->mem.base != X86_REG_RIP)
				continue;
			if (x->encoding.disp_size != 4 || !x->encoding.disp_offset) {
				*why = "a %rip-relative operand of an unexpected form";
				return -1;
			}
			target = (int64_t)(cs.insn->address + cs.insn->size) + op->mem.disp;
			disp = target - (int64_t)(at + r->code_len + cs.insn->size);
			if (disp != (int32_t)disp) {
				*why = "a %rip-relative operand out of the copy's reach";
				return -1;
			}
			d32 = (int32_t)disp;
			memcpy(r->code + r->code_len + x->encoding.disp_offset, &d32, 4);
		}
		r->code_len += cs.insn->size;
		r->len += cs.insn->size;
	}
	/* nothing in the function may jump into the bytes replaced (after their first) */
	code = (const uint8_t *)fn;
	left = size;
	addr = fn;
	while (left) {
		uintptr_t to;

		if (!cs.iter(cs.h, &code, &left, &addr, cs.insn)) {
			*why = "its code cannot be decoded to the end (data in it?)";
			return -1;
		}
		to = reloc_branch_target(cs.insn);
		if (to > entry && to < entry + r->len) {
			*why = "a jump into its first bytes";
			return -1;
		}
	}
	return 0;
}

#endif
