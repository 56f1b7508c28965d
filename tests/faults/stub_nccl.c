/* stub_nccl.c — a libnccl.so.2 whose calls return at once (init, all-reduce, destroy): the
 * benchmarks' stand-in for NCCL when what is measured is the shim's own cost per call
 * (scripts/bench-throughput.sh, scripts/bench-stepsplit.sh). Built by them, not by make. */
#include "ncclscope/nccl_abi.h"
struct ncclComm { int x; };
/* a communicator of its own for each init (rate_job gives each thread its own, as NCCL asks
 * of threads: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/usage/threadsafety.html) */
static struct ncclComm comms[256];
static unsigned ncomms;
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) { id->internal[0] = 1; return ncclSuccess; }
ncclResult_t ncclCommInitRank(ncclComm_t *c, int n, ncclUniqueId id, int r) {
  *c = &comms[__atomic_fetch_add(&ncomms, 1, __ATOMIC_RELAXED) % 256];
  return ncclSuccess;
}
ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t o, ncclComm_t c, cudaStream_t st) { return ncclSuccess; }
ncclResult_t ncclCommDestroy(ncclComm_t c) { return ncclSuccess; }
const char *ncclGetErrorString(ncclResult_t r) { return "stub"; }
