/*
 * test_sink_uftrace: the uftrace sink's metadata writers (sid-*.map, <exe>.sym and task.txt at
 * the session start, info at finish), the run-time symbol table (tracepoints, transcoding) and
 * libmcount's way of reading an ELF file never call malloc: the program's malloc may be its
 * own, instrumented (a hook inside the session start waited for itself forever), not
 * thread-safe, or hold a lock at a fatal signal. This binary
 * defines malloc, calloc, realloc and free itself, forwarding to glibc's, and counts the
 * calls made while a test has them armed. Also the malloc-free helpers they use (rec_util.h):
 * rec_sort against qsort, rec_mem_grow, rec_lines_next, rec_ctime_utc against gmtime. And the
 * symbol table taken from an earlier trace's .sym files (--with-syms).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "librecord/rec_elf.h"
#include "librecord/rec_session.h"
#include "librecord/rec_symtab.h"
#include "librecord/rec_util.h"
#include "formats/uftrace/sink_uftrace.h"
#include "formats/uftrace/uftrace_info.h"
#include "formats/uftrace/uftrace_sym.h"
#include "tests/unit/unit_util.h"

/* librecord's session code is linked in; it needs a front end */
struct rec_frontend rec_frontend_self_storage = { .name = "test_sink_uftrace" };

/* --- the counting allocator ------------------------------------------------------------ */

static int armed, allocs;

/* Under ASan or TSan (ASAN=1, TSAN=1) their allocator is the one to keep: nothing is counted
 * and the counts are not checked; the rest of each test runs as usual. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNIT_COUNTING 0
#else
#define UNIT_COUNTING 1
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

void *malloc(size_t n)
{
	allocs += armed;
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
	allocs += armed;
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	allocs += armed;
	return __libc_realloc(p, n);
}

void free(void *p)
{
	allocs += armed && p;
	__libc_free(p);
}
#endif

static void arm(void)
{
	allocs = 0;
	armed = 1;
}

/* the calls made since arm() (0 when not counting) */
static int disarm(void)
{
	armed = 0;
	return UNIT_COUNTING ? allocs : 0;
}

/* DIR/NAME's whole text (test side: stdio allowed, not armed) */
static char *slurp(const char *dir, const char *name)
{
	char p[1024], *buf;
	FILE *f;
	long n;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "r");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return buf;
}

/* --- the sink ---------------------------------------------------------------------------- */

static void test_session_start_and_finish(void **state)
{
	char dir[256], *text, name[64];
	struct stat spare, st;
	int dfd;
	ssize_t n;

	(void)state;
	unit_tmpdir_make(dir, sizeof(dir), "test_sink_uftrace", true);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	rec_sess.dirfd = dfd;
	rec_sess.ringdirfd = openat(dfd, ".flightrec", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(rec_sess.ringdirfd >= 0);
	rec_snprintf(rec_sess.dir, sizeof(rec_sess.dir), "%s", dir);
	n = readlink("/proc/self/exe", rec_sess.exe, sizeof(rec_sess.exe) - 1);
	assert_true(n > 0);
	rec_sess.exe[n] = '\0';
	rec_sess.pid = getpid();
	rec_sess.sink = &uftrace_sink;
	rec_sess.cfg.max_stack = 1024;
	/* the session start: info's inode reserved, sid-*.map, task.txt's SESS line, <exe>.sym */
	arm();
	assert_int_equal(uftrace_sink.open_session(&rec_sess), 0);
	assert_int_equal(disarm(), 0);
	assert_int_equal(fstatat(rec_sess.ringdirfd, "info.spare", &spare, 0), 0);

	rec_snprintf(name, sizeof(name), "sid-%s.map", rec_sess.sid);
	text = slurp(dir, name);
	assert_non_null(text);
	assert_non_null(strstr(text, " [stack]\n"));
	assert_non_null(strstr(text, rec_sess.exe)); /* the executable's line */
	free(text);
	rec_snprintf(name, sizeof(name), "%s.sym", strrchr(rec_sess.exe, '/') + 1);
	text = slurp(dir, name);
	assert_non_null(text);
	assert_non_null(strstr(text, "# symbols: "));
	assert_non_null(strstr(text, " T main\n"));
	/* the PLT entries, as uftrace names them (libmcount records library calls there) */
	assert_non_null(strstr(text, " P _cmocka_run_group_tests\n"));
	assert_non_null(strstr(text, " ? __dynsym_end\n"));
	free(text);

	/* finish: scans the .dat files, reads task.txt's exename, writes info */
	unit_write_file(dir, "4242.dat", "0123456789abcdef");
	unit_write_file(dir, "77.dat", "0123456789abcdef");
	arm();
	uftrace_sink.finish(&rec_sess);
	assert_int_equal(disarm(), 0);
	text = slurp(dir, "info");
	assert_non_null(text);
	assert_non_null(strstr(text + 40 /* past the binary header */, "taskinfo:tids=77,4242\n"));
	assert_non_null(strstr(text + 40, "exename:"));
	assert_non_null(strstr(text + 40, rec_sess.exe));
	free(text);
	/* info is the reserved inode, renamed into place */
	assert_int_equal(faccessat(rec_sess.ringdirfd, "info.spare", F_OK, 0), -1);
	assert_int_equal(fstatat(dfd, "info", &st, 0), 0);
	assert_int_equal(st.st_ino, spare.st_ino);

	close(rec_sess.ringdirfd);
	close(dfd);
	rec_sess.dirfd = rec_sess.ringdirfd = -1;
	unit_tmpdir_remove(dir);
}

/* libmcount's constructor asks which hooks the program imports: undefined symbols */
static void test_elf_map_reads_in_place(void **state)
{
	struct rec_elf_map m;
	const struct rec_elf_tab *t;
	int undef_cmocka = 0, main_func = 0;

	(void)state;
	arm();
	assert_int_equal(rec_elf_map_open("/proc/self/exe", &m), 0);
	t = rec_elf_map_symtab(&m);
	for (size_t i = 0; i < m.dynsym.nsyms; i++)
		undef_cmocka |= m.dynsym.syms[i].st_shndx == SHN_UNDEF &&
				!strcmp(rec_elf_tab_name(&m.dynsym, i), "_cmocka_run_group_tests");
	for (size_t i = 0; i < t->nsyms; i++) {
		const char *name;
		main_func |= rec_elf_tab_func(t, i, &name) && !strcmp(name, "main");
	}
	rec_elf_map_close(&m);
	assert_int_equal(disarm(), 0);
	assert_true(undef_cmocka);
	assert_true(main_func);
	/* not an ELF file */
	assert_int_equal(rec_elf_map_open("/proc/self/cmdline", &m), -1);
	assert_int_equal(rec_elf_map_open("/nonexistent", &m), -1);
}

static int test_exe_bias(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(uintptr_t *)arg = info->dlpi_addr;
	return 1; /* the first object is the program */
}

/*
 * Where the PLT entries are (rec_elf_plt), checked against this program's own code: entry i
 * jumps through the GOT slot of reloc i (`jmp *disp(%rip)`, after `endbr64; bnd` in a
 * .plt.sec), and the stub its slot holds until resolved pushes i.
 */
static void test_elf_plt(void **state)
{
	struct rec_elf_map m;
	struct rec_elf_plt plt;
	uintptr_t bias = 0;
	size_t checked = 0, named = 0;

	(void)state;
	dl_iterate_phdr(test_exe_bias, &bias);
	arm();
	assert_int_equal(rec_elf_map_open("/proc/self/exe", &m), 0);
	assert_int_equal(rec_elf_plt(&m, &plt), 0);
	assert_true(plt.nrel > 0);
	for (size_t i = 0; i < plt.nrel; i++) {
		const uint8_t *e = (const uint8_t *)(bias + plt.first + 16 * i);
		const uint8_t *stub = (const uint8_t *)(bias + plt.stub0 + 16 * i);
		uintptr_t slot = bias + plt.rela[i].r_offset;
		int32_t disp, pushed;

		if (!strcmp(rec_elf_plt_name(&m, &plt, i), "_cmocka_run_group_tests"))
			named++;
		if (e[0] == 0xf3 && e[1] == 0x0f && e[2] == 0x1e && e[3] == 0xfa)
			e += 4 + (e[4] == 0xf2); /* endbr64, bnd */
		assert_int_equal(e[0], 0xff);
		assert_int_equal(e[1], 0x25);
		memcpy(&disp, e + 2, 4);
		assert_true((uintptr_t)(e + 6) + disp == slot);
		if (stub[0] == 0xf3 && stub[1] == 0x0f && stub[2] == 0x1e && stub[3] == 0xfa)
			stub += 4;
		assert_int_equal(stub[0], 0x68);
		memcpy(&pushed, stub + 1, 4);
		assert_int_equal(pushed, (int32_t)i);
		checked++;
	}
	rec_elf_map_close(&m);
	assert_int_equal(disarm(), 0);
	assert_int_equal(named, 1);
	assert_int_equal(checked, plt.nrel);
	/* a file with no PLT: none */
	assert_int_equal(rec_elf_map_open("/proc/self/exe", &m), 0);
	m.dynsym.nsyms = 0;
	assert_int_equal(rec_elf_plt(&m, &plt), -1);
	rec_elf_map_close(&m);
}

/* the modules' tables, loaded at the session start (tracepoints) or a hook (transcoding) */
static void test_symtab_load(void **state)
{
	const struct rec_module *m = NULL;
	const struct rec_sym *sym;

	(void)state;
	arm();
	assert_int_equal(rec_symtab_load(), 0);
	sym = rec_symtab_find((uintptr_t)&test_symtab_load, &m);
	assert_int_equal(disarm(), 0);
	assert_non_null(sym);
	assert_string_equal(rec_symtab_name(m, sym), "test_symtab_load");
	rec_symtab_reset();
}

/* --with-syms (FLIGHTREC_WITH_SYMS): a module whose DIR/<file name>.sym holds functions has
 * those, at the first PT_LOAD page + the file's address, each ended by the next line; read
 * without malloc too */
static void test_symtab_symdir(void **state)
{
	const struct rec_module *m = NULL;
	const struct rec_sym *sym;
	char dir[256], path[1024], text[1024];
	uintptr_t off;
	const char *base;
	int fd;

	(void)state;
	assert_int_equal(rec_symtab_load(), 0);
	assert_non_null(rec_symtab_find((uintptr_t)&test_symtab_symdir, &m));
	off = (uintptr_t)&test_symtab_symdir - (m->lo & ~(uintptr_t)0xfff);
	base = strrchr(m->path, '/');
	base = base ? base + 1 : m->path;
	unit_tmpdir_make(dir, sizeof(dir), "test_sink_uftrace", false);
	snprintf(path, sizeof(path), "%s/%s.sym", dir, base);
	/* a header, a data line and a function, ended by a marker 24 bytes on */
	snprintf(text, sizeof(text),
		 "# symbols: 2\n# path name: %s\n%016lx d some_data\n%016lx T renamed_fn\n"
		 "%016lx ? __func_end\n",
		 m->path, (unsigned long)off - 8, (unsigned long)off, (unsigned long)off + 24);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	rec_symtab_reset();

	rec_symtab_set_symdir(dir);
	arm();
	assert_int_equal(rec_symtab_load(), 0);
	sym = rec_symtab_find((uintptr_t)&test_symtab_symdir + 4, &m);
	assert_int_equal(disarm(), 0);
	assert_non_null(sym);
	assert_string_equal(rec_symtab_name(m, sym), "renamed_fn");
	assert_int_equal(sym->size, 24);
	assert_int_equal(m->nsyms, 1); /* the data line and the marker are not functions */
	rec_symtab_set_symdir(NULL);
	rec_symtab_reset();
	unlink(path);
	unit_tmpdir_remove(dir);
}

/* --- the helpers ------------------------------------------------------------------------- */

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

static void test_sort_and_mem(void **state)
{
	enum { N = 5000 };
	int *v, *w;

	(void)state;
	arm();
	v = rec_mem_grow(NULL, 16 * sizeof(int));
	assert_non_null(v);
	for (int i = 0; i < 16; i++)
		v[i] = i;
	v = rec_mem_grow(v, N * sizeof(int)); /* grows, keeps what it held, new memory is zero */
	assert_non_null(v);
	for (int i = 0; i < 16; i++)
		assert_int_equal(v[i], i);
	assert_int_equal(v[N - 1], 0);
	srand(7);
	for (int i = 0; i < N; i++)
		v[i] = rand() % 1000 - 500;
	assert_int_equal(disarm(), 0);
	w = malloc(N * sizeof(int));
	memcpy(w, v, N * sizeof(int));
	qsort(w, N, sizeof(int), cmp_int);
	arm();
	rec_sort(v, N, sizeof(int), cmp_int);
	rec_sort(v, 0, sizeof(int), cmp_int);
	assert_int_equal(disarm(), 0);
	assert_memory_equal(v, w, N * sizeof(int));
	free(w);
	rec_mem_free(v);
}

static void test_lines_and_date(void **state)
{
	char dir[256], path[512], line[8], buf[32], want[64];
	struct rec_lines l;
	struct tm tm;
	time_t t = 1764138056; /* Wed Nov 26 06:20:56 2025 */
	int fd;

	(void)state;
	unit_tmpdir_make(dir, sizeof(dir), "test_sink_uftrace", false);
	unit_write_file(dir, "lines", "ab\n\nlonger than eight\nlast");
	snprintf(path, sizeof(path), "%s/lines", dir);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	arm();
	rec_lines_init(&l, fd);
	assert_int_equal(rec_lines_next(&l, line, sizeof(line)), 2);
	assert_string_equal(line, "ab");
	assert_int_equal(rec_lines_next(&l, line, sizeof(line)), 0);
	assert_int_equal(rec_lines_next(&l, line, sizeof(line)), 7); /* cut, the rest skipped */
	assert_string_equal(line, "longer ");
	assert_int_equal(rec_lines_next(&l, line, sizeof(line)), 4);
	assert_string_equal(line, "last");
	assert_int_equal(rec_lines_next(&l, line, sizeof(line)), -1);
	assert_int_equal(disarm(), 0);
	close(fd);
	unit_tmpdir_remove(dir);

	for (long long s = -86400LL * 800; s < 86400LL * 366 * 200; s += 86400LL * 37 + 3727) {
		t = (time_t)s;
		gmtime_r(&t, &tm);
		strftime(want, sizeof(want), "%a %b %e %H:%M:%S %Y", &tm);
		rec_ctime_utc(s, buf);
		assert_string_equal(buf, want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_session_start_and_finish),
		cmocka_unit_test(test_elf_map_reads_in_place),
		cmocka_unit_test(test_elf_plt),
		cmocka_unit_test(test_symtab_load),
		cmocka_unit_test(test_symtab_symdir),
		cmocka_unit_test(test_sort_and_mem),
		cmocka_unit_test(test_lines_and_date),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
