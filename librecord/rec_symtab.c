/*
 * rec_symtab: function symbols of the loaded modules (see rec_symtab.h).
 *
 * Invariants: rec_mods[0 .. rec_nmods) are fully built before rec_nmods covers them (release
 * store, acquire loads), and are never changed or freed afterwards (except by the unit tests'
 * reset). Loading happens under rec_symtab_lock only.
 */
#include "librecord/rec_symtab.h"
#include "librecord/rec_elf.h"
#include "librecord/rec_util.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define REC_SYMTAB_MAX_MODULES 1024

static struct rec_module *rec_mods[REC_SYMTAB_MAX_MODULES];
static size_t rec_nmods;
static pthread_mutex_t rec_symtab_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long rec_symtab_adds; /* dlpi_adds at the last scan */
static uint32_t rec_symtab_next_id = 1;

static int rec_module_read_symfile(struct rec_module *m, const char *path, uint64_t load_base);

static int rec_sym_cmp(const void *a, const void *b)
{
	const struct rec_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* at one address the global name first: it is the one users know */
	if (x->global != y->global)
		return x->global ? -1 : 1;
	return (x->name > y->name) - (x->name < y->name);
}

/* Read the function symbols of `path` into m (bias already set). The file is read in place
 * and the tables are mmap'ed memory: this runs at the session start and at hooks (tracepoints,
 * transcoding), where the program's malloc may not be called (rec_util.h). */
static void rec_module_read(struct rec_module *m, const char *path)
{
	const struct rec_elf_tab *tab;
	struct rec_elf_map em;
	size_t cnt = 0, pool = 0, poolcap = 0;

	if (rec_elf_map_open(path, &em) < 0)
		return;
	m->is_dyn = ((const Elf64_Ehdr *)em.p)->e_type == ET_DYN;
	if (rec_module_read_symfile(m, path, em.load_base) == 0)
		goto out;
	rec_snprintf(m->path, sizeof(m->path), "%s", path);
	tab = rec_elf_map_symtab(&em);
	m->syms = rec_mem_grow(NULL, (tab->nsyms ? tab->nsyms : 1) * sizeof(*m->syms));
	if (!m->syms)
		goto out;
	for (size_t i = 0; i < tab->nsyms; i++) {
		const Elf64_Sym *s = &tab->syms[i];
		const char *name;
		size_t len;

		if (!rec_elf_tab_func(tab, i, &name))
			continue;
		len = strlen(name) + 1;
		if (pool + len > poolcap) {
			size_t cap = (poolcap ? poolcap * 2 : 16384) + len;
			char *np = rec_mem_grow(m->names, cap);
			if (!np)
				break;
			m->names = np;
			poolcap = cap;
		}
		memcpy(m->names + pool, name, len);
		m->syms[cnt].addr = m->bias + (uintptr_t)s->st_value;
		m->syms[cnt].size = s->st_size > UINT32_MAX ? UINT32_MAX : (uint32_t)s->st_size;
		m->syms[cnt].name = (uint32_t)pool;
		m->syms[cnt].global = ELF64_ST_BIND(s->st_info) != STB_LOCAL;
		m->syms[cnt].used = 0;
		m->syms[cnt].id = 0;
		pool += len;
		cnt++;
	}
	m->nsyms = cnt;
	rec_sort(m->syms, cnt, sizeof(*m->syms), rec_sym_cmp);
out:
	rec_elf_map_close(&em);
}

/* --with-syms (rec_symtab_set_symdir): the directory of an earlier trace, or NULL */
static const char *rec_symdir;

void rec_symtab_set_symdir(const char *dir)
{
	rec_symdir = dir && *dir ? dir : NULL;
}

static int rec_hex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* One symbol of a .sym file's text p[0 .. n): "<hex addr> <type> <name>". The function
 * lines (T t W w, as uftrace's reader takes them) added to m at base + addr; every line
 * closes the function before it (the format's "ends where the next line starts"). */
static int rec_symfile_line(struct rec_module *m, const char *p, size_t n, uintptr_t base,
			    size_t *pool, size_t *poolcap, size_t *cap)
{
	uint64_t addr = 0;
	size_t i = 0, len;
	char type;

	while (i < n && rec_hex(p[i]) >= 0)
		addr = addr << 4 | (uint64_t)rec_hex(p[i++]);
	if (i == 0 || i + 3 > n || p[i] != ' ' || p[i + 2] != ' ')
		return 0; /* a header ("# symbols:") or a line that is not a symbol */
	type = p[i + 1];
	p += i + 3;
	len = n - i - 3;
	if (m->nsyms && !m->syms[m->nsyms - 1].size && base + addr > m->syms[m->nsyms - 1].addr) {
		uint64_t sz = base + addr - m->syms[m->nsyms - 1].addr;
		m->syms[m->nsyms - 1].size = sz > UINT32_MAX ? UINT32_MAX : (uint32_t)sz;
	}
	if ((type != 'T' && type != 't' && type != 'W' && type != 'w') || !len)
		return 0;
	if (m->nsyms == *cap) {
		size_t ncap = *cap ? *cap * 2 : 1024;
		struct rec_sym *ns = rec_mem_grow(m->syms, ncap * sizeof(*ns));
		if (!ns)
			return -1;
		m->syms = ns;
		*cap = ncap;
	}
	if (*pool + len + 1 > *poolcap) {
		size_t ncap = (*poolcap ? *poolcap * 2 : 16384) + len + 1;
		char *np = rec_mem_grow(m->names, ncap);
		if (!np)
			return -1;
		m->names = np;
		*poolcap = ncap;
	}
	memcpy(m->names + *pool, p, len);
	m->names[*pool + len] = '\0';
	m->syms[m->nsyms] = (struct rec_sym){ .addr = base + (uintptr_t)addr,
					      .name = (uint32_t)*pool,
					      .global = type == 'T' || type == 'W' };
	*pool += len + 1;
	m->nsyms++;
	return 0;
}

/*
 * uftrace record --with-syms DIR: the functions of the module at path are those of
 * DIR/<file name>.sym, a .sym file an earlier record wrote (of the same program before it
 * was stripped), as uftrace's libmcount reads them (UFTRACE_SYMBOL_DIR): addresses relative
 * to the module's first PT_LOAD, page-aligned. 0 when m holds them; -1 (m untouched but for
 * is_dyn): no such file, or no function in it, and the ELF file's are read instead.
 */
static int rec_module_read_symfile(struct rec_module *m, const char *path, uint64_t load_base)
{
	const char *base = strrchr(path, '/');
	char file[PATH_MAX];
	size_t pool = 0, poolcap = 0, cap = 0, size;
	struct stat st;
	const char *text;
	int fd;

	if (!rec_symdir)
		return -1;
	rec_snprintf(file, sizeof(file), "%s/%s.sym", rec_symdir, base ? base + 1 : path);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
		close(fd);
		return -1;
	}
	size = (size_t)st.st_size;
	text = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (text == MAP_FAILED)
		return -1;
	for (size_t at = 0; at < size;) {
		const char *nl = memchr(text + at, '\n', size - at);
		size_t n = nl ? (size_t)(nl - (text + at)) : size - at;

		if (rec_symfile_line(m, text + at, n, m->bias + load_base, &pool, &poolcap, &cap) <
		    0)
			break;
		at += n + 1;
	}
	munmap((void *)text, size);
	if (!m->nsyms) {
		rec_symtab_free_module(m);
		return -1;
	}
	rec_snprintf(m->path, sizeof(m->path), "%s", path);
	rec_sort(m->syms, m->nsyms, sizeof(*m->syms), rec_sym_cmp);
	return 0;
}

int rec_symtab_read_module(struct rec_module *m, const char *path)
{
	rec_module_read(m, path);
	return m->path[0] ? 0 : -1;
}

void rec_symtab_free_module(struct rec_module *m)
{
	if (m->syms)
		rec_mem_free(m->syms);
	if (m->names)
		rec_mem_free(m->names);
	m->syms = NULL;
	m->names = NULL;
	m->nsyms = 0;
}

struct rec_scan {
	int found_new;
	unsigned long long adds;
};

static int rec_known(uintptr_t bias, uintptr_t lo)
{
	for (size_t i = 0; i < rec_nmods; i++)
		if (rec_mods[i]->bias == bias && rec_mods[i]->lo == lo)
			return 1;
	return 0;
}

static int rec_scan_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct rec_scan *sc = arg;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	struct rec_module *m;
	const char *path = info->dlpi_name;
	char exe[512];
	int is_exe = 0;

	(void)size;
	sc->adds = info->dlpi_adds;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + ph->p_vaddr < lo)
			lo = info->dlpi_addr + ph->p_vaddr;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
			hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	if (hi == 0 || rec_known(info->dlpi_addr, lo) || rec_nmods == REC_SYMTAB_MAX_MODULES)
		return 0;
	if (!path || !*path) {
		/* the first object, without a name, is the executable */
		/* thread-self: see rec_session.c's exe */
		ssize_t n = readlink("/proc/thread-self/exe", exe, sizeof(exe) - 1);
		if (n <= 0)
			n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = '\0';
		path = exe;
		is_exe = rec_nmods == 0;
	}
	m = rec_mem_grow(NULL, sizeof(*m)); /* zero */
	if (!m)
		return 1;
	m->bias = info->dlpi_addr;
	m->lo = lo;
	m->hi = hi;
	m->is_exe = is_exe;
	/* a library dlopen'ed by a relative name ("./libfoo.so") has that name here: it is
	 * relative to the current directory, as the loader took it (realpath with our own
	 * buffer does not allocate) */
	if (path[0] != '/' && realpath(path, exe))
		path = exe;
	if (path[0] == '/')
		rec_module_read(m, path);
	/* ids: one per distinct address, after the ids of the modules before */
	m->id_base = rec_symtab_next_id - 1;
	for (size_t i = 0; i < m->nsyms; i++) {
		if (i == 0 || m->syms[i].addr != m->syms[i - 1].addr)
			m->nids++;
		m->syms[i].id = m->id_base + m->nids;
	}
	rec_symtab_next_id += m->nids;
	rec_mods[rec_nmods] = m;
	__atomic_store_n(&rec_nmods, rec_nmods + 1, __ATOMIC_RELEASE);
	sc->found_new = 1;
	return 0;
}

/* Scan for modules not seen yet; 1 when some were added. Lock held. */
static int rec_symtab_scan(void)
{
	struct rec_scan sc = {0, 0};

	dl_iterate_phdr(rec_scan_cb, &sc);
	rec_symtab_adds = sc.adds;
	return sc.found_new;
}

int rec_symtab_load(void)
{
	pthread_mutex_lock(&rec_symtab_lock);
	rec_symtab_scan();
	pthread_mutex_unlock(&rec_symtab_lock);
	return rec_nmods ? 0 : -1;
}

size_t rec_symtab_nmodules(void)
{
	return __atomic_load_n(&rec_nmods, __ATOMIC_ACQUIRE);
}

const struct rec_module *rec_symtab_module_at(size_t i)
{
	return i < rec_symtab_nmodules() ? rec_mods[i] : NULL;
}

static struct rec_module *rec_module_of(uintptr_t addr)
{
	size_t n = rec_symtab_nmodules();

	for (size_t i = 0; i < n; i++)
		if (addr >= rec_mods[i]->lo && addr < rec_mods[i]->hi)
			return rec_mods[i];
	return NULL;
}

const struct rec_module *rec_symtab_module(uintptr_t addr)
{
	struct rec_module *m = rec_module_of(addr);
	unsigned long long adds;

	if (m)
		return m;
	/* a module loaded since the last scan? (dlopen) */
	adds = rec_dl_adds();
	pthread_mutex_lock(&rec_symtab_lock);
	if (adds != rec_symtab_adds)
		rec_symtab_scan();
	pthread_mutex_unlock(&rec_symtab_lock);
	return rec_module_of(addr);
}

struct rec_sym *rec_symtab_find(uintptr_t addr, const struct rec_module **mod)
{
	const struct rec_module *m = rec_symtab_module(addr);
	size_t lo = 0, hi;
	struct rec_sym *s;

	if (!m || m->nsyms == 0)
		return NULL;
	hi = m->nsyms;
	/* the last symbol at or below addr */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->syms[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	s = &m->syms[lo];
	if (s->addr > addr)
		return NULL;
	while (lo > 0 && m->syms[lo - 1].addr == s->addr)
		s = &m->syms[--lo]; /* the first alias */
	if (s->size) {
		if (addr >= s->addr + s->size)
			return NULL;
	} else {
		/* no size: up to the next symbol */
		size_t next = lo + 1;
		while (next < m->nsyms && m->syms[next].addr == s->addr)
			next++;
		if (next < m->nsyms && addr >= m->syms[next].addr)
			return NULL;
	}
	if (mod)
		*mod = m;
	return s;
}

size_t rec_symtab_lookup(const char *name, struct rec_sym **out, const struct rec_module **mods,
			 size_t max)
{
	size_t n = rec_symtab_nmodules(), found = 0;

	for (size_t i = 0; i < n; i++) {
		struct rec_module *m = rec_mods[i];
		for (size_t k = 0; k < m->nsyms; k++) {
			struct rec_sym *s = &m->syms[k];
			if (strcmp(m->names + s->name, name) != 0)
				continue;
			/* one entry per address: an alias of one already found is the same function
			 */
			int dup = 0;
			for (size_t j = 0; j < found && j < max; j++)
				dup |= out[j]->addr == s->addr;
			if (dup)
				continue;
			if (found < max) {
				out[found] = s;
				mods[found] = m;
			}
			found++;
		}
	}
	return found;
}

struct rec_sym *rec_symtab_by_id(uint32_t id, const struct rec_module **mod)
{
	size_t n = rec_symtab_nmodules();

	for (size_t i = 0; i < n; i++) {
		struct rec_module *m = rec_mods[i];
		size_t lo = 0, hi = m->nsyms;
		if (id <= m->id_base || id > m->id_base + m->nids)
			continue;
		while (lo < hi) { /* the first symbol with this id (ids grow with the index) */
			size_t mid = lo + (hi - lo) / 2;
			if (m->syms[mid].id < id)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < m->nsyms && m->syms[lo].id == id) {
			if (mod)
				*mod = m;
			return &m->syms[lo];
		}
	}
	return NULL;
}

void rec_symtab_reset(void)
{
	pthread_mutex_lock(&rec_symtab_lock);
	for (size_t i = 0; i < rec_nmods; i++) {
		rec_mem_free(rec_mods[i]->syms);
		rec_mem_free(rec_mods[i]->names);
		rec_mem_free(rec_mods[i]);
		rec_mods[i] = NULL;
	}
	rec_nmods = 0;
	rec_symtab_adds = 0;
	rec_symtab_next_id = 1;
	pthread_mutex_unlock(&rec_symtab_lock);
}
