/*
 * uftrace_autoargs: our table of library prototypes for -a/--auto-args (see the header).
 *
 * Each item follows the C prototype: a size_t is /u, a pointer /p, a C string /s, an int
 * /d32 (or an enum of the flags it takes), a char /c, a double /f64; a long or an off_t is
 * the default (64-bit signed). Variadic arguments are not listed (printf's format only).
 * Where uftrace 0.13 describes a function too, ours records what its table does (the same
 * items, no return value where it has none: memcpy's, strcpy's), so that `uftrace replay`
 * shows our recording as it shows uftrace's; a function it does not describe is left out
 * (uftrace's -a would show it bare). The
 * enum values are Linux x86_64's (the kernel's where glibc's headers differ: O_LARGEFILE);
 * their names are uftrace's (uft_*), so that a spec written for uftrace (`/e:uft_open_flag`)
 * names the same enum here.
 */
#include "formats/uftrace/uftrace_autoargs.h"

#include <string.h>

/* sorted by name, strcmp order (the unit test checks) */
static const struct uftrace_autoarg uftrace_autoargs[] = {
	{"_ZdaPv", "arg1/x", NULL},	 /* operator delete[](void *) */
	{"_ZdlPv", "arg1/x", NULL},	 /* operator delete(void *) */
	{"_Znam", "arg1/u", "retval/x"}, /* operator new[](size_t) */
	{"_Znwm", "arg1/u", "retval/x"}, /* operator new(size_t) */
	{"accept", "arg1/d32,arg2/p,arg3/p", "retval/d32"},
	{"access", "arg1/s,arg2/e:uft_access_flag", "retval/d32"},
	{"aligned_alloc", "arg1/u,arg2/u", "retval/p"},
	{"atof", "arg1/s", "retval/f64"},
	{"atoi", "arg1/s", "retval/d32"},
	{"atol", "arg1/s", "retval"},
	{"bind", "arg1/d32,arg2/p,arg3", "retval/d32"},
	{"calloc", "arg1/u,arg2/u", "retval/p"},
	{"chdir", "arg1/s", "retval/d32"},
	{"clock_gettime", "arg1/e:uft_clockid_t,arg2/p", "retval/d32"},
	{"close", "arg1/d32", "retval/d32"},
	{"connect", "arg1/d32,arg2/p,arg3", "retval/d32"},
	{"dlclose", "arg1/p", "retval/d32"},
	{"dlerror", NULL, "retval/s"},
	{"dlopen", "arg1/s,arg2/e:uft_dlopen_flag", "retval/p"},
	{"dlsym", "arg1/p,arg2/s", "retval/p"},
	{"dup", "arg1/d32", "retval/d32"},
	{"dup2", "arg1/d32,arg2/d32", "retval/d32"},
	{"execv", "arg1/s", "retval/d32"},
	{"execve", "arg1/s", "retval/d32"},
	{"execvp", "arg1/s", "retval/d32"},
	{"exit", "arg1/d32", NULL},
	{"fclose", "arg1/p", "retval/d32"},
	{"fflush", "arg1/p", "retval/d32"},
	{"fgets", "arg1/p,arg2/d32,arg3/p", "retval/s"},
	{"fopen", "arg1/s,arg2/s", "retval/p"},
	{"fork", NULL, "retval/i32"},
	{"fprintf", "arg1/p,arg2/s", "retval/d32"},
	{"fputc", "arg1/c,arg2/p", "retval/d32"},
	{"fputs", "arg1/s,arg2/p", "retval/d32"},
	{"fread", "arg1/p,arg2/u,arg3/u,arg4/p", "retval/u"},
	{"free", "arg1/p", NULL},
	{"fstat", "arg1/d32,arg2/p", "retval/d32"},
	{"fwrite", "arg1/p,arg2/u,arg3/u,arg4/p", "retval/u"},
	{"getenv", "arg1/s", "retval/s"},
	{"getpid", NULL, "retval/i32"},
	{"getppid", NULL, "retval/i32"},
	{"isatty", "arg1/d32", "retval/d32"},
	{"kill", "arg1/i32,arg2/e:uft_signal", "retval/d32"},
	{"lseek", "arg1/d32,arg2,arg3/e:uft_seek_whence", "retval"},
	{"madvise", "arg1/p,arg2/u,arg3/e:uft_madvise", "retval/d32"},
	{"malloc", "arg1/u", "retval/p"},
	{"memchr", "arg1/p,arg2/d32,arg3/u", "retval/p"},
	{"memcmp", "arg1/p,arg2/p,arg3/u", "retval/d32"},
	{"memcpy", "arg1/p,arg2/p,arg3/u", NULL},
	{"memmove", "arg1/p,arg2/p,arg3/u", NULL},
	{"memset", "arg1/p,arg2/d32,arg3/u", NULL},
	{"mkdir", "arg1/s", "retval/d32"},
	{"mmap", "arg1/p,arg2/u,arg3/e:uft_mmap_prot,arg4/e:uft_mmap_flag,arg5/d32,arg6",
	 "retval/p"},
	{"mprotect", "arg1/p,arg2/u,arg3/e:uft_mmap_prot", "retval/d32"},
	{"munmap", "arg1/p,arg2/u", "retval/d32"},
	{"open", "arg1/s,arg2/e:uft_open_flag", "retval/d32"},
	{"openat", "arg1/d32,arg2/s,arg3/e:uft_open_flag", "retval/d32"},
	{"posix_memalign", "arg1/p,arg2/u,arg3/u", "retval/d32"},
	{"printf", "arg1/s", "retval/d32"},
	{"pthread_cond_broadcast", "arg1/p", "retval/d32"},
	{"pthread_cond_signal", "arg1/p", "retval/d32"},
	{"pthread_cond_wait", "arg1/p,arg2/p", "retval/d32"},
	{"pthread_create", "arg1/p,arg2/p,arg3/p,arg4/p", "retval/d32"},
	{"pthread_detach", "arg1", "retval/d32"},
	{"pthread_join", "arg1,arg2/p", "retval/d32"},
	{"pthread_mutex_init", "arg1/p,arg2/p", "retval/d32"},
	{"pthread_mutex_lock", "arg1/p", "retval/d32"},
	{"pthread_mutex_trylock", "arg1/p", "retval/d32"},
	{"pthread_mutex_unlock", "arg1/p", "retval/d32"},
	{"putchar", "arg1/c", "retval/d32"},
	{"puts", "arg1/s", "retval/d32"},
	{"raise", "arg1/e:uft_signal", "retval/d32"},
	{"read", "arg1/d32,arg2/p,arg3/u", "retval"},
	{"realloc", "arg1/p,arg2/u", "retval/p"},
	{"rmdir", "arg1/s", "retval/d32"},
	{"setenv", "arg1/s,arg2/s,arg3/d32", "retval/d32"},
	{"sigaction", "arg1/e:uft_signal,arg2/p,arg3/p", "retval/d32"},
	{"signal", "arg1/e:uft_signal,arg2/p", "retval"},
	{"sigprocmask", "arg1/e:uft_sigmask,arg2/p,arg3/p", "retval/d32"},
	{"sleep", "arg1/u", "retval/u"},
	{"snprintf", "arg1/p,arg2/u,arg3/s", "retval/d32"},
	{"socket", "arg1/e:uft_socket_domain,arg2/e:uft_socket_type,arg3/d32", "retval/d32"},
	{"sprintf", "arg1/p,arg2/s", "retval/d32"},
	{"stat", "arg1/s,arg2/p", "retval/d32"},
	{"strcasecmp", "arg1/s,arg2/s", "retval/d32"},
	{"strcat", "arg1/s,arg2/s", "retval/s"},
	{"strchr", "arg1/s,arg2/c", "retval/s"},
	{"strcmp", "arg1/s,arg2/s", "retval/d32"},
	{"strcpy", "arg1/p,arg2/s", NULL},
	{"strdup", "arg1/s", "retval/s"},
	{"strlen", "arg1/s", "retval/u"},
	{"strncasecmp", "arg1/s,arg2/s,arg3/u", "retval/d32"},
	{"strncmp", "arg1/s,arg2/s,arg3/u", "retval/d32"},
	{"strncpy", "arg1/p,arg2/s,arg3/u", NULL},
	{"strndup", "arg1/s,arg2/u", "retval/s"},
	{"strnlen", "arg1/s,arg2/u", "retval/u"},
	{"strrchr", "arg1/s,arg2/c", "retval/s"},
	{"strstr", "arg1/s,arg2/s", "retval/s"},
	{"strtod", "arg1/s,arg2/p", "retval/f64"},
	{"strtok", "arg1/s,arg2/s", "retval/s"},
	{"strtol", "arg1/s,arg2/p,arg3/d32", "retval"},
	{"strtoul", "arg1/s,arg2/p,arg3/d32", "retval/u"},
	{"unlink", "arg1/s", "retval/d32"},
	{"unsetenv", "arg1/s", "retval/d32"},
	{"usleep", "arg1/u", "retval/d32"},
	{"waitpid", "arg1/i32,arg2/p,arg3/d32", "retval/i32"},
	{"write", "arg1/d32,arg2/p,arg3/u", "retval"},
};

const char uftrace_autoarg_enums[] =
	"enum uft_access_flag { F_OK = 0, X_OK = 1, W_OK = 2, R_OK = 4, };"
	"enum uft_clockid_t { CLOCK_REALTIME = 0, CLOCK_MONOTONIC = 1, "
	"CLOCK_PROCESS_CPUTIME_ID = 2, CLOCK_THREAD_CPUTIME_ID = 3, CLOCK_MONOTONIC_RAW = 4, "
	"CLOCK_REALTIME_COARSE = 5, CLOCK_MONOTONIC_COARSE = 6, CLOCK_BOOTTIME = 7, "
	"CLOCK_REALTIME_ALARM = 8, CLOCK_BOOTTIME_ALARM = 9, CLOCK_TAI = 11, };"
	"enum uft_dlopen_flag { RTLD_LOCAL = 0, RTLD_LAZY = 1, RTLD_NOW = 2, RTLD_NOLOAD = 4, "
	"RTLD_DEEPBIND = 8, RTLD_GLOBAL = 0x100, RTLD_NODELETE = 0x1000, };"
	"enum uft_madvise { MADV_NORMAL = 0, MADV_RANDOM = 1, MADV_SEQUENTIAL = 2, "
	"MADV_WILLNEED = 3, MADV_DONTNEED = 4, MADV_FREE = 8, MADV_REMOVE = 9, "
	"MADV_DONTFORK = 10, MADV_DOFORK = 11, MADV_MERGEABLE = 12, MADV_UNMERGEABLE = 13, "
	"MADV_HUGEPAGE = 14, MADV_NOHUGEPAGE = 15, MADV_DONTDUMP = 16, MADV_DODUMP = 17, "
	"MADV_HWPOISON = 100, };"
	"enum uft_mmap_flag { MAP_SHARED = 0x1, MAP_PRIVATE = 0x2, MAP_FIXED = 0x10, "
	"MAP_ANON = 0x20, MAP_GROWSDOWN = 0x100, MAP_DENYWRITE = 0x800, "
	"MAP_EXECUTABLE = 0x1000, MAP_LOCKED = 0x2000, MAP_NORESERVE = 0x4000, "
	"MAP_POPULATE = 0x8000, MAP_NONBLOCK = 0x10000, MAP_STACK = 0x20000, "
	"MAP_HUGETLB = 0x40000, };"
	"enum uft_mmap_prot { PROT_NONE = 0, PROT_READ = 1, PROT_WRITE = 2, PROT_EXEC = 4, };"
	"enum uft_open_flag { O_RDONLY = 0, O_WRONLY = 01, O_RDWR = 02, O_CREAT = 0100, "
	"O_EXCL = 0200, O_NOCTTY = 0400, O_TRUNC = 01000, O_APPEND = 02000, "
	"O_NONBLOCK = 04000, O_DSYNC = 010000, O_ASYNC = 020000, O_DIRECT = 040000, "
	"O_LARGEFILE = 0100000, O_DIRECTORY = 0200000, O_NOFOLLOW = 0400000, "
	"O_NOATIME = 01000000, O_CLOEXEC = 02000000, O_SYNC = 04010000, O_PATH = 010000000, };"
	"enum uft_seek_whence { SEEK_SET = 0, SEEK_CUR = 1, SEEK_END = 2, SEEK_DATA = 3, "
	"SEEK_HOLE = 4, };"
	"enum uft_signal { SIGNULL = 0, SIGHUP = 1, SIGINT = 2, SIGQUIT = 3, SIGILL = 4, "
	"SIGTRAP = 5, SIGABRT = 6, SIGBUS = 7, SIGFPE = 8, SIGKILL = 9, SIGUSR1 = 10, "
	"SIGSEGV = 11, SIGUSR2 = 12, SIGPIPE = 13, SIGALRM = 14, SIGTERM = 15, SIGSTKFLT = 16, "
	"SIGCHLD = 17, SIGCONT = 18, SIGSTOP = 19, SIGTSTP = 20, SIGTTIN = 21, SIGTTOU = 22, "
	"SIGURG = 23, SIGXCPU = 24, SIGXFSZ = 25, SIGVTALRM = 26, SIGPROF = 27, "
	"SIGWINCH = 28, SIGPOLL = 29, SIGPWR = 30, SIGSYS = 31, SIGRTMIN = 32, "
	"SIGRTMAX = 64, };"
	"enum uft_sigmask { SIG_BLOCK = 0, SIG_UNBLOCK = 1, SIG_SETMASK = 2, };"
	"enum uft_socket_domain { AF_UNSPEC = 0, AF_UNIX = 1, AF_INET = 2, AF_INET6 = 10, "
	"AF_NETLINK = 16, AF_PACKET = 17, };"
	"enum uft_socket_type { SOCK_STREAM = 1, SOCK_DGRAM = 2, SOCK_RAW = 3, SOCK_RDM = 4, "
	"SOCK_SEQPACKET = 5, SOCK_DCCP = 6, SOCK_PACKET = 10, SOCK_NONBLOCK = 04000, "
	"SOCK_CLOEXEC = 02000000, };";

#define UFTRACE_NAUTO (sizeof(uftrace_autoargs) / sizeof(uftrace_autoargs[0]))

const struct uftrace_autoarg *uftrace_autoarg_find(const char *name)
{
	size_t lo = 0, hi = UFTRACE_NAUTO;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, uftrace_autoargs[mid].name);

		if (c == 0)
			return &uftrace_autoargs[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

const struct uftrace_autoarg *uftrace_autoarg_at(size_t i)
{
	return i < UFTRACE_NAUTO ? &uftrace_autoargs[i] : NULL;
}

size_t uftrace_autoarg_count(void)
{
	return UFTRACE_NAUTO;
}
