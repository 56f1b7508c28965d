/* nonblocking.c — communicators whose creation completes after the creating call returned
 * (non-blocking communicators, `ncclConfig_t.blocking = 0`).
 *
 * Contract:
 *   - A non-blocking init (ncclCommInitRankConfig / Scalable returning ncclInProgress) is
 *     recorded at once by the wrapper (COMM rc ncclInProgress, rank and size from the
 *     arguments) and handed here with ncs_nb_init_pending. When the application's
 *     ncclCommGetAsyncError on that communicator first reports something other than
 *     ncclInProgress, a second COMM record with the same index completes it: rc (0, or the
 *     error NCCL reported), rank, size and device asked from NCCL (only after success), t_exit
 *     the time it was seen complete.
 *   - A non-blocking split or shrink returns ncclSuccess with *newcomm still NULL (NCCL 2.28
 *     stores the child there once it is ready). ncs_nb_split_pending remembers the address of
 *     the application's newcomm with the child's comm_id. The child is adopted — registered,
 *     its COMM record written as a blocking split's would be — when a call names a
 *     communicator the shim does not know (ncs_nb_adopt) or the application polls it, and only
 *     if the value now stored at that address is exactly that handle: the handle is never
 *     guessed. The address is read with process_vm_readv, so a variable that no longer exists
 *     (an unmapped stack) fails the read instead of faulting.
 *   - At most 64 of each are followed at a time; more are not (NCCLSCOPE_DEBUG says so). All of
 *     this is off the hot path: while nothing is pending, each entry point costs one relaxed
 *     atomic load. One mutex guards the tables (taken only while something is pending). */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"

#define NCS_NB_MAX 64

struct pending_init { uint64_t handle; struct ncs_comm c; };
struct pending_split { ncclComm_t *where; struct ncs_comm c; };

static pthread_mutex_t nb_mu = PTHREAD_MUTEX_INITIALIZER;
static struct pending_init inits[NCS_NB_MAX];
static struct pending_split splits[NCS_NB_MAX];
static int ninits, nsplits;
static _Atomic int npending;  /* ninits + nsplits, read without the lock */

static void emit_comm(const struct ncs_comm *c) {
  uint8_t body[256];
  struct ncs_wbuf w;
  ncs_wbuf_init(&w, body, sizeof body);
  ncs_enc_comm_body(&w, c);
  ncs_emit(NCS_REC_COMM, w.buf, w.len);
}

static int ask(ncclResult_t (*q)(const ncclComm_t, int *), ncclComm_t comm) {
  int v = -1;
  if (!q || q(comm, &v) != ncclSuccess) v = -1;
  return v;
}

/* rank, size and device of a communicator NCCL reported complete */
static void ask_nccl(struct ncs_comm *c, ncclComm_t h) {
  int saved = errno;
  int r = ask(NCS_REAL(CommUserRank), h), n = ask(NCS_REAL(CommCount), h), d = ask(NCS_REAL(CommCuDevice), h);
  errno = saved;
  if (r >= 0) c->rank = r;
  if (n > 0) c->nranks = n;
  if (d >= 0) c->device = d;
}

void ncs_nb_init_pending(ncclComm_t handle, const struct ncs_comm *c) {
  pthread_mutex_lock(&nb_mu);
  if (ninits < NCS_NB_MAX) {
    inits[ninits++] = (struct pending_init){(uint64_t)(uintptr_t)handle, *c};
    atomic_fetch_add(&npending, 1);
  } else {
    ncs_debug("more than %d non-blocking inits pending: communicator %u stays in progress in the trace",
              NCS_NB_MAX, c->comm);
  }
  pthread_mutex_unlock(&nb_mu);
}

void ncs_nb_split_pending(ncclComm_t *where, const struct ncs_comm *c) {
  pthread_mutex_lock(&nb_mu);
  if (nsplits < NCS_NB_MAX && where) {
    splits[nsplits++] = (struct pending_split){where, *c};
    atomic_fetch_add(&npending, 1);
  } else {
    ncs_debug("more than %d non-blocking splits pending: a child communicator will not be attributed", NCS_NB_MAX);
  }
  pthread_mutex_unlock(&nb_mu);
}

/* The handle stored at `where` now, or NULL when it cannot be read. */
static ncclComm_t read_handle(ncclComm_t *where) {
  ncclComm_t v = NULL;
  struct iovec local = {&v, sizeof v}, remote = {where, sizeof v};
  int saved = errno;
  ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  errno = saved;
  return n == (ssize_t)sizeof v ? v : NULL;
}

/* Under nb_mu: adopts the pending split whose newcomm now holds `h`; its index or 0. */
static uint32_t adopt_locked(ncclComm_t h) {
  for (int i = 0; i < nsplits; i++) {
    if (read_handle(splits[i].where) != h) continue;
    struct ncs_comm c = splits[i].c;
    splits[i] = splits[--nsplits];
    atomic_fetch_sub(&npending, 1);
    ask_nccl(&c, h);
    c.handle = (uint64_t)(uintptr_t)h;
    c.comm = ncs_comm_add(h, c.comm_id, c.device, c.rank);
    if (c.comm) emit_comm(&c);
    return c.comm;
  }
  return 0;
}

uint32_t ncs_nb_adopt(ncclComm_t h) {
  if (NCS_LIKELY(atomic_load_explicit(&npending, memory_order_relaxed) == 0) || !h) return 0;
  pthread_mutex_lock(&nb_mu);
  uint32_t idx = nsplits ? adopt_locked(h) : 0;
  pthread_mutex_unlock(&nb_mu);
  return idx;
}

void ncs_nb_polled(ncclComm_t h, ncclResult_t rc, const ncclResult_t *async) {
  if (NCS_LIKELY(atomic_load_explicit(&npending, memory_order_relaxed) == 0)) return;
  if (rc != ncclSuccess || !async || *async == ncclInProgress || !h) return;
  ncclResult_t state = *async;
  pthread_mutex_lock(&nb_mu);
  for (int i = 0; i < ninits; i++) {
    if (inits[i].handle != (uint64_t)(uintptr_t)h) continue;
    struct ncs_comm c = inits[i].c;
    inits[i] = inits[--ninits];
    atomic_fetch_sub(&npending, 1);
    c.rc = state;
    c.t_exit = ncs_now_ns();
    if (state == ncclSuccess) ask_nccl(&c, h);
    emit_comm(&c);
    break;
  }
  if (nsplits && state == ncclSuccess && ncs_comm_lookup(h) == 0) adopt_locked(h);
  pthread_mutex_unlock(&nb_mu);
}

void ncs_nb_atfork_child(void) {
  pthread_mutex_init(&nb_mu, NULL);
  ninits = nsplits = 0;
  atomic_store(&npending, 0);
}
