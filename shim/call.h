/* call.h — the steps of one recorded NCCL call, shared by the wrapper shapes.
 *
 * Contract: a recorded entry point runs SHAPE_before (rec_fields, rec_begin ... rec_go), the real call,
 * then SHAPE_after (rec_ret ... rec_end), with a struct rec on its stack. rec_begin decides
 * whether the call is recorded (r->on: not nested in another wrapper, the shim active);
 * rec_go and rec_end restore errno; rec_end pushes the record to the thread's ring. No lock
 * and no allocation on this path. The communicator shapes (init, split, end) live in
 * comms.c, off the hot path; the others in wrappers.c. */
#ifndef NCS_SHIM_CALL_H
#define NCS_SHIM_CALL_H
#include <errno.h>

#include "internal.h"

#define NO_VALUE 255u
/* The steps and the hot shapes are inlined into every entry point (as the hand-written
 * wrappers were): the op id and the fields are then constants there. */
#define NCS_HOT static inline __attribute__((always_inline))

struct rec {
  struct ncs_call c;
  struct ncs_ring *ring; /* the thread's ring, when on (NULL: no slot) */
  int on;         /* recording this call */
  int gpu_token;  /* gputime.c token, -1 when none */
  int gpu_group;  /* outermost GroupEnd: finish the group's GPU timing after the push */
  int err;        /* errno to hand back */
  struct ncs_comm_info *ci; /* the communicator's entry (NULL: none or unknown) */
  struct {        /* communicator shapes (comms.c): worked out before the real call */
    uint64_t id, parent_id;
    int nonblocking;
  } comm;
  struct {        /* in-flight identity across ranks (INFLIGHT record) of an init or a split
                   * (comms.c; unset in other shapes) */
    uint64_t key;         /* init: the unique-id hash; split/shrink: the parent's comm_id */
    uint64_t split;       /* split/shrink: the parent's split number (1, 2, ...); else 0 */
    int32_t rank, nranks; /* init: as passed (nranks 0: not an init) */
  } fl;
};

/* The record's fields that come from the entry point's parameters, set first by each shape
 * (rec_begin leaves them). */
NCS_HOT void rec_fields(struct rec *r, size_t count, uint32_t datatype, uint32_t redop, int32_t root,
                        cudaStream_t stream) {
  r->c.count = count;
  r->c.datatype = datatype;
  r->c.redop = redop;
  r->c.root = root;
  r->c.stream = (uint64_t)(uintptr_t)stream;
}
#define REC_NO_FIELDS(r) rec_fields((r), 0, NO_VALUE, NO_VALUE, -1, NULL)

/* Everything else a record needs before the real call (after rec_fields). Returns r->on. */
NCS_HOT int rec_begin(struct rec *r, unsigned op, ncclComm_t comm, void *const *ra_at) {
  struct ncs_tls *t = &ncs_tls;
  r->err = errno;
  r->ci = NULL;
  r->on = 0;
  r->gpu_token = -1;
  r->gpu_group = 0;
  r->c.op = op;
  r->c.comm = 0;
  r->c.seq = 0;
  r->c.flags = 0;
  r->c.callsite = 0;
  if (NCS_UNLIKELY(t->busy)) return 0;
  /* ncs_active: 0 not yet, 1 recording, 2 forward only (NCCLSCOPE_DISABLE=1, or no writer) */
  int active = atomic_load_explicit(&ncs_active, memory_order_acquire);
  if (NCS_UNLIKELY(active != 1) && (active == 2 || ncs_activate() != 0)) return 0;
  if (NCS_UNLIKELY(t->gen != atomic_load_explicit(&ncs_gen, memory_order_relaxed))) ncs_thread_ring();
  t = &ncs_tls;
  r->ring = t->ring;
  r->on = 1;
  t->busy = 1;
  r->c.thread = t->thread;
  r->c.tcall = ++t->tcall;
  r->c.depth = t->depth;
  r->c.group = t->group;
  if (comm && !(r->c.comm = ncs_comm_cached(comm, &r->ci)) && (r->c.comm = ncs_nb_adopt(comm)) != 0)
    r->ci = ncs_comm_info(r->c.comm); /* nonblocking.c: a pending split's child */
  if (ncs_cfg.callsite_depth) r->c.callsite = ncs_callsite_capture(ra_at);
  return 1;
}

/* Last thing before the real call: clock, the call published as in flight, errno (inits and
 * splits: rec_go_identity, comms.c). */
NCS_HOT void rec_go(struct rec *r) {
  if (r->on) {
    r->c.t_enter = ncs_clock_ns();
    if (NCS_LIKELY(r->ring != NULL)) ncs_current_enter(r->ring, &r->c, 0);
  }
  errno = r->err;
}

/* First thing after the real call: clock, no longer in flight, errno. */
NCS_HOT void rec_ret(struct rec *r, ncclResult_t rc) {
  r->err = errno;
  if (!r->on) return;
  r->c.t_exit = ncs_clock_ns();
  if (NCS_LIKELY(r->ring != NULL)) ncs_current_exit(r->ring);
  r->c.rc = (int32_t)rc;
  if (rc == ncclInProgress) r->c.flags |= NCS_CALL_F_INPROGRESS;
}

/* Pushes the record, then hands its GPU timing to the writer (which writes a GPU_TIME only
 * once the CALL is written: readers find the call first); restores errno. */
NCS_HOT void rec_end(struct rec *r) {
  if (r->on) {
    struct ncs_ring *ring = r->ring;
    if (NCS_LIKELY(ring != NULL)) ncs_ring_push(ring, &r->c);
    else ncs_writer_count_drop(NCS_DROP_NO_THREAD_SLOT, 1);
    if (r->gpu_token >= 0)
      ncs_gpu_after(r->gpu_token, r->c.thread, r->c.tcall, r->c.rc == ncclSuccess ? 0 : 1);
    if (r->gpu_group) ncs_gpu_group_after(r->c.thread, r->c.group, r->c.rc == ncclSuccess ? 0 : 1);
    ncs_tls.busy = 0;
  }
  errno = r->err;
}

/* ---- communicator shapes (comms.c) ---- */
/* Creation from unique ids: CommInitRank, CommInitRankConfig, CommInitRankScalable, CommInitAll. */
struct init_args {
  ncclComm_t *newcomm;      /* where NCCL writes the new handle(s) */
  int ncomms;               /* CommInitAll: ndev handles, one per rank; else 1 */
  const ncclUniqueId *ids;  /* hashed into the comm_id; CommInitAll has none */
  int nids;
  int rank, nranks;
  const ncclConfig_t *config;
};
void init_before(struct rec *r, unsigned op, const struct init_args *a, void *const *ra_at);
void init_after(struct rec *r, const struct init_args *a, ncclResult_t rc);
/* A communicator made from a parent: CommSplit, CommShrink. */
struct split_args {
  ncclComm_t parent;
  ncclComm_t *newcomm;
  const ncclConfig_t *config;
  int color;                /* CommSplit; CommShrink's tag is "shrink" */
};
void split_before(struct rec *r, unsigned op, const struct split_args *a, void *const *ra_at);
void split_after(struct rec *r, const struct split_args *a, ncclResult_t rc);
/* Teardown: CommFinalize, CommDestroy, CommAbort, CommRevoke. */
struct end_args {
  ncclComm_t comm;
};
void end_before(struct rec *r, unsigned op, const struct end_args *a, void *const *ra_at);
void end_after(struct rec *r, const struct end_args *a, ncclResult_t rc);

/* ---- device-API shape (devcomm.c): DevCommCreate, DevCommDestroy ---- */
struct devcomm_args {
  ncclComm_t comm;
  const struct ncclDevCommRequirements *reqs; /* create's; NULL for destroy */
  const void *devcomm;                        /* the ncclDevComm_t pointer passed */
};
void devcomm_before(struct rec *r, unsigned op, const struct devcomm_args *a, void *const *ra_at);
void devcomm_after(struct rec *r, const struct devcomm_args *a, ncclResult_t rc);
#endif
