/* nd_symmetric.c — registered windows and the kernels of symmetric-memory collectives, as
 * NCCL 2.28.9 names them, and the device-API host calls ncclDevCommCreate/Destroy.
 *
 * Contract:
 * - nd_win_add / nd_win_remove: ncclCommWindowRegister's window (buffer, size, flags, owning
 *   communicator); the handle is the window record.
 * - nd_sym_kernel: the kernel NCCL 2.28 launches for a single-collective task whose send and
 *   receive buffers both lie in NCCL_WIN_COLL_SYMMETRIC windows of its communicator, on a
 *   communicator within one node (src/enqueue.cc taskAppend: symmetricSupport, nNodes == 1;
 *   src/sym_kernels.cc ncclSymkAvailable): AllGather (any type), AllReduce and ReduceScatter
 *   with ncclSum on f32, f16, bf16, f8e4m3, f8e5m2 (src/device/symmetric/generate.py: the
 *   kernels that exist). Name: ncclSymkDevKernel_<coll>_<algo>[_sum_<ty>] (generate.py
 *   kernel_cname). The algorithm is the double's plausible choice, not NCCL's cost model
 *   (ncclSymkPickKernel): LL kernels (AllGather LL, AllReduce AGxLL_R, ReduceScatter LL) up to
 *   64 KiB of bus bytes, else AllGather ST, AllReduce RSxLD_AGxST, ReduceScatter LD (no
 *   multimem variants). NULL when NCCL would launch its ordinary kernel.
 * - ncclDevCommCreate(comm, reqs, out) / ncclDevCommDestroy(comm, devComm): 2.28's prototypes
 *   (nccl_device/core.h), its answers (NCCL v2.28.9-1 src/dev_runtime.cc): a communicator
 *   without symmetric-memory support (init.cc: symmetricSupport needs NCCL_WIN_ENABLE and
 *   NCCL_CUMEM_ENABLE, both 1 by default) gets ncclInvalidUsage; one whose init is still in
 *   progress or failed gets that (ncclCommEnsureReady). Create then fills the leading members
 *   of struct ncclDevComm (rank, nRanks, their 32-bit reciprocal, lsaRank, lsaSize: the ranks
 *   of this node, and its reciprocal) at once, also inside a group (NCCL defers it to the
 *   group's end); windows, barriers, multimem, resource handles and GIN resources are not
 *   modelled (the double runs no device code). Destroy returns ncclSuccess. Where 2.28.9
 *   dereferences a NULL or foreign pointer (comm, reqs, out, devComm) the double returns
 *   ncclInvalidArgument instead of crashing. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "nd_internal.h"

#ifndef NCCL_WIN_COLL_SYMMETRIC
#define NCCL_WIN_COLL_SYMMETRIC 0x01 /* nccl.h 2.27+ */
#endif

#define API(ret, Name, params) \
  __attribute__((visibility("default"))) ret pnccl##Name params; \
  __attribute__((visibility("default"), weak, alias("pnccl" #Name))) ret nccl##Name params; \
  ret pnccl##Name params

struct nd_win { struct ncclComm *comm; const char *base; size_t size; int flags; struct nd_win *next; };
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct nd_win *wins;

ND_HIDDEN void *nd_win_add(struct ncclComm *c, void *buff, size_t size, int flags) {
  struct nd_win *w = malloc(sizeof *w);
  if (!w) return NULL;
  *w = (struct nd_win){c, buff, size, flags, NULL};
  pthread_mutex_lock(&mu);
  w->next = wins;
  wins = w;
  pthread_mutex_unlock(&mu);
  return w;
}

ND_HIDDEN int nd_win_remove(struct ncclComm *c, void *win) {
  pthread_mutex_lock(&mu);
  struct nd_win **p = &wins;
  while (*p && (*p != win || (*p)->comm != c)) p = &(*p)->next;
  struct nd_win *w = *p;
  if (w) *p = w->next;
  pthread_mutex_unlock(&mu);
  free(w);
  return w ? 0 : -1;
}

/* under mu: the symmetric window of c holding [p, p + n), if any */
static int in_symmetric(const struct ncclComm *c, const void *p, size_t n) {
  for (const struct nd_win *w = wins; w; w = w->next)
    if (w->comm == c && (w->flags & NCCL_WIN_COLL_SYMMETRIC) && (const char *)p >= w->base &&
        (const char *)p + n <= w->base + w->size)
      return 1;
  return 0;
}

#define SYMK_TYS(X, coll, algo) \
  X(coll, algo, f32) X(coll, algo, f16) X(coll, algo, bf16) X(coll, algo, f8e4m3) X(coll, algo, f8e5m2)
#define SYMK_NAME(coll, algo, ty) "ncclSymkDevKernel_" #coll "_" #algo "_sum_" #ty,
static const char *const k_allreduce[2][5] = {{SYMK_TYS(SYMK_NAME, AllReduce, AGxLL_R)},
                                              {SYMK_TYS(SYMK_NAME, AllReduce, RSxLD_AGxST)}};
static const char *const k_reducescatter[2][5] = {{SYMK_TYS(SYMK_NAME, ReduceScatter, LL)},
                                                  {SYMK_TYS(SYMK_NAME, ReduceScatter, LD)}};
static const char *const k_allgather[2] = {"ncclSymkDevKernel_AllGather_LL", "ncclSymkDevKernel_AllGather_ST"};

static int ty_index(int dt) {
  switch (dt) {
  case ncclFloat32: return 0;
  case ncclFloat16: return 1;
  case ncclBfloat16: return 2;
  case ncclFloat8e4m3: return 3;
  case ncclFloat8e5m2: return 4;
  default: return -1;
  }
}

ND_HIDDEN const char *nd_sym_kernel(const struct nd_op *op) {
  struct ncclComm *c = op->comm;
  if (!wins || !op->count || c->nranks < 2) return NULL;
  for (int i = 0; c->peers && i < c->nranks; i++)
    if (c->peers[i].node != c->peers[0].node) return NULL; /* nNodes > 1 */
  const size_t bytes = op->count * ncclscope_datatype_size(op->dt), n = (size_t)c->nranks;
  size_t sbytes = bytes, rbytes = bytes;
  int ty = ty_index(op->dt);
  switch (op->kind) {
  case ND_ALLREDUCE: break;
  case ND_ALLGATHER: rbytes = bytes * n; break;
  case ND_REDUCESCATTER: sbytes = bytes * n; break;
  default: return NULL;
  }
  if (op->kind != ND_ALLGATHER && (op->redop_id != ncclSum || ty < 0)) return NULL;
  pthread_mutex_lock(&mu);
  int sym = in_symmetric(c, op->sbuf, sbytes) && in_symmetric(c, op->rbuf, rbytes);
  pthread_mutex_unlock(&mu);
  if (!sym) return NULL;
  int big = (op->kind == ND_ALLREDUCE ? bytes : bytes * n) > (64u << 10); /* bus bytes */
  switch (op->kind) {
  case ND_ALLREDUCE: return k_allreduce[big][ty];
  case ND_REDUCESCATTER: return k_reducescatter[big][ty];
  default: return k_allgather[big];
  }
}

/* ---- device API host calls ---- */

struct nd_devcomm_head { int rank, nRanks; uint32_t nRanks_rcp32; int lsaRank, lsaSize; uint32_t lsaSize_rcp32; };
struct ncclDevComm;
struct ncclDevCommRequirements;

/* NCCL's integer parameters: unset means the default 1 */
static int env_on(const char *name) {
  const char *v = getenv(name);
  return !v || !*v || atoi(v) != 0;
}

/* idivRcp32 of nccl_device/utility.h: uint32_t(-1)/x + isPow2(x) */
static uint32_t rcp32(int x) {
  uint32_t u = (uint32_t)x;
  return u ? 0xffffffffu / u + ((u & (u - 1)) == 0) : 0;
}

API(ncclResult_t, DevCommCreate, (ncclComm_t comm, const struct ncclDevCommRequirements *reqs,
                                  struct ncclDevComm *out)) {
  if (!comm || comm->magic != ND_COMM_MAGIC || !reqs || !out) return ncclInvalidArgument;
  if (!env_on("NCCL_WIN_ENABLE") || !env_on("NCCL_CUMEM_ENABLE")) return ncclInvalidUsage; /* "Communicator does not support symmetric memory!" */
  int ready = atomic_load(&comm->async_err);
  if (ready != ncclSuccess) return (ncclResult_t)ready;
  struct nd_devcomm_head h = {.rank = comm->rank, .nRanks = comm->nranks};
  for (int i = 0; comm->peers && i < comm->nranks; i++) {
    if (comm->peers[i].node != comm->peers[comm->rank].node) continue;
    if (i < comm->rank) h.lsaRank++;
    h.lsaSize++;
  }
  if (!comm->peers) { h.lsaRank = comm->rank; h.lsaSize = comm->nranks; }
  h.nRanks_rcp32 = rcp32(h.nRanks);
  h.lsaSize_rcp32 = rcp32(h.lsaSize);
  memcpy(out, &h, sizeof h);
  return ncclSuccess;
}

API(ncclResult_t, DevCommDestroy, (ncclComm_t comm, const struct ncclDevComm *devComm)) {
  if (!comm || comm->magic != ND_COMM_MAGIC || !devComm) return ncclInvalidArgument;
  return ncclSuccess;
}
