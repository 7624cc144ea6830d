/*
 * cr_wrap: the process-lifecycle functions cacheray-rt interposes, so that no record is lost
 * when the image ends without running destructors.
 *
 *   exec*      the trace is written before the image is replaced; the trace descriptor (and
 *              its shared lock, sink_cacheray.c) lives through the exec, so the next image
 *              appends to the same trace instead of starting a new one; a custom environment
 *              gets LD_PRELOAD, FLIGHTREC_DIR and CACHERAY_OPTIONS back so it records too
 *   _exit, _Exit   the trace is written first (exit() is covered by the destructor)
 * In a vfork child (it shares our memory) nothing is written: the parent does that.
 * Preloaded, these come first in symbol lookup; linked statically (libcacheray-rt.a) they
 * interpose the program's calls the same way. The real functions come from dlsym(RTLD_NEXT).
 */
#include "cacheray-rt/internal.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

static char cr_saved_preload[4096], cr_saved_options[REC_PATH_MAX + 256];

__attribute__((constructor)) static void cr_save_env(void)
{
	const char *pre = getenv("LD_PRELOAD"), *opt = getenv("CACHERAY_OPTIONS");

	if (pre && strlen(pre) < sizeof(cr_saved_preload))
		memcpy(cr_saved_preload, pre, strlen(pre) + 1);
	if (opt && strlen(opt) < sizeof(cr_saved_options))
		memcpy(cr_saved_options, opt, strlen(opt) + 1);
}

static void *cr_real(void **slot, const char *name)
{
	if (!*slot)
		*slot = dlsym(RTLD_NEXT, name);
	if (!*slot)
		rec_warn("cacheray-rt: cannot find the real %s", name);
	return *slot;
}

/* Before an exec: write the trace, and keep its descriptor for the next image. Returns the
 * descriptor whose close-on-exec flag was cleared (-1: none), to restore if exec fails. */
static int cr_before_exec(void)
{
	int fd;

	cr_finish();
	fd = cr_trace_fd();
	if (fd >= 0 && fcntl(fd, F_SETFD, 0) == 0)
		return fd;
	return -1;
}

static void cr_exec_failed(int fd)
{
	if (fd >= 0)
		fcntl(fd, F_SETFD, FD_CLOEXEC);
}

static int cr_env_has(char *const envp[], const char *prefix)
{
	size_t n = strlen(prefix);

	for (; envp && *envp; envp++)
		if (strncmp(*envp, prefix, n) == 0)
			return 1;
	return 0;
}

static size_t cr_count(char *const v[])
{
	size_t n = 0;

	while (v && v[n])
		n++;
	return n;
}

struct cr_env_extra {
	char dir[REC_PATH_MAX + 16];
	char preload[sizeof(cr_saved_preload) + 16];
	char options[sizeof(cr_saved_options) + 24];
};

/* envp copied into out[] (room for n + 4) with what the next image needs to record */
static char *const *cr_exec_env(char *const envp[], char **out, size_t n, struct cr_env_extra *x)
{
	size_t k = 0;

	if (envp == environ || !envp || rec_sess.state == REC_SESSION_NONE ||
	    rec_sess.state == REC_SESSION_OFF)
		return envp;
	for (size_t i = 0; i < n; i++)
		out[k++] = envp[i];
	if (!cr_env_has(envp, "FLIGHTREC_DIR=")) {
		rec_snprintf(x->dir, sizeof(x->dir), "FLIGHTREC_DIR=%s", rec_sess.dir);
		out[k++] = x->dir;
	}
	if (cr_saved_preload[0] && !cr_env_has(envp, "LD_PRELOAD=")) {
		rec_snprintf(x->preload, sizeof(x->preload), "LD_PRELOAD=%s", cr_saved_preload);
		out[k++] = x->preload;
	}
	if (cr_saved_options[0] && !cr_env_has(envp, "CACHERAY_OPTIONS=")) {
		rec_snprintf(x->options, sizeof(x->options), "CACHERAY_OPTIONS=%s",
			     cr_saved_options);
		out[k++] = x->options;
	}
	out[k] = NULL;
	return out;
}

#define CR_WITH_ENV(envp, newenv)                                                                  \
	size_t cr_n_ = cr_count(envp);                                                             \
	char *cr_buf_[cr_n_ + 4];                                                                  \
	struct cr_env_extra cr_x_;                                                                 \
	char *const *newenv = cr_exec_env(envp, cr_buf_, cr_n_, &cr_x_)

typedef int (*cr_execve_fn)(const char *, char *const[], char *const[]);
typedef int (*cr_execv_fn)(const char *, char *const[]);
typedef int (*cr_fexecve_fn)(int, char *const[], char *const[]);
static cr_execve_fn cr_real_execve, cr_real_execvpe;
static cr_execv_fn cr_real_execv, cr_real_execvp;
static cr_fexecve_fn cr_real_fexecve;

CR_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	if (!cr_real((void **)&cr_real_execve, "execve"))
		return -1;
	CR_WITH_ENV(envp, env);
	int fd = cr_before_exec();
	int ret = cr_real_execve(path, argv, env);
	cr_exec_failed(fd);
	return ret;
}

CR_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	if (!cr_real((void **)&cr_real_execvpe, "execvpe"))
		return -1;
	CR_WITH_ENV(envp, env);
	int fd = cr_before_exec();
	int ret = cr_real_execvpe(file, argv, env);
	cr_exec_failed(fd);
	return ret;
}

CR_EXPORT int fexecve(int fdexe, char *const argv[], char *const envp[])
{
	if (!cr_real((void **)&cr_real_fexecve, "fexecve"))
		return -1;
	CR_WITH_ENV(envp, env);
	int fd = cr_before_exec();
	int ret = cr_real_fexecve(fdexe, argv, env);
	cr_exec_failed(fd);
	return ret;
}

CR_EXPORT int execv(const char *path, char *const argv[])
{
	if (!cr_real((void **)&cr_real_execv, "execv"))
		return -1;
	int fd = cr_before_exec();
	int ret = cr_real_execv(path, argv);
	cr_exec_failed(fd);
	return ret;
}

CR_EXPORT int execvp(const char *file, char *const argv[])
{
	if (!cr_real((void **)&cr_real_execvp, "execvp"))
		return -1;
	int fd = cr_before_exec();
	int ret = cr_real_execvp(file, argv);
	cr_exec_failed(fd);
	return ret;
}

/* execl*: gather the variadic arguments, then go through the wrappers above */
#define CR_GATHER_ARGS(arg0, ap, argv)                                                             \
	size_t cr_argc_ = 1;                                                                       \
	va_start(ap, arg0);                                                                        \
	while (va_arg(ap, char *))                                                                 \
		cr_argc_++;                                                                        \
	va_end(ap);                                                                                \
	char *argv[cr_argc_ + 1];                                                                  \
	argv[0] = (char *)(arg0);                                                                  \
	va_start(ap, arg0);                                                                        \
	for (size_t i_ = 1; i_ <= cr_argc_; i_++)                                                  \
	argv[i_] = va_arg(ap, char *)

CR_EXPORT int execl(const char *path, const char *arg0, ...)
{
	va_list ap;
	CR_GATHER_ARGS(arg0, ap, argv);
	va_end(ap);
	return execv(path, argv);
}

CR_EXPORT int execlp(const char *file, const char *arg0, ...)
{
	va_list ap;
	CR_GATHER_ARGS(arg0, ap, argv);
	va_end(ap);
	return execvp(file, argv);
}

CR_EXPORT int execle(const char *path, const char *arg0, ...)
{
	va_list ap;
	CR_GATHER_ARGS(arg0, ap, argv);
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	return execve(path, argv, envp);
}

CR_EXPORT __attribute__((noreturn)) void _exit(int status)
{
	cr_finish();
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

CR_EXPORT __attribute__((noreturn)) void _Exit(int status)
{
	_exit(status);
}
