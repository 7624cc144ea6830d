/*
 * attach: `flightrec record -p PID` on a process started without us (x86-64 Linux, glibc).
 *
 * Steps (cmd_record.c drives them):
 *   1. attach_open: from /proc/PID/maps and the mapped files (read here, never in the
 *      process): libc's dlopen, the `__environ` variable libc's getenv reads (through libc's
 *      own GOT slot, so a copy relocation in the program is followed), and every GOT slot of
 *      the program and its libraries bound to mcount/_mcount/__fentry__/__cyg_profile_func_*
 *      (GLOB_DAT, JUMP_SLOT, 64-bit absolute relocations); the modules with XRay sleds (the
 *      executable, its libraries: at_scan_xray). Nothing found: refused.
 *   2. attach_stop_all: PTRACE_SEIZE + PTRACE_INTERRUPT of every thread in /proc/PID/task,
 *      again until a pass finds no new one (a stopped thread creates none).
 *   3. attach_inject: in one stopped thread (the main one when it lives), registers and the
 *      whole xstate saved; a call to dlopen(LIB, RTLD_NOW) set up below the red zone, the
 *      stack 16-byte aligned at the call, returning to address 0 (the SIGSEGV stop with
 *      rip 0 is the call's end); orig_rax -1 so that no syscall restart touches the call;
 *      `environ` points to our block during it only. Then the slots point to libmcount's
 *      hooks (PTRACE_POKEDATA writes a read-only RELRO page too). Registers put back exactly
 *      (an interrupted syscall restarts as it would have). With -P/-U the constructor also
 *      patches the selected functions: it is told where every thread stopped
 *      (FLIGHTREC_ATTACH_IPS) and we move those it says stopped inside one-byte nops it
 *      wrote over (mc_attach_to); a program calling no hook at all is taken then.
 *   4. attach_resume_all: PTRACE_DETACH: nobody is traced while recording.
 *   5. attach_detach: stop all again, put back each slot still holding our hook (and, in
 *      mc_attach_unhook, every -P site), let every
 *      thread but one go (the runtime's helper must run for the finish), call
 *      mc_attach_detach in that one, let it go.
 * Invariants: the process is never left stopped or with our registers; a failure before the
 * slots are written leaves the process as it was; the library is never unloaded.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/attach.h"
#include "librecord/rec_elf.h"

#define AT_XSTATE_MAX 16384
#define AT_CALL_TIMEOUT_MS 10000
/* below the interrupted code's red zone (128 bytes), with a margin */
#define AT_STACK_SKIP 512
/* threads -P checks (libmcount's MC_STOP_MAX: the size of mc_attach_to) */
#define AT_PATCH_MAX_THREADS 4000

struct at_regs {
	struct user_regs_struct r;
	uint8_t xs[AT_XSTATE_MAX];
	size_t xslen;
};

/* the hooks, then libmcount's wrappers of what leaves frames without their return
 * (mcount_wrap.c): an exception or a longjmp through a hijacked frame must find the real
 * return addresses, as when preloaded; dlopen, exec* and _exit are left alone */
static const char *const at_hook_names[] = {
	"mcount", "_mcount", "__fentry__", "__cyg_profile_func_enter", "__cyg_profile_func_exit",
	"__cxa_throw", "__cxa_rethrow", "__cxa_begin_catch", "_dl_find_object", "backtrace",
	"longjmp", "_longjmp", "siglongjmp", "__longjmp_chk", "pthread_exit",
};
#define AT_NREAL_HOOKS 5 /* the first ones: a program calling none of them is refused */
/* libmcount's function for each: _mcount is its mcount too */
static const char *const at_our_names[] = {
	"mcount", "mcount", "__fentry__", "__cyg_profile_func_enter", "__cyg_profile_func_exit",
	"__cxa_throw", "__cxa_rethrow", "__cxa_begin_catch", "_dl_find_object", "backtrace",
	"longjmp", "_longjmp", "siglongjmp", "__longjmp_chk", "pthread_exit",
};
#define AT_NHOOKS (sizeof(at_hook_names) / sizeof(at_hook_names[0]))

/* the hook slots found in the files: which of at_hook_names, and the addend */
static int at_slot_kind[ATTACH_MAX_SLOTS];
static int64_t at_slot_addend[ATTACH_MAX_SLOTS];

/* the thread TID of process PID is alive (not a zombie, not gone) */
static int at_thread_alive(pid_t pid, pid_t tid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* A live thread of PID, whose /proc maps and memory are the process's: once the main thread
 * has called pthread_exit it is a zombie with no memory map while the others run on. 0: none */
static pid_t at_live_tid(pid_t pid)
{
	char path[64];
	struct dirent *e;
	pid_t found = 0;
	DIR *d;

	if (at_thread_alive(pid, pid))
		return pid;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;
	while (!found && (e = readdir(d)) != NULL) {
		pid_t tid = (pid_t)atoi(e->d_name);
		if (tid > 0 && at_thread_alive(pid, tid))
			found = tid;
	}
	closedir(d);
	return found;
}

int attach_alive(pid_t pid)
{
	return at_live_tid(pid) != 0;
}

/* a symbol the file defines, by name: its value (0 if none) */
static uint64_t at_sym(const struct rec_elf_map *m, const char *name)
{
	const struct rec_elf_tab *t = &m->dynsym;

	for (size_t i = 0; i < t->nsyms; i++)
		if (t->syms[i].st_shndx != SHN_UNDEF && t->syms[i].st_value &&
		    !strcmp(rec_elf_tab_name(t, i), name))
			return t->syms[i].st_value;
	return 0;
}

/* Each relocation of the file's RELA sections that binds a symbol of .dynsym, by name:
 * fn(arg, name, rela) */
static void at_each_rela(const struct rec_elf_map *m,
			 void (*fn)(void *, const char *, const Elf64_Rela *), void *arg)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)m->p;
	const Elf64_Shdr *sh;

	if (eh->e_shoff == 0 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > m->size)
		return;
	sh = (const Elf64_Shdr *)(m->p + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_RELA || sh[i].sh_entsize != sizeof(Elf64_Rela) ||
		    sh[i].sh_offset + sh[i].sh_size > m->size || sh[i].sh_link >= eh->e_shnum ||
		    sh[sh[i].sh_link].sh_type != SHT_DYNSYM)
			continue;
		const Elf64_Rela *r = (const Elf64_Rela *)(m->p + sh[i].sh_offset);
		for (size_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Rela); k++) {
			size_t s = ELF64_R_SYM(r[k].r_info);
			if (s == 0 || s >= m->dynsym.nsyms)
				continue;
			fn(arg, rec_elf_tab_name(&m->dynsym, s), &r[k]);
		}
	}
}

static const char *at_scope_hint(char *buf, size_t len);

struct at_scan {
	struct attach *a;
	uint64_t bias;
	uint64_t environ_slot; /* libc: its GOT slot for __environ */
};

static void at_scan_hooks(void *arg, const char *name, const Elf64_Rela *r)
{
	struct at_scan *s = arg;
	struct attach *a = s->a;
	unsigned type = ELF64_R_TYPE(r->r_info);

	if (type != R_X86_64_GLOB_DAT && type != R_X86_64_JUMP_SLOT && type != R_X86_64_64)
		return;
	for (size_t h = 0; h < AT_NHOOKS; h++) {
		if (strcmp(name, at_hook_names[h]) || a->nslot >= ATTACH_MAX_SLOTS)
			continue;
		a->nhooks += h < AT_NREAL_HOOKS;
		at_slot_kind[a->nslot] = (int)h;
		at_slot_addend[a->nslot] = type == R_X86_64_64 ? r->r_addend : 0;
		a->slot[a->nslot++].addr = s->bias + r->r_offset;
	}
}

static void at_scan_environ(void *arg, const char *name, const Elf64_Rela *r)
{
	struct at_scan *s = arg;

	if (ELF64_R_TYPE(r->r_info) == R_X86_64_GLOB_DAT &&
	    (!strcmp(name, "__environ") || !strcmp(name, "environ")))
		s->environ_slot = s->bias + r->r_offset;
}

static int at_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)(uintptr_t)addr, len };
	pid_t tid = at_live_tid(pid);

	return tid && process_vm_readv(tid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -1;
}

/* each mapped file's first mapping (offset 0): fn(arg, path, start); 0, or -1 */
static int at_each_module(pid_t pid, int (*fn)(void *, const char *, uint64_t), void *arg)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	FILE *f;
	int ret = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)(at_live_tid(pid) ?: pid));
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (ret == 0 && getline(&line, &cap, f) > 0) {
		unsigned long long start, off;
		int pos = -1;
		if (sscanf(line, "%llx-%*x %*s %llx %*s %*s %n", &start, &off, &pos) < 2 ||
		    pos < 0 || line[pos] != '/' || off != 0)
			continue;
		line[strcspn(line, "\n")] = '\0';
		ret = fn(arg, line + pos, start);
	}
	free(line);
	fclose(f);
	return ret;
}

/* section NAME of the file: its address (the file's) and size; 0, or -1 if none */
static int at_section(const struct rec_elf_map *m, const char *name, uint64_t *addr, uint64_t *size)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)m->p;
	const Elf64_Shdr *sh, *str;

	if (eh->e_shoff == 0 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > m->size ||
	    eh->e_shstrndx >= eh->e_shnum)
		return -1;
	sh = (const Elf64_Shdr *)(m->p + eh->e_shoff);
	str = &sh[eh->e_shstrndx];
	if (str->sh_offset + str->sh_size > m->size)
		return -1;
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_name >= str->sh_size ||
		    strncmp((const char *)m->p + str->sh_offset + sh[i].sh_name, name,
			    str->sh_size - sh[i].sh_name) ||
		    !(sh[i].sh_flags & SHF_ALLOC))
			continue;
		*addr = sh[i].sh_addr;
		*size = sh[i].sh_size;
		return 0;
	}
	return -1;
}

/* the value of symbol NAME of the file's .symtab (0 if none: stripped) */
static uint64_t at_local_sym(const struct rec_elf_map *m, const char *name)
{
	const struct rec_elf_tab *t = &m->symtab;

	for (size_t i = 0; i < t->nsyms; i++)
		if (t->syms[i].st_shndx != SHN_UNDEF && !strcmp(rec_elf_tab_name(t, i), name))
			return t->syms[i].st_value;
	return 0;
}

/*
 * XRay (clang -fxray-instrument): a module with xray_instr_map has entry sleds -P patches
 * (libmcount mcount_dynamic.c): the executable's and those of every shared library it has
 * loaded (linked or dlopen'ed; clang 14 links no runtime into a library, whose sleds only a
 * runtime of the program would patch, as our xray-rt or a later compiler-rt's
 * __xray_register_dso do). Each such module gets its pattern in a->xray_pat: "." for the
 * executable, ".@NAME" for a library, NAME its file name up to its ".so" (libmcount compares
 * it with the start of the name the loader knows, which may be a link: libx.so.1 for
 * libx.so.1.2). The program's own XRay runtime may patch them too: a sled of any module not
 * as the compiler left it, a handler set (XRayPatchedFunction) or a patching under way
 * (XRayPatching) in any module that has them say it does, and the sleds are then left alone
 * (the attach is refused). Otherwise every module's XRayPatching is held set while we are
 * attached, so that a __xray_patch the program calls meanwhile returns "ongoing" instead of
 * writing over ours.
 */
static void at_scan_xray(struct attach *a, const struct rec_elf_map *m, uint64_t bias,
			 const char *path, bool is_exe)
{
	static const uint8_t sled[11] = {0xeb, 0x09, 0x66, 0x0f, 0x1f, 0x84,
					 0x00, 0x00, 0x02, 0x00, 0x00};
	uint64_t addr, size, fn = 0, busy = 0;
	uint64_t handler = at_local_sym(m, "_ZN6__xray19XRayPatchedFunctionE");
	uint64_t patching = at_local_sym(m, "_ZN6__xray12XRayPatchingE");
	const char *base = strrchr(path, '/') + 1, *so = strstr(base, ".so");
	size_t used = strlen(a->xray_pat), blen = so ? (size_t)(so + 3 - base) : strlen(base);
	int n;

	if (at_section(m, "xray_instr_map", &addr, &size) < 0)
		return;
	a->xray++;
	if ((handler && (at_read(a->pid, bias + handler, &fn, 8) < 0 || fn)) ||
	    (patching && (at_read(a->pid, bias + patching, &busy, 1) < 0 || busy)))
		a->xray_own = 1;
	if (patching && a->nxray_busy < ATTACH_MAX_XRAY)
		a->xray_busy_var[a->nxray_busy++] = bias + patching;
	/* libmcount's module names stop at 63 bytes; the start of a name still names it */
	if (blen > 63)
		blen = 63;
	n = is_exe ? snprintf(a->xray_pat + used, sizeof(a->xray_pat) - used, "%s.",
			      used ? ";" : "")
		   : snprintf(a->xray_pat + used, sizeof(a->xray_pat) - used, "%s.@%.*s",
			      used ? ";" : "", (int)blen, base);
	if (n < 0 || (size_t)n >= sizeof(a->xray_pat) - used ||
	    a->xray_npat >= ATTACH_MAX_XRAY_PAT) {
		a->xray_pat[used] = '\0'; /* no room: not taken, and said (record_attach) */
		a->xray_left++;
	} else {
		a->xray_npat++;
	}
	for (uint64_t o = 0; o + 32 <= size && !a->xray_own; o += 32) {
		uint8_t e[32], code[11];
		uint64_t at;

		if (at_read(a->pid, bias + addr + o, e, sizeof(e)) < 0) {
			a->xray_own = 1;
			break;
		}
		if (e[16] != 0) /* kind: entries only */
			continue;
		memcpy(&at, e, 8);
		at += e[18] >= 2 ? bias + addr + o : 0; /* version 2: relative to the field */
		if (at_read(a->pid, at, code, sizeof(code)) < 0 || memcmp(code, sled, sizeof(sled)))
			a->xray_own = 1;
	}
}

struct at_open {
	struct attach *a;
	char *why;
	size_t len;
	bool ours, libc;
	char seen[64][512]; /* a file mapped twice (offset 0 again) is scanned once */
	size_t nseen;
	char exe[4096]; /* the executable's path, as the maps name it */
};

static int at_open_module(void *arg, const char *path, uint64_t start)
{
	struct at_open *o = arg;
	struct attach *a = o->a;
	struct rec_elf_map m;
	struct at_scan s = { .a = a };
	const char *base = strrchr(path, '/') + 1;

	if (!strcmp(path, a->lib)) {
		o->ours = true;
		return 0;
	}
	for (size_t i = 0; i < o->nseen; i++)
		if (!strcmp(o->seen[i], path))
			return 0;
	if (o->nseen < 64)
		snprintf(o->seen[o->nseen++], sizeof(o->seen[0]), "%s", path);
	if (rec_elf_map_open(path, &m) < 0)
		return 0; /* not an ELF file we read: nothing of ours there */
	s.bias = start - m.load_base;
	if (!strncmp(base, "libc.so.", 8)) {
		uint64_t dl = at_sym(&m, "dlopen"), env = 0;
		at_each_rela(&m, at_scan_environ, &s);
		o->libc = true;
		if (!dl || !s.environ_slot || at_read(a->pid, s.environ_slot, &env, 8) < 0 ||
		    !env) {
			snprintf(o->why, o->len, "%s has no dlopen or __environ we can use", path);
			rec_elf_map_close(&m);
			return -1;
		}
		a->dlopen_fn = s.bias + dl;
		a->environ_var = env;
	} else {
		at_each_rela(&m, at_scan_hooks, &s);
		at_scan_xray(a, &m, s.bias, path, !strcmp(path, o->exe));
	}
	rec_elf_map_close(&m);
	return 0;
}

/* LIB is in PID's LD_PRELOAD: it started under `flightrec record` (or preloaded us itself) */
static bool at_preloaded(pid_t pid, const char *lib)
{
	char path[64], *buf = NULL;
	size_t cap = 0;
	ssize_t n;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && (n = getdelim(&buf, &cap, '\0', f)) > 0)
		found = !strncmp(buf, "LD_PRELOAD=", 11) && strstr(buf, lib) != NULL;
	free(buf);
	fclose(f);
	return found;
}

int attach_open(struct attach *a, pid_t pid, const char *lib, int patching, char *why, size_t len)
{
	struct at_open *o = calloc(1, sizeof(*o));
	char exe[64];
	ssize_t el;
	int ret = -1;

	if (!o) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	memset(a, 0, sizeof(*a));
	a->pid = pid;
	a->patching = patching;
	snprintf(a->lib, sizeof(a->lib), "%s", lib);
	o->a = a;
	o->why = why;
	o->len = len;
	snprintf(exe, sizeof(exe), "/proc/%d/stat", (int)pid);
	if (access(exe, F_OK) < 0) {
		snprintf(why, len, "no process %d", (int)pid);
		goto out;
	}
	/* through a live thread: a main thread gone through pthread_exit has no exe link */
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)(at_live_tid(pid) ?: pid));
	el = readlink(exe, o->exe, sizeof(o->exe) - 1);
	o->exe[el > 0 ? el : 0] = '\0';
	if (at_each_module(pid, at_open_module, o) < 0) {
		char hint[160];
		/* another user's process: its maps are as closed to us as ptrace is */
		if (!*why)
			snprintf(why, len, "cannot attach to process %d (/proc/%d/maps: %s)%s",
				 (int)pid, (int)pid, strerror(errno),
				 errno == EACCES ? at_scope_hint(hint, sizeof(hint)) : "");
		goto out;
	}
	/* loaded already: an earlier attach (mc_attach_again starts anew) or a recording of
	 * it (mc_attach_again refuses) */
	a->again = o->ours;
	if (a->again && at_preloaded(pid, lib)) {
		snprintf(why, len, "process %d is being recorded already (libmcount is preloaded)",
			 (int)pid);
		goto out;
	}
	if (!o->libc) {
		snprintf(why, len, "process %d has no libc.so.6 mapped (statically linked?)",
			 (int)pid);
		goto out;
	}
	if (a->xray_own && (patching || (a->nhooks == 0 && a->xray))) {
		snprintf(why, len,
			 "process %d patches its own XRay sleds (its XRay runtime's "
			 "__xray_patch, a handler set): they are left alone",
			 (int)pid);
		goto out;
	}
	if (a->nhooks == 0 && !patching && !a->xray) {
		snprintf(why, len, "process %d calls no hook: no mcount, __fentry__ or "
			 "__cyg_profile_func_* relocation (build it with -pg, -pg -mfentry or "
			 "-finstrument-functions, or give -P to patch its functions)", (int)pid);
		goto out;
	}
	ret = 0;
out:
	free(o);
	return ret;
}

static int at_find(struct attach *a, pid_t tid)
{
	for (size_t i = 0; i < a->nth; i++)
		if (a->th[i].tid == tid)
			return (int)i;
	return -1;
}

/* wait for TID's stop; 0 stopped (its pending signal in *sig), 1 gone, -1 error */
static int at_wait_stop(pid_t tid, int *sig)
{
	int st;

	*sig = 0;
	for (;;) {
		if (waitpid(tid, &st, __WALL) < 0)
			return errno == ECHILD ? 1 : -1;
		if (WIFEXITED(st) || WIFSIGNALED(st))
			return 1;
		if (!WIFSTOPPED(st))
			continue;
		if ((st >> 16) == PTRACE_EVENT_STOP)
			return 0;
		if ((st >> 8) == (SIGTRAP | 0x80) || (st >> 16) != 0)
			return 0;
		/* a signal-delivery stop: stopped too; the signal goes back when it resumes */
		*sig = WSTOPSIG(st);
		return 0;
	}
}

static const char *at_scope_hint(char *buf, size_t len)
{
	char v[16] = "";
	int fd = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY | O_CLOEXEC);

	buf[0] = '\0';
	if (fd >= 0) {
		ssize_t n = read(fd, v, sizeof(v) - 1);
		close(fd);
		v[n > 0 ? n : 0] = '\0';
		v[strcspn(v, "\n")] = '\0';
		if (n > 0 && strcmp(v, "0"))
			snprintf(buf, len, "; /proc/sys/kernel/yama/ptrace_scope is %s (0 lets a "
				 "process trace any other of its user)", v);
	}
	return buf;
}

/* the process's tracer other than us, from /proc/PID/status (0: none) */
static pid_t at_tracer(pid_t pid)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	pid_t t = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (getline(&line, &cap, f) > 0)
		if (!strncmp(line, "TracerPid:", 10))
			t = (pid_t)atoi(line + 10);
	free(line);
	fclose(f);
	return t;
}

/* the threads of the process not in A->th yet are seized and stopped too (attach_stop_all) */
static int at_stop_more(struct attach *a, char *why, size_t len)
{
	char path[64];
	bool added = true;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)a->pid);
	while (added) {
		DIR *d = opendir(path);
		struct dirent *e;
		added = false;
		if (!d) {
			snprintf(why, len, "process %d is gone", (int)a->pid);
			attach_resume_all(a);
			return -1;
		}
		while ((e = readdir(d)) != NULL) {
			pid_t tid = (pid_t)atoi(e->d_name);
			int sig;
			/* a zombie (a main thread gone through pthread_exit) never stops */
			if (tid <= 0 || at_find(a, tid) >= 0 || !at_thread_alive(a->pid, tid))
				continue;
			if (ptrace(PTRACE_SEIZE, tid, 0, 0) < 0) {
				int err = errno;
				char hint[160];
				pid_t tr;
				if (err == ESRCH)
					continue; /* the thread ended meanwhile */
				closedir(d);
				attach_resume_all(a);
				tr = at_tracer(a->pid);
				if (tr > 0)
					snprintf(why, len, "cannot attach to process %d: it is already "
						 "traced by process %d", (int)a->pid, (int)tr);
				else
					snprintf(why, len, "cannot attach to process %d (ptrace: %s)%s",
						 (int)a->pid, strerror(err),
						 err == EPERM ? at_scope_hint(hint, sizeof(hint)) : "");
				return -1;
			}
			if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0 || at_wait_stop(tid, &sig) != 0) {
				ptrace(PTRACE_DETACH, tid, 0, 0);
				continue; /* gone */
			}
			if (a->nth >= ATTACH_MAX_THREADS) {
				ptrace(PTRACE_DETACH, tid, 0, sig);
				closedir(d);
				attach_resume_all(a);
				snprintf(why, len, "process %d has more than %d threads", (int)a->pid,
					 ATTACH_MAX_THREADS);
				return -1;
			}
			a->th[a->nth].tid = tid;
			a->th[a->nth++].sig = sig;
			added = true;
		}
		closedir(d);
	}
	if (a->nth == 0) {
		snprintf(why, len, "process %d is gone", (int)a->pid);
		return -1;
	}
	return 0;
}

int attach_stop_all(struct attach *a, char *why, size_t len)
{
	a->nth = 0;
	return at_stop_more(a, why, len);
}

static void at_resume(struct attach *a, size_t i)
{
	ptrace(PTRACE_DETACH, a->th[i].tid, 0, a->th[i].sig);
	a->th[i].sig = 0;
}

void attach_resume_all(struct attach *a)
{
	for (size_t i = 0; i < a->nth; i++)
		at_resume(a, i);
	a->nth = 0;
}

static int at_poke(pid_t tid, uint64_t addr, uint64_t v)
{
	return ptrace(PTRACE_POKEDATA, tid, (void *)(uintptr_t)addr, (void *)(uintptr_t)v) < 0
		       ? -1 : 0;
}

/* LEN bytes at ADDR (8-aligned, in memory the thread may write: its stack) */
static int at_write(pid_t tid, uint64_t addr, const void *buf, size_t len)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t w = 0;
		memcpy(&w, (const uint8_t *)buf + i, len - i < 8 ? len - i : 8);
		if (at_poke(tid, addr + i, w) < 0)
			return -1;
	}
	return 0;
}

/* the byte at ADDR becomes V (the threads stopped: nobody else writes it meanwhile) */
static int at_set_byte(struct attach *a, pid_t tid, uint64_t addr, uint8_t v)
{
	uint64_t w;

	if (at_read(a->pid, addr, &w, 8) < 0)
		return -1;
	memcpy(&w, &v, 1);
	return at_poke(tid, addr, w);
}

static int at_save(pid_t tid, struct at_regs *s)
{
	struct iovec iov = { s->xs, sizeof(s->xs) };

	if (ptrace(PTRACE_GETREGS, tid, 0, &s->r) < 0)
		return -1;
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &iov) < 0)
		return -1;
	s->xslen = iov.iov_len;
	return 0;
}

static int at_restore(pid_t tid, struct at_regs *s)
{
	struct iovec iov = { s->xs, s->xslen };

	if (ptrace(PTRACE_SETREGSET, tid, (void *)NT_X86_XSTATE, &iov) < 0)
		return -1;
	return ptrace(PTRACE_SETREGS, tid, 0, &s->r) < 0 ? -1 : 0;
}

static long at_ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/*
 * Call FN(A0, A1, A2) in stopped thread TID, whose registers are SAVED, with the stack pointer at
 * or below TOP; *RET its return value. 0, 1 when the process is gone, -1 when the call
 * faulted or never returned (WHY).
 */
static int at_call(pid_t tid, const struct at_regs *saved, uint64_t top, uint64_t fn, uint64_t a0,
		   uint64_t a1, uint64_t a2, uint64_t *ret, char *why, size_t len)
{
	struct user_regs_struct r = saved->r;
	struct timespec t0;
	int st, sig = 0;
	uint64_t sp = (top & ~(uint64_t)15) - 8; /* the return address: rsp+8 16-aligned */

	if (at_poke(tid, sp, 0) < 0)
		goto fail;
	r.rsp = sp;
	r.rip = fn;
	r.rdi = a0;
	r.rsi = a1;
	r.rdx = a2;
	r.rax = 0;
	r.orig_rax = (uint64_t)-1; /* no syscall restart on the way back to user space */
	if (ptrace(PTRACE_SETREGS, tid, 0, &r) < 0)
		goto fail;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pid_t w;
		if (ptrace(PTRACE_CONT, tid, 0, sig) < 0)
			goto fail;
		sig = 0;
		while ((w = waitpid(tid, &st, __WALL | WNOHANG)) == 0) {
			if (at_ms_since(&t0) > AT_CALL_TIMEOUT_MS) {
				snprintf(why, len, "the call into thread %d did not return in %d s",
					 (int)tid, AT_CALL_TIMEOUT_MS / 1000);
				return -1;
			}
			usleep(200);
		}
		if (w < 0 || WIFEXITED(st) || WIFSIGNALED(st))
			return 1;
		if (!WIFSTOPPED(st) || (st >> 16) != 0)
			continue; /* an event stop (group stop, interrupt): go on */
		if (WSTOPSIG(st) == SIGSEGV) {
			if (ptrace(PTRACE_GETREGS, tid, 0, &r) < 0)
				goto fail;
			if (r.rip == 0) {
				*ret = r.rax;
				return 0;
			}
			snprintf(why, len, "the call into thread %d faulted at %#llx", (int)tid,
				 (unsigned long long)r.rip);
			return -1;
		}
		/* the program's own signal: delivered, its handler runs above our frame */
		sig = WSTOPSIG(st);
	}
fail:
	snprintf(why, len, "ptrace on thread %d: %s", (int)tid, strerror(errno));
	return -1;
}

/* the thread to call into: the main one when it lives, else one of the program's own */
static int at_pick(struct attach *a)
{
	int i = at_find(a, a->pid);

	if (i >= 0)
		return i; /* seized: alive (zombies are not) */
	for (size_t k = 0; k < a->nfirst; k++)
		if ((i = at_find(a, a->first[k])) >= 0)
			return i;
	return a->nth ? 0 : -1;
}

struct at_ours {
	struct attach *a;
	uint64_t base;
	uint64_t lo, hi;    /* its executable mapping */
	uint64_t again_fn;  /* mc_attach_again */
	uint64_t to_var;    /* mc_attach_to: where -P wants each stopped thread to resume */
};

static int at_find_ours(void *arg, const char *path, uint64_t start)
{
	struct at_ours *o = arg;
	struct rec_elf_map m;

	if (strcmp(path, o->a->lib) || rec_elf_map_open(path, &m) < 0)
		return 0;
	o->base = start - m.load_base;
	rec_elf_map_close(&m);
	return 1;
}

/* the executable mapping of libmcount in the process */
static int at_ours_text(struct attach *a, uint64_t *lo, uint64_t *hi)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)(at_live_tid(a->pid) ?: a->pid));
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (!found && getline(&line, &cap, f) > 0) {
		unsigned long long s, e;
		char perms[8];
		int pos = -1;
		if (sscanf(line, "%llx-%llx %7s %*x %*s %*s %n", &s, &e, perms, &pos) < 3 ||
		    pos < 0 || perms[2] != 'x')
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (!strcmp(line + pos, a->lib)) {
			*lo = s;
			*hi = e;
			found = 1;
		}
	}
	free(line);
	fclose(f);
	return found ? 0 : -1;
}

/* libmcount as the process maps it: its base, hooks and entry points (into A and O) */
static int at_ours_syms(struct attach *a, struct at_ours *o, uint64_t *hooks, char *why,
			size_t len)
{
	struct rec_elf_map m;
	const char *lack = NULL;

	if (at_each_module(a->pid, at_find_ours, o) <= 0 || rec_elf_map_open(a->lib, &m) < 0) {
		snprintf(why, len, "%s is not mapped in process %d", a->lib, (int)a->pid);
		return -1;
	}
	for (size_t h = 0; h < AT_NHOOKS; h++)
		if (!(hooks[h] = at_sym(&m, at_our_names[h])))
			lack = at_our_names[h];
	a->detach_fn = at_sym(&m, "mc_attach_detach");
	a->unhook_fn = at_sym(&m, "mc_attach_unhook");
	o->again_fn = at_sym(&m, "mc_attach_again");
	o->to_var = at_sym(&m, "mc_attach_to");
	rec_elf_map_close(&m);
	if (!a->detach_fn || !a->unhook_fn || !o->again_fn || !o->to_var)
		lack = "mc_attach_detach/_unhook/_again/_to";
	if (lack) {
		snprintf(why, len, "%s lacks %s (not this flightrec's runtime?)", a->lib, lack);
		return -1;
	}
	a->detach_fn += o->base;
	a->unhook_fn += o->base;
	o->again_fn += o->base;
	o->to_var += o->base;
	return 0;
}

/*
 * A test's hook (tests/e2e/run, the attach cases that move threads):
 * FLIGHTREC_TEST_ATTACH_STEP=WHEN:LO-HI (hex) or WHEN:anon single-steps the stopped threads
 * in turn until one stands in [LO, HI) (or in an anonymous executable mapping: a -P stub) at
 * WHEN ("attach": before -P patches, "detach": before the sites are put back), so that the
 * moves those places need, which a stop lands on too rarely to be tested by chance, are
 * made. A thread in or at a system call is not stepped (a blocking one would leave its
 * step's trap pending). A thread stepped AT_STEP_BURST times without getting there runs
 * freely for a moment before it is stepped again: a seqlock read (the vDSO's
 * clock_gettime) retries for as long as each pass outlasts a clock tick, and stepped, each
 * pass does, so such a thread stepped on forever (1 attach in 10 here: 100000 steps over
 * 30 s, the test killing flightrec, its last step's trap killing the program). All of it
 * ends after AT_STEP_MS. Says which thread stepped where on stderr. Nothing without the
 * variable.
 */
#define AT_STEP_BURST 2000
#define AT_STEP_MS 5000
static bool at_in_anon_exec(pid_t pid, uint64_t ip)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	bool in = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!in && getline(&line, &cap, f) > 0) {
		unsigned long long s, e;
		char perms[8];
		int pos = -1;
		if (sscanf(line, "%llx-%llx %7s %*x %*s %*s %n", &s, &e, perms, &pos) < 3)
			continue;
		in = perms[2] == 'x' && (pos < 0 || line[pos] == '\0' || line[pos] == '\n') &&
		     ip >= s && ip < e;
	}
	free(line);
	fclose(f);
	return in;
}

/* the stop of a single step; -1 when it does not come in 2 s (a blocking call: the thread
 * is stopped again, where it was, and no longer stepped). Not sooner: a step that completes
 * after our interrupt leaves its SIGTRAP queued behind the interrupt's stop, for the program
 * to die of when it resumes, and on a loaded machine a thread can wait 50 ms for a CPU. */
static int at_step_wait(pid_t tid, int *st, int *sig)
{
	for (int t = 0; t < 20000; t++) {
		pid_t w = waitpid(tid, st, __WALL | WNOHANG);
		if (w == tid)
			return WIFSTOPPED(*st) ? 0 : -1;
		if (w < 0)
			return -1;
		usleep(100);
	}
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) == 0)
		at_wait_stop(tid, sig);
	return -1;
}

static void at_test_step(struct attach *a, const char *when)
{
	static bool out[ATTACH_MAX_THREADS]; /* no longer stepped */
	const char *v = getenv("FLIGHTREC_TEST_ATTACH_STEP");
	unsigned long long lo = 0, hi = 0;
	size_t wl = strlen(when), left = a->nth;
	struct timespec t0;
	bool anon;

	if (!v || strncmp(v, when, wl) || v[wl] != ':')
		return;
	v += wl + 1;
	anon = !strcmp(v, "anon");
	if (!anon && sscanf(v, "%llx-%llx", &lo, &hi) != 2)
		return;
	memset(out, 0, sizeof(out));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* one step of each in turn: a thread that blocks drops out, the others go on */
	for (int step = 0; step < 100000 && left && at_ms_since(&t0) < AT_STEP_MS; step++) {
		for (size_t k = 0; k < a->nth; k++) {
			pid_t tid = a->th[k].tid;
			struct user_regs_struct r;
			uint8_t insn[2];
			int st;

			if (out[k])
				continue;
			/* never into a system call: one that blocks would leave its step's trap
			 * pending, for the program to die of */
			if (a->th[k].sig || ptrace(PTRACE_GETREGS, tid, 0, &r) < 0 ||
			    (int64_t)r.orig_rax >= 0 || at_read(a->pid, r.rip, insn, 2) < 0 ||
			    (insn[0] == 0x0f && insn[1] == 0x05)) {
				out[k] = true;
				left--;
				continue;
			}
			if (anon ? at_in_anon_exec(a->pid, r.rip) : r.rip >= lo && r.rip < hi) {
				fprintf(stderr,
					"flightrec: test: thread %d stepped to %#llx (%s)\n",
					(int)tid, (unsigned long long)r.rip, when);
				return;
			}
			if (step > 0 && step % AT_STEP_BURST == 0) {
				/* out of a loop that stepping keeps going (above) */
				if (ptrace(PTRACE_CONT, tid, 0, a->th[k].sig) < 0)
					goto out_k;
				a->th[k].sig = 0;
				usleep(200);
				if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0 ||
				    at_wait_stop(tid, &st) != 0)
					goto out_k;
				if (st)
					a->th[k].sig = st;
				continue;
			}
			if (ptrace(PTRACE_SINGLESTEP, tid, 0, 0) < 0 ||
			    at_step_wait(tid, &st, &a->th[k].sig) < 0) {
out_k:
				out[k] = true;
				left--;
			} else if (WSTOPSIG(st) != SIGTRAP) {
				a->th[k].sig = WSTOPSIG(st); /* the program's: handed back */
			}
		}
	}
	fprintf(stderr, "flightrec: test: no thread stepped into %s (%s)\n", v, when);
}

/*
 * -P/-U: FLIGHTREC_ATTACH_IPS, where each stopped thread (in a->th's order) will resume, IP0
 * for thread I0 (the one our call runs in: its saved registers). libmcount leaves out or moves
 * past any site a thread stopped inside (mcount_dynamic.c mc_attach_to). Into BUF; NULL
 * when it does not fit.
 */
static char *at_ips_env(struct attach *a, int i0, uint64_t ip0, char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "FLIGHTREC_ATTACH_IPS=");

	if (a->nth > AT_PATCH_MAX_THREADS)
		return NULL;

	for (size_t k = 0; k < a->nth && n < len; k++) {
		struct user_regs_struct r;
		uint64_t ip = ip0;

		if ((int)k != i0)
			ip = ptrace(PTRACE_GETREGS, a->th[k].tid, 0, &r) == 0 ? r.rip : 0;
		n += (size_t)snprintf(buf + n, len - n, "%s%llx", k ? ":" : "",
				      (unsigned long long)ip);
	}
	return n < len ? buf : NULL;
}

/* after -P patched: the threads libmcount wants moved past the nops they stopped inside */
static void at_move_threads(struct attach *a, const struct at_ours *o)
{
	static uint64_t to[ATTACH_MAX_THREADS];
	struct user_regs_struct r;

	if (at_read(a->pid, o->to_var, to, a->nth * sizeof(to[0])) < 0)
		return;
	for (size_t k = 0; k < a->nth; k++) {
		if (!to[k] || ptrace(PTRACE_GETREGS, a->th[k].tid, 0, &r) < 0)
			continue;
		r.rip = to[k];
		ptrace(PTRACE_SETREGS, a->th[k].tid, 0, &r);
	}
}

int attach_inject(struct attach *a, char *const *env, char *why, size_t len)
{
	static struct at_regs saved;
	static char ips[ATTACH_MAX_THREADS * 17 + 32];
	static char *envp[512];
	uint8_t buf[65536];
	size_t n = 0, nenv = 0, ptrs;
	uint64_t base, handle = 0, old_env = 0;
	struct at_ours ours = { .a = a };
	uint64_t hooks[AT_NHOOKS];
	int i, rc;
	pid_t tid;

	a->nfirst = 0;
	for (size_t k = 0; k < a->nth; k++)
		a->first[a->nfirst++] = a->th[k].tid;
	if (a->patching)
		at_test_step(a, "attach");
	i = at_pick(a);
	if (i < 0) {
		snprintf(why, len, "no thread to call dlopen in");
		return -1;
	}
	tid = a->th[i].tid;
	if (at_save(tid, &saved) < 0) {
		snprintf(why, len, "ptrace on thread %d: %s", (int)tid, strerror(errno));
		return -1;
	}
	/* the block: env pointers, NULL, then the strings, then the library's path */
	while (env[nenv] && nenv < sizeof(envp) / sizeof(envp[0]) - 2) {
		envp[nenv] = env[nenv];
		nenv++;
	}
	if (a->patching) {
		if (!(envp[nenv++] = at_ips_env(a, i, saved.r.rip, ips, sizeof(ips)))) {
			snprintf(why, len, "-P/-U: more than %d threads", AT_PATCH_MAX_THREADS);
			return -1;
		}
	}
	envp[nenv] = NULL;
	env = envp;
	ptrs = (nenv + 1) * 8;
	n = ptrs;
	for (size_t k = 0; k <= nenv; k++) {
		const char *s = k < nenv ? env[k] : a->lib;
		size_t l = strlen(s) + 1;
		if (n + l > sizeof(buf)) {
			snprintf(why, len, "the settings are too long");
			return -1;
		}
		memcpy(buf + n, s, l);
		n += l;
	}
	n = (n + 7) & ~(size_t)7;
	base = (saved.r.rsp - AT_STACK_SKIP - n) & ~(uint64_t)15;
	for (size_t k = 0, off = ptrs; k <= nenv; k++) {
		const char *s = k < nenv ? env[k] : a->lib;
		uint64_t p = k < nenv ? base + off : 0;
		memcpy(buf + k * 8, &p, 8);
		if (k == nenv)
			break;
		off += strlen(s) + 1;
	}
	size_t lib_off = ptrs;
	for (size_t k = 0; k < nenv; k++)
		lib_off += strlen(env[k]) + 1;
	if (at_write(tid, base, buf, n) < 0 || at_read(a->pid, a->environ_var, &old_env, 8) < 0 ||
	    at_poke(tid, a->environ_var, base) < 0) {
		snprintf(why, len, "cannot write into process %d: %s", (int)a->pid,
			 strerror(errno));
		at_restore(tid, &saved);
		return -1;
	}
	if (a->again) {
		if (at_ours_syms(a, &ours, hooks, why, len) < 0) {
			at_poke(tid, a->environ_var, old_env);
			at_restore(tid, &saved);
			return -1;
		}
		rc = at_call(tid, &saved, base, ours.again_fn, 0, 0, 0, &handle, why, len);
		handle = (int)handle == 0; /* mc_attach_again: 0 when it records */
	} else {
		rc = at_call(tid, &saved, base, a->dlopen_fn, base + lib_off, RTLD_NOW, 0, &handle,
			     why, len);
	}
	if (rc == 1) {
		snprintf(why, len, "process %d ended during the attach", (int)a->pid);
		return -1;
	}
	at_poke(tid, a->environ_var, old_env);
	at_restore(tid, &saved);
	if (rc < 0)
		return -1;
	if (handle == 0 && a->again) {
		snprintf(why, len, "process %d is being recorded already (libmcount is loaded and "
			 "recording)", (int)a->pid);
		return -1;
	}
	if (handle == 0) {
		snprintf(why, len, "dlopen(%s) failed in process %d", a->lib, (int)a->pid);
		return -1;
	}
	if (!a->again && at_ours_syms(a, &ours, hooks, why, len) < 0)
		return -1;
	if (a->patching)
		at_move_threads(a, &ours);
	for (size_t k = 0; k < a->nslot; k++) {
		struct attach_slot *s = &a->slot[k];
		s->hook = ours.base + hooks[at_slot_kind[k]] + (uint64_t)at_slot_addend[k];
		if (at_read(a->pid, s->addr, &s->orig, 8) < 0 || at_poke(tid, s->addr, s->hook) < 0) {
			snprintf(why, len, "cannot write the GOT slot at %#llx: %s",
				 (unsigned long long)s->addr, strerror(errno));
			for (size_t j = 0; j < k; j++)
				at_poke(tid, a->slot[j].addr, a->slot[j].orig);
			return -1;
		}
	}
	/* XRay: the program's own __xray_patch stays off our sleds (at_scan_xray) */
	for (size_t k = 0; a->patching && k < a->nxray_busy; k++)
		a->xray_held |= at_set_byte(a, tid, a->xray_busy_var[k], 1) == 0;
	return 0;
}

#define AT_UNHOOK_TRIES 20 /* stops that find a thread inside a hook, before the last */

/* Every thread runs on for 2 ms and is stopped again, with any it created meanwhile. 0, or
 * -1 when the process is gone. */
static int at_run_a_little(struct attach *a)
{
	size_t kept = 0;
	char why[128];
	int sig;

	for (size_t k = 0; k < a->nth; k++) {
		ptrace(PTRACE_CONT, a->th[k].tid, 0, a->th[k].sig);
		a->th[k].sig = 0;
	}
	usleep(2000);
	for (size_t k = 0; k < a->nth; k++) {
		if (ptrace(PTRACE_INTERRUPT, a->th[k].tid, 0, 0) < 0 ||
		    at_wait_stop(a->th[k].tid, &sig) != 0)
			continue; /* ended meanwhile */
		a->th[kept].tid = a->th[k].tid;
		a->th[kept++].sig = sig;
	}
	a->nth = kept;
	return at_stop_more(a, why, sizeof(why));
}

/* libmcount's struct mc_attach_th (mcount_dynamic.h): one per thread for mc_attach_unhook */
struct at_th {
	uint64_t tp, ip, sp, inside;
};

/*
 * Every thread stopped, the slots put back: no thread may be inside libmcount when its
 * frames are unhooked (a hook halfway through its hijack would write the trampoline back),
 * so one stopped there runs on a little and is stopped again; then mc_attach_unhook in thread
 * TID with where every thread is. It declines while a thread is inside a hook in a way its
 * instruction pointer does not show (a system call there: the ring's back-pressure, which
 * waits for the flusher): then the whole process runs on 2 ms and we try again, the last try
 * forced. A thread that stays inside keeps its frames hooked (the library stays, they return
 * through it) and, -P, whatever of the sites and stubs it may still return through. -P:
 * libmcount says where each thread must resume once the sites are put back (off a stub, past
 * an XRay sled), and we move those it names. -1 when the process is gone.
 */
static int at_unhook(struct attach *a, pid_t tid)
{
	static struct at_th th[ATTACH_MAX_THREADS], back[ATTACH_MAX_THREADS];
	static struct at_regs saved;
	struct user_regs_struct r;
	uint64_t lo, hi, ret = 0, top;
	int sig, i;

	if (at_ours_text(a, &lo, &hi) < 0)
		return 0;
	for (int round = 0; round < AT_UNHOOK_TRIES; round++) {
		size_t n = a->nth;
		int force = round == AT_UNHOOK_TRIES - 1;

		if (round > 0 && at_run_a_little(a) < 0)
			return -1;
		if ((i = at_find(a, tid)) < 0)
			return -1;
		n = a->nth;
		for (size_t k = 0; k < n; k++) {
			pid_t t = a->th[k].tid;
			int tries = 0;
			while (ptrace(PTRACE_GETREGS, t, 0, &r) == 0 && r.rip >= lo && r.rip < hi &&
			       tries++ < 200) {
				if (ptrace(PTRACE_CONT, t, 0, a->th[k].sig) < 0)
					break;
				a->th[k].sig = 0;
				usleep(500);
				if (ptrace(PTRACE_INTERRUPT, t, 0, 0) < 0 ||
				    at_wait_stop(t, &sig) != 0)
					break;
				if (sig)
					a->th[k].sig = sig;
			}
		}
		if (round == 0)
			at_test_step(a, "detach");
		for (size_t k = 0; k < n; k++) {
			memset(&th[k], 0, sizeof(th[k]));
			th[k].inside = 1; /* unknown: left alone */
			if (ptrace(PTRACE_GETREGS, a->th[k].tid, 0, &r) == 0)
				th[k] = (struct at_th){r.fs_base, r.rip, r.rsp,
						       r.rip >= lo && r.rip < hi};
		}
		if (at_save(tid, &saved) < 0)
			return 0;
		top = (saved.r.rsp - AT_STACK_SKIP - n * sizeof(th[0])) & ~(uint64_t)15;
		if (at_write(tid, top, th, n * sizeof(th[0])) < 0 ||
		    at_call(tid, &saved, top, a->unhook_fn, top, n, force, &ret, (char[64]){0},
			    64) != 0) {
			at_restore(tid, &saved);
			return 0;
		}
		if (ret && !force) {
			at_restore(tid, &saved);
			continue; /* nothing done: a thread is inside a hook */
		}
		if (at_read(a->pid, top, back, n * sizeof(th[0])) == 0) {
			for (size_t k = 0; k < n; k++) {
				if (back[k].ip == th[k].ip && back[k].sp == th[k].sp)
					continue;
				if ((int)k == i) {
					saved.r.rip = back[k].ip;
					saved.r.rsp = back[k].sp;
				} else if (ptrace(PTRACE_GETREGS, a->th[k].tid, 0, &r) == 0) {
					r.rip = back[k].ip;
					r.rsp = back[k].sp;
					ptrace(PTRACE_SETREGS, a->th[k].tid, 0, &r);
				}
			}
		}
		at_restore(tid, &saved);
		break;
	}
	return 0;
}

int attach_detach(struct attach *a, char *why, size_t len)
{
	static struct at_regs saved;
	uint64_t ret, cur;
	int i, rc;
	pid_t tid;

	i = at_pick(a);
	if (i < 0) {
		snprintf(why, len, "no thread to detach in");
		return -1;
	}
	tid = a->th[i].tid;
	/* only a slot that still holds our hook: the program (lazy binding) may have bound it
	 * again meanwhile, and that binding is its own */
	for (size_t k = 0; k < a->nslot; k++)
		if (at_read(a->pid, a->slot[k].addr, &cur, 8) == 0 && cur == a->slot[k].hook)
			at_poke(tid, a->slot[k].addr, a->slot[k].orig);
	if (at_unhook(a, tid) < 0 || (i = at_find(a, tid)) < 0) {
		attach_resume_all(a);
		a->nth = 0;
		return 0; /* the process ended meanwhile: its exit finished the trace */
	}
	for (size_t k = 0; a->xray_held && k < a->nxray_busy; k++)
		at_set_byte(a, tid, a->xray_busy_var[k], 0);
	a->xray_held = 0;
	/* the others go on: finish needs our helper thread running */
	for (size_t k = 0; k < a->nth; k++)
		if ((int)k != i)
			at_resume(a, k);
	a->th[0] = a->th[i];
	a->nth = 1;
	if (at_save(tid, &saved) < 0) {
		snprintf(why, len, "ptrace on thread %d: %s", (int)tid, strerror(errno));
		attach_resume_all(a);
		return -1;
	}
	rc = at_call(tid, &saved, saved.r.rsp - AT_STACK_SKIP, a->detach_fn, 0, 0, 0, &ret, why,
		     len);
	if (rc == 1) {
		a->nth = 0;
		return 0; /* the process ended meanwhile: its exit finished the trace */
	}
	at_restore(tid, &saved);
	attach_resume_all(a);
	return rc < 0 ? -1 : 0;
}
