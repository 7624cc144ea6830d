/*
 * rec_wrap_exec: the libc functions that end a process image without running destructors,
 * interposed once for every runtime, so that no record is lost there.
 *
 *   exec*          the image's trace is written before it is replaced; a custom environment
 *                  gets LD_PRELOAD, FLIGHTREC_DIR and the front end's own variables back (their
 *                  values at start-up), so the next image records too
 *   posix_spawn(p) the child execs inside glibc, where no wrapper sees it: a custom
 *                  environment gets the same variables as exec's, so the child records too;
 *                  this image goes on (nothing is written)
 *   _exit, _Exit   the trace is written first (exit() is covered by the runtimes' destructors)
 *
 * What "written" means is the front end's (rec_frontend.image_end): by default the session is
 * finished, if it is this process's (a vfork child shares our memory and our session: it
 * writes nothing, the parent does; but a vfork child that has a thread state of its own
 * writes its records first, see rec_thread.h, and takes them up again if the exec fails).
 * A front end may keep something alive through the exec (exec_keep, exec_failed: Cacheray's
 * trace descriptor).
 *
 * An exec that fails returns to a program whose trace is finished: everything it does after
 * would be lost. So an exec that cannot succeed because there is no executable file to run
 * (the usual failure: ENOENT or EACCES, a PATH search that finds nothing), or, for execve and
 * execv, a file the kernel cannot load (ENOEXEC: neither an ELF image nor a "#!" script, and
 * no binfmt_misc handler registered) is let fail without ending the image; only the rarer
 * failures after those checks (E2BIG, ENOMEM, a file changed in between) still end it. The
 * PATH-searching variants run a file the kernel refuses with /bin/sh instead: not checked.
 * The checks use system calls only: a vfork child (posix_spawn) may be the caller.
 *
 * Preloaded or linked as a shared object, these come before libc in symbol lookup (each
 * runtime's export map lists them); in a runtime's static archive they interpose the
 * program's calls the same way. The real functions come from dlsym(RTLD_NEXT). This object is
 * linked into each runtime explicitly (nothing in the runtime refers to it), never into the
 * CLI. Compiled with -fno-builtin: it defines libc names with their own prototypes.
 */
#include "librecord/rec_session.h"
#include "librecord/rec_util.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define REC_WRAP_EXPORT __attribute__((visibility("default")))
#define REC_WRAP_ENV_MAX 48 /* variables carried through exec: librecord's, the front end's */

extern char **environ;

/* start-up values of what the next image needs to record ("NAME=value", "" if unset) */
static char rec_wrap_preload[4096 + 16];
static char rec_wrap_fe_env[REC_WRAP_ENV_MAX][REC_PATH_MAX + 256];

static void rec_wrap_save(char *dst, size_t size, const char *name)
{
	const char *v = getenv(name);

	if (v && strlen(name) + 1 + strlen(v) < size)
		rec_snprintf(dst, size, "%s=%s", name, v);
}

/* the session's settings every front end reads (rec_config.c, rec_tp.c): without them an
 * image exec'ed with an environment of its own wrote another format (uftrace.data files in a
 * Chrome or XRay trace directory), another policy, no tracepoints (e2e-formats forkexec-env) */
static const char *const rec_wrap_common_env[] = {
	"FLIGHTREC_FORMAT", "FLIGHTREC_POLICY", "FLIGHTREC_BUFSIZE", "FLIGHTREC_BUFCOUNT",
	"FLIGHTREC_BLOCK_MS", "FLIGHTREC_RING_POOL", "FLIGHTREC_TRACEPOINTS", "FLIGHTREC_TP_STACK",
	"FLIGHTREC_TP_MAX_FRAMES", "FLIGHTREC_DEBUG", "FLIGHTREC_WRITERS", NULL
};

/* Before the program's constructors (which may exec): LD_PRELOAD is what this image was
 * started with, not what the program later made of it. */
__attribute__((constructor(101))) static void rec_wrap_save_env(void)
{
	const char *const *lists[] = { rec_wrap_common_env, rec_frontend_self->exec_env };
	int n = 0;

	rec_wrap_save(rec_wrap_preload, sizeof(rec_wrap_preload), "LD_PRELOAD");
	for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
		for (size_t i = 0; lists[l] && lists[l][i]; i++) {
			if (n == REC_WRAP_ENV_MAX) { /* a front end grew past the room */
				rec_warn("%s: more than %d variables to carry through exec: %s and "
					 "after are not", rec_frontend_self->name, REC_WRAP_ENV_MAX,
					 lists[l][i]);
				return;
			}
			rec_wrap_save(rec_wrap_fe_env[n], sizeof(rec_wrap_fe_env[n]), lists[l][i]);
			n++;
		}
	}
}

static void *rec_wrap_real(void **slot, const char *name)
{
	if (!*slot)
		*slot = dlsym(RTLD_NEXT, name);
	if (!*slot)
		rec_warn("%s: cannot find the real %s", rec_frontend_self->name, name);
	return *slot;
}

static void rec_wrap_image_end(void)
{
	/* a vfork child with a state of its own: its records before the next image's */
	rec_vfork_child_end();
	if (rec_frontend_self->image_end) {
		rec_frontend_self->image_end();
		return;
	}
	if (__atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE) == REC_SESSION_ACTIVE &&
	    getpid() == rec_sess.pid)
		rec_session_finish();
}

/* Is there an executable file at `path`? (the check execve makes first; errno kept) */
static int rec_wrap_runnable(const char *path)
{
	int saved = errno, ok = path && path[0] && faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) == 0;

	errno = saved;
	return ok;
}

/* A binfmt_misc entry that is a handler (not ".", "..", "register" or "status"). */
static int rec_wrap_is_handler(void *arg, const char *name)
{
	(void)arg;
	return strcmp(name, ".") && strcmp(name, "..") && strcmp(name, "register") &&
	       strcmp(name, "status");
}

/* Is any binfmt_misc handler registered (then any file may load: we cannot tell)? Listed by
 * rec_dir_each (no malloc: a vfork child may ask). */
static int rec_wrap_binfmt_misc(void)
{
	int fd = open("/proc/sys/fs/binfmt_misc", O_RDONLY | O_DIRECTORY | O_CLOEXEC), found;

	if (fd < 0)
		return 0;
	found = rec_dir_each(fd, "", 0, rec_wrap_is_handler, NULL) > 0;
	close(fd);
	return found;
}

/* Will the kernel load the file at `path`: an ELF image or a "#!" script, or a file a
 * binfmt_misc handler may take? A file we cannot read (execute-only) is taken to load.
 * (errno kept) */
static int rec_wrap_loadable(const char *path)
{
	int saved = errno, ok = 1;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	char head[4];

	if (fd >= 0) {
		ssize_t n = pread(fd, head, sizeof(head), 0);
		close(fd);
		if (n >= 0 && !(n == 4 && memcmp(head, "\x7f" "ELF", 4) == 0) &&
		    !(n >= 2 && head[0] == '#' && head[1] == '!'))
			ok = rec_wrap_binfmt_misc();
	}
	errno = saved;
	return ok;
}

/* execvp's search: a name with a slash is a path; else the first PATH entry (glibc's default
 * when PATH is unset) that holds an executable file of that name. */
static int rec_wrap_runnable_in_path(const char *file)
{
	const char *path = getenv("PATH"), *dir;
	char buf[REC_PATH_MAX];
	size_t flen;

	if (!file || !file[0])
		return 0;
	if (strchr(file, '/'))
		return rec_wrap_runnable(file);
	if (!path)
		path = "/bin:/usr/bin";
	flen = strlen(file);
	for (dir = path;; dir++) {
		const char *end = strchr(dir, ':');
		size_t dlen = end ? (size_t)(end - dir) : strlen(dir);

		if (dlen == 0 && flen + 1 < sizeof(buf)) { /* an empty entry: the current directory */
			memcpy(buf, file, flen + 1);
			if (rec_wrap_runnable(buf))
				return 1;
		} else if (dlen + 1 + flen + 1 <= sizeof(buf)) {
			memcpy(buf, dir, dlen);
			buf[dlen] = '/';
			memcpy(buf + dlen + 1, file, flen + 1);
			if (rec_wrap_runnable(buf))
				return 1;
		}
		if (!end)
			return 0;
		dir = end;
	}
}

/* fexecve: the descriptor's file, as the kernel will find it */
static int rec_wrap_runnable_fd(int fd)
{
	int saved = errno, ok = fd >= 0 && faccessat(fd, "", X_OK, AT_EACCESS | AT_EMPTY_PATH) == 0;

	errno = saved;
	return ok;
}

/* The image ends in an exec: write it, keep what the next image continues. Returns the front
 * end's cookie for rec_wrap_exec_failed. */
static int rec_wrap_before_exec(void)
{
	rec_wrap_image_end();
	return rec_frontend_self->exec_keep ? rec_frontend_self->exec_keep() : -1;
}

static void rec_wrap_exec_failed(int cookie)
{
	rec_vfork_child_resume();
	if (rec_frontend_self->exec_failed)
		rec_frontend_self->exec_failed(cookie);
}

static int rec_wrap_env_has(char *const envp[], const char *var)
{
	size_t n = strcspn(var, "=") + 1; /* "NAME=" */

	for (; envp && *envp; envp++)
		if (strncmp(*envp, var, n) == 0)
			return 1;
	return 0;
}

static size_t rec_wrap_count(char *const v[])
{
	size_t n = 0;

	while (v && v[n])
		n++;
	return n;
}

#define REC_WRAP_EXTRA (2 + REC_WRAP_ENV_MAX) /* FLIGHTREC_DIR, LD_PRELOAD, the front end's */

/* A custom environment (not `environ`) copied into out[] (room for n + REC_WRAP_EXTRA + 1)
 * with what the next image needs to record and the program left out. */
static char *const *rec_wrap_env(char *const envp[], char **out, size_t n, char *dirvar,
				 size_t dirsize)
{
	size_t k = 0;
	int st = __atomic_load_n(&rec_sess.state, __ATOMIC_ACQUIRE);

	if (envp == environ || !envp || rec_frontend_self->exec_env_off ||
	    (st != REC_SESSION_ACTIVE && st != REC_SESSION_FINISHED))
		return envp;
	for (size_t i = 0; i < n; i++)
		out[k++] = envp[i];
	if (!rec_wrap_env_has(envp, "FLIGHTREC_DIR=")) {
		rec_snprintf(dirvar, dirsize, "FLIGHTREC_DIR=%s", rec_sess.dir);
		out[k++] = dirvar;
	}
	if (rec_wrap_preload[0] && !rec_wrap_env_has(envp, rec_wrap_preload))
		out[k++] = rec_wrap_preload;
	for (int i = 0; i < REC_WRAP_ENV_MAX; i++)
		if (rec_wrap_fe_env[i][0] && !rec_wrap_env_has(envp, rec_wrap_fe_env[i]))
			out[k++] = rec_wrap_fe_env[i];
	out[k] = NULL;
	return out;
}

#define REC_WRAP_WITH_ENV(envp, newenv)                                                            \
	size_t rw_n_ = rec_wrap_count(envp);                                                       \
	char *rw_buf_[rw_n_ + REC_WRAP_EXTRA + 1], rw_dir_[REC_PATH_MAX + 16];                     \
	char *const *newenv = rec_wrap_env(envp, rw_buf_, rw_n_, rw_dir_, sizeof(rw_dir_))

typedef int (*rec_execve_fn)(const char *, char *const[], char *const[]);
typedef int (*rec_execv_fn)(const char *, char *const[]);
typedef int (*rec_fexecve_fn)(int, char *const[], char *const[]);
static rec_execve_fn rec_real_execve, rec_real_execvpe;
static rec_execv_fn rec_real_execv, rec_real_execvp;
static rec_fexecve_fn rec_real_fexecve;

REC_WRAP_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	if (!rec_wrap_real((void **)&rec_real_execve, "execve"))
		return -1;
	if (!rec_wrap_runnable(path) || !rec_wrap_loadable(path))
		return rec_real_execve(path, argv, envp); /* fails: this image goes on recording */
	REC_WRAP_WITH_ENV(envp, env);
	int cookie = rec_wrap_before_exec();
	int ret = rec_real_execve(path, argv, env);
	rec_wrap_exec_failed(cookie);
	return ret;
}

REC_WRAP_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	if (!rec_wrap_real((void **)&rec_real_execvpe, "execvpe"))
		return -1;
	if (!rec_wrap_runnable_in_path(file))
		return rec_real_execvpe(file, argv, envp);
	REC_WRAP_WITH_ENV(envp, env);
	int cookie = rec_wrap_before_exec();
	int ret = rec_real_execvpe(file, argv, env);
	rec_wrap_exec_failed(cookie);
	return ret;
}

REC_WRAP_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	if (!rec_wrap_real((void **)&rec_real_fexecve, "fexecve"))
		return -1;
	if (!rec_wrap_runnable_fd(fd))
		return rec_real_fexecve(fd, argv, envp);
	REC_WRAP_WITH_ENV(envp, env);
	int cookie = rec_wrap_before_exec();
	int ret = rec_real_fexecve(fd, argv, env);
	rec_wrap_exec_failed(cookie);
	return ret;
}

REC_WRAP_EXPORT int execv(const char *path, char *const argv[])
{
	if (!rec_wrap_real((void **)&rec_real_execv, "execv"))
		return -1;
	if (!rec_wrap_runnable(path) || !rec_wrap_loadable(path))
		return rec_real_execv(path, argv);
	int cookie = rec_wrap_before_exec();
	int ret = rec_real_execv(path, argv);
	rec_wrap_exec_failed(cookie);
	return ret;
}

REC_WRAP_EXPORT int execvp(const char *file, char *const argv[])
{
	if (!rec_wrap_real((void **)&rec_real_execvp, "execvp"))
		return -1;
	if (!rec_wrap_runnable_in_path(file))
		return rec_real_execvp(file, argv);
	int cookie = rec_wrap_before_exec();
	int ret = rec_real_execvp(file, argv);
	rec_wrap_exec_failed(cookie);
	return ret;
}

/* execl*: gather the variadic arguments, then go through the wrappers above */
#define REC_WRAP_GATHER_ARGS(arg0, ap, argv)                                                       \
	size_t rw_argc_ = 1;                                                                       \
	va_start(ap, arg0);                                                                        \
	while (va_arg(ap, char *))                                                                 \
		rw_argc_++;                                                                        \
	va_end(ap);                                                                                \
	char *argv[rw_argc_ + 1];                                                                  \
	argv[0] = (char *)(arg0);                                                                  \
	va_start(ap, arg0);                                                                        \
	for (size_t i_ = 1; i_ <= rw_argc_; i_++)                                                  \
	argv[i_] = va_arg(ap, char *)

REC_WRAP_EXPORT int execl(const char *path, const char *arg0, ...)
{
	va_list ap;
	REC_WRAP_GATHER_ARGS(arg0, ap, argv);
	va_end(ap);
	return execv(path, argv);
}

REC_WRAP_EXPORT int execlp(const char *file, const char *arg0, ...)
{
	va_list ap;
	REC_WRAP_GATHER_ARGS(arg0, ap, argv);
	va_end(ap);
	return execvp(file, argv);
}

REC_WRAP_EXPORT int execle(const char *path, const char *arg0, ...)
{
	va_list ap;
	REC_WRAP_GATHER_ARGS(arg0, ap, argv);
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	return execve(path, argv, envp);
}

typedef int (*rec_spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			    const posix_spawnattr_t *, char *const[], char *const[]);
static rec_spawn_fn rec_real_posix_spawn, rec_real_posix_spawnp;

REC_WRAP_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
				const posix_spawnattr_t *attr, char *const argv[],
				char *const envp[])
{
	if (!rec_wrap_real((void **)&rec_real_posix_spawn, "posix_spawn"))
		return ENOSYS;
	REC_WRAP_WITH_ENV(envp, env);
	return rec_real_posix_spawn(pid, path, fa, attr, argv, env);
}

REC_WRAP_EXPORT int posix_spawnp(pid_t *pid, const char *file,
				 const posix_spawn_file_actions_t *fa,
				 const posix_spawnattr_t *attr, char *const argv[],
				 char *const envp[])
{
	if (!rec_wrap_real((void **)&rec_real_posix_spawnp, "posix_spawnp"))
		return ENOSYS;
	REC_WRAP_WITH_ENV(envp, env);
	return rec_real_posix_spawnp(pid, file, fa, attr, argv, env);
}

REC_WRAP_EXPORT __attribute__((noreturn)) void _exit(int status)
{
	rec_wrap_image_end();
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

REC_WRAP_EXPORT __attribute__((noreturn)) void _Exit(int status)
{
	_exit(status);
}
