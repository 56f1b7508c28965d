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
 * found, wrappers return ncclSystemError (NULL for the string functions) and record nothing.
 * While the process records nothing (ncs_active 2: NCCLSCOPE_DISABLE=1, or no writer), every
 * wrapper whose real function is found jumps straight to it (FORWARD_ONLY, first in each).
 *
 * Layout: the entry points are generated from NCCLSCOPE_PROTOTYPES (nccl_abi.h); the table
 * at the end gives each one its shape and the record fields it fills from its own
 * parameters. A shape is a pair of functions, SHAPE_before (everything up to the real call)
 * and SHAPE_after (everything after it), taking the op id and an argument struct SHAPE_args:
 * collective, point-to-point, plain and group here (static inline: the hot path), the
 * communicator shapes init, split and end in comms.c, the device-API shape in devcomm.c. The steps they share are in call.h.
 * Adding an entry point: its prototype in nccl_abi.h, its op id in ops.h when it is
 * recorded, and one line in the table below. */
#include <stddef.h>

#include "call.h"

#define NCS_EXPORT __attribute__((visibility("default")))
/* Where the entry point's return address (the call site) is stored: on x86-64 the word below
 * the caller's stack pointer (the call-site memo, callsite.c, reads the caller's stack from
 * there); elsewhere a copy of it, alive for the call. */
#if defined(__x86_64__)
#define RA_AT ((void *const *)__builtin_dwarf_cfa() - 1)
#else
#define RA_AT ((void *const *)&(void *){__builtin_return_address(0)})
#endif
#define NO_ROOT (-1)
#define MISSING_RC ncclSystemError

/* ---- shape: collective (coll) and point-to-point (p2p) ---- */
struct coll_args {
  ncclComm_t comm;
  cudaStream_t stream;
  size_t count;
  uint32_t datatype, redop;
  int32_t root;  /* root, or the peer of a Send / Recv */
  int place;     /* PLACE_*: how NCCL defines in-place for this op (a constant per entry point) */
  const void *send, *recv;
};
/* In-place as NCCL's documentation defines it, per op: */
enum {
  PLACE_NONE,    /* no placement (Send, Recv) */
  PLACE_SAME,    /* sendbuff == recvbuff: AllReduce, Broadcast, Reduce, AlltoAll */
  PLACE_SEND_IN, /* sendbuff == recvbuff + rank x count x size: AllGather, Gather */
  PLACE_RECV_IN, /* recvbuff == sendbuff + rank x count x size: ReduceScatter, Scatter */
  PLACE_ALWAYS   /* one buffer: Bcast */
};

/* NCS_CALL_F_INPLACE or _OUTOFPLACE, or 0 when unknown (the rank of a communicator whose init
 * a group deferred, an unknown datatype): a compare, and for the offset rules a multiply. */
NCS_HOT uint32_t placement(const struct coll_args *a, const struct ncs_comm_info *ci) {
  uintptr_t s = (uintptr_t)a->send, d = (uintptr_t)a->recv, off;
  switch (a->place) {
  case PLACE_SAME: return s == d ? NCS_CALL_F_INPLACE : NCS_CALL_F_OUTOFPLACE;
  case PLACE_ALWAYS: return NCS_CALL_F_INPLACE;
  case PLACE_SEND_IN: case PLACE_RECV_IN: {
    size_t ts = ncclscope_datatype_size((int)a->datatype);
    if (!ci || ci->rank < 0 || ts == 0) return 0;
    off = (uintptr_t)ci->rank * a->count * ts;
    return (a->place == PLACE_SEND_IN ? s == d + off : d == s + off) ? NCS_CALL_F_INPLACE : NCS_CALL_F_OUTOFPLACE;
  }
  default: return 0;
  }
}

/* Sequence number (per communicator, collectives and p2p apart) and GPU timing. */
NCS_HOT void coll_before(struct rec *r, unsigned op, const struct coll_args *a, void *const *ra_at) {
  rec_fields(r, a->count, a->datatype, a->redop, a->root, a->stream);
  rec_begin(r, op, a->comm, ra_at);
  if (r->on) {
    struct ncs_comm_info *ci = r->ci;
    int p2p = ncs_op_kind(op) == NCS_KIND_P2P;
    if (ci) { /* not a locked add: NCCL forbids two threads using one communicator at once, and
               * the lock (a full barrier) waited for the last record's stores on every call */
      _Atomic uint64_t *s = p2p ? &ci->p2p_seq : &ci->coll_seq;
      r->c.seq = atomic_load_explicit(s, memory_order_relaxed) + 1;
      atomic_store_explicit(s, r->c.seq, memory_order_relaxed);
    }
    r->c.flags |= placement(a, ci);
    if (atomic_load_explicit(&ncs_gpu_on, memory_order_relaxed)) {
      int dev = ci ? ci->device : -1;
      if (r->c.depth == 0) r->gpu_token = ncs_gpu_before(a->stream, dev, &r->c.flags);
      else ncs_gpu_group_member(a->stream, dev, &r->c.flags);
    }
  }
  rec_go(r);
}
NCS_HOT void coll_after(struct rec *r, const struct coll_args *a, ncclResult_t rc) {
  rec_ret(r, rc);
  rec_end(r);
}

/* ---- shape: plain (registration, memory, reduction ops, version, unique id) ---- */
struct plain_args {
  ncclComm_t comm;
  size_t count;
  uint32_t datatype, redop;
  const ncclRedOp_t *redop_out; /* RedOpCreatePreMulSum: the op it created, read on success */
};
NCS_HOT void plain_before(struct rec *r, unsigned op, const struct plain_args *a, void *const *ra_at) {
  rec_fields(r, a->count, a->datatype, a->redop, -1, NULL);
  rec_begin(r, op, a->comm, ra_at);
  rec_go(r);
}
NCS_HOT void plain_after(struct rec *r, const struct plain_args *a, ncclResult_t rc) {
  rec_ret(r, rc);
  if (r->on && rc == ncclSuccess && a->redop_out) r->c.redop = (uint32_t)*a->redop_out;
  rec_end(r);
}

/* ---- shape: group (GroupStart opens a level of nesting; GroupEnd and GroupSimulateEnd
 * close one, and only GroupEnd launches what the group queued) ---- */
struct group_args {
  int opens;
  int launches;
};
NCS_HOT void group_before(struct rec *r, unsigned op, const struct group_args *a, void *const *ra_at) {
  REC_NO_FIELDS(r);
  if (rec_begin(r, op, NULL, ra_at)) {
    if (a->opens) {
      if (ncs_tls.depth == 0) ncs_tls.group = r->c.tcall; /* this call opens the group */
      r->c.group = ncs_tls.group;
    } else if (a->launches && ncs_tls.depth == 1 && ncs_gpu_on) {
      ncs_gpu_group_before();
    }
  }
  rec_go(r);
}
NCS_HOT void group_after(struct rec *r, const struct group_args *a, ncclResult_t rc) {
  rec_ret(r, rc);
  if (r->on && a->opens) {
    ncs_tls.depth++;
  } else if (r->on) {
    if (ncs_tls.depth > 0) ncs_tls.depth--;
    r->c.depth = ncs_tls.depth;
    if (ncs_tls.depth == 0) {
      r->gpu_group = a->launches && ncs_gpu_on;  /* finished in rec_end, after the push */
      if (!a->launches && ncs_gpu_on) ncs_gpu_group_forget(); /* GroupSimulateEnd: nothing ran */
      ncs_tls.group = 0;
    }
  }
  rec_end(r);
}

/* ---- the entry points ----
 * One line per entry point of NCCLSCOPE_PROTOTYPES: its shape and, in parentheses, the
 * fields of that shape's SHAPE_args in order, as expressions of the entry point's own
 * parameters (named as in nccl_abi.h):
 *   COLL, P2P  (comm, stream, count, datatype, redop, root or peer, PLACE_* rule, sendbuff,
 *               recvbuff)
 *   PLAIN      (comm, count, datatype, redop, where the created redop is written)
 *   GROUP      (opens a level, launches the group)
 *   INIT       (where the handle goes, how many handles, unique ids, how many, rank, nranks,
 *               config)
 *   SPLIT      (parent, where the handle goes, config, color)
 *   END        (comm)
 *   DEVCOMM    (comm, the requirements, the device communicator pointer): devcomm.c
 *   FORWARD    (what to return when no NCCL was found): forwarded, not recorded
 *   POLL       CommGetAsyncError: FORWARD, and what it saw is told to nonblocking.c */
#define SHIM_GetVersion           PLAIN, (NULL, 0, NO_VALUE, NO_VALUE, NULL)
#define SHIM_GetUniqueId          PLAIN, (NULL, 0, NO_VALUE, NO_VALUE, NULL)
#define SHIM_CommInitRank         INIT, (comm, 1, &commId, 1, rank, nranks, NULL)
#define SHIM_CommInitAll          INIT, (comm, ndev, NULL, 0, -1, ndev, NULL)
#define SHIM_CommInitRankConfig   INIT, (comm, 1, &commId, 1, rank, nranks, config)
#define SHIM_CommInitRankScalable INIT, (newcomm, 1, commIds, nId, myrank, nranks, config)
#define SHIM_CommSplit            SPLIT, (comm, newcomm, config, color)
#define SHIM_CommShrink           SPLIT, (comm, newcomm, config, 0)
#define SHIM_CommFinalize         END, (comm)
#define SHIM_CommDestroy          END, (comm)
#define SHIM_CommAbort            END, (comm)
#define SHIM_CommRevoke           END, (comm)
#define SHIM_CommGetAsyncError    POLL, (MISSING_RC)
#define SHIM_CommCount            FORWARD, (MISSING_RC)
#define SHIM_CommCuDevice         FORWARD, (MISSING_RC)
#define SHIM_CommUserRank         FORWARD, (MISSING_RC)
#define SHIM_CommRegister         PLAIN, (comm, size, NO_VALUE, NO_VALUE, NULL)
#define SHIM_CommDeregister       PLAIN, (comm, 0, NO_VALUE, NO_VALUE, NULL)
#define SHIM_CommWindowRegister   PLAIN, (comm, size, NO_VALUE, NO_VALUE, NULL)
#define SHIM_CommWindowDeregister PLAIN, (comm, 0, NO_VALUE, NO_VALUE, NULL)
#define SHIM_MemAlloc             PLAIN, (NULL, size, NO_VALUE, NO_VALUE, NULL)
#define SHIM_MemFree              PLAIN, (NULL, 0, NO_VALUE, NO_VALUE, NULL)
#define SHIM_RedOpCreatePreMulSum PLAIN, (comm, 0, datatype, NO_VALUE, op)
#define SHIM_RedOpDestroy         PLAIN, (comm, 0, NO_VALUE, op, NULL)
#define SHIM_GroupStart           GROUP, (1, 0)
#define SHIM_GroupEnd             GROUP, (0, 1)
#define SHIM_GroupSimulateEnd     GROUP, (0, 0)
#define SHIM_AllReduce            COLL, (comm, stream, count, datatype, op, NO_ROOT, PLACE_SAME, sendbuff, recvbuff)
#define SHIM_Broadcast            COLL, (comm, stream, count, datatype, NO_VALUE, root, PLACE_SAME, sendbuff, recvbuff)
#define SHIM_Bcast                COLL, (comm, stream, count, datatype, NO_VALUE, root, PLACE_ALWAYS, buff, buff)
#define SHIM_Reduce               COLL, (comm, stream, count, datatype, op, root, PLACE_SAME, sendbuff, recvbuff)
#define SHIM_AllGather            COLL, (comm, stream, sendcount, datatype, NO_VALUE, NO_ROOT, PLACE_SEND_IN, sendbuff, recvbuff)
#define SHIM_ReduceScatter        COLL, (comm, stream, recvcount, datatype, op, NO_ROOT, PLACE_RECV_IN, sendbuff, recvbuff)
#define SHIM_AlltoAll             COLL, (comm, stream, count, datatype, NO_VALUE, NO_ROOT, PLACE_SAME, sendbuff, recvbuff)
#define SHIM_Gather               COLL, (comm, stream, count, datatype, NO_VALUE, root, PLACE_SEND_IN, sendbuff, recvbuff)
#define SHIM_Scatter              COLL, (comm, stream, count, datatype, NO_VALUE, root, PLACE_RECV_IN, sendbuff, recvbuff)
#define SHIM_Send                 P2P, (comm, stream, count, datatype, NO_VALUE, peer, PLACE_NONE, sendbuff, NULL)
#define SHIM_Recv                 P2P, (comm, stream, count, datatype, NO_VALUE, peer, PLACE_NONE, NULL, recvbuff)
#define SHIM_GetErrorString       FORWARD, (NULL)
#define SHIM_GetLastError         FORWARD, (NULL)
#define SHIM_ResetDebugInit       FORWARD_VOID, ()
#define SHIM_DevCommCreate        DEVCOMM, (comm, reqs, outDevComm)
#define SHIM_DevCommDestroy       DEVCOMM, (comm, NULL, devComm)

/* The forward-only path, first in every entry point that does more than forward: the real
 * function when the shim records nothing in this process (ncs_active 2: NCCLSCOPE_DISABLE=1,
 * or no writer) and that function is already found; else NULL (the full path: it activates,
 * resolves, records). Taken, the call goes to the real function with the arguments and
 * errno untouched: a load, a compare, a load and a jump. */
#define FORWARD_ONLY(name)                                                                  \
  (atomic_load_explicit(&ncs_active, memory_order_relaxed) == 2                             \
       ? (ncs_fn_##name##_t)atomic_load_explicit(&ncs_real_fn[NCS_FN_##name], memory_order_acquire) \
       : NULL)

/* A recorded entry point: the forward-only path, else record_NAME (kept out of line so that
 * the forward-only path sets up no frame): SHAPE_before, the real call, SHAPE_after. Where
 * the wrapper's return address (the call site) is stored is passed to it as `ra_at_`. */
#define RECORDED(shape, name, params, args, fields)                      \
  static __attribute__((noinline)) ncclResult_t record_##name WITH_RA(params, args) { \
    ncs_fn_##name##_t real = NCS_REAL(name);                             \
    if (!real) return MISSING_RC;                                        \
    struct rec r;                                                        \
    struct shape##_args a = {UNPAREN fields};                            \
    shape##_before(&r, NCS_OP_##name, &a, ra_at_);                          \
    ncclResult_t rc = real args;                                         \
    shape##_after(&r, &a, rc);                                           \
    return rc;                                                           \
  }                                                                      \
  NCS_EXPORT ncclResult_t nccl##name params {                            \
    ncs_fn_##name##_t fwd = FORWARD_ONLY(name);                          \
    if (NCS_LIKELY(fwd != NULL)) return fwd args;                        \
    return record_##name RA_AND(args);                                   \
  }
/* (void *const *ra_at_, the entry point's parameters) and (RA_AT, its arguments); "(void)"
 * adds none */
#define WITH_RA(params, args) WITH_RA_(params, UNPAREN args)
#define WITH_RA_(params, ...) (void *const *ra_at_ __VA_OPT__(, UNPAREN params))
#define RA_AND(args) RA_AND_(UNPAREN args)
#define RA_AND_(...) (RA_AT __VA_OPT__(, __VA_ARGS__))
#define UNPAREN(...) __VA_ARGS__
#define GEN_COLL(ret, name, params, args, fields) RECORDED(coll, name, params, args, fields)
#define GEN_P2P(ret, name, params, args, fields) RECORDED(coll, name, params, args, fields)
#define GEN_PLAIN(ret, name, params, args, fields) RECORDED(plain, name, params, args, fields)
#define GEN_GROUP(ret, name, params, args, fields) RECORDED(group, name, params, args, fields)
#define GEN_INIT(ret, name, params, args, fields) RECORDED(init, name, params, args, fields)
#define GEN_SPLIT(ret, name, params, args, fields) RECORDED(split, name, params, args, fields)
#define GEN_END(ret, name, params, args, fields) RECORDED(end, name, params, args, fields)
#define GEN_DEVCOMM(ret, name, params, args, fields) RECORDED(devcomm, name, params, args, fields)
/* Forwarded only: the real function when found, else missing_NAME (out of line: the once-init,
 * the retry, then the missing value). */
#define GEN_FORWARD(ret, name, params, args, missing)                    \
  static __attribute__((noinline)) ret missing_##name params {           \
    ncs_fn_##name##_t real = (ncs_fn_##name##_t)ncs_real_slow(NCS_FN_##name); \
    return real ? real args : UNPAREN missing;                           \
  }                                                                      \
  NCS_EXPORT ret nccl##name params {                                     \
    ncs_fn_##name##_t real =                                             \
        (ncs_fn_##name##_t)atomic_load_explicit(&ncs_real_fn[NCS_FN_##name], memory_order_acquire); \
    if (NCS_LIKELY(real != NULL)) return real args;                      \
    return missing_##name args;                                          \
  }
/* Forwarded, and what it saw told to nonblocking.c (poll_NAME, out of line) unless the shim
 * records nothing. */
#define GEN_POLL(ret, name, params, args, missing)                       \
  static __attribute__((noinline)) ret poll_##name params {              \
    ncs_fn_##name##_t real = NCS_REAL(name);                             \
    if (!real) return UNPAREN missing;                                   \
    ret rc = real args;                                                  \
    int err = errno;                                                     \
    ncs_nb_polled(comm, rc, asyncError);                                 \
    errno = err;                                                         \
    return rc;                                                           \
  }                                                                      \
  NCS_EXPORT ret nccl##name params {                                     \
    ncs_fn_##name##_t fwd = FORWARD_ONLY(name);                          \
    if (NCS_LIKELY(fwd != NULL)) return fwd args;                        \
    return poll_##name args;                                             \
  }
#define GEN_FORWARD_VOID(ret, name, params, args, none)                  \
  NCS_EXPORT ret nccl##name params {                                     \
    ncs_fn_##name##_t real = NCS_REAL(name);                             \
    if (real) real args;                                                 \
  }
/* SHIM_##name expands to "SHAPE, (fields)" before GEN_##SHAPE is formed. */
#define ENTRY(ret, name, params, args) ENTRY_(ret, name, params, args, SHIM_##name)
#define ENTRY_(ret, name, params, args, how) ENTRY__(ret, name, params, args, how)
#define ENTRY__(ret, name, params, args, shape, fields) GEN_##shape(ret, name, params, args, fields)
NCCLSCOPE_PROTOTYPES(ENTRY)
