/* run.c — `ncclscope run [-o DIR] -- CMD...`: executes CMD with the shim preloaded.
 * The shim is $NCCLSCOPE_SHIM, else libncclscope.so next to this executable (a build tree), else
 * ../lib/ncclscope/libncclscope.so from it (`make install`). It is prepended
 * to any existing LD_PRELOAD; -o DIR sets NCCLSCOPE_DIR, made absolute (processes of the job that
 * start in another directory write to the same place). CMD runs as a child; the exit status is
 * CMD's (128 + N when signal N ended it; SIGINT and SIGQUIT reach CMD from the terminal and are
 * ignored here while it runs); 2 for bad usage or a missing shim, 127 when CMD cannot run.
 * When CMD has ended and no trace file was written in the trace directory since it started,
 * the last line on stderr says why and what to do (issue 25 item 6): the directory cannot be
 * used (checked before CMD starts, and said then too), NCCLSCOPE_DISABLE=1, or no process of
 * CMD called NCCL through the shim (a job that never calls NCCL; or NCCL linked statically
 * into a library CMD loads, which the ELF check below cannot see).
 * Static NCCL (docs/PROFILER.md, "Static NCCL"): CMD's program, and each argument that names an
 * executable ELF file (a launcher's program: `mpirun -np 2 ./job`), is read (io/elfnccl.h); when
 * one has NCCL linked in and none needs libnccl.so, NCCL_PROFILER_PLUGIN is set to the shim's
 * path (the preloaded copy: NCCL's dlopen returns it), unless the user set it or
 * NCCLSCOPE_PROFILER=0 (then stderr says the job's calls will not be recorded). One line on
 * stderr says what was found. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/cli.h"
#include "base/settings.h"
#include "cmd/commands.h"
#include "io/elfnccl.h"

static const struct option run_opts[] = {{"output", required_argument, NULL, 'o'}, {0}};
static const struct ncs_cli run_cli = {
  "run",
  "usage: ncclscope run [-o DIR] [--] CMD [ARGS...]\n"
  "Runs CMD with the shim preloaded (first in LD_PRELOAD); every process of CMD that calls NCCL\n"
  "writes its trace into DIR.\n"
  "  -o, --output DIR   trace directory (NCCLSCOPE_DIR; default ./ncclscope-trace)\n"
  "  -h, --help         this text\n"
  "A program (CMD, or an argument naming an ELF executable) with NCCL linked in statically and no\n"
  "libnccl.so gets NCCL_PROFILER_PLUGIN set to the shim: its calls come from NCCL's profiler events.\n"
  "Exit: CMD's own status; 2 bad usage or the shim not found, 127 CMD cannot be run.\n",
  run_opts, 1};

/* The program execvp would run for name (PATH searched when name has no slash), in out. */
static int program_path(const char *name, char *out, size_t n) {
  if (strchr(name, '/')) return snprintf(out, n, "%s", name) < (int)n ? 0 : -1;
  const char *p = getenv("PATH");
  if (!p) p = "/usr/local/bin:/usr/bin:/bin";
  while (*p) {
    const char *e = strchr(p, ':');
    int len = e ? (int)(e - p) : (int)strlen(p);
    if (snprintf(out, n, "%.*s/%s", len, len ? p : ".", name) < (int)n && access(out, X_OK) == 0) return 0;
    if (!e) break;
    p = e + 1;
  }
  return -1;
}

/* Sets NCCL_PROFILER_PLUGIN=shim when a program of the command has NCCL linked in (see above);
 * -1 only when setenv fails. */
static int static_plugin(const char *shim, char **cmd) {
  char path[PATH_MAX], which[PATH_MAX];
  int statik = 0, dynamic = 0;
  for (int k = 0; cmd[k]; k++) {
    if (k > 0 && (!strchr(cmd[k], '/') || access(cmd[k], X_OK) != 0)) continue; /* arguments: executable paths only */
    if (program_path(cmd[k], path, sizeof path) != 0) continue;
    char w[PATH_MAX];
    enum ncs_elf_nccl v = ncs_elf_nccl(path, w, sizeof w);
    if (v == NCS_NCCL_DYNAMIC) dynamic = 1;
    if (v == NCS_NCCL_STATIC && !statik) { statik = 1; snprintf(which, sizeof which, "%s", w); }
  }
  if (!statik) return 0; /* libnccl.so (the wrappers see it), or no NCCL found in the files */
  const char *user = getenv("NCCL_PROFILER_PLUGIN"), *prof = getenv("NCCLSCOPE_PROFILER");
  if (user && *user && strcmp(user, shim)) {
    fprintf(stderr, "ncclscope run: %s has NCCL linked in statically, and NCCL_PROFILER_PLUGIN=%s is the user's: "
            "NCCL's calls in it will not be recorded\n", which, user);
    return 0;
  }
  if (prof && !strcmp(prof, "0")) {
    fprintf(stderr, "ncclscope run: %s has NCCL linked in statically; NCCLSCOPE_PROFILER=0: its calls will not be recorded\n", which);
    return 0;
  }
  if (setenv("NCCL_PROFILER_PLUGIN", shim, 1) != 0) { fprintf(stderr, "ncclscope run: setenv: %s\n", strerror(errno)); return -1; }
  fprintf(stderr, "ncclscope run: %s has NCCL linked in statically%s: recording through NCCL's profiler plugin "
          "(NCCL_PROFILER_PLUGIN=%s)\n", which, dynamic ? " (another program of the command links libnccl.so)" : "", shim);
  return 0;
}

/* Why the trace directory cannot be used (NULL when it can): it, or the nearest existing
 * directory above it (the shim creates the rest), must be a directory this user may write. */
static const char *dir_unusable(const char *dir, char *why, size_t n) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s", dir);
  for (;;) {
    struct stat st;
    if (stat(p, &st) == 0) {
      if (!S_ISDIR(st.st_mode)) { snprintf(why, n, "%s is not a directory", p); return why; }
      /* a file made and removed at once (access() says yes to root on a read-only mount, /proc) */
      char probe[PATH_MAX + 48];
      snprintf(probe, sizeof probe, "%s/.ncclscope-run-probe-%ld", p, (long)getpid());
      int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
      if (fd < 0) { snprintf(why, n, "%s: %s", p, strerror(errno)); return why; }
      close(fd);
      unlink(probe);
      return NULL;
    }
    if (errno != ENOENT) { snprintf(why, n, "%s: %s", p, strerror(errno)); return why; }
    char *slash = strrchr(p, '/');
    if (!slash || slash == p) return NULL; /* up to / or the working directory: let the shim try */
    *slash = 0;
  }
}

/* Trace files (*.ncs) in dir changed at or after t0. */
static int new_traces(const char *dir, const struct timespec *t0) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 5 || strcmp(e->d_name + l - 4, ".ncs")) continue;
    char p[PATH_MAX];
    struct stat st;
    if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p || stat(p, &st) != 0) continue;
    if (st.st_mtim.tv_sec > t0->tv_sec || (st.st_mtim.tv_sec == t0->tv_sec && st.st_mtim.tv_nsec >= t0->tv_nsec)) n++;
  }
  closedir(d);
  return n;
}

int cmd_run(int argc, char **argv) {
  const char *dir = NULL;
  int r;
  while ((r = ncs_cli_next(&run_cli, argc, argv)) != NCS_CLI_DONE) {
    if (r == 'o') dir = optarg;
    else return ncs_cli_exit(r);
  }
  int i = optind;
  if (i >= argc) return ncs_cli_fail(&run_cli, "no CMD given");
  char shim[PATH_MAX];
  const char *env = ncs_settings()->shim;
  if (env) {
    snprintf(shim, sizeof shim, "%s", env);
  } else {
    ssize_t n = readlink("/proc/self/exe", shim, sizeof shim - 32);
    if (n <= 0) { fprintf(stderr, "ncclscope run: cannot find my own executable; set NCCLSCOPE_SHIM\n"); return 2; }
    shim[n] = 0;
    char *slash = strrchr(shim, '/');
    char *base = slash ? slash + 1 : shim;
    strcpy(base, "libncclscope.so");
    if (access(shim, R_OK) != 0) strcpy(base, "../lib/ncclscope/libncclscope.so");
  }
  if (access(shim, R_OK) != 0) {
    fprintf(stderr, "ncclscope run: shim %s: %s (set NCCLSCOPE_SHIM)\n", shim, strerror(errno));
    return 2;
  }
  char abs[PATH_MAX];
  if (realpath(shim, abs)) snprintf(shim, sizeof shim, "%s", abs); /* NCCL's dlopen of this path is the preloaded copy */
  if (static_plugin(shim, argv + i) != 0) return 2;
  const char *old = getenv("LD_PRELOAD");
  size_t len = strlen(shim) + (old ? strlen(old) : 0) + 2;
  char *pre = malloc(len);
  if (!pre) return 2;
  if (old && *old) snprintf(pre, len, "%s:%s", shim, old);
  else snprintf(pre, len, "%s", shim);
  char absdir[PATH_MAX], cwd[PATH_MAX];
  if (dir && dir[0] != '/' && getcwd(cwd, sizeof cwd)) {
    int n = snprintf(absdir, sizeof absdir, "%s/%s", strcmp(cwd, "/") ? cwd : "", dir);
    if (n > 0 && (size_t)n < sizeof absdir) dir = absdir;
  }
  if (setenv("LD_PRELOAD", pre, 1) != 0 || (dir && setenv("NCCLSCOPE_DIR", dir, 1) != 0)) {
    fprintf(stderr, "ncclscope run: setenv: %s\n", strerror(errno));
    free(pre);
    return 2;
  }
  free(pre);
  /* the directory the shim will use (its default is relative to CMD's start directory: ours) */
  char tdir[PATH_MAX], why[PATH_MAX + 64];
  const char *td = getenv("NCCLSCOPE_DIR");
  snprintf(tdir, sizeof tdir, "%s", td && *td ? td : "ncclscope-trace");
  const char *bad = dir_unusable(tdir, why, sizeof why);
  if (bad) fprintf(stderr, "ncclscope run: the trace directory %s cannot be used (%s): nothing will be traced; give a writable one with -o DIR\n", tdir, bad);
  struct timespec t0;
  clock_gettime(CLOCK_REALTIME, &t0);
  t0.tv_sec -= 1; /* file systems with coarse times */
  fflush(stdout);
  fflush(stderr);
  struct sigaction ign = {.sa_handler = SIG_IGN}, oint, oquit;
  sigemptyset(&ign.sa_mask);
  pid_t pid = fork();
  if (pid < 0) { fprintf(stderr, "ncclscope run: fork: %s\n", strerror(errno)); return 2; }
  if (pid == 0) {
    execvp(argv[i], argv + i);
    fprintf(stderr, "ncclscope run: %s: %s\n", argv[i], strerror(errno));
    _exit(127);
  }
  sigaction(SIGINT, &ign, &oint);
  sigaction(SIGQUIT, &ign, &oquit);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  sigaction(SIGINT, &oint, NULL);
  sigaction(SIGQUIT, &oquit, NULL);
  int rc = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
  if (rc == 127 && WIFEXITED(st) && access(tdir, F_OK) != 0) return rc; /* CMD could not run: said above */
  if (new_traces(tdir, &t0) == 0) {
    const char *off = getenv("NCCLSCOPE_DISABLE");
    if (bad)
      fprintf(stderr, "ncclscope run: nothing was traced: the trace directory %s cannot be used (%s); give a writable one with -o DIR\n", tdir, bad);
    else if (off && !strcmp(off, "1"))
      fprintf(stderr, "ncclscope run: nothing was traced: NCCLSCOPE_DISABLE=1 is set (unset it to trace)\n");
    else
      fprintf(stderr, "ncclscope run: no trace in %s: no process of the job called NCCL through the shim. If the job does not use NCCL, "
              "that is all; if it does, NCCL is linked statically into a library it loads (see docs/PROFILER.md \"Static NCCL\": "
              "set NCCL_PROFILER_PLUGIN to %s), or NCCLSCOPE_DIR was changed inside the job\n", tdir, shim);
  }
  return rc;
}
