/* profcalls.c — calls rebuilt from NCCL's profiler events and kernel activity, for a process
 * whose NCCL no wrapper reached (contract: profcalls.h). */
#include "model/profcalls.h"

#include <stdlib.h>
#include <string.h>

#include "io/grow.h"
#include "model/knames.h"
#include "ncclscope/cupti_abi.h"
#include "ncclscope/encode.h"
#include "ncclscope/nccl_abi.h"
#include "ncclscope/ops.h"

#define KEY_SR NCS_OP_LIMIT
#define NKEYS (NCS_OP_LIMIT + 1)
struct waiting {
  struct ncs_call c;
  unsigned key;                /* its op, or KEY_SR */
  uint64_t ordinal;            /* its place among the events (Send/Recv: plans) of its key */
  uint64_t gs, ge;             /* its kernel, when matched */
  int matched;
};
struct kwait { uint64_t ordinal, start, end; };
struct kqueue { struct kwait *k; size_t n, cap, head; };
struct pcomm { uint64_t hash; int32_t rank; uint32_t index; uint64_t coll_seq, p2p_seq; };

struct ncs_profcalls {
  struct ncs_visitor down;
  struct ncs_profcalls_stats st;
  struct waiting *w;           /* w[head, n): waiting calls, in event order */
  size_t n, cap, head;
  /* per key (an op; KEY_SR for Send/Recv, whose plan runs as one SendRecv kernel): events (for
   * Send/Recv: plans) and kernels seen */
  uint64_t events[NKEYS], kernels[NKEYS];
  struct kqueue kq[NKEYS];     /* kernels that came before their event */
  uint64_t last_plan;          /* plan id of the latest Send/Recv event */
  int have_plan;
  struct pcomm *comms;
  size_t ncomms, capcomms;
  uint64_t tcall;
  struct ncs_knames names;
};

static unsigned op_named(const char *s, size_t len) {
  for (unsigned op = NCS_OP_AllReduce; op < NCS_OP_LIMIT; op++) {
    const char *n = ncs_op_name(op);
    if (n && strlen(n) == len && !strncmp(n, s, len)) return op;
  }
  return NCS_OP_NONE;
}

static int datatype_of(const char *s) {
  static const char *const names[] = {"ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32", "ncclInt64", "ncclUint64",
                                      "ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3",
                                      "ncclFloat8e5m2"};
  for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
    if (!strcmp(names[i], s)) return i;
  return ncclInt8;
}

static void hand_on(struct ncs_profcalls *p, const struct waiting *x) {
  const struct ncs_visitor *d = &p->down;
  if (d->calls) d->calls(d->ctx, &x->c, 1);
  else if (d->call) d->call(d->ctx, &x->c);
  p->st.calls++;
  if (!x->matched) return;
  struct ncs_gpu_time g = {.kind = NCS_GPU_KIND_CALL, .thread = x->c.thread, .ref = x->c.tcall,
                           .gpu_start = x->gs, .gpu_end = x->ge};
  if (d->gpu_times) d->gpu_times(d->ctx, &g, 1);
  else if (d->gpu_time) d->gpu_time(d->ctx, &g);
  p->st.gpu_timed++;
}

/* Hands on the calls at the head that have their kernel (or wait too long: over `hold`). */
static void advance(struct ncs_profcalls *p, size_t hold) {
  while (p->head < p->n && (p->w[p->head].matched || p->n - p->head > hold)) hand_on(p, &p->w[p->head++]);
  if (p->head == p->n) p->head = p->n = 0;
  else if (p->head > 4096 && p->head * 2 > p->n) {
    memmove(p->w, p->w + p->head, (p->n - p->head) * sizeof *p->w);
    p->n -= p->head;
    p->head = 0;
  }
}

/* The communicator of event e (its COMM handed on at its first event), NULL out of memory. */
static struct pcomm *comm_of(struct ncs_profcalls *p, const struct ncs_profile *e) {
  for (size_t i = 0; i < p->ncomms; i++)
    if (p->comms[i].hash == e->comm_hash && p->comms[i].rank == e->rank) return &p->comms[i];
  if (ncs_grow((void **)&p->comms, &p->capcomms, p->ncomms + 1, sizeof *p->comms) != 0) return NULL;
  uint32_t index = (uint32_t)p->ncomms + 1;
  p->comms[p->ncomms] = (struct pcomm){e->comm_hash, e->rank, index, 0, 0};
  struct ncs_comm c = {.comm = index, .comm_id = e->comm_hash, .handle = e->comm_hash ? e->comm_hash : index, .rank = e->rank, .nranks = (int32_t)e->nranks,
                       .device = -1, .init_op = NCS_OP_CommInitRank, .t_enter = e->t, .t_exit = e->t,
                       .thread = NCS_PROFCALLS_THREAD};
  if (p->down.comm) p->down.comm(p->down.ctx, &c);
  p->st.comms++;
  return &p->comms[p->ncomms++];
}

static void on_event(struct ncs_profcalls *p, const struct ncs_profile *e) {
  if (!e->func[0]) return; /* only tells events lost at the end */
  unsigned op = op_named(e->func, strlen(e->func));
  if (op == NCS_OP_NONE) { p->st.unknown_funcs++; return; }
  int p2p = op == NCS_OP_Send || op == NCS_OP_Recv;
  struct pcomm *pc = comm_of(p, e);
  if (!pc || ncs_grow((void **)&p->w, &p->cap, p->n + 1, sizeof *p->w) != 0) { p->st.bad++; return; }
  struct waiting *x = &p->w[p->n++];
  memset(x, 0, sizeof *x);
  /* seq as the shim numbers calls: collectives and Send/Recv counted apart, from 1 */
  x->c = (struct ncs_call){.op = op, .thread = NCS_PROFCALLS_THREAD, .comm = pc->index, .datatype = (uint32_t)datatype_of(e->datatype),
                           .root = e->root, .tcall = ++p->tcall, .seq = p2p ? ++pc->p2p_seq : ++pc->coll_seq,
                           .count = e->count, .t_enter = e->t, .t_exit = e->t};
  x->key = p2p ? KEY_SR : op;
  if (!p2p) x->ordinal = p->events[op]++;
  else { /* the tasks of one plan (one Group event) run in one SendRecv kernel */
    if (!p->have_plan || e->seq != p->last_plan) p->events[KEY_SR]++;
    p->have_plan = 1;
    p->last_plan = e->seq;
    x->ordinal = p->events[KEY_SR] - 1;
  }
  struct kqueue *q = &p->kq[x->key];
  while (q->head < q->n && q->k[q->head].ordinal < x->ordinal) { q->head++; p->st.kernels_unclaimed += !p2p; }
  if (q->head < q->n && q->k[q->head].ordinal == x->ordinal) {
    x->matched = 1;
    x->gs = q->k[q->head].start;
    x->ge = q->k[q->head].end;
    if (!p2p && ++q->head == q->n) q->head = q->n = 0; /* a plan's kernel stays for its other tasks */
  }
  advance(p, NCS_PROFCALLS_HOLD);
}

static void on_kernel(struct ncs_profcalls *p, const struct ncs_kernel *k) {
  const char *name = ncs_knames_get(&p->names, k->name);
  if (!name || !ncs_is_nccl_kernel(name)) return;
  size_t len = 0;
  const char *o = ncs_kernel_op(name, &len);
  unsigned key = !o ? NCS_OP_NONE : len == 8 && !strncmp(o, "SendRecv", 8) ? KEY_SR : op_named(o, len);
  if (key == NCS_OP_NONE) return;
  uint64_t ord = p->kernels[key]++, end = k->start + k->duration;
  if (ord < p->events[key]) { /* its event came first: the waiting call(s) of that ordinal */
    int found = 0;
    for (size_t i = p->head; i < p->n; i++)
      if (p->w[i].key == key && p->w[i].ordinal == ord) {
        p->w[i].matched = 1;
        p->w[i].gs = k->start;
        p->w[i].ge = end;
        found = 1;
        if (key != KEY_SR) break;
      }
    if (!found) p->st.kernels_unclaimed++; /* its call went on without it */
    else if (key != KEY_SR || ord + 1 < p->events[key]) { advance(p, NCS_PROFCALLS_HOLD); return; }
    if (!found) return;
  }
  struct kqueue *q = &p->kq[key]; /* before its event; a plan's kernel also for its later tasks */
  if (ncs_grow((void **)&q->k, &q->cap, q->n + 1, sizeof *q->k) != 0) return;
  q->k[q->n++] = (struct kwait){ord, k->start, end};
  advance(p, NCS_PROFCALLS_HOLD);
}

/* ---- the visitor: it only looks; every record reaches `down` through the mux it sits in ---- */

static int pc_process(void *ctx, const struct ncs_process *r) {
  struct ncs_profcalls *p = ctx;
  const char *from = ncs_process_get(r, "calls_from");
  p->st.active = from && !strcmp(from, "profiler");
  return 0;
}

static int pc_raw(void *ctx, const struct ncs_raw *r) {
  struct ncs_profcalls *p = ctx;
  if (!p->st.active) return 0;
  struct ncs_rbuf rb;
  if (r->type == NCS_REC_PROFILE || r->type == NCS_REC_PROFILE_ID) {
    struct ncs_profile e;
    struct ncs_profile_id id;
    if (r->type == NCS_REC_PROFILE ? ncs_dec_profile(ncs_rbuf_on(&rb, r->body, r->len), &e) != 0
                                   : ncs_dec_profile_id(ncs_rbuf_on(&rb, r->body, r->len), &id) != 0 ||
                                         ncs_profile_from_id(&id, &e) != 0)
      p->st.bad++;
    else
      on_event(p, &e);
  } else if (r->type == NCS_REC_KERNEL) {
    struct ncs_kernel k;
    if (ncs_dec_kernel(ncs_rbuf_on(&rb, r->body, r->len), &k) == 0) on_kernel(p, &k);
  } else {
    ncs_knames_add_raw(&p->names, r);
  }
  return 0;
}

/* KERNEL records as the reader decoded them (io/trace.h `kernels`): the same as each through
 * pc_raw, without the mux handing them over one by one (and, from a column chunk, rebuilding
 * their bodies first) for a process that is not rebuilding calls, nearly every one. */
static int pc_kernels(void *ctx, const struct ncs_kernel *k, const struct ncs_raw *raw, size_t n) {
  struct ncs_profcalls *p = ctx;
  (void)raw;
  if (p->st.active)
    for (size_t i = 0; i < n; i++) on_kernel(p, &k[i]);
  return 0;
}

struct ncs_profcalls *ncs_profcalls_new(void) { return calloc(1, sizeof(struct ncs_profcalls)); }

struct ncs_visitor ncs_profcalls_visitor(struct ncs_profcalls *p, const struct ncs_visitor *down) {
  p->down = *down;
  return (struct ncs_visitor){.ctx = p, .process = pc_process, .raw = pc_raw, .kernels = pc_kernels};
}

struct ncs_profcalls_stats ncs_profcalls_finish(struct ncs_profcalls *p) {
  advance(p, 0);
  for (unsigned op = 0; op < NKEYS; op++) {
    if (op != KEY_SR) p->st.kernels_unclaimed += p->kq[op].n - p->kq[op].head; /* a plan's kernel stays queued for its tasks */
    p->kq[op].n = p->kq[op].head = 0;
  }
  return p->st;
}

void ncs_profcalls_free(struct ncs_profcalls *p) {
  if (!p) return;
  for (unsigned op = 0; op < NKEYS; op++) free(p->kq[op].k);
  free(p->w);
  free(p->comms);
  ncs_knames_free(&p->names);
  free(p);
}
