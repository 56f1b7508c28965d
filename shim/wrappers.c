/* wrappers.c — the nccl* entry points exported by libncclscope.so.
 *
 * Contract: each wrapper calls the real function (resolve.c) with its arguments unchanged and
 * returns its result unchanged, with errno as the real function left it. Recorded operations
 * (include/ncclscope/ops.h) follow one shape: begin (thread, call number, communicator,
 * sequence, call site) → host clock → real call → host clock → one record pushed to the
 * thread's ring (state.c), with no lock and no allocation. A call made while the shim is
 * already inside a wrapper on this thread (NCCL calling its own entry points) is forwarded
 * without a record. Pure queries (CommCount, CommUserRank, CommCuDevice, CommGetAsyncError,
 * GetErrorString, GetLastError, ResetDebugInit) are forwarded only. Communicator creation and
 * teardown also emit COMM / COMM_END records (off the hot path). When no real NCCL can be
 * found, wrappers return ncclSystemError (NULL for the string functions) and record nothing. */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define NCS_EXPORT __attribute__((visibility("default")))
#define RA __builtin_return_address(0)
#define NO_VALUE 255u

struct rec {
  struct ncs_call c;
  int on;         /* recording this call */
  int gpu_token;  /* gputime.c token, -1 when none */
  int gpu_group;  /* outermost GroupEnd: finish the group's GPU timing after the push */
  int err;        /* errno to hand back */
};

static inline int result_failed(ncclResult_t rc) { return rc != ncclSuccess && rc != ncclInProgress; }

/* Everything a record needs before the real call. Returns r->on. */
static inline int rec_begin(struct rec *r, unsigned op, ncclComm_t comm, void *ra) {
  struct ncs_tls *t = &ncs_tls;
  r->err = errno;
  r->on = 0;
  r->gpu_token = -1;
  r->gpu_group = 0;
  r->c.op = op;
  r->c.comm = 0;
  r->c.seq = 0;
  r->c.count = 0;
  r->c.datatype = NO_VALUE;
  r->c.redop = NO_VALUE;
  r->c.root = -1;
  r->c.stream = 0;
  r->c.flags = 0;
  r->c.callsite = 0;
  if (NCS_UNLIKELY(t->busy)) return 0;
  if (NCS_UNLIKELY(!atomic_load_explicit(&ncs_active, memory_order_acquire)) && ncs_activate() != 0)
    return 0;
  if (NCS_UNLIKELY(t->gen != atomic_load_explicit(&ncs_gen, memory_order_relaxed))) ncs_thread_ring();
  t = &ncs_tls;
  r->on = 1;
  t->busy = 1;
  r->c.thread = t->thread;
  r->c.tcall = ++t->tcall;
  r->c.depth = t->depth;
  r->c.group = t->group;
  if (comm) r->c.comm = ncs_comm_lookup(comm);
  if (ncs_cfg.callsite_depth) r->c.callsite = ncs_callsite_capture(ra);
  return 1;
}

/* Collective / point-to-point: sequence number and GPU timing. */
static inline void rec_coll(struct rec *r, cudaStream_t stream, int p2p) {
  r->c.stream = (uint64_t)(uintptr_t)stream;
  if (!r->on) return;
  struct ncs_comm_info *ci = ncs_comm_info(r->c.comm);
  if (ci) r->c.seq = atomic_fetch_add_explicit(p2p ? &ci->p2p_seq : &ci->coll_seq, 1, memory_order_relaxed) + 1;
  if (ncs_gpu_on) {
    int dev = ci ? ci->device : -1;
    if (r->c.depth == 0) r->gpu_token = ncs_gpu_before(stream, dev, &r->c.flags);
    else ncs_gpu_group_member(stream, dev, &r->c.flags);
  }
}

/* Last thing before the real call. */
static inline void rec_go(struct rec *r) {
  if (r->on) r->c.t_enter = ncs_now_ns();
  errno = r->err;
}

/* First thing after the real call: clock, errno. */
static inline void rec_ret(struct rec *r, ncclResult_t rc) {
  r->err = errno;
  if (!r->on) return;
  r->c.t_exit = ncs_now_ns();
  r->c.rc = (int32_t)rc;
  if (rc == ncclInProgress) r->c.flags |= NCS_CALL_F_INPROGRESS;
}

/* Pushes the record, then hands its GPU timing to the writer (which writes a GPU_TIME only
 * once the CALL is written: readers find the call first); restores errno. */
static inline void rec_end(struct rec *r) {
  if (r->on) {
    struct ncs_ring *ring = ncs_tls.ring;
    if (NCS_LIKELY(ring != NULL)) ncs_ring_push(ring, &r->c);
    else ncs_writer_count_drop(NCS_DROP_NO_THREAD_SLOT, 1);
    if (r->gpu_token >= 0)
      ncs_gpu_after(r->gpu_token, r->c.thread, r->c.tcall, r->c.rc == ncclSuccess ? 0 : 1);
    if (r->gpu_group) ncs_gpu_group_after(r->c.thread, r->c.group, r->c.rc == ncclSuccess ? 0 : 1);
    ncs_tls.busy = 0;
  }
  errno = r->err;
}

#define MISSING_RC ncclSystemError

/* ---- collectives ---- */

NCS_EXPORT ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                                      ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                      cudaStream_t stream) {
  ncs_fn_AllReduce_t real = NCS_REAL(AllReduce);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_AllReduce, comm, RA);
  r.c.count = count; r.c.datatype = (uint32_t)datatype; r.c.redop = (uint32_t)op;
  rec_coll(&r, stream, 0);
  rec_go(&r);
  ncclResult_t rc = real(sendbuff, recvbuff, count, datatype, op, comm, stream);
  rec_ret(&r, rc);
  rec_end(&r);
  return rc;
}

NCS_EXPORT ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                                      ncclDataType_t datatype, int root, ncclComm_t comm,
                                      cudaStream_t stream) {
  ncs_fn_Broadcast_t real = NCS_REAL(Broadcast);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_Broadcast, comm, RA);
  r.c.count = count; r.c.datatype = (uint32_t)datatype; r.c.root = root;
  rec_coll(&r, stream, 0);
  rec_go(&r);
  ncclResult_t rc = real(sendbuff, recvbuff, count, datatype, root, comm, stream);
  rec_ret(&r, rc);
  rec_end(&r);
  return rc;
}

NCS_EXPORT ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
                                  ncclComm_t comm, cudaStream_t stream) {
  ncs_fn_Bcast_t real = NCS_REAL(Bcast);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_Bcast, comm, RA);
  r.c.count = count; r.c.datatype = (uint32_t)datatype; r.c.root = root;
  rec_coll(&r, stream, 0);
  rec_go(&r);
  ncclResult_t rc = real(buff, count, datatype, root, comm, stream);
  rec_ret(&r, rc);
  rec_end(&r);
  return rc;
}

NCS_EXPORT ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                                   ncclDataType_t datatype, ncclRedOp_t op, int root,
                                   ncclComm_t comm, cudaStream_t stream) {
  ncs_fn_Reduce_t real = NCS_REAL(Reduce);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_Reduce, comm, RA);
  r.c.count = count; r.c.datatype = (uint32_t)datatype; r.c.redop = (uint32_t)op; r.c.root = root;
  rec_coll(&r, stream, 0);
  rec_go(&r);
  ncclResult_t rc = real(sendbuff, recvbuff, count, datatype, op, root, comm, stream);
  rec_ret(&r, rc);
  rec_end(&r);
  return rc;
}

NCS_EXPORT ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                                      ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  ncs_fn_AllGather_t real = NCS_REAL(AllGather);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_AllGather, comm, RA);
  r.c.count = sendcount; r.c.datatype = (uint32_t)datatype;
  rec_coll(&r, stream, 0);
  rec_go(&r);
  ncclResult_t rc = real(sendbuff, recvbuff, sendcount, datatype, comm, stream);
  rec_ret(&r, rc);
  rec_end(&r);
  return rc;
}

NCS_EXPORT ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                          ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                          cudaStream_t stream) {
  ncs_fn_ReduceScatter_t real = NCS_REAL(ReduceScatter);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_ReduceScatter, comm, RA);
  r.c.count = recvcount; r.c.datatype = (uint32_t)datatype; r.c.redop = (uint32_t)op;
  rec_coll(&r, stream, 0);
  rec_go(&r);
  ncclResult_t rc = real(sendbuff, recvbuff, recvcount, datatype, op, comm, stream);
  rec_ret(&r, rc);
  rec_end(&r);
  return rc;
}

NCS_EXPORT ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                                     ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  ncs_fn_AlltoAll_t real = NCS_REAL(AlltoAll);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_AlltoAll, comm, RA);
  r.c.count = count; r.c.datatype = (uint32_t)datatype;
  rec_coll(&r, stream, 0);
  rec_go(&r);
  ncclResult_t rc = real(sendbuff, recvbuff, count, datatype, comm, stream);
  rec_ret(&r, rc);
  rec_end(&r);
  return rc;
}

NCS_EXPORT ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count,
                                   ncclDataType_t datatype, int root, ncclComm_t comm,
                                   cudaStream_t stream) {
  ncs_fn_Gather_t real = NCS_REAL(Gather);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_Gather, comm, RA);
  r.c.count = count; r.c.datatype = (uint32_t)datatype; r.c.root = root;
  rec_coll(&r, stream, 0);
  rec_go(&r);
  ncclResult_t rc = real(sendbuff, recvbuff, count, datatype, root, comm, stream);
  rec_ret(&r, rc);
  rec_end(&r);
  return rc;
}

NCS_EXPORT ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count,
                                    ncclDataType_t datatype, int root, ncclComm_t comm,
                                    cudaStream_t stream) {
  ncs_fn_Scatter_t real = NCS_REAL(Scatter);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_Scatter, comm, RA);
  r.c.count = count; r.c.datatype = (uint32_t)datatype; r.c.root = root;
  rec_coll(&r, stream, 0);
  rec_go(&r);
  ncclResult_t rc = real(sendbuff, recvbuff, count, datatype, root, comm, stream);
  rec_ret(&r, rc);
  rec_end(&r);
  return rc;
}

/* ---- point to point ---- */

NCS_EXPORT ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype,
                                 int peer, ncclComm_t comm, cudaStream_t stream) {
  ncs_fn_Send_t real = NCS_REAL(Send);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_Send, comm, RA);
  r.c.count = count; r.c.datatype = (uint32_t)datatype; r.c.root = peer;
  rec_coll(&r, stream, 1);
  rec_go(&r);
  ncclResult_t rc = real(sendbuff, count, datatype, peer, comm, stream);
  rec_ret(&r, rc);
  rec_end(&r);
  return rc;
}

NCS_EXPORT ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                                 ncclComm_t comm, cudaStream_t stream) {
  ncs_fn_Recv_t real = NCS_REAL(Recv);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_Recv, comm, RA);
  r.c.count = count; r.c.datatype = (uint32_t)datatype; r.c.root = peer;
  rec_coll(&r, stream, 1);
  rec_go(&r);
  ncclResult_t rc = real(recvbuff, count, datatype, peer, comm, stream);
  rec_ret(&r, rc);
  rec_end(&r);
  return rc;
}

/* ---- groups ---- */

NCS_EXPORT ncclResult_t ncclGroupStart(void) {
  ncs_fn_GroupStart_t real = NCS_REAL(GroupStart);
  if (!real) return MISSING_RC;
  struct rec r;
  if (rec_begin(&r, NCS_OP_GroupStart, NULL, RA)) {
    if (ncs_tls.depth == 0) ncs_tls.group = r.c.tcall; /* this call opens the group */
    r.c.group = ncs_tls.group;
  }
  rec_go(&r);
  ncclResult_t rc = real();
  rec_ret(&r, rc);
  if (r.on) ncs_tls.depth++;
  rec_end(&r);
  return rc;
}

/* GroupEnd and GroupSimulateEnd both close one level of nesting. */
static inline void group_close_begin(struct rec *r) {
  if (!r->on) return;
  if (ncs_tls.depth == 1 && ncs_gpu_on) ncs_gpu_group_before();
}
static inline void group_close_end(struct rec *r, ncclResult_t rc, int launches) {
  if (!r->on) return;
  if (ncs_tls.depth > 0) ncs_tls.depth--;
  r->c.depth = ncs_tls.depth;
  if (ncs_tls.depth == 0) {
    r->gpu_group = launches && ncs_gpu_on;  /* finished in rec_end, after the push */
    if (!launches && ncs_gpu_on) ncs_gpu_group_forget(); /* GroupSimulateEnd: nothing ran */
    ncs_tls.group = 0;
  }
}

NCS_EXPORT ncclResult_t ncclGroupEnd(void) {
  ncs_fn_GroupEnd_t real = NCS_REAL(GroupEnd);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_GroupEnd, NULL, RA);
  group_close_begin(&r);
  rec_go(&r);
  ncclResult_t rc = real();
  rec_ret(&r, rc);
  group_close_end(&r, rc, 1);
  rec_end(&r);
  return rc;
}

NCS_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *simInfo) {
  ncs_fn_GroupSimulateEnd_t real = NCS_REAL(GroupSimulateEnd);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_GroupSimulateEnd, NULL, RA);
  rec_go(&r);
  ncclResult_t rc = real(simInfo);
  rec_ret(&r, rc);
  group_close_end(&r, rc, 0);
  rec_end(&r);
  return rc;
}

/* ---- communicators ---- */

static int query_int(ncclResult_t (*q)(const ncclComm_t, int *), ncclComm_t comm) {
  int v = -1;
  if (q && comm && q(comm, &v) != ncclSuccess) v = -1;
  return v;
}

static int config_nonblocking(const ncclConfig_t *config) {
  if (!config) return 0;
  if (config->size < offsetof(ncclConfig_t, blocking) + sizeof(int)) return 0;
  return config->blocking == 0;
}

/* Adds the communicator to the table and emits its COMM record. `handle` NULL: a failed
 * attempt (recorded, not looked up). Returns its index. */
static uint32_t comm_created(const struct rec *r, ncclComm_t handle, uint64_t comm_id, int rank,
                             int nranks, uint64_t parent_id, int nonblocking) {
  int ok = handle && (r->c.rc == ncclSuccess || r->c.rc == ncclInProgress);
  int device = -1;
  if (ok && r->c.rc == ncclSuccess) {
    int saved = errno;
    device = query_int(NCS_REAL(CommCuDevice), handle);
    if (rank < 0) rank = query_int(NCS_REAL(CommUserRank), handle);
    if (nranks < 0) nranks = query_int(NCS_REAL(CommCount), handle);
    errno = saved;
  }
  /* not ready yet (ncclInProgress): NCCL builds a communicator on the current device */
  if (ok && device < 0 && ncs_gpu_on) device = ncs_gpu_current_device();
  uint32_t idx = ncs_comm_add(ok ? handle : NULL, comm_id, device);
  struct ncs_comm c = {.comm = idx, .comm_id = comm_id, .handle = ok ? (uint64_t)(uintptr_t)handle : 0,
                       .rank = rank, .nranks = nranks, .device = device, .init_op = r->c.op,
                       .parent_id = parent_id, .flags = nonblocking ? 1u : 0u, .rc = r->c.rc,
                       .t_enter = r->c.t_enter, .t_exit = r->c.t_exit, .thread = r->c.thread};
  uint8_t body[160];
  struct ncs_wbuf w;
  ncs_wbuf_init(&w, body, sizeof body);
  ncs_enc_comm_body(&w, &c);
  if (idx) ncs_emit(NCS_REC_COMM, w.buf, w.len);
  return idx;
}

static void comm_ended(const struct rec *r) {
  struct ncs_comm_end e = {.comm = r->c.comm, .op = r->c.op, .rc = r->c.rc, .t_enter = r->c.t_enter,
                           .t_exit = r->c.t_exit, .thread = r->c.thread};
  uint8_t body[64];
  struct ncs_wbuf w;
  ncs_wbuf_init(&w, body, sizeof body);
  ncs_enc_comm_end_body(&w, &e);
  ncs_emit(NCS_REC_COMM_END, w.buf, w.len);
}

static uint64_t unique_id_hash(const ncclUniqueId *ids, int n) {
  uint64_t h = NCS_FNV64_INIT;
  for (int i = 0; i < n; i++) h = ncs_hash64(h, ids[i].internal, sizeof ids[i].internal);
  return h;
}

/* Split / Shrink: hash of (parent comm_id, the parent's split counter, color or "shrink"). */
static uint64_t child_comm_id(uint32_t parent, const void *tag, size_t tag_len, uint64_t *parent_id) {
  struct ncs_comm_info *pi = ncs_comm_info(parent);
  uint64_t pid = pi ? pi->comm_id : 0;
  uint64_t counter = pi ? atomic_fetch_add(&pi->split_count, 1) : 0;
  uint8_t b[16];
  ncs_put_u64(b, pid);
  ncs_put_u64(b + 8, counter);
  *parent_id = pid;
  return ncs_hash64(ncs_hash64(NCS_FNV64_INIT, b, sizeof b), tag, tag_len);
}

NCS_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank) {
  ncs_fn_CommInitRank_t real = NCS_REAL(CommInitRank);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_CommInitRank, NULL, RA);
  rec_go(&r);
  ncclResult_t rc = real(comm, nranks, commId, rank);
  rec_ret(&r, rc);
  if (r.on) r.c.comm = comm_created(&r, comm ? *comm : NULL, unique_id_hash(&commId, 1), rank, nranks, 0, 0);
  rec_end(&r);
  return rc;
}

NCS_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId,
                                               int rank, ncclConfig_t *config) {
  ncs_fn_CommInitRankConfig_t real = NCS_REAL(CommInitRankConfig);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_CommInitRankConfig, NULL, RA);
  int nb = config_nonblocking(config);
  rec_go(&r);
  ncclResult_t rc = real(comm, nranks, commId, rank, config);
  rec_ret(&r, rc);
  if (r.on) r.c.comm = comm_created(&r, comm ? *comm : NULL, unique_id_hash(&commId, 1), rank, nranks, 0, nb);
  rec_end(&r);
  return rc;
}

NCS_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
                                                 ncclUniqueId *commIds, ncclConfig_t *config) {
  ncs_fn_CommInitRankScalable_t real = NCS_REAL(CommInitRankScalable);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_CommInitRankScalable, NULL, RA);
  int nb = config_nonblocking(config);
  uint64_t id = (commIds && nId > 0) ? unique_id_hash(commIds, nId) : 0;
  rec_go(&r);
  ncclResult_t rc = real(newcomm, nranks, myrank, nId, commIds, config);
  rec_ret(&r, rc);
  if (r.on) r.c.comm = comm_created(&r, newcomm ? *newcomm : NULL, id, myrank, nranks, 0, nb);
  rec_end(&r);
  return rc;
}

NCS_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist) {
  static _Atomic uint64_t initall_counter;
  ncs_fn_CommInitAll_t real = NCS_REAL(CommInitAll);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_CommInitAll, NULL, RA);
  rec_go(&r);
  ncclResult_t rc = real(comm, ndev, devlist);
  rec_ret(&r, rc);
  if (r.on) {
    /* one communicator of ndev ranks, all in this process: hash of (host, pid, counter) */
    extern const char *ncs_host_name(void);
    uint8_t b[16];
    ncs_put_u64(b, (uint64_t)getpid());
    ncs_put_u64(b + 8, atomic_fetch_add(&initall_counter, 1));
    const char *host = ncs_host_name();
    uint64_t id = ncs_hash64(ncs_hash64(NCS_FNV64_INIT, host, strlen(host)), b, sizeof b);
    if (rc == ncclSuccess && comm && ndev > 0) {
      for (int i = 0; i < ndev; i++) {
        uint32_t idx = comm_created(&r, comm[i], id, i, ndev, 0, 0);
        if (i == 0) r.c.comm = idx;
      }
    } else {
      r.c.comm = comm_created(&r, NULL, id, -1, ndev, 0, 0);
    }
  }
  rec_end(&r);
  return rc;
}

NCS_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                      ncclConfig_t *config) {
  ncs_fn_CommSplit_t real = NCS_REAL(CommSplit);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_CommSplit, comm, RA);
  int nb = config_nonblocking(config);
  uint64_t parent_id = 0, id = 0;
  if (r.on) {
    uint8_t c[8];
    ncs_put_u64(c, (uint64_t)(int64_t)color);
    id = child_comm_id(r.c.comm, c, sizeof c, &parent_id);
  }
  rec_go(&r);
  ncclResult_t rc = real(comm, color, key, newcomm, config);
  rec_ret(&r, rc);
  if (r.on && newcomm && (*newcomm || result_failed(rc)))
    comm_created(&r, *newcomm, id, -1, -1, parent_id, nb);
  rec_end(&r);
  return rc;
}

NCS_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                                       ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags) {
  ncs_fn_CommShrink_t real = NCS_REAL(CommShrink);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_CommShrink, comm, RA);
  int nb = config_nonblocking(config);
  uint64_t parent_id = 0, id = 0;
  if (r.on) id = child_comm_id(r.c.comm, "shrink", 6, &parent_id);
  rec_go(&r);
  ncclResult_t rc = real(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
  rec_ret(&r, rc);
  if (r.on && newcomm && (*newcomm || result_failed(rc)))
    comm_created(&r, *newcomm, id, -1, -1, parent_id, nb);
  rec_end(&r);
  return rc;
}

/* Finalize / Destroy / Abort / Revoke: record and COMM_END. After Destroy and Abort the trace
 * is written out before returning (GPU times collected for up to 100 ms, the whole wait at
 * most 500 ms): a process often leaves with _exit() right after (multiprocessing workers,
 * forked children), which runs no exit handler. Not a hot path: destroying a communicator
 * takes NCCL milliseconds. */
static ncclResult_t comm_end_call(unsigned op, ncclComm_t comm, void *ra, ncclResult_t (*real1)(ncclComm_t),
                                  ncs_fn_CommRevoke_t revoke, int flags) {
  struct rec r;
  rec_begin(&r, op, comm, ra);
  rec_go(&r);
  ncclResult_t rc = revoke ? revoke(comm, flags) : real1(comm);
  rec_ret(&r, rc);
  if (r.on) comm_ended(&r);
  rec_end(&r);
  if (r.on && (op == NCS_OP_CommDestroy || op == NCS_OP_CommAbort)) {
    int saved = errno;
    ncs_writer_sync(500, 100, 0);
    errno = saved;
  }
  return rc;
}

NCS_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  ncs_fn_CommFinalize_t real = NCS_REAL(CommFinalize);
  return real ? comm_end_call(NCS_OP_CommFinalize, comm, RA, real, NULL, 0) : MISSING_RC;
}
NCS_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  ncs_fn_CommDestroy_t real = NCS_REAL(CommDestroy);
  return real ? comm_end_call(NCS_OP_CommDestroy, comm, RA, real, NULL, 0) : MISSING_RC;
}
NCS_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  ncs_fn_CommAbort_t real = NCS_REAL(CommAbort);
  return real ? comm_end_call(NCS_OP_CommAbort, comm, RA, real, NULL, 0) : MISSING_RC;
}
NCS_EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  ncs_fn_CommRevoke_t real = NCS_REAL(CommRevoke);
  return real ? comm_end_call(NCS_OP_CommRevoke, comm, RA, NULL, real, revokeFlags) : MISSING_RC;
}

/* ---- registration, memory, reduction ops, version ---- */

NCS_EXPORT ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle) {
  ncs_fn_CommRegister_t real = NCS_REAL(CommRegister);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_CommRegister, comm, RA);
  r.c.count = size;
  rec_go(&r);
  ncclResult_t rc = real(comm, buff, size, handle);
  rec_ret(&r, rc);
  rec_end(&r);
  return rc;
}

NCS_EXPORT ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle) {
  ncs_fn_CommDeregister_t real = NCS_REAL(CommDeregister);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_CommDeregister, comm, RA);
  rec_go(&r);
  ncclResult_t rc = real(comm, handle);
  rec_ret(&r, rc);
  rec_end(&r);
  return rc;
}

NCS_EXPORT ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win,
                                               int winFlags) {
  ncs_fn_CommWindowRegister_t real = NCS_REAL(CommWindowRegister);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_CommWindowRegister, comm, RA);
  r.c.count = size;
  rec_go(&r);
  ncclResult_t rc = real(comm, buff, size, win, winFlags);
  rec_ret(&r, rc);
  rec_end(&r);
  return rc;
}

NCS_EXPORT ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  ncs_fn_CommWindowDeregister_t real = NCS_REAL(CommWindowDeregister);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_CommWindowDeregister, comm, RA);
  rec_go(&r);
  ncclResult_t rc = real(comm, win);
  rec_ret(&r, rc);
  rec_end(&r);
  return rc;
}

NCS_EXPORT ncclResult_t ncclMemAlloc(void **ptr, size_t size) {
  ncs_fn_MemAlloc_t real = NCS_REAL(MemAlloc);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_MemAlloc, NULL, RA);
  r.c.count = size;
  rec_go(&r);
  ncclResult_t rc = real(ptr, size);
  rec_ret(&r, rc);
  rec_end(&r);
  return rc;
}

NCS_EXPORT ncclResult_t ncclMemFree(void *ptr) {
  ncs_fn_MemFree_t real = NCS_REAL(MemFree);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_MemFree, NULL, RA);
  rec_go(&r);
  ncclResult_t rc = real(ptr);
  rec_ret(&r, rc);
  rec_end(&r);
  return rc;
}

NCS_EXPORT ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                                 ncclScalarResidence_t residence, ncclComm_t comm) {
  ncs_fn_RedOpCreatePreMulSum_t real = NCS_REAL(RedOpCreatePreMulSum);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_RedOpCreatePreMulSum, comm, RA);
  r.c.datatype = (uint32_t)datatype;
  rec_go(&r);
  ncclResult_t rc = real(op, scalar, datatype, residence, comm);
  rec_ret(&r, rc);
  if (r.on && rc == ncclSuccess && op) r.c.redop = (uint32_t)*op;
  rec_end(&r);
  return rc;
}

NCS_EXPORT ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  ncs_fn_RedOpDestroy_t real = NCS_REAL(RedOpDestroy);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_RedOpDestroy, comm, RA);
  r.c.redop = (uint32_t)op;
  rec_go(&r);
  ncclResult_t rc = real(op, comm);
  rec_ret(&r, rc);
  rec_end(&r);
  return rc;
}

NCS_EXPORT ncclResult_t ncclGetVersion(int *version) {
  ncs_fn_GetVersion_t real = NCS_REAL(GetVersion);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_GetVersion, NULL, RA);
  rec_go(&r);
  ncclResult_t rc = real(version);
  rec_ret(&r, rc);
  rec_end(&r);
  return rc;
}

NCS_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId) {
  ncs_fn_GetUniqueId_t real = NCS_REAL(GetUniqueId);
  if (!real) return MISSING_RC;
  struct rec r;
  rec_begin(&r, NCS_OP_GetUniqueId, NULL, RA);
  rec_go(&r);
  ncclResult_t rc = real(uniqueId);
  rec_ret(&r, rc);
  rec_end(&r);
  return rc;
}

/* ---- forwarded, not recorded ---- */

NCS_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
  ncs_fn_CommGetAsyncError_t real = NCS_REAL(CommGetAsyncError);
  return real ? real(comm, asyncError) : MISSING_RC;
}
NCS_EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
  ncs_fn_CommCount_t real = NCS_REAL(CommCount);
  return real ? real(comm, count) : MISSING_RC;
}
NCS_EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device) {
  ncs_fn_CommCuDevice_t real = NCS_REAL(CommCuDevice);
  return real ? real(comm, device) : MISSING_RC;
}
NCS_EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
  ncs_fn_CommUserRank_t real = NCS_REAL(CommUserRank);
  return real ? real(comm, rank) : MISSING_RC;
}
NCS_EXPORT const char *ncclGetErrorString(ncclResult_t result) {
  ncs_fn_GetErrorString_t real = NCS_REAL(GetErrorString);
  return real ? real(result) : NULL;
}
NCS_EXPORT const char *ncclGetLastError(ncclComm_t comm) {
  ncs_fn_GetLastError_t real = NCS_REAL(GetLastError);
  return real ? real(comm) : NULL;
}
NCS_EXPORT void ncclResetDebugInit(void) {
  ncs_fn_ResetDebugInit_t real = NCS_REAL(ResetDebugInit);
  if (real) real();
}
