/* run.c — `ncclscope run [-o DIR] -- CMD...`: executes CMD with the shim preloaded.
 * The shim is $NCCLSCOPE_SHIM, else libncclscope.so next to this executable (a build tree), else
 * ../lib/ncclscope/libncclscope.so from it (`make install`). It is prepended
 * to any existing LD_PRELOAD; -o DIR sets NCCLSCOPE_DIR, made absolute (processes of the job that
 * start in another directory write to the same place). The process is replaced by CMD, so
 * the exit status is CMD's; 2 for bad usage or a missing shim, 127 when CMD cannot run. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "cmd/commands.h"

static const struct option run_opts[] = {{"output", required_argument, NULL, 'o'}, {0}};
static const struct ncs_cli run_cli = {
  "run",
  "usage: ncclscope run [-o DIR] [--] CMD [ARGS...]\n"
  "Runs CMD with the shim preloaded (first in LD_PRELOAD); every process of CMD that calls NCCL\n"
  "writes its trace into DIR.\n"
  "  -o, --output DIR   trace directory (NCCLSCOPE_DIR; default ./ncclscope-trace)\n"
  "  -h, --help         this text\n"
  "Exit: CMD's own status; 2 bad usage or the shim not found, 127 CMD cannot be run.\n",
  run_opts, 1};

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
