/* nd_api.c — the NCCL double's entry points: argument checks with NCCL's result codes,
 * communicator life cycle (unique id, init, split, shrink, finalize, destroy, abort, revoke),
 * groups, registration, memory, user reduction ops, and the enqueueing of operations on the
 * CUDA double's streams.
 *
 * Contract: every entry point of NCCLSCOPE_PROTOTYPES is defined as a strong `pncclX` with a
 * weak `ncclX` alias, as NCCL >= 2.16 exports them. Operations return before their data
 * moved: they are enqueued as tasks (nd_exec.c) on the given stream; inside
 * ncclGroupStart/End they are deferred to the outermost GroupEnd, one task per stream. */
#include "nd_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "../include/cuda_double.h"

#define API(ret, Name, params) \
  __attribute__((visibility("default"))) ret pnccl##Name params; \
  __attribute__((visibility("default"), weak, alias("pnccl" #Name))) ret nccl##Name params; \
  ret pnccl##Name params

#define ND_VERSION_DEFAULT 22809
#define CONFIG_MAGIC 0xcafebeefu
#define SIMINFO_MAGIC 0x74685283u

static _Thread_local char t_last_error[256];

/* A WARN line naming this file and the calling line (as NCCL's WARN names its source), also
 * kept as the thread's ncclGetLastError text. */
#define warn(dev, msg) warn_at("nd_api.c", __LINE__, dev, msg)
static void warn_at(const char *file, int line, int dev, const char *msg) {
  snprintf(t_last_error, sizeof t_last_error, "%s", msg);
  ncclD_warn(file, line, dev, "%s", t_last_error);
}

static int version_code(void) {
  const char *v = getenv("NCCLDOUBLE_VERSION");
  return v && *v ? atoi(v) : ND_VERSION_DEFAULT;
}

static int comm_ok(const struct ncclComm *c) { return c && c->magic == ND_COMM_MAGIC; }

/* The calling thread's group: nesting depth, the operations it deferred, and the inits it
 * deferred (NCCL 2.28's ncclAsyncLaunch queues an init made inside a group to ncclGroupEnd). */
static _Thread_local int t_group_depth;
static _Thread_local struct nd_op *t_ops;
static _Thread_local int t_nops, t_capops;
static _Thread_local ncclResult_t t_group_err;
struct pending_init { struct ncclComm *c; char name[ND_NAME_LEN]; };
static _Thread_local struct pending_init *t_inits;
static _Thread_local int t_ninits, t_capinits;

/* ---- version, ids, errors ---- */

API(ncclResult_t, GetVersion, (int *version)) {
  if (!version) return ncclInvalidArgument;
  *version = version_code();
  return ncclSuccess;
}

/* NCCL 2.28 (init.cc): ncclGetUniqueId and ncclCommInitRank* load nccl.conf (ncclInitEnv: its
 * setenv) on the calling thread, before any thread of theirs starts. */
API(ncclResult_t, GetUniqueId, (ncclUniqueId *id)) {
  static _Atomic unsigned counter;
  ncclD_init_env();
  if (!id) return ncclInvalidArgument;
  unsigned long long rnd = 0;
  if (getrandom(&rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) rnd = cudaDoubleNowNs();
  memset(id, 0, sizeof *id);
  memcpy(id->internal, ND_ID_MAGIC, 8);
  snprintf(id->internal + 8, ND_NAME_LEN, "/ncclD.%016llx.%d.%u.%016llx", (unsigned long long)nd_name_tag(),
           (int)getpid(), atomic_fetch_add(&counter, 1), rnd);
  return ncclSuccess;
}

API(const char *, GetErrorString, (ncclResult_t r)) {
  switch (r) {
  case ncclSuccess: return "no error";
  case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
  case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
  case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
  case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
  case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
  case ncclRemoteError: return "remote process exited or there was a network error";
  case ncclInProgress: return "NCCL operation in progress";
  default: return "unknown result code";
  }
}

API(const char *, GetLastError, (ncclComm_t comm)) { return t_last_error; }

API(void, ResetDebugInit, (void)) {}

/* ---- communicator life cycle ---- */

/* The physical (NVML) index of CUDA device `dev`: the dev-th entry of CUDA_VISIBLE_DEVICES
 * when that entry is a number, else dev itself. */
static int nvml_index(int dev) {
  const char *v = getenv("CUDA_VISIBLE_DEVICES");
  if (!v) return dev;
  for (int i = 0; *v; i++) {
    while (*v == ' ' || *v == ',') v++;
    char *end;
    long x = strtol(v, &end, 10);
    if (i == dev) return end != v && x >= 0 ? (int)x : dev;
    v = strchr(v, ',');
    if (!v) break;
  }
  return dev;
}

static struct ncclComm *comm_alloc(int nranks, int rank, const ncclConfig_t *cfg) {
  struct ncclComm *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->magic = ND_COMM_MAGIC;
  c->nranks = nranks;
  c->rank = rank;
  c->pid = getpid();
  cudaGetDevice(&c->dev);
  c->nvml_dev = nvml_index(c->dev);
  const char *node = getenv("NCCLDOUBLE_NODE");
  c->node = node && *node ? atoi(node) : 0;
  c->blocking = !(cfg && cfg->blocking == 0);
  atomic_init(&c->async_err, ncclInProgress);
  pthread_mutex_init(&c->exec_mu, NULL);
  pthread_mutex_init(&c->host_mu, NULL);
  return c;
}

static void comm_free(struct ncclComm *c) {
  nd_prof_comm_fini(c);
  nd_seg_leave(c);
  free(c->peers);
  pthread_mutex_destroy(&c->exec_mu);
  pthread_mutex_destroy(&c->host_mu);
  c->magic = 0;
  free(c);
}

static int nchannels(void) {
  const char *v = getenv("NCCLDOUBLE_NCHANNELS");
  int n = v && *v ? atoi(v) : 2;
  return n > 0 ? n : 1;
}

static struct ncclD_comm_view view_of(struct ncclComm *c) {
  struct ncclD_comm_view v = {c->nranks, c->rank, nchannels(), (uint64_t)(uintptr_t)c, c->hash, c->peers,
                              c->api, c->parent_ptr, c->split_count, c->color, c->key};
  return v;
}

static pthread_once_t g_banner_once = PTHREAD_ONCE_INIT;
static void banner(void) { ncclD_version_banner(version_code()); }

/* Joins the segment `name` as `rank` of `nranks`; sets async_err; logs the init. */
static ncclResult_t comm_join(struct ncclComm *c, const char *name) {
  snprintf(c->name, sizeof c->name, "%s", name);
  c->hash = nd_hash(name, strlen(name), 0);
  if (c->rank == 0) pthread_once(&g_banner_once, banner);
  int r = nd_seg_join(c, name, c->nranks, c->rank);
  if (r == ncclSuccess) {
    c->peers = calloc((size_t)c->nranks, sizeof *c->peers);
    if (!c->peers) r = ncclSystemError;
  }
  if (r != ncclSuccess) {
    warn(c->dev, r == ncclInvalidUsage ? "bootstrap: ranks disagree on nranks or rank"
                                             : "bootstrap: could not join the communicator");
    atomic_store(&c->async_err, r);
    return r;
  }
  for (int i = 0; i < c->nranks; i++)
    c->peers[i] = (struct ncclD_peer){i, c->seg->ranks[i].dev, c->seg->ranks[i].node};
  struct ncclD_comm_view v = view_of(c);
  ncclD_log_init(&v);
  nd_model_comm(c, &v);
  nd_prof_comm_init(c); /* nd_profiler.c: NCCL_PROFILER_PLUGIN, as NCCL loads it at init */
  atomic_store(&c->async_err, ncclSuccess);
  return ncclSuccess;
}

struct init_job { struct ncclComm *c; char name[ND_NAME_LEN]; };
static void *init_thread(void *arg) {
  struct init_job *j = arg;
  struct ncclComm *c = j->c;
  cudaSetDevice(c->dev);
  ncclResult_t r = comm_join(c, j->name);
  free(j);
  if (c->publish) { /* NCCL 2.28: a non-blocking split's *newcomm is set once the child is ready */
    if (r == ncclSuccess) __atomic_store_n(c->publish, c, __ATOMIC_RELEASE);
    atomic_store(&c->split_parent->async_err, r);
  }
  return NULL;
}

static int config_ok(const ncclConfig_t *cfg) {
  return !cfg || (cfg->magic == CONFIG_MAGIC && cfg->size >= offsetof(ncclConfig_t, cgaClusterSize));
}

/* An init inside a group (NCCL 2.28 init.cc ncclCommInitRankDev: *newcomm is set, then
 * ncclAsyncLaunch queues the init job while ncclGroupDepth > 0, group.cc): returns ncclSuccess
 * with the communicator in *out, not yet joined; its async error is ncclSuccess and its count,
 * rank and device read 0 (NCCL's zeroed communicator) until the outermost ncclGroupEnd runs
 * the queued inits (group_run_inits). */
static ncclResult_t init_defer(ncclComm_t *out, struct ncclComm *c, const char *name) {
  if (t_ninits == t_capinits) {
    int nc = t_capinits ? t_capinits * 2 : 8;
    struct pending_init *n = realloc(t_inits, (size_t)nc * sizeof *n);
    if (!n) { comm_free(c); return ncclSystemError; }
    t_inits = n;
    t_capinits = nc;
  }
  c->group_pending = 1;
  atomic_store(&c->async_err, ncclSuccess);
  t_inits[t_ninits].c = c;
  snprintf(t_inits[t_ninits].name, ND_NAME_LEN, "%s", name);
  t_ninits++;
  *out = c;
  return ncclSuccess;
}

/* The outermost ncclGroupEnd: runs the inits the group queued, concurrently (one thread each,
 * as NCCL's groupLaunch runs each async job on its own thread), on each communicator's device.
 * Blocking: waits for all and returns the first error. Non-blocking (NCCL 2.28: a group of
 * non-blocking communicators): their async error is ncclInProgress until each is joined, and
 * the call returns ncclInProgress. */
static ncclResult_t group_run_inits(void) {
  int n = t_ninits;
  t_ninits = 0;
  if (n == 0) return ncclSuccess;
  ncclResult_t r = ncclSuccess;
  int nonblocking = 0;
  pthread_t *th = calloc((size_t)n, sizeof *th);
  char *started = calloc((size_t)n, 1);
  if (!th || !started) { r = ncclSystemError; goto fail; }
  for (int i = 0; i < n; i++) {
    struct ncclComm *c = t_inits[i].c;
    struct init_job *j = malloc(sizeof *j);
    if (!j) { r = ncclSystemError; atomic_store(&c->async_err, r); c->group_pending = 0; continue; }
    j->c = c;
    snprintf(j->name, sizeof j->name, "%s", t_inits[i].name);
    if (!c->blocking) atomic_store(&c->async_err, ncclInProgress);
    c->group_pending = 0;
    if (pthread_create(&th[i], NULL, init_thread, j) != 0) {
      free(j);
      r = ncclSystemError;
      atomic_store(&c->async_err, r);
      continue;
    }
    started[i] = 1;
    if (!c->blocking) { c->init_thread = th[i]; c->has_init_thread = 1; nonblocking = 1; }
  }
  for (int i = 0; i < n; i++) {
    struct ncclComm *c = t_inits[i].c;
    if (!started[i] || !c->blocking) continue;
    pthread_join(th[i], NULL);
    int e = atomic_load(&c->async_err);
    if (e != ncclSuccess && r == ncclSuccess) r = (ncclResult_t)e;
  }
  if (r == ncclSuccess && nonblocking) r = ncclInProgress;
fail:
  free(th);
  free(started);
  return r;
}

/* Shared by every init flavour: blocking joins now; non-blocking returns ncclInProgress and
 * joins on a thread. */
/* How a communicator is made, for its init lines (NCCL's funcName; a split's parent, splitCount,
 * color and key). */
struct init_how { const char *api; int split_count, color, key; };

static ncclResult_t init_common(ncclComm_t *out, int nranks, int rank, const char *name,
                                const ncclConfig_t *cfg, struct ncclComm *parent, const struct init_how *how) {
  if (!out) return ncclInvalidArgument;
  *out = NULL;
  if (nranks < 1 || nranks > ND_MAX_RANKS || rank < 0 || rank >= nranks || !config_ok(cfg)) {
    warn(-1, "Invalid rank, nranks or config");
    return ncclInvalidArgument;
  }
  struct ncclComm *c = comm_alloc(nranks, rank, cfg);
  if (!c) return ncclSystemError;
  c->api = how->api;
  if (parent) {
    c->parent_ptr = (uint64_t)(uintptr_t)parent;
    c->split_count = how->split_count; c->color = how->color; c->key = how->key;
  }
  if (parent && !cfg) c->blocking = parent->blocking; /* NCCL: no config, the parent's */
  if (!parent && t_group_depth > 0) return init_defer(out, c, name);
  if (!c->blocking && parent) { /* split / shrink: returns ncclSuccess, child published later */
    c->split_parent = parent;
    c->publish = out;
    atomic_store(&parent->async_err, ncclInProgress);
  }
  if (!c->blocking) {
    struct init_job *j = malloc(sizeof *j);
    if (!j) { comm_free(c); return ncclSystemError; }
    j->c = c;
    snprintf(j->name, sizeof j->name, "%s", name);
    if (pthread_create(&c->init_thread, NULL, init_thread, j) != 0) {
      free(j);
      if (parent) atomic_store(&parent->async_err, ncclSuccess);
      comm_free(c);
      return ncclSystemError;
    }
    c->has_init_thread = 1;
    if (parent) return ncclSuccess;
    *out = c;
    return ncclInProgress;
  }
  ncclResult_t r = comm_join(c, name);
  if (r != ncclSuccess) { comm_free(c); return r; }
  *out = c;
  return ncclSuccess;
}

static const char *id_name(const ncclUniqueId *id) {
  if (memcmp(id->internal, ND_ID_MAGIC, 8) != 0) return NULL;
  if (!memchr(id->internal + 8, 0, ND_NAME_LEN)) return NULL;
  return id->internal + 8;
}

API(ncclResult_t, CommInitRankConfig, (ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                       ncclConfig_t *config)) {
  ncclD_init_env();
  const char *name = id_name(&commId);
  if (!name) {
    if (comm) *comm = NULL;
    warn(-1, "Invalid unique id (not made by ncclGetUniqueId)");
    return ncclInvalidArgument;
  }
  struct init_how how = {config ? "ncclCommInitRankConfig" : "ncclCommInitRank", 0, 0, 0};
  return init_common(comm, nranks, rank, name, config, NULL, &how);
}

API(ncclResult_t, CommInitRank, (ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)) {
  return pncclCommInitRankConfig(comm, nranks, commId, rank, NULL);
}

API(ncclResult_t, CommInitRankScalable, (ncclComm_t *newcomm, int nranks, int myrank, int nId,
                                         ncclUniqueId *commIds, ncclConfig_t *config)) {
  if (nId < 1 || !commIds) return ncclInvalidArgument;
  return pncclCommInitRankConfig(newcomm, nranks, commIds[0], myrank, config);
}

ncclResult_t pncclGroupStart(void), pncclGroupEnd(void);

/* As NCCL 2.28's ncclCommInitAll (init.cc): a fresh unique id, then inside a group one
 * ncclCommInitRankDev per device on that device (the inits run together at ncclGroupEnd); the
 * caller's device is restored. */
API(ncclResult_t, CommInitAll, (ncclComm_t *comms, int ndev, const int *devlist)) {
  if (!comms || ndev < 1 || ndev > ND_MAX_RANKS) return ncclInvalidArgument;
  int ndevs = 0, old_dev = 0;
  if (cudaGetDevice(&old_dev) != cudaSuccess || cudaGetDeviceCount(&ndevs) != cudaSuccess)
    return ncclUnhandledCudaError;
  for (int i = 0; i < ndev; i++) {
    int d = devlist ? devlist[i] : i;
    if (d < 0 || d >= ndevs) return ncclInvalidArgument;
    for (int k = 0; k < i; k++)
      if (devlist && devlist[k] == d) return ncclInvalidUsage; /* NCCL: duplicate device */
  }
  ncclUniqueId id;
  pncclGetUniqueId(&id);
  struct init_how how = {"ncclCommInitAll", 0, 0, 0};
  pncclGroupStart();
  for (int i = 0; i < ndev; i++) {
    cudaSetDevice(devlist ? devlist[i] : i);
    init_common(&comms[i], ndev, i, id_name(&id), NULL, NULL, &how);
  }
  ncclResult_t r = pncclGroupEnd();
  cudaSetDevice(old_dev);
  return r;
}

/* Waits until every task enqueued on the communicator retired. */
static void drain(struct ncclComm *c) {
  while (atomic_load(&c->done) < atomic_load(&c->enq)) usleep(200);
}

static void join_init_thread(struct ncclComm *c) {
  if (c->has_init_thread) { pthread_join(c->init_thread, NULL); c->has_init_thread = 0; }
}

/* A non-blocking operation's launch is done by the time anyone asks (NCCL's launch thread
 * finished right after the call returned ncclInProgress). */
static void settle(struct ncclComm *c) {
  int e = ncclInProgress;
  if (atomic_exchange(&c->launch_pending, 0)) atomic_compare_exchange_strong(&c->async_err, &e, ncclSuccess);
}

/* Non-blocking: the operation just enqueued returns ncclInProgress, as NCCL 2.28's
 * ncclGroupEnd (implicit for a call outside a group) does for a non-blocking communicator. */
static ncclResult_t launched_nonblocking(struct ncclComm *c) {
  atomic_store(&c->async_err, ncclInProgress);
  atomic_store(&c->launch_pending, 1);
  return ncclInProgress;
}

/* NCCL's ncclCommEnsureReady. */
static int ready(struct ncclComm *c) {
  if (!comm_ok(c)) return ncclInvalidArgument;
  settle(c);
  int e = atomic_load(&c->async_err);
  if (e == ncclInProgress) {
    warn(c->dev, "Attempt to use communicator before the previous operation returned ncclSuccess");
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

API(ncclResult_t, CommSplit, (ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                              ncclConfig_t *config)) {
  if (!newcomm) return ncclInvalidArgument;
  *newcomm = NULL;
  int rr = ready(comm);
  if (rr != ncclSuccess) return rr;
  if ((color < 0 && color != -1 /* NCCL_SPLIT_NOCOLOR */) || !config_ok(config)) return ncclInvalidArgument;
  struct ncclComm *p = comm;
  pthread_mutex_lock(&p->host_mu);
  int seq = p->split_seq++;
  struct nd_rank_info *ri = p->seg->ranks;
  ri[p->rank].xchg[0] = color;
  ri[p->rank].xchg[1] = key;
  int n = 0, me = 0, ok = nd_barrier_wait(p, &p->seg->host_bar) == 0;
  if (ok && color >= 0) {
    for (int r = 0; r < p->nranks; r++) {
      if (ri[r].xchg[0] != color) continue;
      n++;
      if (ri[r].xchg[1] < key || (ri[r].xchg[1] == key && r < p->rank)) me++;
    }
  }
  ok = ok && nd_barrier_wait(p, &p->seg->host_bar) == 0; /* everyone read before reuse */
  pthread_mutex_unlock(&p->host_mu);
  if (!ok) return ncclRemoteError;
  if (color < 0) return ncclSuccess;
  char name[ND_NAME_LEN];
  int tag[2] = {seq, color};
  snprintf(name, sizeof name, "/ncclD.%016llx.s%016llx", (unsigned long long)nd_name_tag(),
           (unsigned long long)nd_hash(tag, sizeof tag, p->hash));
  int saved_dev;
  cudaGetDevice(&saved_dev);
  cudaSetDevice(p->dev);
  struct init_how how = {"ncclCommSplit", seq, color, key};
  ncclResult_t r = init_common(newcomm, n, me, name, config, p, &how);
  cudaSetDevice(saved_dev);
  return r;
}

API(ncclResult_t, CommShrink, (ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                               ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags)) {
  if (!newcomm) return ncclInvalidArgument;
  *newcomm = NULL;
  if (!comm_ok(comm) || excludeRanksCount < 0 || (excludeRanksCount && !excludeRanksList) ||
      (shrinkFlags & ~1) || !config_ok(config))
    return ncclInvalidArgument;
  struct ncclComm *p = comm;
  int n = 0, me = -1;
  for (int r = 0; r < p->nranks; r++) {
    int excluded = 0;
    for (int i = 0; i < excludeRanksCount; i++) excluded |= excludeRanksList[i] == r;
    if (excluded) continue;
    if (r == p->rank) me = n;
    n++;
  }
  if (me < 0 || n == 0) return ncclInvalidArgument; /* excluded ranks must not call shrink */
  if (shrinkFlags & 1 /* NCCL_SHRINK_ABORT */) {
    atomic_store(&p->aborted, 1);
    atomic_store(&p->seg->aborted, 1);
    drain(p);
  }
  pthread_mutex_lock(&p->host_mu);
  int seq = p->shrink_seq++;
  pthread_mutex_unlock(&p->host_mu);
  char name[ND_NAME_LEN];
  int tag[2] = {seq, -7};
  snprintf(name, sizeof name, "/ncclD.%016llx.k%016llx", (unsigned long long)nd_name_tag(),
           (unsigned long long)nd_hash(tag, sizeof tag, p->hash));
  int saved_dev;
  cudaGetDevice(&saved_dev);
  cudaSetDevice(p->dev);
  struct init_how how = {"ncclCommShrink", seq, 0, me}; /* a child of the parent, as a split's */
  ncclResult_t r = init_common(newcomm, n, me, name, config, p, &how);
  cudaSetDevice(saved_dev);
  return r;
}

API(ncclResult_t, CommFinalize, (ncclComm_t comm)) {
  if (!comm_ok(comm)) return ncclInvalidArgument;
  if (atomic_load(&comm->revoked)) return ncclInvalidUsage;
  join_init_thread(comm);
  drain(comm);
  atomic_store(&comm->finalized, 1);
  return comm->blocking ? ncclSuccess : ncclInProgress;
}

API(ncclResult_t, CommDestroy, (ncclComm_t comm)) {
  if (!comm) return ncclSuccess; /* NCCL: destroying NULL is a no-op */
  if (!comm_ok(comm)) return ncclInvalidArgument;
  join_init_thread(comm);
  drain(comm);
  comm_free(comm);
  return ncclSuccess;
}

API(ncclResult_t, CommAbort, (ncclComm_t comm)) {
  if (!comm) return ncclSuccess;
  if (!comm_ok(comm)) return ncclInvalidArgument;
  atomic_store(&comm->aborted, 1);
  join_init_thread(comm); /* a non-blocking init gives up on seeing aborted; comm->seg is its to set */
  if (comm->seg) atomic_store(&comm->seg->aborted, 1);
  drain(comm);
  comm_free(comm);
  return ncclSuccess;
}

API(ncclResult_t, CommRevoke, (ncclComm_t comm, int revokeFlags)) {
  if (!comm_ok(comm) || revokeFlags != 0) return ncclInvalidArgument;
  atomic_store(&comm->revoked, 1);
  atomic_store(&comm->async_err, ncclInProgress);
  if (comm->seg) atomic_store(&comm->seg->aborted, 1);
  drain(comm);
  atomic_store(&comm->async_err, ncclSuccess);
  return ncclSuccess;
}

API(ncclResult_t, CommGetAsyncError, (ncclComm_t comm, ncclResult_t *asyncError)) {
  if (!comm_ok(comm) || !asyncError) return ncclInvalidArgument;
  settle(comm);
  *asyncError = (ncclResult_t)atomic_load(&comm->async_err);
  return ncclSuccess;
}

API(ncclResult_t, CommCount, (const ncclComm_t comm, int *count)) {
  if (!comm_ok(comm) || !count) return ncclInvalidArgument;
  int rr = ready(comm); /* NCCL: ncclCommEnsureReady, a WARN while init is in progress */
  if (rr != ncclSuccess) return rr;
  *count = comm->group_pending ? 0 : comm->nranks;
  return ncclSuccess;
}

API(ncclResult_t, CommCuDevice, (const ncclComm_t comm, int *device)) {
  if (!comm_ok(comm) || !device) return ncclInvalidArgument;
  int rr = ready(comm); /* NCCL: ncclCommEnsureReady, a WARN while init is in progress */
  if (rr != ncclSuccess) return rr;
  *device = comm->group_pending ? 0 : comm->dev;
  return ncclSuccess;
}

API(ncclResult_t, CommUserRank, (const ncclComm_t comm, int *rank)) {
  if (!comm_ok(comm) || !rank) return ncclInvalidArgument;
  int rr = ready(comm); /* NCCL: ncclCommEnsureReady, a WARN while init is in progress */
  if (rr != ncclSuccess) return rr;
  *rank = comm->group_pending ? 0 : comm->rank;
  return ncclSuccess;
}

/* ---- registration, memory, user ops ---- */

struct nd_reg { void *buff; size_t size; };

API(ncclResult_t, CommRegister, (const ncclComm_t comm, void *buff, size_t size, void **handle)) {
  if (!comm_ok(comm) || !buff || !size || !handle) return ncclInvalidArgument;
  struct nd_reg *h = malloc(sizeof *h);
  if (!h) return ncclSystemError;
  *h = (struct nd_reg){buff, size};
  *handle = h;
  return ncclSuccess;
}

API(ncclResult_t, CommDeregister, (const ncclComm_t comm, void *handle)) {
  if (!comm_ok(comm) || !handle) return ncclInvalidArgument;
  free(handle);
  return ncclSuccess;
}

API(ncclResult_t, CommWindowRegister, (ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win,
                                       int winFlags)) {
  if (!comm_ok(comm) || !buff || !size || !win) return ncclInvalidArgument;
  void *h = nd_win_add(comm, buff, size, winFlags); /* nd_symmetric.c */
  if (!h) return ncclSystemError;
  *win = (ncclWindow_t)h;
  return ncclSuccess;
}

API(ncclResult_t, CommWindowDeregister, (ncclComm_t comm, ncclWindow_t win)) {
  if (!comm_ok(comm) || !win) return ncclInvalidArgument;
  return nd_win_remove(comm, (void *)win) == 0 ? ncclSuccess : ncclInvalidArgument;
}

API(ncclResult_t, MemAlloc, (void **ptr, size_t size)) {
  if (!ptr || !size) return ncclInvalidArgument;
  void *m = NULL;
  if (posix_memalign(&m, 4096, size) != 0) return ncclSystemError;
  *ptr = m;
  return ncclSuccess;
}

API(ncclResult_t, MemFree, (void *ptr)) {
  free(ptr);
  return ncclSuccess;
}

API(ncclResult_t, RedOpCreatePreMulSum, (ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                         ncclScalarResidence_t residence, ncclComm_t comm)) {
  if (!op || !scalar || !comm_ok(comm) || (unsigned)datatype >= ncclNumTypes ||
      (residence != ncclScalarDevice && residence != ncclScalarHostImmediate))
    return ncclInvalidArgument;
  pthread_mutex_lock(&comm->host_mu);
  int i = 0;
  while (i < ND_MAX_USER_OPS && comm->user_ops[i].used) i++;
  if (i == ND_MAX_USER_OPS) { pthread_mutex_unlock(&comm->host_mu); return ncclInternalError; }
  struct nd_user_op *u = &comm->user_ops[i];
  u->used = 1;
  u->dt = datatype;
  u->residence = residence;
  u->ptr = scalar;
  memcpy(u->value, scalar, ncclscope_datatype_size(datatype));
  pthread_mutex_unlock(&comm->host_mu);
  *op = (ncclRedOp_t)(ncclNumOps + i);
  return ncclSuccess;
}

API(ncclResult_t, RedOpDestroy, (ncclRedOp_t op, ncclComm_t comm)) {
  if (!comm_ok(comm)) return ncclInvalidArgument;
  int i = (int)op - ncclNumOps;
  if (i < 0 || i >= ND_MAX_USER_OPS || !comm->user_ops[i].used) return ncclInvalidArgument;
  comm->user_ops[i].used = 0;
  return ncclSuccess;
}

/* ---- operations and groups ---- */

static int stream_capturing(cudaStream_t s) {
  enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  return cudaStreamIsCapturing(s, &st) == cudaSuccess && st != cudaStreamCaptureStatusNone;
}

/* The device kernel a real NCCL (2.19 on) launches for a task whose first op is `k`; the
 * reduction and type parts of the name are fixed (the double has one kernel per operation). */
static const char *kernel_name(enum nd_kind k) {
  switch (k) {
  case ND_ALLREDUCE: return "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  case ND_BROADCAST: return "ncclDevKernel_Broadcast_RING_LL";
  case ND_REDUCE: return "ncclDevKernel_Reduce_Sum_f32_RING_LL";
  case ND_ALLGATHER: return "ncclDevKernel_AllGather_RING_LL";
  case ND_REDUCESCATTER: return "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL";
  default: return "ncclDevKernel_SendRecv";
  }
}

/* Enqueues ops[0..n) as one task (one kernel) on `stream`. */
static ncclResult_t launch(struct nd_op *ops, int n, cudaStream_t stream) {
  struct nd_task *t = malloc(sizeof *t + (size_t)n * sizeof *ops);
  if (!t) return ncclSystemError;
  t->nops = n;
  memcpy(t->ops, ops, (size_t)n * sizeof *ops);
  t->counted = !stream_capturing(stream);
  t->captured = !t->counted;
  if (t->counted)
    for (int i = 0; i < n; i++) atomic_fetch_add(&ops[i].comm->enq, 1);
  nd_prof_launch_begin(t, stream); /* nd_profiler.c: KernelLaunch event */
  const char *kname = n == 1 ? nd_sym_kernel(&ops[0]) : NULL; /* symmetric-memory kernel, nd_symmetric.c */
  if (cudaDoubleEnqueueKernel(stream, kname ? kname : kernel_name(ops[0].kind), nd_task_run, t, nd_task_free) != cudaSuccess) {
    if (t->counted)
      for (int i = 0; i < n; i++) atomic_fetch_sub(&ops[i].comm->enq, 1);
    nd_prof_task_free(t);
    free(t);
    return ncclUnhandledCudaError;
  }
  nd_prof_launch_end(t); /* the plan's Group/Coll/P2p events, after the launch as NCCL */
  return ncclSuccess;
}

/* Makes `to` wait for the work enqueued so far on `from`. */
static void stream_join(cudaStream_t to, cudaStream_t from) {
  cudaEvent_t ev;
  if (cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) != cudaSuccess) return;
  cudaEventRecord(ev, from);
  cudaStreamWaitEvent(to, ev, 0);
  cudaEventDestroy(ev);
}

static const char *const k_kind_names[] = {"AllReduce", "Broadcast", "Reduce", "AllGather",
  "ReduceScatter", "AlltoAll", "Gather", "Scatter", "Send", "Recv"};

/* NCCL's argument checks for an operation; ncclSuccess when it may be enqueued. */
static ncclResult_t check_op(enum nd_kind kind, const void *sbuf, void *rbuf, size_t count,
                             ncclDataType_t dt, int redop, int root, ncclComm_t comm) {
  if (!comm) { /* text, file and line as NCCL 2.28.9 prints them */
    char msg[64];
    snprintf(msg, sizeof msg, "%s : comm argument is NULL", k_kind_names[kind]);
    warn_at("misc/argcheck.cc", 30, -1, msg);
    return ncclInvalidArgument;
  }
  int rr = ready(comm);
  if (rr != ncclSuccess) return rr;
  if (atomic_load(&comm->revoked) || atomic_load(&comm->aborted)) return ncclInvalidUsage;
  if ((unsigned)dt >= ncclNumTypes) { warn(comm->dev, "Invalid datatype"); return ncclInvalidArgument; }
  int reduces = kind == ND_ALLREDUCE || kind == ND_REDUCE || kind == ND_REDUCESCATTER;
  if (reduces && (redop < 0 || (redop >= ncclNumOps && (redop - ncclNumOps >= ND_MAX_USER_OPS ||
                                                         !comm->user_ops[redop - ncclNumOps].used)))) {
    warn(comm->dev, "Invalid reduction operation");
    return ncclInvalidArgument;
  }
  int rooted = kind == ND_BROADCAST || kind == ND_REDUCE || kind == ND_GATHER || kind == ND_SCATTER ||
               kind == ND_SEND || kind == ND_RECV;
  if (rooted && (root < 0 || root >= comm->nranks)) {
    warn(comm->dev, "Invalid root/peer");
    return ncclInvalidArgument;
  }
  if (count) {
    int me = comm->rank;
    int needs_s = kind != ND_RECV && !(kind == ND_BROADCAST && me != root) && !(kind == ND_SCATTER && me != root);
    int needs_r = kind != ND_SEND && !(kind == ND_REDUCE && me != root) && !(kind == ND_GATHER && me != root);
    if ((needs_s && !sbuf) || (needs_r && !rbuf)) {
      warn(comm->dev, "Invalid buffer pointer");
      return ncclInvalidArgument;
    }
  }
  return ncclSuccess;
}

static ncclResult_t submit(enum nd_kind kind, const void *sbuf, void *rbuf, size_t count,
                           ncclDataType_t dt, int redop, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  ncclResult_t rc = check_op(kind, sbuf, rbuf, count, dt, redop, root, comm);
  if (rc != ncclSuccess) {
    /* as NCCL: an error inside a group also fails the group's ncclGroupEnd, which drops it */
    if (t_group_depth > 0 && t_group_err == ncclSuccess) t_group_err = rc;
    return rc;
  }
  int reduces = kind == ND_ALLREDUCE || kind == ND_REDUCE || kind == ND_REDUCESCATTER;
  uint64_t opcount = atomic_fetch_add_explicit(&comm->opcount, 1, memory_order_relaxed);
  ncclD_info(NCCLD_COLL, comm->dev,
             "%s: opCount %lx sendbuff %p recvbuff %p count %zu datatype %d op %d root %d comm %p [nranks=%d] stream %p",
             k_kind_names[kind], (unsigned long)opcount, sbuf, (void *)rbuf, count, (int)dt,
             reduces ? redop : 0, root, (void *)comm, comm->nranks, (void *)stream);
  if (!atomic_exchange(&comm->connected, 1)) {
    struct ncclD_comm_view v = view_of(comm);
    ncclD_log_connect(&v);
  }
  struct nd_op op = {kind, sbuf, rbuf, count, (int)dt, root, redop, comm, stream, NULL};
  nd_prof_call(&op, t_group_depth, stream_capturing(stream)); /* the API events (nd_profiler.c) */
  if (t_group_depth == 0) {
    ncclResult_t lr = launch(&op, 1, stream);
    nd_prof_group_end_done();
    return lr == ncclSuccess && !comm->blocking ? launched_nonblocking(comm) : lr;
  }
  if (t_nops == t_capops) {
    int nc = t_capops ? t_capops * 2 : 16;
    struct nd_op *n = realloc(t_ops, (size_t)nc * sizeof *n);
    if (!n) { t_group_err = ncclSystemError; return ncclSystemError; }
    t_ops = n;
    t_capops = nc;
  }
  t_ops[t_nops++] = op;
  return ncclSuccess;
}

API(ncclResult_t, GroupStart, (void)) {
  if (t_group_depth == 0) { t_nops = 0; t_group_err = ncclSuccess; }
  t_group_depth++;
  return ncclSuccess;
}

static ncclResult_t group_end(void);
API(ncclResult_t, GroupEnd, (void)) {
  if (t_group_depth == 0) { /* file and line as NCCL 2.28.9 prints them */
    warn_at("group.cc", 657, -1, "ncclGroupEnd: not in a group call.");
    return ncclInvalidUsage;
  }
  nd_prof_group_end_begin(); /* ncclGroupEndInternal's profiler calls around the launch */
  ncclResult_t r = group_end();
  nd_prof_group_end_done();
  return r;
}

static ncclResult_t group_end(void) {
  if (--t_group_depth > 0) return ncclSuccess;
  ncclResult_t r = group_run_inits();
  if (r != ncclSuccess) { t_nops = 0; return r; }
  r = t_group_err;
  int n = t_nops;
  t_nops = 0;
  if (r != ncclSuccess || n == 0) return r;
  /* Streams of the group, in order of first use. Streams used by one communicator object (one
   * rank) are merged into one class: its ops run as one task on the class's first stream,
   * which waits for the other streams' earlier work, and they wait for the task (as NCCL
   * joins the streams of a group). Different ranks of one process (ncclCommInitAll) keep
   * separate tasks on their own streams, so they run concurrently. */
  cudaStream_t *st = malloc((size_t)n * sizeof *st);
  int *cls = malloc((size_t)n * sizeof *cls), *opst = malloc((size_t)n * sizeof *opst);
  struct nd_op *batch = malloc((size_t)n * sizeof *batch);
  if (!st || !cls || !opst || !batch) { r = ncclSystemError; goto out; }
  int ns = 0;
  for (int i = 0; i < n; i++) {
    int k = 0;
    while (k < ns && st[k] != t_ops[i].stream) k++;
    if (k == ns) { st[ns] = t_ops[i].stream; cls[ns] = ns; ns++; }
    opst[i] = k;
  }
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (t_ops[j].comm == t_ops[i].comm && cls[opst[j]] != cls[opst[i]]) {
        int from = cls[opst[j]], to = cls[opst[i]];
        if (from < to) { int x = from; from = to; to = x; }
        for (int k = 0; k < ns; k++) if (cls[k] == from) cls[k] = to;
      }
  for (int c = 0; c < ns && r == ncclSuccess; c++) {
    if (cls[c] != c) continue;
    int m = 0;
    for (int i = 0; i < n; i++) if (cls[opst[i]] == c) batch[m++] = t_ops[i];
    for (int k = c + 1; k < ns; k++) if (cls[k] == c) stream_join(st[c], st[k]);
    r = launch(batch, m, st[c]);
    for (int k = c + 1; k < ns; k++) if (cls[k] == c) stream_join(st[k], st[c]);
  }
  if (r == ncclSuccess) { /* a group of non-blocking communicators returns ncclInProgress */
    int nb = 0;
    for (int i = 0; i < n; i++)
      if (!t_ops[i].comm->blocking) { launched_nonblocking(t_ops[i].comm); nb = 1; }
    if (nb) r = ncclInProgress;
  }
out:
  free(st);
  free(cls);
  free(opst);
  free(batch);
  return r;
}

API(ncclResult_t, GroupSimulateEnd, (ncclSimInfo_t *simInfo)) {
  if (!simInfo || simInfo->magic != SIMINFO_MAGIC) return ncclInvalidArgument;
  if (t_group_depth == 0) return ncclInvalidUsage;
  nd_prof_group_end_begin();
  nd_prof_group_end_done(); /* nothing launched between */
  if (--t_group_depth > 0) return ncclSuccess;
  double us = 0;
  for (int i = 0; i < t_nops; i++) us += (double)nd_op_model_ns(&t_ops[i]) / 1e3;
  simInfo->estimatedTime = (float)us;
  t_nops = 0; /* simulated, not launched */
  return ncclSuccess;
}

API(ncclResult_t, AllReduce, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                              ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)) {
  return submit(ND_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0, comm, stream);
}

API(ncclResult_t, Broadcast, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                              int root, ncclComm_t comm, cudaStream_t stream)) {
  return submit(ND_BROADCAST, sendbuff, recvbuff, count, datatype, 0, root, comm, stream);
}

API(ncclResult_t, Bcast, (void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                          cudaStream_t stream)) {
  return submit(ND_BROADCAST, buff, buff, count, datatype, 0, root, comm, stream);
}

API(ncclResult_t, Reduce, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)) {
  return submit(ND_REDUCE, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}

API(ncclResult_t, AllGather, (const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                              ncclComm_t comm, cudaStream_t stream)) {
  return submit(ND_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, 0, 0, comm, stream);
}

API(ncclResult_t, ReduceScatter, (const void *sendbuff, void *recvbuff, size_t recvcount,
                                  ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)) {
  return submit(ND_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype, op, 0, comm, stream);
}

API(ncclResult_t, AlltoAll, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                             ncclComm_t comm, cudaStream_t stream)) {
  return submit(ND_ALLTOALL, sendbuff, recvbuff, count, datatype, 0, 0, comm, stream);
}

API(ncclResult_t, Gather, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                           int root, ncclComm_t comm, cudaStream_t stream)) {
  return submit(ND_GATHER, sendbuff, recvbuff, count, datatype, 0, root, comm, stream);
}

API(ncclResult_t, Scatter, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                            int root, ncclComm_t comm, cudaStream_t stream)) {
  return submit(ND_SCATTER, sendbuff, recvbuff, count, datatype, 0, root, comm, stream);
}

API(ncclResult_t, Send, (const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                         ncclComm_t comm, cudaStream_t stream)) {
  return submit(ND_SEND, sendbuff, NULL, count, datatype, 0, peer, comm, stream);
}

API(ncclResult_t, Recv, (void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                         ncclComm_t comm, cudaStream_t stream)) {
  return submit(ND_RECV, NULL, recvbuff, count, datatype, 0, peer, comm, stream);
}
