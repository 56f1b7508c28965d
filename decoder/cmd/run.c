/* run.c — `ncclscope run [-o DIR] -- CMD...`: executes CMD with the shim preloaded.
 * The shim is $NCCLSCOPE_SHIM, else libncclscope.so next to this executable (a build tree), else
 * ../lib/ncclscope/libncclscope.so from it (`make install`). It is prepended
 * to any existing LD_PRELOAD; -o DIR sets NCCLSCOPE_DIR, made absolute (processes of the job that
 * start in another directory write to the same place). The process is replaced by CMD, so
 * the exit status is CMD's; 2 for bad usage or a missing shim, 127 when CMD cannot run.
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
#include <unistd.h>

#include "cmd/cli.h"
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
  const char *env = getenv("NCCLSCOPE_SHIM");
  if (env && *env) {
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
  fflush(stdout);
  execvp(argv[i], argv + i);
  fprintf(stderr, "ncclscope run: %s: %s\n", argv[i], strerror(errno));
  return 127;
}
