/* dlopen_job.c — a program that does not link NCCL. Usage:
 *   dlopen_job ext LIBEXT N   dlopen(LIBEXT, RTLD_LOCAL|RTLD_NOW) and call its ext_run(N)
 *   dlopen_job nccl LIB       dlopen(LIB) (e.g. libnccl.so.2), then call ncclGetVersion and
 *                             ncclGetUniqueId and ncclCommInitRank through dlsym, printing
 *                             each return code and NCCL's error string; a failing dlopen is
 *                             printed as the job's own error (exit 3)
 * used by tests/test_fault_dlopen.sh: NCCL loaded late and privately, absent, or real. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_decl.h"

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc >= 4 && !strcmp(argv[1], "ext")) {
    void *h = dlopen(argv[2], RTLD_LOCAL | RTLD_NOW);
    if (!h) { printf("dlopen failed: %s\n", dlerror()); return 3; }
    int (*run)(int) = (int (*)(int))dlsym(h, "ext_run");
    if (!run) { printf("no ext_run\n"); return 3; }
    int r = run(atoi(argv[3]));
    printf("ext_run %d\n", r);
    return r < 0 ? 3 : 0;
  }
  if (argc >= 3 && !strcmp(argv[1], "nccl")) {
    void *h = dlopen(argv[2], RTLD_LOCAL | RTLD_NOW);
    if (!h) { printf("cannot load NCCL: %s\n", dlerror()); return 3; }
    ncclResult_t (*ver)(int *) = (ncclResult_t (*)(int *))dlsym(h, "ncclGetVersion");
    ncclResult_t (*uid)(ncclUniqueId *) = (ncclResult_t (*)(ncclUniqueId *))dlsym(h, "ncclGetUniqueId");
    ncclResult_t (*init)(ncclComm_t *, int, ncclUniqueId, int) =
        (ncclResult_t (*)(ncclComm_t *, int, ncclUniqueId, int))dlsym(h, "ncclCommInitRank");
    const char *(*estr)(ncclResult_t) = (const char *(*)(ncclResult_t))dlsym(h, "ncclGetErrorString");
    if (!ver || !uid || !init || !estr) { printf("missing symbols\n"); return 3; }
    int v = 0;
    ncclResult_t r = ver(&v);
    printf("ncclGetVersion %d %d\n", (int)r, v);
    ncclUniqueId id;
    r = uid(&id);
    printf("ncclGetUniqueId %d %s\n", (int)r, estr(r));
    ncclComm_t c = NULL;
    r = init(&c, 1, id, 0);
    printf("ncclCommInitRank %d %s comm %s\n", (int)r, estr(r), c ? "set" : "null");
    return r == ncclSuccess ? 0 : 1;
  }
  fprintf(stderr, "usage: dlopen_job ext LIBEXT N | nccl LIB\n");
  return 2;
}
