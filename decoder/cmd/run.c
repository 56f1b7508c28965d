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

#include "cmd/commands.h"

static int usage(void) {
  fprintf(stderr, "usage: ncclscope run [-o DIR] -- CMD [ARGS...]\n");
  return 2;
}

int cmd_run(int argc, char **argv) {
  const char *dir = NULL;
  int i = 1;
  for (; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) { i++; break; }
    if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) { dir = argv[++i]; continue; }
    if (argv[i][0] == '-') return usage();
    break; /* CMD without "--" */
  }
  if (i >= argc) return usage();
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
