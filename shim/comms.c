/* comms.c — the communicator shapes of the wrappers: creation (init), split and teardown
 * (end), and the COMM / COMM_END records they emit.
 *
 * Contract: called by the generated entry points in wrappers.c around the real call (see
 * call.h); a COMM record is emitted for every creation attempt (a failed one too), a
 * COMM_END for every teardown call. Off the hot path: these calls take NCCL milliseconds. */
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "call.h"

static inline int result_failed(ncclResult_t rc) { return rc != ncclSuccess && rc != ncclInProgress; }

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

/* The name the job gave the communicator (ncclConfig_t's commName) into name[cap], "" when
 * none. Read only after NCCL accepted the config (the call did not fail): NCCL has read the
 * same pointer then, so it is a string the job owns, not one the shim guesses at. */
static void config_name(const ncclConfig_t *config, char *name, size_t cap) {
  name[0] = 0;
  if (!config || config->size < offsetof(ncclConfig_t, commName) + sizeof(const char *)) return;
  const char *s = config->commName;
  if (!s) return; /* NCCL_CONFIG_UNDEF_PTR */
  size_t n = strnlen(s, cap - 1);
  memcpy(name, s, n);
  name[n] = 0;
}

/* Adds the communicator to the table and emits its COMM record. `handle` NULL: a failed
 * attempt (recorded, not looked up). `color`: CommSplit's, else -1. Returns its index. */
static uint32_t comm_created(const struct rec *r, ncclComm_t handle, uint64_t comm_id, int rank,
                             int nranks, uint64_t parent_id, int nonblocking, const ncclConfig_t *config,
                             int color) {
  int ok = handle && (r->c.rc == ncclSuccess || r->c.rc == ncclInProgress);
  int device = -1;
  /* Inside a group NCCL defers the init to ncclGroupEnd (2.28 group.cc): the communicator it
   * returned still reads count, rank and device 0, so it is not asked; its device is the
   * current one, which NCCL's init takes. */
  if (ok && r->c.rc == ncclSuccess && ncs_tls.depth == 0) {
    int saved = errno;
    device = query_int(NCS_REAL(CommCuDevice), handle);
    if (rank < 0) rank = query_int(NCS_REAL(CommUserRank), handle);
    if (nranks < 0) nranks = query_int(NCS_REAL(CommCount), handle);
    errno = saved;
  }
  /* not ready yet (ncclInProgress, or in a group): NCCL builds it on the current device */
  if (ok && device < 0 && ncs_gpu_on) device = ncs_gpu_current_device();
  uint32_t idx = ncs_comm_add(ok ? handle : NULL, comm_id, device, rank);
  struct ncs_comm c = {.comm = idx, .comm_id = comm_id, .handle = ok ? (uint64_t)(uintptr_t)handle : 0,
                       .rank = rank, .nranks = nranks, .device = device, .init_op = r->c.op,
                       .parent_id = parent_id, .flags = nonblocking ? 1u : 0u, .rc = r->c.rc,
                       .t_enter = r->c.t_enter, .t_exit = r->c.t_exit, .thread = r->c.thread,
                       .color = color};
  if (ok) config_name(config, c.name, sizeof c.name);
  uint8_t body[256];
  struct ncs_wbuf w;
  ncs_wbuf_init(&w, body, sizeof body);
  ncs_enc_comm_body(&w, &c);
  if (idx) ncs_emit(NCS_REC_COMM, w.buf, w.len);
  if (idx && ok && r->c.rc == ncclInProgress) ncs_nb_init_pending(handle, &c); /* nonblocking.c */
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

/* CommInitAll's id (one communicator of ndev ranks, all in this process): hash of
 * (host, pid, a counter). */
static uint64_t local_comm_id(void) {
  static _Atomic uint64_t initall_counter;
  uint8_t b[16];
  ncs_put_u64(b, (uint64_t)getpid());
  ncs_put_u64(b + 8, atomic_fetch_add(&initall_counter, 1));
  const char *host = ncs_host_name();
  return ncs_hash64(ncs_hash64(NCS_FNV64_INIT, host, strlen(host)), b, sizeof b);
}

/* rec_go for an init or a split: the call in flight with its identity across ranks (r->fl) */
static void rec_go_identity(struct rec *r) {
  if (r->on) {
    r->c.t_enter = ncs_clock_ns();
    if (r->ring) {
      struct ncs_call c = r->c;
      if (r->fl.nranks) c.root = r->fl.rank;
      if (r->fl.split) c.seq = r->fl.split;
      atomic_store_explicit(&r->ring->cur.key, r->fl.key, memory_order_relaxed);
      ncs_current_enter(r->ring, &c, r->fl.nranks);
    }
  }
  errno = r->err;
}
/* After the real call: the identity's key no longer in flight (the next call's publication
 * comes after this in program order and leaves the key alone: ncs_current_enter). */
static void rec_ret_identity(struct rec *r, ncclResult_t rc) {
  rec_ret(r, rc);
  if (r->on && r->ring && r->fl.key) atomic_store_explicit(&r->ring->cur.key, 0, memory_order_relaxed);
}

void init_before(struct rec *r, unsigned op, const struct init_args *a, void *const *ra_at) {
  r->fl.key = 0;
  r->fl.nranks = 0;
  r->fl.split = 0;
  REC_NO_FIELDS(r);
  if (rec_begin(r, op, NULL, ra_at)) {
    r->comm.id = (a->ids && a->nids > 0) ? unique_id_hash(a->ids, a->nids) : 0;
    r->comm.nonblocking = config_nonblocking(a->config);
    if (r->comm.id && a->nranks > 0) { r->fl.key = r->comm.id; r->fl.rank = a->rank; r->fl.nranks = a->nranks; }
  }
  rec_go_identity(r);
}

void init_after(struct rec *r, const struct init_args *a, ncclResult_t rc) {
  rec_ret_identity(r, rc);
  if (r->on && r->c.op == NCS_OP_CommInitAll) {
    uint64_t id = local_comm_id();
    if (rc == ncclSuccess && a->newcomm && a->ncomms > 0) {
      for (int i = 0; i < a->ncomms; i++) {
        uint32_t idx = comm_created(r, a->newcomm[i], id, i, a->ncomms, 0, 0, NULL, -1);
        if (i == 0) r->c.comm = idx;
      }
    } else {
      r->c.comm = comm_created(r, NULL, id, -1, a->ncomms, 0, 0, NULL, -1);
    }
  } else if (r->on) {
    r->c.comm = comm_created(r, a->newcomm ? *a->newcomm : NULL, r->comm.id, a->rank, a->nranks, 0,
                             r->comm.nonblocking, a->config, -1);
  }
  rec_end(r);
}

/* The child's id: hash of (parent comm_id, the parent's split counter, color or "shrink"). */
void split_before(struct rec *r, unsigned op, const struct split_args *a, void *const *ra_at) {
  r->comm.nonblocking = config_nonblocking(a->config);
  r->fl.key = 0;
  r->fl.nranks = 0;
  r->fl.split = 0;
  REC_NO_FIELDS(r);
  if (rec_begin(r, op, a->parent, ra_at)) {
    struct ncs_comm_info *pi = ncs_comm_info(r->c.comm);
    uint64_t counter = pi ? atomic_fetch_add(&pi->split_count, 1) : 0;
    uint8_t b[16], color[8];
    r->comm.parent_id = pi ? pi->comm_id : 0;
    ncs_put_u64(b, r->comm.parent_id);
    ncs_put_u64(b + 8, counter);
    ncs_put_u64(color, (uint64_t)(int64_t)a->color);
    uint64_t h = ncs_hash64(NCS_FNV64_INIT, b, sizeof b);
    r->comm.id = op == NCS_OP_CommShrink ? ncs_hash64(h, "shrink", 6) : ncs_hash64(h, color, sizeof color);
    r->fl.key = r->comm.parent_id; /* in flight: the parent's split number counter + 1 */
    r->fl.split = counter + 1;
  }
  rec_go_identity(r);
}

/* A non-blocking split / shrink returns ncclSuccess before its child exists (NCCL 2.28 stores
 * *newcomm once the child is ready): nonblocking.c follows it. */
static void child_pending(const struct rec *r, const struct split_args *a) {
  struct ncs_comm c = {.comm_id = r->comm.id, .rank = -1, .nranks = -1, .device = -1, .init_op = r->c.op,
                       .parent_id = r->comm.parent_id, .flags = 1u, .rc = 0, .t_enter = r->c.t_enter,
                       .t_exit = r->c.t_exit, .thread = r->c.thread,
                       .color = r->c.op == NCS_OP_CommSplit ? a->color : -1};
  config_name(a->config, c.name, sizeof c.name); /* the call returned ncclSuccess */
  ncs_nb_split_pending(a->newcomm, &c);
}

void split_after(struct rec *r, const struct split_args *a, ncclResult_t rc) {
  rec_ret_identity(r, rc);
  /* NCCL's own thread may store a non-blocking child into *newcomm at any moment */
  ncclComm_t made = a->newcomm ? __atomic_load_n(a->newcomm, __ATOMIC_ACQUIRE) : NULL;
  if (r->on && a->newcomm && (made || result_failed(rc)))
    comm_created(r, made, r->comm.id, -1, -1, r->comm.parent_id, r->comm.nonblocking, a->config,
                 r->c.op == NCS_OP_CommSplit ? a->color : -1);
  else if (r->on && a->newcomm && rc == ncclSuccess && (r->c.op == NCS_OP_CommShrink || a->color != -1 /* NOCOLOR */))
    child_pending(r, a);
  rec_end(r);
}

void end_before(struct rec *r, unsigned op, const struct end_args *a, void *const *ra_at) {
  REC_NO_FIELDS(r);
  rec_begin(r, op, a->comm, ra_at);
  rec_go(r);
}

/* After Destroy and Abort the trace is written out before returning (GPU times collected for
 * up to 100 ms, the whole wait at most 500 ms): a process often leaves with _exit() right
 * after (multiprocessing workers, forked children), which runs no exit handler. */
void end_after(struct rec *r, const struct end_args *a, ncclResult_t rc) {
  rec_ret(r, rc);
  if (r->on) comm_ended(r);
  rec_end(r);
  if (r->on && (r->c.op == NCS_OP_CommDestroy || r->c.op == NCS_OP_CommAbort)) {
    int saved = errno, cancel;
    /* the wait is a cancellation point: a thread cancelled in it would keep the writer's lock */
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    ncs_writer_sync(500, 100, 0);
    pthread_setcancelstate(cancel, NULL);
    errno = saved;
  }
}
