/* mini_nccl.c — a minimal one-rank libnccl.so.2 (and, built a second time with -DMINI_CUDART,
 * libcudart.so.13) for the tests where the full CPU double cannot run: under `ulimit -f` of a
 * few KiB the double's shared-memory segment itself trips SIGXFSZ. Collectives copy send to
 * receive buffers (one rank); nothing touches files. Used by tests/test_fault_fsize.sh through
 * LD_LIBRARY_PATH (fault_job's RUNPATH yields to it). */
#include <string.h>
#include "nccl_decl.h"

#ifdef MINI_CUDART
int cudaDeviceSynchronize(void) { return 0; }
#else
static int dummy;
ncclResult_t ncclGetVersion(int *v) { *v = 22809; return ncclSuccess; }
ncclResult_t pncclGetVersion(int *v) { *v = 22809; return ncclSuccess; }
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) { memset(id, 0, sizeof *id); return ncclSuccess; }
ncclResult_t ncclCommInitRank(ncclComm_t *c, int n, ncclUniqueId id, int r) {
  *c = (ncclComm_t)&dummy; return n == 1 && r == 0 ? ncclSuccess : ncclInvalidArgument;
}
ncclResult_t ncclCommDestroy(ncclComm_t c) { return ncclSuccess; }
ncclResult_t ncclCommCount(const ncclComm_t c, int *n) { *n = 1; return ncclSuccess; }
ncclResult_t ncclCommUserRank(const ncclComm_t c, int *r) { *r = 0; return ncclSuccess; }
ncclResult_t ncclCommCuDevice(const ncclComm_t c, int *d) { *d = 0; return ncclSuccess; }
ncclResult_t ncclGroupStart(void) { return ncclSuccess; }
ncclResult_t ncclGroupEnd(void) { return ncclSuccess; }
ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t o, ncclComm_t c, cudaStream_t st) {
  memmove(r, s, n * ncclscope_datatype_size(t)); return ncclSuccess;
}
ncclResult_t ncclBroadcast(const void *s, void *r, size_t n, ncclDataType_t t, int root, ncclComm_t c, cudaStream_t st) {
  memmove(r, s, n * ncclscope_datatype_size(t)); return ncclSuccess;
}
ncclResult_t ncclAllGather(const void *s, void *r, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t st) {
  memmove(r, s, n * ncclscope_datatype_size(t)); return ncclSuccess;
}
ncclResult_t ncclReduceScatter(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t o, ncclComm_t c, cudaStream_t st) {
  memmove(r, s, n * ncclscope_datatype_size(t)); return ncclSuccess;
}
const char *ncclGetErrorString(ncclResult_t r) { return r == ncclSuccess ? "no error" : "error"; }
#endif
