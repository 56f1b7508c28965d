/* nd_profiler.c — the NCCL double loads a profiler plugin and emits its events as NCCL 2.28.9
 * does (docs/PROFILER.md, docs/DOUBLES.md "Profiler events"). NCCL's source at v2.28.9-1 is
 * the reference: src/plugin/profiler.cc (wrappers), src/enqueue.cc (collTaskAppend,
 * p2pTaskAppend, taskAppend, hostStreamPlanTask, ncclLaunchPrepare/ncclLaunchKernel),
 * src/group.cc (ncclGroupEndInternal), src/transport/profiler.cc (profilerProxyProgress),
 * src/plugin/profiler/profiler_v4.cc (the v4 adapter).
 *
 * Contract:
 * - Loading: at a communicator's init, NCCL_PROFILER_PLUGIN names the library ("none" = no
 *   plugin; unset = libnccl-profiler.so; a bare name X that is not a path or lib*.so also tries
 *   libnccl-profiler-X.so); dlopen(RTLD_NOW | RTLD_LOCAL); ncclProfiler_v5, then _v4 (v1-v3: not
 *   offered by the double). Reference-counted per communicator, as NCCL. init(context, commHash,
 *   &mask, name, nNodes, nranks, rank, logger); the mask is process-wide (last init wins, NCCL's
 *   ncclProfilerEventMask); a failing init leaves that communicator without a plugin.
 * - At each valid operation call (nd_prof_call, NCCL's ncclEnqueueCheck + taskAppend + the
 *   implicit ncclGroupEndInternal), on the calling thread: GroupApi start (when no group event
 *   is open on this thread; groupDepth = NCCL's ncclGroupDepth), record GroupStartApiStop, then
 *   CollApi start/stop (collectives) or one P2pApi start/stop per task NCCL appends (Send,
 *   Recv; AlltoAll, Gather and Scatter become Send/Recv tasks, func "Send"/"Recv"); at the
 *   outermost group end record GroupEndApiStart, then after the launch stop GroupApi
 *   (nd_prof_group_end_begin/_done). Collectives of 1-rank communicators and of count 0
 *   create no task in NCCL: no events at all. The op keeps the mask of the call.
 * - At launch (nd_prof_launch_begin/_end, host thread): KernelLaunch start/stop around the
 *   kernel enqueue; then, for a task not captured, the plan's events (hostStreamPlanTask):
 *   Group start, Coll/P2p start per task (Coll: parent = its CollApi event, parentGroup = the
 *   Group event, seqNumber per communicator and function; AllGather and Broadcast with count
 *   in bytes and datatype ncclInt8 as collTaskAppend rewrites them), Coll/P2p stop, Group stop.
 *   A captured task (a persistent plan) with proxy ops (KernelCh in its mask) emits those events
 *   at each replay from the stream before the kernel runs (nd_prof_task_begin, NCCL's host
 *   callback), seqNumber incremented each time; without proxy ops once, at capture, and the
 *   seqNumber not incremented (NCCL's RAS rule).
 * - On the stream worker (the device and NCCL's proxy thread): per operation, for each channel
 *   of its task, KernelCh start (parent = the Coll/P2p event, pTimer = the operation's device
 *   start: the kernel item's start, or the previous operation's end) before the operation runs;
 *   after it, record KernelChStop (pTimer = its device end: cudaDoubleItemEndNs(), the time the
 *   model declared, or the worker's clock when none was) and stop. The worker waits for the
 *   host to have emitted the task events (NCCL's proxy learns of the ops only then).
 * - NET proxy operations (nd_proxy.c: per task, channel, peer and direction, with NCCL's nSteps
 *   and chunkSize), computed at the call whatever the mask (a captured plan that has them is
 *   pushed by the host callback at each replay, as NCCL's plan->hasProxyOps). On the worker, when
 *   the mask asks (ProxyOp | ProxyStep | NetPlugin): ProxyOp start (parent = the Coll/P2p event,
 *   pid, channel, peer, nSteps, chunkSize, isSend) and ProxyOpInProgress_v4 before the operation
 *   runs; after it, each step's ProxyStep start, states (send: SendGPUWait, SendPeerWait_v4,
 *   SendWait; recv: RecvWait, then RecvFlushWait, RecvGPUWait) and stop (ProxyStep | NetPlugin
 *   only), each when the device clock reaches it (step k of n at start + (end - start) k / n; the
 *   worker sleeps until then), then ProxyOp stop (src/plugin/profiler.cc
 *   ncclProfilerStartProxyOpEvent ... RecordProxyStepEventState; src/transport/net.cc
 *   sendProxyProgress, recvProxyProgress). Send/Recv of a task progress together.
 * - v4 plugins get what NCCL's v4 adapter forwards: no GroupApi/CollApi/P2pApi/KernelLaunch
 *   events or API states; Coll/P2p parent = the Group event; proxy events as v5.
 * - Algorithm/protocol (nd_prof_choice): NCCL_ALGO / NCCL_PROTO when set (first name of the
 *   list), else AllReduce TREE below 64 KiB and RING above, others RING; LL up to 64 KiB,
 *   LL128 up to 4 MiB, SIMPLE above; NCCL's strings (collectives.cc ncclAlgoToString,
 *   ncclProtoToString). Channels NCCLDOUBLE_NCHANNELS (default 2, at most MAXCHANNELS = 64).
 *   Plausible, not NCCL's tuner.
 * Plugin calls are made under one process lock (events of one process are serialised). */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../include/cuda_double.h"
#include "nccl_profiler/profiler.h"
#include "nd_internal.h"

#define NCOMMS 64
#define NFUNCS 10 /* enum nd_kind: per-function sequence numbers */
#define MAXCH 64  /* NCCL's MAXCHANNELS */
struct pcomm {
  struct ncclComm *comm;
  void *ctx;
  uint64_t seq[NFUNCS];
  int nnodes;
  unsigned char *net; /* nranks entries: 1 where this rank reaches the peer over NET (proxy hops) */
};

/* One NET proxy operation of a task (nd_proxy.c) and its events on the worker */
struct nd_prof_px {
  struct nd_proxy_op op;
  void *h;           /* its ProxyOp event */
  void *step;        /* the ProxyStep event in progress */
  int k, phase;      /* next step; 0: its start is due, 1: its end is due */
  size_t trans;      /* NCCL's sub->transSize: the last step's size so far */
};

/* One task NCCL appends for an operation: the collective itself, or a Send/Recv. */
struct nd_prof_sub {
  enum nd_kind kind; /* ND_SEND / ND_RECV for point-to-point tasks, else the collective */
  int peer;
  size_t count;
  void *buff;
  void *api;         /* its CollApi / P2pApi event */
  void *task;        /* its Coll / P2p event (parent of KernelCh) */
  void *kch[MAXCH];
  int npx;
  struct nd_prof_px *px; /* its NET proxy operations (NCCL computes them at plan time) */
};
struct nd_prof_op {
  int mask;          /* the activation mask at the call (NCCL: task->eActivationMask) */
  int nch;           /* channels of its kernel */
  int rank;          /* its communicator rank (the proxy events' rank) */
  void *ctx;         /* the communicator's plugin context */
  void *group_api;   /* the GroupApi event open at the call */
  uint64_t t_start;  /* device start of its kernel work (worker side) */
  int steps_done;    /* the proxy steps of this run were emitted (nd_prof_p2p_steps) */
  int nsub;
  struct nd_prof_sub sub[];
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void *lib;
static int refs, tried_and_failed;
static const struct nccl_profiler_v5 *p5;
static const struct nccl_profiler_v4 *p4;
static int mask;
static struct pcomm comms[NCOMMS];
static pid_t g_pid; /* NCCL's proxyOp.pid: the process that loaded the plugin */
static int nchannels(void);

/* NCCL's ncclProfilerApiState: per thread */
enum { API_RESET, API_STARTED, API_STOPPED };
static _Thread_local struct { int depth, state; void *group; } api;
static _Thread_local uint64_t t_cursor; /* device time the next operation of the task starts at */

/* NCCL hands the plugin its ncclDebugLog: WARN and INFO lines go to NCCL's debug log */
static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  enum { LOG_WARN = 2, LOG_INFO = 3 }; /* ncclDebugLogLevel */
  if (level != LOG_WARN && level != LOG_INFO) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (level == LOG_WARN) ncclD_warn(file ? file : "", line, -1, "%s", msg);
  else ncclD_info((unsigned)flags, -1, "%s", msg);
}

static void *open_named(const char *name) {
  char buf[512];
  if (!name || !*name) name = "libnccl-profiler.so";
  void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (h) return h;
  size_t n = strlen(name);
  int is_lib = n > 3 && !strncmp(name, "lib", 3) && !strcmp(name + n - 3, ".so");
  if (strchr(name, '/') || is_lib) return NULL;
  snprintf(buf, sizeof buf, "libnccl-profiler-%s.so", name);
  return dlopen(buf, RTLD_NOW | RTLD_LOCAL);
}

/* under mu */
static int load(void) {
  if (lib) { refs++; return 1; }
  if (tried_and_failed) return 0;
  ncclD_init_env();
  const char *name = getenv("NCCL_PROFILER_PLUGIN");
  if (name && !strcasecmp(name, "none")) { tried_and_failed = 1; return 0; }
  void *h = open_named(name);
  if (!h) { tried_and_failed = 1; return 0; }
  p5 = dlsym(h, "ncclProfiler_v5");
  p4 = p5 ? NULL : dlsym(h, "ncclProfiler_v4");
  if (!p5 && !p4) { dlclose(h); tried_and_failed = 1; return 0; }
  lib = h;
  refs = 1;
  g_pid = getpid();
  ncclD_info(NCCLD_INIT, -1, "Successfully loaded external profiler plugin %s", name ? name : "libnccl-profiler.so");
  return 1;
}
static void unload(void) {
  if (--refs > 0) return;
  dlclose(lib);
  lib = NULL;
  p5 = NULL;
  p4 = NULL;
  mask = 0;
}

void nd_prof_comm_init(struct ncclComm *c) {
  pthread_mutex_lock(&mu);
  if (!load()) goto out;
  struct pcomm *slot = NULL;
  for (int i = 0; i < NCOMMS && !slot; i++)
    if (!comms[i].comm) slot = &comms[i];
  int nnodes = 1;
  for (int i = 0; c->peers && i < c->nranks; i++)
    if (c->peers[i].node + 1 > nnodes) nnodes = c->peers[i].node + 1;
  void *ctx = NULL;
  int m = 0, rc = slot ? (p5 ? p5->init(&ctx, c->hash, &m, NULL, nnodes, c->nranks, c->rank, logger)
                              : p4->init(&ctx, &m, NULL, c->hash, nnodes, c->nranks, c->rank, logger))
                       : -1;
  if (rc != 0) { unload(); goto out; }
  mask = m;
  *slot = (struct pcomm){ .comm = c, .ctx = ctx, .nnodes = nnodes };
  slot->net = calloc((size_t)c->nranks, 1);
  if (slot->net && c->peers) {
    struct ncclD_comm_view v = {.nranks = c->nranks, .rank = c->rank, .nchannels = nchannels(),
                                .comm_ptr = (uint64_t)(uintptr_t)c, .comm_hash = c->hash, .peers = c->peers};
    for (int i = 0; i < c->nranks; i++) slot->net[i] = (unsigned char)ncclD_hop_is_net(&v, c->rank, i);
  }
out:
  pthread_mutex_unlock(&mu);
}

void nd_prof_comm_fini(struct ncclComm *c) {
  pthread_mutex_lock(&mu);
  for (int i = 0; i < NCOMMS; i++) {
    if (comms[i].comm != c) continue;
    if (p5) p5->finalize(comms[i].ctx);
    else if (p4) p4->finalize(comms[i].ctx);
    free(comms[i].net);
    comms[i] = (struct pcomm){0};
    unload();
  }
  pthread_mutex_unlock(&mu);
}

/* under mu */
static struct pcomm *pcomm_of(const struct ncclComm *c) {
  for (int i = 0; i < NCOMMS; i++)
    if (comms[i].comm == c) return &comms[i];
  return NULL;
}

/* ---- plugin calls, as NCCL's v5 interface or its v4 adapter makes them (under mu) ---- */

/* startEvent; *h is left as it was when the v4 adapter drops the event type */
static void ev_start(void *ctx, void **h, struct nccl_prof_descr_v5 *d) {
  if (p5) { p5->start(ctx, h, d); return; }
  if (!p4) return;
  struct nccl_prof_descr_v4 d4;
  memset(&d4, 0, sizeof d4);
  d4.type = (uint8_t)d->type;
  d4.parent = d->parent;
  d4.rank = d->rank;
  switch (d->type) {
  case NCCL_PROFILE_GROUP: break;
  case NCCL_PROFILE_COLL: d4.u.coll = d->u.coll; d4.u.coll.parent_group = NULL; d4.parent = d->u.coll.parent_group; break;
  case NCCL_PROFILE_P2P: d4.u.p2p = d->u.p2p; d4.u.p2p.parent_group = NULL; d4.parent = d->u.p2p.parent_group; break;
  case NCCL_PROFILE_PROXY_OP: d4.u.proxy_op = d->u.proxy_op; break;
  case NCCL_PROFILE_PROXY_STEP: d4.u.proxy_step = d->u.proxy_step; break;
  case NCCL_PROFILE_KERNEL_CH: d4.u.kernel_ch = d->u.kernel_ch; break;
  default: return;
  }
  p4->start(ctx, h, &d4);
}
static void ev_stop(void *h) {
  if (!h) return;
  if (p5) p5->stop(h);
  else if (p4) p4->stop(h);
}
static void ev_record(void *h, int state, union nccl_prof_state_args *a) {
  if (!h) return;
  if (p5) p5->record(h, state, a);
  else if (p4 && state != NCCL_PROFILER_GROUP_START_API_STOP && state != NCCL_PROFILER_GROUP_END_API_START)
    p4->record(h, state, a);
}

/* ---- names ---- */

static const char *const k_funcs[NFUNCS] = {"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                            "AlltoAll", "Gather", "Scatter", "Send", "Recv"};
/* ncclDatatypeToString (collectives.cc): ncclUint8 is not listed there, so it is "Unknown" */
static const char *dt_name(int dt) {
  static const char *const n[] = {"ncclInt8", "Unknown", "ncclInt32", "ncclUint32", "ncclInt64", "ncclUint64",
                                  "ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3",
                                  "ncclFloat8e5m2"};
  return dt >= 0 && dt < (int)(sizeof n / sizeof *n) ? n[dt] : "Unknown";
}
static int nchannels(void) {
  const char *v = getenv("NCCLDOUBLE_NCHANNELS");
  int n = v && *v ? atoi(v) : 2;
  return n > 0 ? (n > MAXCH ? MAXCH : n) : 1;
}
/* The entry of `names` (NCCL_ALGO / NCCL_PROTO spelling) that the variable's first item names:
 * its index, or -1. */
static int forced(const char *var, const char *const *names) {
  const char *v = getenv(var);
  if (!v || !*v || *v == '^') return -1;
  for (int i = 0; names[i]; i++) {
    size_t n = strlen(names[i]);
    if (!strncasecmp(v, names[i], n) && (v[n] == 0 || v[n] == ',')) return i;
  }
  return -1;
}

void nd_prof_choice(int kind, size_t bytes, const char **algo, const char **proto) {
  static const char *const algo_env[] = {"Tree", "Ring", "CollnetDirect", "CollnetChain", "NVLSTree", "NVLS", "PAT", NULL};
  static const char *const algo_str[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS_TREE", "NVLS", "PAT"};
  static const char *const proto_env[] = {"LL128", "LL", "Simple", NULL};
  static const char *const proto_str[] = {"LL128", "LL", "SIMPLE"};
  int a = forced("NCCL_ALGO", algo_env), p = forced("NCCL_PROTO", proto_env);
  *algo = a >= 0 ? algo_str[a] : kind == ND_ALLREDUCE && bytes < (64u << 10) ? "TREE" : "RING";
  *proto = p >= 0 ? proto_str[p] : bytes <= (64u << 10) ? "LL" : bytes <= (4u << 20) ? "LL128" : "SIMPLE";
}

/* ---- the call (host thread) ---- */

static int is_coll(enum nd_kind k) { return k <= ND_REDUCESCATTER; }

/* The tasks NCCL appends for `op` (taskAppend): a collective, or Send/Recv tasks. */
static int subs_of(const struct nd_op *op, struct nd_prof_sub *s) {
  const int n = op->comm->nranks, me = op->comm->rank;
  const size_t b = op->count * ncclscope_datatype_size(op->dt);
  int k = 0;
#define SUB(K, P, BUF) do { if (s) s[k] = (struct nd_prof_sub){.kind = (K), .peer = (P), .count = op->count, .buff = (void *)(BUF)}; k++; } while (0)
  switch (op->kind) {
  case ND_SEND: SUB(ND_SEND, op->root, op->sbuf); break;
  case ND_RECV: SUB(ND_RECV, op->root, op->rbuf); break;
  case ND_ALLTOALL:
    for (int r = 0; r < n; r++) {
      SUB(ND_SEND, r, (const char *)op->sbuf + (size_t)r * b);
      SUB(ND_RECV, r, (char *)op->rbuf + (size_t)r * b);
    }
    break;
  case ND_GATHER:
    SUB(ND_SEND, op->root, op->sbuf);
    if (me == op->root)
      for (int r = 0; r < n; r++) SUB(ND_RECV, r, (char *)op->rbuf + (size_t)r * b);
    break;
  case ND_SCATTER:
    if (me == op->root)
      for (int r = 0; r < n; r++) SUB(ND_SEND, r, (const char *)op->sbuf + (size_t)r * b);
    SUB(ND_RECV, op->root, op->rbuf);
    break;
  default: SUB(op->kind, op->root, op->rbuf); break;
  }
#undef SUB
  return k;
}

/* The NET proxy operations of each task of op (NCCL: addProxyOpIfNeeded at plan time), whatever
 * the mask: a plan with proxy ops goes through the host callback when captured. Under mu. */
static void plan_proxy_ops(const struct pcomm *pc, const struct nd_op *op, struct nd_prof_op *po) {
  const size_t sz = ncclscope_datatype_size(op->dt);
  const char *algo, *proto;
  nd_prof_choice(op->kind, op->count * sz, &algo, &proto);
  for (int i = 0; i < po->nsub && pc->net; i++) {
    struct nd_prof_sub *s = &po->sub[i];
    /* AllGather and Broadcast are planned in bytes of ncclInt8 (collTaskAppend rewrites them) */
    int in_bytes = s->kind == ND_ALLGATHER || s->kind == ND_BROADCAST;
    struct nd_proxy_in in = {.kind = s->kind, .count = in_bytes ? s->count * sz : s->count,
                             .elem_size = in_bytes ? 1 : sz, .root = s->peer,
                             .rank = op->comm->rank, .nranks = op->comm->nranks, .nnodes = pc->nnodes,
                             .nch = po->nch, .algo = algo, .proto = proto, .net = pc->net};
    int n = nd_proxy_ops(&in, NULL, 0);
    struct nd_proxy_op *ops = n > 0 ? calloc((size_t)n, sizeof *ops) : NULL;
    s->px = ops ? calloc((size_t)n, sizeof *s->px) : NULL;
    if (s->px) {
      nd_proxy_ops(&in, ops, n);
      for (int j = 0; j < n; j++) s->px[j].op = ops[j];
      s->npx = n;
    }
    free(ops);
  }
}

/* collTaskAppend / p2pTaskAppend's events for op (under nothing; takes mu) */
static void call_events(struct nd_op *op, int group_depth, int captured) {
  pthread_mutex_lock(&mu);
  struct pcomm *pc = lib ? pcomm_of(op->comm) : NULL;
  if (!pc) goto out;
  const int m = mask;
  int nsub = subs_of(op, NULL);
  struct nd_prof_op *po = calloc(1, sizeof *po + (size_t)nsub * sizeof po->sub[0]);
  if (!po) goto out;
  po->mask = m;
  po->nch = nchannels();
  po->rank = op->comm->rank;
  po->ctx = pc->ctx;
  po->nsub = subs_of(op, po->sub);
  op->prof = po;
  plan_proxy_ops(pc, op, po);
  const int group_mask = NCCL_PROFILE_GROUP_API | NCCL_PROFILE_P2P_API | NCCL_PROFILE_COLL_API |
                         NCCL_PROFILE_KERNEL_LAUNCH | NCCL_PROFILE_GROUP | NCCL_PROFILE_COLL | NCCL_PROFILE_P2P |
                         NCCL_PROFILE_PROXY_OP | NCCL_PROFILE_PROXY_STEP | NCCL_PROFILE_KERNEL_CH |
                         NCCL_PROFILE_NET_PLUGIN;
  const int task_mask = NCCL_PROFILE_PROXY_OP | NCCL_PROFILE_PROXY_STEP | NCCL_PROFILE_KERNEL_CH | NCCL_PROFILE_NET_PLUGIN;
  for (int i = 0; i < po->nsub; i++) {
    struct nd_prof_sub *s = &po->sub[i];
    /* ncclProfilerStartGroupApiEvent + RecordGroupApiEventState(GroupStartApiStop), per task */
    if ((m & group_mask) && api.depth == 0) {
      struct nccl_prof_descr_v5 d = {.type = NCCL_PROFILE_GROUP_API};
      d.u.group_api.graph_captured = captured;
      d.u.group_api.group_depth = group_depth + 1; /* ncclGroupDepth, with the call's own group */
      api.group = NULL;
      ev_start(pc->ctx, &api.group, &d);
      api.depth = group_depth + 1;
      api.state = API_STARTED;
    }
    if (api.state == API_STARTED) {
      api.state = API_STOPPED;
      ev_record(api.group, NCCL_PROFILER_GROUP_START_API_STOP, NULL);
    }
    struct nccl_prof_descr_v5 d = {.parent = api.group};
    if (is_coll(s->kind)) {
      if (!(m & (NCCL_PROFILE_COLL_API | NCCL_PROFILE_COLL | task_mask))) continue;
      d.type = NCCL_PROFILE_COLL_API;
      d.u.coll_api.func = k_funcs[op->kind];
      d.u.coll_api.count = op->count;
      d.u.coll_api.datatype = dt_name(op->dt);
      d.u.coll_api.root = op->root;
      d.u.coll_api.stream = op->stream;
      d.u.coll_api.graph_captured = captured;
    } else {
      if (!(m & (NCCL_PROFILE_P2P_API | NCCL_PROFILE_P2P | task_mask))) continue;
      d.type = NCCL_PROFILE_P2P_API;
      d.u.p2p_api.func = k_funcs[s->kind];
      d.u.p2p_api.count = s->count;
      d.u.p2p_api.datatype = dt_name(op->dt);
      d.u.p2p_api.stream = op->stream;
      d.u.p2p_api.graph_captured = captured;
    }
    ev_start(pc->ctx, &s->api, &d);
    ev_stop(s->api); /* ncclProfilerStopCollApiEvent / StopP2pApiEvent at the end of the append */
  }
  po->group_api = api.group;
out:
  pthread_mutex_unlock(&mu);
}

void nd_prof_call(struct nd_op *op, int group_depth, int captured) {
  op->prof = NULL;
  if (api.depth > 0) api.depth++; /* ncclEnqueueCheck: an open group event counts this call's group */
  if (!is_coll(op->kind) || (op->count && op->comm->nranks > 1)) /* else no task in NCCL */
    call_events(op, group_depth, captured);
  nd_prof_group_end_begin(); /* the call's own ncclGroupEndInternal */
}

/* ncclGroupEndInternal's profiler part, before the launch */
void nd_prof_group_end_begin(void) {
  if (api.depth > 0) api.depth--;
  if (api.depth == 0 && api.state == API_STOPPED) {
    api.state = API_RESET;
    pthread_mutex_lock(&mu);
    if (lib) ev_record(api.group, NCCL_PROFILER_GROUP_END_API_START, NULL);
    pthread_mutex_unlock(&mu);
  }
}
/* ... and after it (ncclProfilerStopGroupApiEvent at its exit) */
void nd_prof_group_end_done(void) {
  if (api.depth != 0 || !api.group) return;
  pthread_mutex_lock(&mu);
  if (lib) ev_stop(api.group);
  pthread_mutex_unlock(&mu);
  api.group = NULL;
}

/* ---- the plan ---- */

static int task_has_prof(const struct nd_task *t) {
  for (int i = 0; i < t->nops; i++)
    if (t->ops[i].prof) return 1;
  return 0;
}
static int op_mask(const struct nd_task *t) {
  for (int i = 0; i < t->nops; i++)
    if (t->ops[i].prof && t->ops[i].prof->mask) return t->ops[i].prof->mask;
  return 0;
}

/* hostStreamPlanTask's profiler events (under mu): Group, task starts, task stops, Group stop */
static void plan_events(struct nd_task *t, int persistent) {
  const int m = op_mask(t); /* ncclProfilerStartGroupEvent: the first task with a mask */
  const int task_mask = NCCL_PROFILE_PROXY_OP | NCCL_PROFILE_PROXY_STEP | NCCL_PROFILE_KERNEL_CH | NCCL_PROFILE_NET_PLUGIN;
  void *group = NULL, *ctx = NULL;
  for (int i = 0; i < t->nops && !ctx; i++)
    if (t->ops[i].prof) ctx = t->ops[i].prof->ctx;
  if (m & (NCCL_PROFILE_GROUP | NCCL_PROFILE_COLL | NCCL_PROFILE_P2P | task_mask)) {
    struct nccl_prof_descr_v5 d = {.type = NCCL_PROFILE_GROUP};
    ev_start(ctx, &group, &d);
  }
  /* collectives first (plan->collTaskQueue), then point-to-point tasks (plan->p2pTaskQueue) */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < t->nops; i++) {
      const struct nd_op *op = &t->ops[i];
      struct nd_prof_op *po = op->prof;
      if (!po) continue;
      for (int j = 0; j < po->nsub; j++) {
        struct nd_prof_sub *s = &po->sub[j];
        int coll = is_coll(s->kind);
        if (coll != !pass) continue;
        s->task = NULL;
        struct nccl_prof_descr_v5 d = {.rank = op->comm->rank, .parent = s->api};
        if (coll) {
          struct pcomm *pc = pcomm_of(op->comm);
          uint64_t *seq = pc ? &pc->seq[op->kind] : NULL;
          if (po->mask & (NCCL_PROFILE_COLL | task_mask)) {
            size_t sz = ncclscope_datatype_size(op->dt);
            int bytes_as_int8 = op->kind == ND_ALLGATHER || op->kind == ND_BROADCAST;
            d.type = NCCL_PROFILE_COLL;
            d.u.coll.parent_group = group;
            d.u.coll.seq = seq ? *seq : 0;
            d.u.coll.func = k_funcs[op->kind];
            d.u.coll.sendbuf = op->sbuf;
            d.u.coll.recvbuf = op->rbuf;
            d.u.coll.count = bytes_as_int8 ? op->count * sz : op->count;
            d.u.coll.root = op->root;
            d.u.coll.datatype = bytes_as_int8 ? "ncclInt8" : dt_name(op->dt);
            d.u.coll.nchannels = (uint8_t)po->nch;
            d.u.coll.nwarps = 16;
            nd_prof_choice(op->kind, op->count * sz, &d.u.coll.algo, &d.u.coll.proto);
            ev_start(po->ctx, &s->task, &d);
          }
          /* seqNumber: always, except persistent plans unless KernelCh events are on */
          if (seq && (!persistent || ((group || s->api) && (po->mask & NCCL_PROFILE_KERNEL_CH)))) (*seq)++;
        } else if (po->mask & (NCCL_PROFILE_P2P | task_mask)) {
          d.type = NCCL_PROFILE_P2P;
          d.u.p2p.parent_group = group;
          d.u.p2p.func = k_funcs[s->kind];
          d.u.p2p.buff = s->buff;
          d.u.p2p.count = s->count;
          d.u.p2p.datatype = dt_name(op->dt);
          d.u.p2p.peer = s->peer;
          d.u.p2p.nchannels = (uint8_t)po->nch;
          ev_start(po->ctx, &s->task, &d);
        }
      }
    }
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < t->nops; i++) {
      struct nd_prof_op *po = t->ops[i].prof;
      for (int j = 0; po && j < po->nsub; j++)
        if (is_coll(po->sub[j].kind) == !pass) ev_stop(po->sub[j].task);
    }
  ev_stop(group);
}

/* A plan has proxy ops (the host callback path for a persistent plan, ncclLaunchPrepare's
 * plan->hasProxyOps) when it crosses the network (NET proxy ops) or KernelCh events are wanted
 * (ncclProfilerNeedsProxy adds profiler proxy ops). */
static int has_proxy_ops(const struct nd_task *t) {
  if (op_mask(t) & NCCL_PROFILE_KERNEL_CH) return 1;
  for (int i = 0; i < t->nops; i++)
    for (int j = 0; t->ops[i].prof && j < t->ops[i].prof->nsub; j++)
      if (t->ops[i].prof->sub[j].npx) return 1;
  return 0;
}

/* the launch in progress on this thread: its KernelLaunch event, and whether _end has events to
 * emit (else the task may already have run and been freed once enqueued: _end must not touch it) */
static _Thread_local void *t_launch_event;
static _Thread_local int t_launch_pending;

void nd_prof_launch_begin(struct nd_task *t, cudaStream_t stream) {
  atomic_store(&t->prof_posted, 1);
  t_launch_event = NULL;
  t_launch_pending = task_has_prof(t);
  if (!t_launch_pending) return;
  atomic_store(&t->prof_posted, t->captured); /* a worker of a non-captured task waits for _end */
  pthread_mutex_lock(&mu);
  if (lib && (op_mask(t) & NCCL_PROFILE_KERNEL_LAUNCH)) { /* ncclProfilerStartKernelLaunchEvent */
    const struct nd_op *op = &t->ops[0];
    for (int i = 0; i < t->nops && !op->prof; i++) op = &t->ops[i];
    struct nccl_prof_descr_v5 d = {.type = NCCL_PROFILE_KERNEL_LAUNCH, .parent = op->prof->group_api};
    d.u.kernel_launch.stream = stream;
    ev_start(op->prof->ctx, &t_launch_event, &d);
  }
  pthread_mutex_unlock(&mu);
}

void nd_prof_launch_end(struct nd_task *t) {
  if (!t_launch_pending) return; /* nothing to emit */
  t_launch_pending = 0;
  pthread_mutex_lock(&mu);
  if (lib) {
    ev_stop(t_launch_event);
    /* ncclLaunchKernelAfter_NoCuda: the plan's events now, unless a host callback does it */
    if (!t->captured) plan_events(t, 0);
    else if (!has_proxy_ops(t)) plan_events(t, 1);
  }
  t_launch_event = NULL;
  pthread_mutex_unlock(&mu);
  if (!t->captured) atomic_store(&t->prof_posted, 1); /* the worker may touch the task now */
}

/* ---- the worker (device + proxy thread) ---- */

void nd_prof_task_begin(struct nd_task *t) {
  t_cursor = cudaDoubleItemStartNs();
  if (!t_cursor) t_cursor = cudaDoubleNowNs();
  while (!atomic_load(&t->prof_posted)) sched_yield(); /* the host is emitting the task events */
  if (!t->captured || !task_has_prof(t) || !has_proxy_ops(t)) return;
  pthread_mutex_lock(&mu);
  if (lib) plan_events(t, 1); /* hostStreamPlanCallback, ahead of the kernel at each replay */
  pthread_mutex_unlock(&mu);
}

#define PX_OP_MASK (NCCL_PROFILE_PROXY_OP | NCCL_PROFILE_PROXY_STEP | NCCL_PROFILE_NET_PLUGIN)
#define PX_STEP_MASK (NCCL_PROFILE_PROXY_STEP | NCCL_PROFILE_NET_PLUGIN)

/* ncclProxyOpToArgs -> ncclProfilerStartProxyOpEvent, then sendProxyProgress/recvProxyProgress
 * at ncclProxyOpReady: ncclProfilerRecordProxyOpEventState(ProxyOpInProgress_v4). Under mu. */
static void proxy_ops_start(struct nd_prof_op *po, int rank) {
  for (int j = 0; j < po->nsub; j++) {
    struct nd_prof_sub *s = &po->sub[j];
    for (int i = 0; i < s->npx; i++) {
      struct nd_prof_px *x = &s->px[i];
      x->h = x->step = NULL;
      x->k = x->phase = 0;
      x->trans = 0;
      if (!(po->mask & PX_OP_MASK)) continue;
      struct nccl_prof_descr_v5 d = {.type = NCCL_PROFILE_PROXY_OP, .parent = s->task, .rank = rank};
      d.u.proxy_op.pid = g_pid;
      d.u.proxy_op.channel = (uint8_t)x->op.channel;
      d.u.proxy_op.peer = x->op.peer;
      d.u.proxy_op.nsteps = x->op.nsteps;
      d.u.proxy_op.chunk_size = x->op.chunk;
      d.u.proxy_op.is_send = x->op.is_send;
      ev_start(po->ctx, &x->h, &d);
      union nccl_prof_state_args a = {0};
      ev_record(x->h, NCCL_PROFILER_PROXY_OP_IN_PROGRESS_V4, &a);
    }
  }
}

/* One step transition of x at its due time (under mu): the states sendProxyProgress and
 * recvProxyProgress record, transSize as NCCL's sub->transSize holds it at each. */
static void proxy_step_event(struct nd_prof_op *po, struct nd_prof_px *x, int rank) {
  union nccl_prof_state_args a = {0};
  if (x->phase == 0) {
    x->step = NULL;
    if (x->h && (po->mask & PX_STEP_MASK)) { /* ncclProfilerStartSend/RecvProxyStepEvent */
      struct nccl_prof_descr_v5 d = {.type = NCCL_PROFILE_PROXY_STEP, .parent = x->h, .rank = rank};
      d.u.proxy_step.step = x->k;
      ev_start(po->ctx, &x->step, &d);
    }
    if (x->h && x->step) {
      a.trans_size = x->trans;
      if (x->op.is_send) {
        ev_record(x->step, NCCL_PROFILER_PROXY_STEP_SEND_GPU_WAIT, &a);
        ev_record(x->step, NCCL_PROFILER_PROXY_STEP_SEND_PEER_WAIT_V4, &a);
        a.trans_size = x->trans = x->op.trans;
        ev_record(x->step, NCCL_PROFILER_PROXY_STEP_SEND_WAIT, &a);
      } else {
        ev_record(x->step, NCCL_PROFILER_PROXY_STEP_RECV_WAIT, &a);
      }
    }
    x->phase = 1;
    return;
  }
  if (x->h && x->step && !x->op.is_send) {
    a.trans_size = x->trans = x->op.trans;
    ev_record(x->step, NCCL_PROFILER_PROXY_STEP_RECV_FLUSH_WAIT, &a);
    ev_record(x->step, NCCL_PROFILER_PROXY_STEP_RECV_GPU_WAIT, &a);
  }
  ev_stop(x->step); /* ncclProfilerStopProxyStepEvent */
  x->step = NULL;
  x->k++;
  x->phase = 0;
}

/* The proxy steps of the ops' NET operations, each at its time on the device clock: step k of an
 * operation of n steps runs from start + (end - start) k / n to start + (end - start)(k + 1) / n
 * of its kernel work; the worker sleeps until each transition is due (the plugin sees them when
 * the simulated network makes them), and takes the lock only to emit. */
static void proxy_steps(struct nd_prof_op *const *pos, int npos, uint64_t end) {
  for (;;) {
    struct nd_prof_op *best_po = NULL;
    struct nd_prof_px *best = NULL;
    uint64_t best_t = 0;
    for (int o = 0; o < npos; o++) {
      struct nd_prof_op *po = pos[o];
      if (!po || !(po->mask & PX_OP_MASK)) continue;
      uint64_t span = end > po->t_start ? end - po->t_start : 0;
      for (int j = 0; j < po->nsub; j++)
        for (int i = 0; i < po->sub[j].npx; i++) {
          struct nd_prof_px *x = &po->sub[j].px[i];
          if (x->k >= x->op.nsteps) continue;
          uint64_t t = po->t_start + (uint64_t)((double)span * (x->k + x->phase) / x->op.nsteps);
          if (!best || t < best_t) { best = x; best_po = po; best_t = t; }
        }
    }
    if (!best) return;
    cudaDoubleSleepUntil(best_t);
    pthread_mutex_lock(&mu);
    if (lib) proxy_step_event(best_po, best, best_po->rank);
    else best->k = best->op.nsteps;
    pthread_mutex_unlock(&mu);
  }
}

/* ncclProfilerStopProxyOpEvent once all its steps are done (under mu) */
static void proxy_ops_stop(struct nd_prof_op *po) {
  for (int j = 0; j < po->nsub; j++)
    for (int i = 0; i < po->sub[j].npx; i++) {
      struct nd_prof_px *x = &po->sub[j].px[i];
      ev_stop(x->h);
      x->h = NULL;
    }
}

void nd_prof_kernel_begin(const struct nd_op *op) {
  struct nd_prof_op *po = op->prof;
  if (!po) return;
  po->t_start = t_cursor;
  po->steps_done = 0;
  pthread_mutex_lock(&mu);
  if (lib && (po->mask & PX_OP_MASK)) proxy_ops_start(po, op->comm->rank);
  pthread_mutex_unlock(&mu);
  if (!(po->mask & NCCL_PROFILE_KERNEL_CH)) return;
  pthread_mutex_lock(&mu);
  for (int j = 0; lib && j < po->nsub; j++) {
    struct nd_prof_sub *s = &po->sub[j];
    for (int c = 0; c < po->nch; c++) {
      struct nccl_prof_descr_v5 d = {.type = NCCL_PROFILE_KERNEL_CH, .parent = s->task};
      d.u.kernel_ch.channel = (uint8_t)c;
      d.u.kernel_ch.ptimer = po->t_start;
      s->kch[c] = NULL;
      ev_start(po->ctx, &s->kch[c], &d);
    }
  }
  pthread_mutex_unlock(&mu);
}

void nd_prof_kernel_end(const struct nd_op *op) {
  uint64_t end = cudaDoubleItemEndNs();
  struct nd_prof_op *po = op->prof;
  if (po && end <= po->t_start) /* no device end declared: the worker's clock, or the end an op */
    end = t_cursor > po->t_start ? t_cursor : cudaDoubleNowNs(); /* of the same batch gave */
  if (po && end > t_cursor) t_cursor = end;
  if (!po) return;
  if (!po->steps_done) proxy_steps(&po, 1, end);
  po->steps_done = 1;
  pthread_mutex_lock(&mu);
  if (lib) proxy_ops_stop(po);
  pthread_mutex_unlock(&mu);
  if (!(po->mask & NCCL_PROFILE_KERNEL_CH)) return;
  pthread_mutex_lock(&mu);
  for (int j = 0; lib && j < po->nsub; j++) {
    struct nd_prof_sub *s = &po->sub[j];
    for (int c = 0; c < po->nch; c++) {
      if (!s->kch[c]) continue;
      union nccl_prof_state_args a = {.ptimer = end};
      ev_record(s->kch[c], NCCL_PROFILER_KERNEL_CH_STOP, &a); /* ncclProfilerStopKernelChEvent */
      ev_stop(s->kch[c]);
      s->kch[c] = NULL;
    }
  }
  pthread_mutex_unlock(&mu);
}

/* The Send/Recv part of a task ends at `end`: their proxy steps progress together, as NCCL's
 * proxy thread progresses every op it holds (called before their nd_prof_kernel_end). */
void nd_prof_p2p_steps(struct nd_task *t, uint64_t end) {
  struct nd_prof_op *buf[64] = {0}, **pos = t->nops <= 64 ? buf : calloc((size_t)t->nops, sizeof *pos);
  int n = 0;
  for (int i = 0; pos && i < t->nops; i++) {
    struct nd_prof_op *po = t->ops[i].prof;
    if (po && (t->ops[i].kind == ND_SEND || t->ops[i].kind == ND_RECV)) pos[n++] = po;
  }
  if (pos) proxy_steps(pos, n, end);
  for (int i = 0; i < n; i++) pos[i]->steps_done = 1;
  if (pos != buf) free(pos);
}

void nd_prof_task_free(struct nd_task *t) {
  for (int i = 0; i < t->nops; i++) {
    for (int j = 0; t->ops[i].prof && j < t->ops[i].prof->nsub; j++) free(t->ops[i].prof->sub[j].px);
    free(t->ops[i].prof);
    t->ops[i].prof = NULL;
  }
}
