/* ops.h — the one list of NCCL operations, shared by the shim and the decoder.
 *
 * X(id, Name, kind, bw)
 *   id    stable number written into traces (never renumber; append only)
 *   Name  NCCL's name without the `nccl` prefix (also the name used in JSON and reports)
 *   kind  NCS_KIND_*: what sort of call it is
 *   bw    NCS_BW_*: nccl-tests bus-bandwidth rule (docs/REFERENCE-FIGURES.md);
 *         NCS_BW_NONE for calls that move no data.
 * Entry points that are pure queries (CommCount, CommUserRank, CommCuDevice,
 * CommGetAsyncError, GetErrorString, GetLastError, ResetDebugInit) are forwarded by the shim
 * but not recorded, so they have no id here. */
#ifndef NCCLSCOPE_OPS_H
#define NCCLSCOPE_OPS_H

enum ncs_kind {
  NCS_KIND_COLL = 1,   /* collective: lined up across the ranks of a communicator */
  NCS_KIND_P2P = 2,    /* Send / Recv */
  NCS_KIND_GROUP = 3,  /* GroupStart / GroupEnd / GroupSimulateEnd */
  NCS_KIND_COMM = 4,   /* communicator life cycle */
  NCS_KIND_OTHER = 5   /* registration, memory, reduction ops, version, unique id */
};

enum ncs_bw {
  NCS_BW_NONE = 0,
  NCS_BW_ALLREDUCE = 1, /* S = count*sz,   busbw = algbw * 2(n-1)/n */
  NCS_BW_ONE = 2,       /* S = count*sz,   busbw = algbw (Broadcast, Reduce, Send, Recv) */
  NCS_BW_NTIMES = 3     /* S = count*sz*n, busbw = algbw * (n-1)/n (AllGather, ReduceScatter,
                           AlltoAll, Gather, Scatter) */
};

#define NCCLSCOPE_OPS(X) \
  X(1, GetVersion, NCS_KIND_OTHER, NCS_BW_NONE) \
  X(2, GetUniqueId, NCS_KIND_OTHER, NCS_BW_NONE) \
  X(3, CommInitRank, NCS_KIND_COMM, NCS_BW_NONE) \
  X(4, CommInitAll, NCS_KIND_COMM, NCS_BW_NONE) \
  X(5, CommInitRankConfig, NCS_KIND_COMM, NCS_BW_NONE) \
  X(6, CommInitRankScalable, NCS_KIND_COMM, NCS_BW_NONE) \
  X(7, CommSplit, NCS_KIND_COMM, NCS_BW_NONE) \
  X(8, CommShrink, NCS_KIND_COMM, NCS_BW_NONE) \
  X(9, CommFinalize, NCS_KIND_COMM, NCS_BW_NONE) \
  X(10, CommDestroy, NCS_KIND_COMM, NCS_BW_NONE) \
  X(11, CommAbort, NCS_KIND_COMM, NCS_BW_NONE) \
  X(12, CommRevoke, NCS_KIND_COMM, NCS_BW_NONE) \
  X(13, CommRegister, NCS_KIND_OTHER, NCS_BW_NONE) \
  X(14, CommDeregister, NCS_KIND_OTHER, NCS_BW_NONE) \
  X(15, CommWindowRegister, NCS_KIND_OTHER, NCS_BW_NONE) \
  X(16, CommWindowDeregister, NCS_KIND_OTHER, NCS_BW_NONE) \
  X(17, MemAlloc, NCS_KIND_OTHER, NCS_BW_NONE) \
  X(18, MemFree, NCS_KIND_OTHER, NCS_BW_NONE) \
  X(19, RedOpCreatePreMulSum, NCS_KIND_OTHER, NCS_BW_NONE) \
  X(20, RedOpDestroy, NCS_KIND_OTHER, NCS_BW_NONE) \
  X(21, GroupStart, NCS_KIND_GROUP, NCS_BW_NONE) \
  X(22, GroupEnd, NCS_KIND_GROUP, NCS_BW_NONE) \
  X(23, GroupSimulateEnd, NCS_KIND_GROUP, NCS_BW_NONE) \
  X(24, AllReduce, NCS_KIND_COLL, NCS_BW_ALLREDUCE) \
  X(25, Broadcast, NCS_KIND_COLL, NCS_BW_ONE) \
  X(26, Bcast, NCS_KIND_COLL, NCS_BW_ONE) \
  X(27, Reduce, NCS_KIND_COLL, NCS_BW_ONE) \
  X(28, AllGather, NCS_KIND_COLL, NCS_BW_NTIMES) \
  X(29, ReduceScatter, NCS_KIND_COLL, NCS_BW_NTIMES) \
  X(30, AlltoAll, NCS_KIND_COLL, NCS_BW_NTIMES) \
  X(31, Gather, NCS_KIND_COLL, NCS_BW_NTIMES) \
  X(32, Scatter, NCS_KIND_COLL, NCS_BW_NTIMES) \
  X(33, Send, NCS_KIND_P2P, NCS_BW_ONE) \
  X(34, Recv, NCS_KIND_P2P, NCS_BW_ONE) \
  X(35, DevCommCreate, NCS_KIND_OTHER, NCS_BW_NONE) \
  X(36, DevCommDestroy, NCS_KIND_OTHER, NCS_BW_NONE)

enum ncs_op {
  NCS_OP_NONE = 0,
#define NCS_OP_ENUM_(id, Name, kind, bw) NCS_OP_##Name = id,
  NCCLSCOPE_OPS(NCS_OP_ENUM_)
#undef NCS_OP_ENUM_
  NCS_OP_LIMIT
};

/* Name of an op id ("AllReduce"), or NULL for an id this build does not know. */
static inline const char *ncs_op_name(unsigned id) {
  switch (id) {
#define NCS_OP_NAME_(id, Name, kind, bw) case id: return #Name;
    NCCLSCOPE_OPS(NCS_OP_NAME_)
#undef NCS_OP_NAME_
    default: return (const char *)0;
  }
}

/* Kind (enum ncs_kind) of an op id; 0 when unknown. */
static inline int ncs_op_kind(unsigned id) {
  switch (id) {
#define NCS_OP_KIND_(id, Name, kind, bw) case id: return kind;
    NCCLSCOPE_OPS(NCS_OP_KIND_)
#undef NCS_OP_KIND_
    default: return 0;
  }
}

/* 1 when a call (or a communicator's init) returned ncclSuccess or ncclInProgress (7): the
 * normal answer of a non-blocking communicator, not an error. A COMM record with rc 7 is a
 * communicator being created (its rank and size are the init's arguments). */
static inline int ncs_rc_ok(int rc) { return rc == 0 || rc == 7; }

/* Bus-bandwidth rule (enum ncs_bw) of an op id; NCS_BW_NONE when unknown. */
static inline int ncs_op_bw(unsigned id) {
  switch (id) {
#define NCS_OP_BW_(id, Name, kind, bw) case id: return bw;
    NCCLSCOPE_OPS(NCS_OP_BW_)
#undef NCS_OP_BW_
    default: return NCS_BW_NONE;
  }
}

#endif
