/* nd_profiler.c — the NCCL double loads a profiler plugin as NCCL 2.28 does (docs/PROFILER.md).
 *
 * Contract:
 * - At the first communicator's init: NCCL_PROFILER_PLUGIN names the library ("none" = no
 *   plugin; unset = the default name libnccl-profiler.so; a bare name X that is not a path or
 *   a lib*.so also tries libnccl-profiler-X.so); dlopen(RTLD_NOW | RTLD_LOCAL); the interface
 *   looked up newest first: ncclProfiler_v5, then ncclProfiler_v4 (older ones: not supported
 *   by the double). Loaded once per process while a communicator uses it (reference-counted,
 *   unloaded when the last one is freed, read again at the next init), as NCCL does.
 * - nd_prof_comm_init: the plugin's init(context, commHash, &mask, name, nNodes, nranks,
 *   rank, logger); a failing init leaves that communicator without a profiler.
 * - nd_prof_coll: for a collective (AllReduce, Broadcast, Reduce, AllGather, ReduceScatter)
 *   when the mask has ncclProfileColl: startEvent with the descriptor (per-communicator,
 *   per-function seqNumber; the algorithm, protocol and channel count the double "chose",
 *   see nd_prof_choice), then stopEvent on the returned handle. Called by the stream worker
 *   that runs the collective.
 * - The double's choice: NCCL_ALGO / NCCL_PROTO when set (first name of the list); otherwise
 *   AllReduce uses Tree below 64 KiB and Ring above, other collectives Ring; protocol LL up to
 *   64 KiB, LL128 up to 4 MiB, Simple above; channels NCCLDOUBLE_NCHANNELS (default 2).
 *   Plausible, not NCCL's tuner. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nccl_profiler/profiler.h"
#include "nd_internal.h"

#define NCOMMS 64
#define NKINDS 5 /* the collectives: ND_ALLREDUCE .. ND_REDUCESCATTER */
struct pcomm { struct ncclComm *comm; void *ctx; uint64_t seq[NKINDS]; };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void *lib;
static int refs, version, tried_and_failed;
static const struct nccl_profiler_v5 *p5;
static const struct nccl_profiler_v4 *p4;
static int mask;
static struct pcomm comms[NCOMMS];

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {}

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
  version = p5 ? 5 : 4;
  lib = h;
  refs = 1;
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

ND_HIDDEN void nd_prof_comm_init(struct ncclComm *c) {
  pthread_mutex_lock(&mu);
  if (!load()) goto out;
  struct pcomm *slot = NULL;
  for (int i = 0; i < NCOMMS && !slot; i++)
    if (!comms[i].comm) slot = &comms[i];
  int nnodes = 1;
  for (int i = 0; c->peers && i < c->nranks; i++)
    if (c->peers[i].node + 1 > nnodes) nnodes = c->peers[i].node + 1;
  void *ctx = NULL;
  int m = 0, rc = slot ? (p5 ? p5->init(&ctx, c->hash, &m, c->name, nnodes, c->nranks, c->rank, logger)
                              : p4->init(&ctx, &m, c->name, c->hash, nnodes, c->nranks, c->rank, logger))
                       : -1;
  if (rc != 0) { unload(); goto out; }
  mask = m;
  *slot = (struct pcomm){ .comm = c, .ctx = ctx };
out:
  pthread_mutex_unlock(&mu);
}

ND_HIDDEN void nd_prof_comm_fini(struct ncclComm *c) {
  pthread_mutex_lock(&mu);
  for (int i = 0; i < NCOMMS; i++) {
    if (comms[i].comm != c) continue;
    if (p5) p5->finalize(comms[i].ctx);
    else if (p4) p4->finalize(comms[i].ctx);
    comms[i] = (struct pcomm){0};
    unload();
  }
  pthread_mutex_unlock(&mu);
}

static const char *dt_name(int dt) {
  static const char *const n[] = {"ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32", "ncclInt64", "ncclUint64",
                                  "ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3",
                                  "ncclFloat8e5m2"};
  return dt >= 0 && dt < (int)(sizeof n / sizeof *n) ? n[dt] : "ncclUnknown";
}
static size_t dt_size(int dt) {
  static const unsigned char s[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return dt >= 0 && dt < (int)sizeof s ? s[dt] : 1;
}
static int nchannels(void) {
  const char *v = getenv("NCCLDOUBLE_NCHANNELS");
  int n = v && *v ? atoi(v) : 2;
  return n > 0 ? (n > 255 ? 255 : n) : 1;
}
/* The first name of NCCL_ALGO / NCCL_PROTO's list if it is one of `names`, else NULL. */
static const char *forced(const char *var, const char *const *names) {
  const char *v = getenv(var);
  if (!v || !*v || *v == '^') return NULL;
  for (; *names; names++) {
    size_t n = strlen(*names);
    if (!strncasecmp(v, *names, n) && (v[n] == 0 || v[n] == ',')) return *names;
  }
  return NULL;
}

ND_HIDDEN void nd_prof_choice(int kind, size_t bytes, const char **algo, const char **proto) {
  static const char *const algos[] = {"Tree", "Ring", "CollnetDirect", "CollnetChain", "NVLS", "NVLSTree", "PAT", NULL};
  static const char *const protos[] = {"LL128", "LL", "Simple", NULL};
  *algo = forced("NCCL_ALGO", algos);
  if (!*algo) *algo = kind == ND_ALLREDUCE && bytes < (64u << 10) ? "Tree" : "Ring";
  *proto = forced("NCCL_PROTO", protos);
  if (!*proto) *proto = bytes <= (64u << 10) ? "LL" : bytes <= (4u << 20) ? "LL128" : "Simple";
}

ND_HIDDEN void nd_prof_coll(const struct nd_op *op) {
  static const char *const funcs[NKINDS] = {"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter"};
  if ((int)op->kind < 0 || (int)op->kind >= NKINDS) return;
  pthread_mutex_lock(&mu);
  struct pcomm *pc = NULL;
  for (int i = 0; i < NCOMMS && !pc; i++)
    if (comms[i].comm == op->comm) pc = &comms[i];
  if (!pc || !(mask & NCCL_PROFILE_COLL)) { pthread_mutex_unlock(&mu); return; }
  struct nccl_prof_coll e = {0};
  e.seq = pc->seq[op->kind]++;
  e.func = funcs[op->kind];
  e.sendbuf = op->sbuf;
  e.recvbuf = op->rbuf;
  e.count = op->count;
  e.root = op->root;
  e.datatype = dt_name(op->dt);
  e.nchannels = (uint8_t)nchannels();
  e.nwarps = 16;
  nd_prof_choice(op->kind, op->count * dt_size(op->dt), &e.algo, &e.proto);
  void *h = NULL;
  if (p5) {
    struct nccl_prof_descr_v5 d = { .type = NCCL_PROFILE_COLL, .rank = op->comm->rank };
    d.u.coll = e;
    if (p5->start(pc->ctx, &h, &d) == 0 && h) p5->stop(h);
  } else if (p4) {
    struct nccl_prof_descr_v4 d = { .type = NCCL_PROFILE_COLL, .rank = op->comm->rank };
    d.u.coll = e;
    if (p4->start(pc->ctx, &h, &d) == 0 && h) p4->stop(h);
  }
  pthread_mutex_unlock(&mu);
}
