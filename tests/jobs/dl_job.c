/* dl_job — reaches NCCL only through dlopen + dlsym, as Python's ctypes, vLLM's pynccl and
 * plugins do. It is not linked against NCCL (the Makefile builds dl_* jobs without it).
 *
 * Usage: [tests/jobs/launch.sh N] dl_job [-g] [-D] [-n CALLS] [-C DIR] [--truth DIR] LIBNCCL
 * LIBNCCL is dlopen'ed with RTLD_LOCAL (-g: RTLD_GLOBAL), after a chdir to DIR with -C; its
 * entry points are looked up by handle (-D: with dlsym(RTLD_DEFAULT, ...), which needs -g). Each
 * rank: ncclGetVersion, ncclGetUniqueId (rank 0, published as in job_util.h),
 * ncclCommInitRank, CALLS all-reduces of 1024 floats and CALLS/2 broadcasts of 256 floats
 * from rank 0 (each result checked), ncclCommDestroy. --truth DIR writes
 * DIR/truth-rank<R>.json: {"rank", "nranks", "ops": {"Op": {"calls", "count", "bytes"}}}
 * with what this rank called. Exit 1 on a wrong result or a failed call. */
#include <dlfcn.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ncclscope/nccl_abi.h"
#include "include/cuda_double.h"

#define DIE(...) do { fprintf(stderr, "dl_job: " __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define NCHK(call) do { ncclResult_t r_ = (call); if (r_ != ncclSuccess) DIE("%s failed: %d", #call, (int)r_); } while (0)

static void *sym(void *h, const char *name) {
  void *p = dlsym(h, name);
  if (!p) DIE("dlsym %s: %s", name, dlerror());
  return p;
}

static void unique_id(int rank, int n, ncclResult_t (*get)(ncclUniqueId *), ncclUniqueId *id) {
  if (n == 1) { NCHK(get(id)); return; }
  const char *dir = getenv("NCCLDOUBLE_RDZV");
  if (!dir) DIE("NCCLDOUBLE_RDZV is not set (run through tests/jobs/launch.sh)");
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/dl.id", dir);
  if (rank == 0) {
    NCHK(get(id));
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(id, sizeof *id, 1, f) != 1 || fclose(f) != 0 || rename(tmp, path) != 0) DIE("cannot write %s", path);
    return;
  }
  for (int i = 0; i < 60000; i++) {
    FILE *f = fopen(path, "rb");
    if (f) {
      size_t got = fread(id, sizeof *id, 1, f);
      fclose(f);
      if (got == 1) return;
    }
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  DIE("timed out waiting for %s", path);
}

int main(int argc, char **argv) {
  int global = 0, calls = 20, o;
  const char *truth = NULL;
  static const struct option opts[] = {{"truth", 1, 0, 't'}, {0, 0, 0, 0}};
  const char *chdir_to = NULL;
  int by_default = 0;
  while ((o = getopt_long(argc, argv, "gDn:C:", opts, NULL)) != -1) {
    if (o == 'g') global = 1;
    else if (o == 'D') by_default = 1;
    else if (o == 'C') chdir_to = optarg;
    else if (o == 'n') calls = atoi(optarg);
    else if (o == 't') truth = optarg;
    else { fprintf(stderr, "usage: dl_job [-g] [-D] [-n CALLS] [-C DIR] [--truth DIR] LIBNCCL\n"); return 2; }
  }
  if (optind != argc - 1 || calls < 0) { fprintf(stderr, "usage: dl_job [-g] [-D] [-n CALLS] [-C DIR] [--truth DIR] LIBNCCL\n"); return 2; }
  const char *rs = getenv("RANK"), *ws = getenv("WORLD_SIZE");
  int rank = rs ? atoi(rs) : 0, n = ws ? atoi(ws) : 1;
  if (chdir_to && chdir(chdir_to) != 0) DIE("chdir %s", chdir_to);
  void *h = dlopen(argv[optind], RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
  if (!h) DIE("dlopen %s: %s", argv[optind], dlerror());
  dlerror();
  void *lk = by_default ? RTLD_DEFAULT : h; /* where the entry points are looked up */
  ncclResult_t (*getVersion)(int *) = sym(lk, "ncclGetVersion");
  if (dlerror()) DIE("dlerror() reports an error after a successful dlsym");
  ncclResult_t (*getUniqueId)(ncclUniqueId *) = sym(lk, "ncclGetUniqueId");
  ncclResult_t (*initRank)(ncclComm_t *, int, ncclUniqueId, int) = sym(lk, "ncclCommInitRank");
  ncclResult_t (*allReduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t) =
      sym(lk, "ncclAllReduce");
  ncclResult_t (*broadcast)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) =
      sym(lk, "ncclBroadcast");
  ncclResult_t (*destroy)(ncclComm_t) = sym(lk, "ncclCommDestroy");
  /* a missing symbol fails as before, with the error set */
  if (dlsym(lk, "ncclNoSuchFunction") || !dlerror()) DIE("dlsym of a missing symbol did not fail");

  int version = 0;
  NCHK(getVersion(&version));
  ncclUniqueId id;
  unique_id(rank, n, getUniqueId, &id);
  int ndev = 1;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) DIE("no device");
  if (cudaSetDevice(rank % ndev) != cudaSuccess) DIE("cudaSetDevice");
  ncclComm_t comm;
  NCHK(initRank(&comm, n, id, rank));
  cudaStream_t s;
  if (cudaStreamCreate(&s) != cudaSuccess) DIE("cudaStreamCreate");
  enum { AR = 1024, BC = 256 };
  float host[AR], *buf;
  if (cudaMalloc((void **)&buf, sizeof host) != cudaSuccess) DIE("cudaMalloc");
  int nbc = calls / 2;
  for (int i = 0; i < calls; i++) {
    for (int k = 0; k < AR; k++) host[k] = (float)(rank + 1);
    cudaMemcpy(buf, host, sizeof host, cudaMemcpyHostToDevice);
    NCHK(allReduce(buf, buf, AR, ncclFloat32, ncclSum, comm, s));
    cudaStreamSynchronize(s);
    cudaMemcpy(host, buf, sizeof host, cudaMemcpyDeviceToHost);
    if (host[0] != (float)(n * (n + 1) / 2) || host[AR - 1] != host[0]) DIE("all-reduce %d: wrong result %g", i, host[0]);
  }
  for (int i = 0; i < nbc; i++) {
    for (int k = 0; k < BC; k++) host[k] = rank == 0 ? (float)(i + 7) : 0.0f;
    cudaMemcpy(buf, host, BC * sizeof(float), cudaMemcpyHostToDevice);
    NCHK(broadcast(buf, buf, BC, ncclFloat32, 0, comm, s));
    cudaStreamSynchronize(s);
    cudaMemcpy(host, buf, BC * sizeof(float), cudaMemcpyDeviceToHost);
    if (host[BC - 1] != (float)(i + 7)) DIE("broadcast %d: wrong result", i);
  }
  NCHK(destroy(comm));
  cudaFree(buf);
  cudaStreamDestroy(s);
  if (rank == 0) printf("dl_job: %d ranks, %d all-reduces, %d broadcasts, NCCL %d\n", n, calls, nbc, version);
  if (truth) {
    char tpath[4096];
    snprintf(tpath, sizeof tpath, "%s/truth-rank%d.json", truth, rank);
    FILE *f = fopen(tpath, "w");
    if (!f) DIE("cannot write %s", tpath);
    fprintf(f, "{\"rank\": %d, \"nranks\": %d, \"ops\": {\n", rank, n);
    fprintf(f, " \"GetVersion\": {\"calls\": 1, \"count\": 0, \"bytes\": 0},\n");
    if (rank == 0) fprintf(f, " \"GetUniqueId\": {\"calls\": 1, \"count\": 0, \"bytes\": 0},\n");
    fprintf(f, " \"CommInitRank\": {\"calls\": 1, \"count\": 0, \"bytes\": 0},\n");
    if (calls) fprintf(f, " \"AllReduce\": {\"calls\": %d, \"count\": %d, \"bytes\": %d},\n", calls, calls * AR, calls * AR * 4);
    if (nbc) fprintf(f, " \"Broadcast\": {\"calls\": %d, \"count\": %d, \"bytes\": %d},\n", nbc, nbc * BC, nbc * BC * 4);
    fprintf(f, " \"CommDestroy\": {\"calls\": 1, \"count\": 0, \"bytes\": 0}\n}}\n");
    if (fclose(f) != 0) DIE("cannot write %s", tpath);
  }
  dlclose(h);
  return 0;
}
