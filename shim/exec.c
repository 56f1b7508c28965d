/* exec.c — a process image that replaces itself with exec ends its trace cleanly: the exported
 * execve, execv, execvp, execvpe, execl, execlp, execle and fexecve have the writer write the
 * image's last chunk (flag EXEC: the same pid goes on as a new image) and unlink the rings file,
 * then call the exec function they stand for, unchanged (issue 25 item 5; docs/SHIM.md "exec").
 *
 * Contract:
 *   - Each forwards to the next definition of its own name in the lookup order (libc's, or a
 *     later preload's), found by the constructor (ncs_exec_resolve), with its arguments as
 *     given: what the exec does, returns and sets in errno is the real function's. The execl
 *     forms build their argument vector on the stack, as libc does, and call the next execv,
 *     execvp or execve.
 *   - Before the exec: nothing unless this process's writer is running and the caller is that
 *     process (a vfork child has another pid: it shares its parent's memory and locks, and the
 *     shim touches nothing of them there). Then ncs_writer_exec: atomics and a futex only
 *     (async-signal-safe; an exec from a signal handler waits on no lock), bounded by
 *     NCCLSCOPE_EXIT_MS. A writer that does not answer in time leaves the trace cut, its rings
 *     file kept for the decoder, as after kill -9.
 *   - An exec that fails returns to the job as it would without the shim (errno kept), and the
 *     writer goes on: its next chunks, without the flag, say the image lived on. The rings file
 *     is gone by then: calls made after a failed exec are lost if the process is later killed.
 *   - posix_spawn, system and popen are not wrapped: the caller's image goes on, and the child
 *     execs inside libc (never through these exports). */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);

static execve_fn next_execve, next_execvpe;
static execv_fn next_execv, next_execvp;
static fexecve_fn next_fexecve;

void ncs_exec_resolve(void) {
  /* the next definition after the shim, as the job's own reference would bind without it */
  next_execve = (execve_fn)dlsym(RTLD_NEXT, "execve");
  next_execvpe = (execve_fn)dlsym(RTLD_NEXT, "execvpe");
  next_execv = (execv_fn)dlsym(RTLD_NEXT, "execv");
  next_execvp = (execv_fn)dlsym(RTLD_NEXT, "execvp");
  next_fexecve = (fexecve_fn)dlsym(RTLD_NEXT, "fexecve");
}

/* Before the shim's constructor (a library constructor that execs): resolved on the spot. */
static void resolve_late(void) {
  if (!next_execve) ncs_exec_resolve();
}

/* The image is about to go: its last chunk, when this process traces (0: nothing asked). */
static uint32_t before_exec(void) {
  if (atomic_load_explicit(&ncs_active, memory_order_acquire) != 1) return 0;
  int saved = errno;
  uint32_t req = ncs_writer_exec(ncs_cfg.exit_ms);
  errno = saved;
  return req;
}
/* The exec returned (it failed): the image lives on, and so does its trace. */
static int after_failed_exec(uint32_t req, int rc) {
  int saved = errno;
  ncs_writer_exec_failed(req);
  errno = saved;
  return rc;
}

#define NCS_EXPORT __attribute__((visibility("default")))

NCS_EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
  resolve_late();
  uint32_t req = before_exec();
  int rc = next_execve ? next_execve(path, argv, envp) : (int)syscall(SYS_execve, path, argv, envp);
  return after_failed_exec(req, rc);
}

NCS_EXPORT int execv(const char *path, char *const argv[]) {
  resolve_late();
  if (!next_execv) { errno = ENOSYS; return -1; }
  uint32_t req = before_exec();
  return after_failed_exec(req, next_execv(path, argv));
}

NCS_EXPORT int execvp(const char *file, char *const argv[]) {
  resolve_late();
  if (!next_execvp) { errno = ENOSYS; return -1; }
  uint32_t req = before_exec();
  return after_failed_exec(req, next_execvp(file, argv));
}

NCS_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
  resolve_late();
  if (!next_execvpe) { errno = ENOSYS; return -1; }
  uint32_t req = before_exec();
  return after_failed_exec(req, next_execvpe(file, argv, envp));
}

NCS_EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
  resolve_late();
  if (!next_fexecve) { errno = ENOSYS; return -1; }
  uint32_t req = before_exec();
  return after_failed_exec(req, next_fexecve(fd, argv, envp));
}

/* The execl forms: the variadic arguments up to the NULL, as a vector on the stack (execle's
 * environment follows the NULL). */
static size_t count_args(const char *arg, va_list ap) {
  size_t n = 1;
  while (arg && va_arg(ap, const char *)) n++;
  return arg ? n : 0;
}
#define NCS_EXECL_ARGV_(arg, argv, n, want_env, envp) \
  do { \
    va_list ap_; \
    va_start(ap_, arg); \
    for (size_t i_ = 0; i_ < (n); i_++) (argv)[i_] = i_ ? va_arg(ap_, char *) : (char *)(arg); \
    (argv)[n] = NULL; \
    if (want_env) { /* after the NULL that ends the arguments (arg itself, when n is 0) */ \
      if (n) (void)va_arg(ap_, char *); \
      (envp) = va_arg(ap_, char *const *); \
    } \
    va_end(ap_); \
  } while (0)

NCS_EXPORT int execl(const char *path, const char *arg, ...) {
  va_list ap;
  va_start(ap, arg);
  size_t n = count_args(arg, ap);
  va_end(ap);
  char *argv[n + 1];
  char *const *envp = NULL;
  NCS_EXECL_ARGV_(arg, argv, n, 0, envp);
  (void)envp;
  return execv(path, argv);
}

NCS_EXPORT int execlp(const char *file, const char *arg, ...) {
  va_list ap;
  va_start(ap, arg);
  size_t n = count_args(arg, ap);
  va_end(ap);
  char *argv[n + 1];
  char *const *envp = NULL;
  NCS_EXECL_ARGV_(arg, argv, n, 0, envp);
  (void)envp;
  return execvp(file, argv);
}

NCS_EXPORT int execle(const char *path, const char *arg, ...) {
  va_list ap;
  va_start(ap, arg);
  size_t n = count_args(arg, ap);
  va_end(ap);
  char *argv[n + 1];
  char *const *envp = NULL;
  NCS_EXECL_ARGV_(arg, argv, n, 1, envp);
  return execve(path, argv, envp);
}
