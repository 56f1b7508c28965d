/* replay.c — CUDA-graph replays of one process: captured calls paired with the NCCL kernels no
 * uncaptured call explains (contract and rule in replay.h, docs/METRICS.md "Graph replays"). */
#include "model/replay.h"

#include <stdlib.h>
#include <string.h>

#include "io/grow.h"
#include "model/knames.h"
#include "model/rules.h"
#include "ncclscope/encode.h"
#include "ncclscope/format.h"
#include "ncclscope/ops.h"

#define KEEP 4096                 /* before the first capture: at least this many kept */
#define TOL_NS 1000000ull         /* how far a call's kernel may lie outside its GPU interval
                                     (two clock conversions: events and CUPTI, docs/SHIM.md) */
#define MAX_NAME_ID 65536

struct rkern { uint64_t s, e; int32_t op; uint32_t tag, dev; }; /* tag: 0 free, 1 a call's, 2 + element: a replay;
                                                                 dev: CUPTI's device + 1 */
struct rwin { uint64_t s, e; };
/* A graph body element: a captured call, or the calls of a captured group on one communicator
 * (NCCL launches one kernel per communicator of a group); its members chained through next. */
struct relem { int32_t op; uint32_t seg, comm, head, tail, n, dev; uint64_t group; }; /* dev: its communicator's device + 1, 0 unknown */
struct rmem { struct ncs_replay_call c; uint32_t next; };      /* next: member index + 1, 0 none */
/* A capture: a run of captured calls of one thread that no uncaptured call of it interrupts. */
struct rseg { uint64_t t; uint32_t thread; };
struct ncs_replay {
  struct rkern *k; size_t nk, capk; /* before klin: a ring of up to 2 * KEEP, nk NCCL kernels seen in all */
  int klin;                         /* k is a plain list (settle_ring) */
  struct rwin *w; size_t nw, capw; /* before wlin: a ring of up to 2 * KEEP, nw windows seen in all */
  int wlin;                         /* w is a plain list (settle_ring) */
  struct rmem *mem; size_t nmem, capmem;
  struct relem *el; size_t nel, capel;
  struct rseg *seg; size_t nseg, capseg;
  uint32_t *open; uint32_t nthr;    /* thread -> its open capture + 1 (0: none) */
  int8_t *name_op; uint32_t nname;  /* KERNEL_NAME id -> op slot + 1 (0: not NCCL / unknown) */
  int32_t *nranks, *dev; uint32_t ncomm; /* per communicator: ranks; CUDA device + 1 (0 unknown) */
  uint64_t t0;                      /* the first captured call's entry */
  int kact_on, kact_seen, gpu_seen;
  struct ncs_replay_sum sum;
};

struct ncs_replay *ncs_replay_new(void) { return calloc(1, sizeof(struct ncs_replay)); }

void ncs_replay_free(struct ncs_replay *r) {
  if (!r) return;
  free(r->k); free(r->w); free(r->mem); free(r->el); free(r->seg); free(r->open); free(r->name_op); free(r->nranks); free(r->dev);
  free(r);
}


/* The op slot of a kernel operation name (made when new); -1 when the table is full. */
static int op_slot(struct ncs_replay *r, const char *name, size_t len) {
  if (len >= sizeof r->sum.op[0].name) len = sizeof r->sum.op[0].name - 1;
  for (int i = 0; i < r->sum.nops; i++)
    if (strlen(r->sum.op[i].name) == len && !memcmp(r->sum.op[i].name, name, len)) return i;
  if (r->sum.nops == NCS_REPLAY_OPS) return -1;
  memcpy(r->sum.op[r->sum.nops].name, name, len);
  r->sum.op[r->sum.nops].name[len] = 0;
  return r->sum.nops++;
}

void ncs_replay_comm(struct ncs_replay *r, uint32_t comm, int32_t nranks, int32_t device) {
  if (comm >= 65536) return;
  if (comm >= r->ncomm) {
    uint32_t n = r->ncomm ? r->ncomm : 8;
    while (n <= comm) n *= 2;
    int32_t *p = realloc(r->nranks, n * sizeof *p), *d = p ? realloc(r->dev, n * sizeof *d) : NULL;
    if (p) r->nranks = p;
    if (!p || !d) return;
    memset(p + r->ncomm, 0, (n - r->ncomm) * sizeof *p);
    memset(d + r->ncomm, 0, (n - r->ncomm) * sizeof *d);
    r->dev = d;
    r->ncomm = n;
  }
  r->nranks[comm] = nranks;
  if (device >= 0) r->dev[comm] = device + 1;
}

/* The open capture of a thread, -1 when none (made when `make`: -2 out of memory). */
static long open_seg(struct ncs_replay *r, uint32_t thread, uint64_t t, int make) {
  if (thread < r->nthr && r->open[thread]) return (long)r->open[thread] - 1;
  if (!make) return -1;
  if (thread >= r->nthr) {
    uint32_t n = r->nthr ? r->nthr : 16;
    while (n <= thread) n *= 2;
    if (n > (1u << 20)) return -2;
    uint32_t *p = realloc(r->open, n * sizeof *p);
    if (!p) return -2;
    memset(p + r->nthr, 0, (n - r->nthr) * sizeof *p);
    r->open = p;
    r->nthr = n;
  }
  if (ncs_grow((void **)&r->seg, &r->capseg, r->nseg + 1, sizeof *r->seg) != 0) return -2;
  r->seg[r->nseg] = (struct rseg){t, thread};
  r->open[thread] = (uint32_t)++r->nseg;
  return (long)r->nseg - 1;
}

/* A captured call: a new body element of its thread's open capture, or a member of the element
 * of its group and communicator in that capture. */
static void add_captured(struct ncs_replay *r, const struct ncs_call *c) {
  const char *kname = ncs_kernel_op_of_call(c->op);
  int op = kname ? op_slot(r, kname, strlen(kname)) : -1;
  if (op < 0) return;
  long seg = open_seg(r, c->thread, c->t_enter, 1);
  if (seg < 0 || ncs_grow((void **)&r->mem, &r->capmem, r->nmem + 1, sizeof *r->mem) != 0) return;
  int n = c->comm < r->ncomm && r->nranks[c->comm] > 0 ? r->nranks[c->comm] : 1;
  uint32_t dev = c->comm < r->ncomm ? (uint32_t)r->dev[c->comm] : 0;
  r->mem[r->nmem] = (struct rmem){{c->op, c->comm, c->datatype, (uint32_t)n, c->count, ncs_rule_bytes(c->count, c->datatype),
                                   ncs_rule_S(c->op, c->count, c->datatype, n), c->redop, c->flags, c->thread, 1, c->tcall}, 0};
  uint64_t group = c->depth > 0 ? c->group : 0;
  size_t e = r->nel;
  for (size_t i = r->nel, k = 0; group && i-- > 0 && k < 64 && r->el[i].seg == (uint32_t)seg && r->el[i].group == group; k++)
    if (r->el[i].comm == c->comm) { e = i; break; }
  if (e == r->nel) {
    if (ncs_grow((void **)&r->el, &r->capel, r->nel + 1, sizeof *r->el) != 0) return;
    r->el[r->nel++] = (struct relem){op, (uint32_t)seg, c->comm, (uint32_t)r->nmem, (uint32_t)r->nmem, 0, dev, group};
    r->sum.op[op].elements++;
  } else {
    r->mem[r->el[e].tail].next = (uint32_t)r->nmem + 1;
    r->el[e].tail = (uint32_t)r->nmem;
  }
  r->el[e].n++;
  if (!r->sum.captured) r->t0 = c->t_enter;
  r->sum.captured++;
  r->sum.op[op].captured++;
  r->nmem++;
}

int ncs_replay_calls(struct ncs_replay *r, const struct ncs_call *x, size_t n) {
  size_t i = 0;
  if (!r->nthr) /* no capture opened yet: an uncaptured call has none to end */
    while (i < n && !(x[i].flags & NCS_CALL_F_CAPTURED)) i++;
  for (; i < n; i++) {
    const struct ncs_call *c = &x[i];
    int kind = ncs_op_kind(c->op);
    if (!(c->flags & NCS_CALL_F_CAPTURED)) { /* an uncaptured collective ends its thread's capture */
      if (c->thread < r->nthr && r->open[c->thread] && (kind == NCS_KIND_COLL || kind == NCS_KIND_P2P)) r->open[c->thread] = 0;
      continue;
    }
    if (ncs_rc_ok(c->rc) && (kind == NCS_KIND_COLL || kind == NCS_KIND_P2P)) add_captured(r, c);
  }
  return r->nthr != 0;
}

/* Before the first capture only the latest KEEP..2*KEEP entries of a list are kept: the list that,
 * before each entry, keeps its latest KEEP once it holds 2 * KEEP. The GPU windows and the NCCL
 * kernels are each kept in a ring of 2 * KEEP until then: that list after n entries is the latest
 * n of them up to 2 * KEEP, past that the latest KEEP + (n - 1) % KEEP + 1. A ring becomes that
 * list, in order and in place, once a capture began (at its next entry, or at solve). Before
 * (through cce08bc) the kernels' list moved its latest KEEP down each time it held 2 * KEEP: 32 M
 * of memmove in 1 M kernels. */
#define RING (2 * KEEP)
static void reverse(char *a, size_t n, size_t size) {
  char t[32];
  for (size_t i = 0; i < n / 2; i++) {
    memcpy(t, a + i * size, size);
    memcpy(a + i * size, a + (n - 1 - i) * size, size);
    memcpy(a + (n - 1 - i) * size, t, size);
  }
}
static void settle(void *arr, size_t *n, size_t size, int *lin) {
  char *a = arr;
  if (*lin) return;
  *lin = 1;
  if (*n <= RING) return; /* never wrapped: a list already */
  size_t h = *n & (RING - 1), kept = KEEP + (*n - 1) % KEEP + 1; /* h: the oldest entry */
  reverse(a, h, size); reverse(a + h * size, RING - h, size); reverse(a, RING, size); /* rotated: oldest first */
  memmove(a, a + (RING - kept) * size, kept * size);
  *n = kept;
}
_Static_assert(sizeof(struct rwin) <= 32 && sizeof(struct rkern) <= 32, "reverse's swap");
static void settle_ring(struct ncs_replay *r) {
  settle(r->w, &r->nw, sizeof *r->w, &r->wlin);
  settle(r->k, &r->nk, sizeof *r->k, &r->klin);
}

/* A window that is not a plain ring write: the ring grows, or a capture began (the list). */
__attribute__((noinline)) static int push_window(struct ncs_replay *r, uint64_t s, uint64_t e) {
  if (!r->wlin && !r->sum.captured) { /* the ring grows by doubling (powers of two) up to RING */
    if (ncs_grow((void **)&r->w, &r->capw, r->nw + 1, sizeof *r->w) != 0) return -1;
    r->w[r->nw++] = (struct rwin){s, e};
    return 0;
  }
  settle_ring(r);
  if (ncs_grow((void **)&r->w, &r->capw, r->nw + 1, sizeof *r->w) != 0) return -1;
  r->w[r->nw++] = (struct rwin){s, e};
  return 0;
}

void ncs_replay_gpu_times(struct ncs_replay *r, const struct ncs_gpu_time *g, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (!r->wlin && !r->sum.captured) { /* the ring: windows written in place while it has room, its
                                           state in locals (the stores to w[] would reload it) */
      struct rwin *w = r->w;
      size_t nw = r->nw, capw = r->capw;
      int seen = r->gpu_seen;
      for (; i < n && (nw < capw || nw >= RING); i++) {
        if (g[i].flags || g[i].gpu_end < g[i].gpu_start) continue;
        seen = 1;
        w[nw++ & (RING - 1)] = (struct rwin){g[i].gpu_start, g[i].gpu_end};
      }
      r->nw = nw;
      r->gpu_seen = seen;
      if (i == n) return;
    }
    if (g[i].flags || g[i].gpu_end < g[i].gpu_start) continue;
    r->gpu_seen = 1;
    if (push_window(r, g[i].gpu_start, g[i].gpu_end) != 0) return; /* the ring grows, or the list */
  }
}

/* Kernel k as kept: its end (UINT64_MAX when start + duration overflows), its op slot by name
 * (names: name_op[0..nname)). */
static inline struct rkern kern_in(const int8_t *name_op, uint32_t nname, const struct ncs_kernel *k) {
  uint64_t e = k->start + k->duration;
  if (e < k->start) e = UINT64_MAX;
  return (struct rkern){k->start, e, k->name < nname ? name_op[k->name] - 1 : -1, 0, k->device + 1};
}
static inline struct rkern kern_of(const struct ncs_replay *r, const struct ncs_kernel *k) { return kern_in(r->name_op, r->nname, k); }
/* An NCCL kernel that is not a plain ring write: the ring grows (by doubling up to RING), or a
 * capture began (the list). */
__attribute__((noinline)) static void push_kernel(struct ncs_replay *r, const struct ncs_kernel *k) {
  if (r->klin || r->sum.captured) settle_ring(r);
  if (ncs_grow((void **)&r->k, &r->capk, r->nk + 1, sizeof *r->k) != 0) return;
  r->k[r->nk++] = kern_of(r, k);
}
void ncs_replay_add_kernels(struct ncs_replay *r, const struct ncs_kernel *k, size_t n) {
  if (n) r->kact_seen = 1;
  for (size_t i = 0; i < n; i++) {
    if (!r->klin && !r->sum.captured) { /* the ring: kernels written in place while it has room,
                                           its state in locals */
      struct rkern *a = r->k;
      size_t nk = r->nk, cap = r->capk;
      const int8_t *name_op = r->name_op;
      uint32_t nname = r->nname;
      /* while it has room (nk < cap), or at its full size (nk >= RING: then to the run's end,
       * no test per kernel) */
      for (; i < n && nk < cap; i++)
        if (k[i].kclass == NCS_KCLASS_NCCL) a[nk++ & (RING - 1)] = kern_in(name_op, nname, &k[i]);
      if (nk >= RING)
        for (; i < n; i++)
          if (k[i].kclass == NCS_KCLASS_NCCL) a[nk++ & (RING - 1)] = kern_in(name_op, nname, &k[i]);
      r->nk = nk;
      if (i == n) return;
    }
    if (k[i].kclass == NCS_KCLASS_NCCL) push_kernel(r, &k[i]);
  }
}

int ncs_replay_add_raw(struct ncs_replay *r, const struct ncs_raw *x) {
  struct ncs_rbuf rb;
  if (x->type == NCS_REC_KERNEL) {
    struct ncs_kernel k;
    if (ncs_dec_kernel(ncs_rbuf_on(&rb, x->body, x->len), &k) != 0) return 1;
    ncs_replay_add_kernels(r, &k, 1);
    return 1;
  }
  if (x->type == NCS_REC_KERNEL_NAME) {
    struct ncs_kernel_name k;
    if (ncs_dec_kernel_name(ncs_rbuf_on(&rb, x->body, x->len), &k) != 0 || k.id >= MAX_NAME_ID) return 1;
    if (k.id >= r->nname) {
      uint32_t n = r->nname ? r->nname : 64;
      while (n <= k.id) n *= 2;
      int8_t *p = realloc(r->name_op, n);
      if (!p) return 1;
      memset(p + r->nname, 0, n - r->nname);
      r->name_op = p;
      r->nname = n;
    }
    k.name[sizeof k.name - 1] = 0;
    size_t len;
    const char *p = k.kclass == NCS_KCLASS_NCCL ? ncs_kernel_op(k.name, &len) : NULL;
    int op = p ? op_slot(r, p, len) : -1;
    r->name_op[k.id] = (int8_t)(op + 1);
    return 1;
  }
  if (x->type == NCS_REC_KERNEL_STATUS) {
    struct ncs_kernel_status s;
    if (ncs_dec_kernel_status(ncs_rbuf_on(&rb, x->body, x->len), &s) != 0) return 1;
    r->kact_on = s.state == NCS_KSTATE_ON;
    return 1;
  }
  return 0;
}

static int cmp_kern(const void *a, const void *b) {
  const struct rkern *x = a, *y = b;
  return x->s < y->s ? -1 : x->s > y->s ? 1 : x->e < y->e ? -1 : x->e > y->e;
}
static int cmp_win(const void *a, const void *b) {
  const struct rwin *x = a, *y = b;
  return x->s < y->s ? -1 : x->s > y->s ? 1 : x->e < y->e ? -1 : x->e > y->e;
}
static uint64_t overlap(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  uint64_t s = a > c ? a : c, e = b < d ? b : d;
  return e > s ? e - s : 0;
}
/* The first kernel starting at or after t. */
static size_t first_at(const struct ncs_replay *r, uint64_t t) {
  size_t lo = 0, hi = r->nk;
  while (lo < hi) { size_t m = lo + (hi - lo) / 2; if (r->k[m].s < t) lo = m + 1; else hi = m; }
  return lo;
}

/* GPU interval w claims its call's kernel: the free one it overlaps most (the nearest start
 * when none overlaps), among those starting within TOL_NS of it. A group's interval is one per
 * stream the group used (docs/FORMAT.md GPU_TIME), and NCCL launches one kernel per stream of a
 * group: the same rule. */
static void claim(struct ncs_replay *r, const struct rwin *w) {
  size_t i = first_at(r, w->s > TOL_NS ? w->s - TOL_NS : 0), best = r->nk;
  uint64_t best_ov = 0, best_d = UINT64_MAX;
  for (; i < r->nk && r->k[i].s <= w->e + TOL_NS; i++) {
    const struct rkern *k = &r->k[i];
    if (k->tag) continue;
    uint64_t ov = overlap(w->s, w->e, k->s, k->e), d = k->s > w->s ? k->s - w->s : w->s - k->s;
    if (ov > best_ov || (ov == best_ov && d < best_d)) { best = i; best_ov = ov; best_d = d; }
  }
  if (best < r->nk) r->k[best].tag = 1;
}

/* An element by (op, device, capture start, capture, index); a run: one op's elements of one
 * capture on one device. */
struct ekey { uint32_t op, dev, seg; uint64_t t; uint32_t e; };
struct run { uint32_t op, dev, seg; uint64_t t; uint32_t start, n, at; uint64_t kernels; };
static int cmp_ekey(const void *a, const void *b) {
  const struct ekey *x = a, *y = b;
  if (x->op != y->op) return x->op < y->op ? -1 : 1;
  if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  if (x->seg != y->seg) return x->seg < y->seg ? -1 : 1;
  return x->e < y->e ? -1 : x->e > y->e;
}

/* Among runs [lo, hi) of one op (sorted by device, then capture start): the latest run on device
 * dev (0: the captures whose device is not known) begun at or before t; NULL when none. */
static struct run *latest_run(struct run *runs, size_t lo, size_t hi, uint32_t dev, uint64_t t) {
  size_t a = lo, b = hi;
  while (a < b) { size_t m = a + (b - a) / 2; if (runs[m].dev < dev || (runs[m].dev == dev && runs[m].t <= t)) a = m + 1; else b = m; }
  return a > lo && runs[a - 1].dev == dev ? &runs[a - 1] : NULL;
}

int ncs_replay_solve(struct ncs_replay *r, struct ncs_replay_sum *out) {
  struct ncs_replay_sum *s = &r->sum;
  s->counted = 0;
  s->why_not = NULL;
  if (!s->captured) { *out = *s; return 0; }
  if (!r->kact_seen || !r->kact_on) s->why_not = "no kernel activity: replays run no NCCL call, only kernels show them";
  else if (!r->gpu_seen) s->why_not = "calls timed on the host: their kernels cannot be told from replays";
  if (s->why_not) { *out = *s; return 0; }
  settle_ring(r);
  s->counted = 1;
  if (r->nk > 1) qsort(r->k, r->nk, sizeof *r->k, cmp_kern);
  if (r->nw > 1) qsort(r->w, r->nw, sizeof *r->w, cmp_win);
  for (size_t i = 0; i < r->nw; i++) claim(r, &r->w[i]);
  /* the bodies: per op and capture, its elements in capture order (a run of order[]) */
  struct ekey *order = r->nel ? malloc(r->nel * sizeof *order) : NULL;
  struct run *runs = r->nel ? malloc(r->nel * sizeof *runs) : NULL;
  size_t nruns = 0, first[NCS_REPLAY_OPS + 1] = {0};
  int rc = r->nel && (!order || !runs) ? -1 : 0;
  for (size_t e = 0; e < r->nel; e++) /* each member knows how many calls its kernel runs */
    for (uint32_t m = r->el[e].head + 1; m; m = r->mem[m - 1].next) r->mem[m - 1].c.members = r->el[e].n;
  for (size_t e = 0; rc == 0 && e < r->nel; e++)
    order[e] = (struct ekey){(uint32_t)r->el[e].op, r->el[e].dev, r->el[e].seg, r->seg[r->el[e].seg].t, (uint32_t)e};
  if (rc == 0 && r->nel > 1) qsort(order, r->nel, sizeof *order, cmp_ekey);
  for (size_t e = 0; rc == 0 && e < r->nel; e++) {
    if (!nruns || runs[nruns - 1].op != order[e].op || runs[nruns - 1].dev != order[e].dev || runs[nruns - 1].seg != order[e].seg)
      runs[nruns++] = (struct run){order[e].op, order[e].dev, order[e].seg, order[e].t, (uint32_t)e, 0, 0, 0};
    runs[nruns - 1].n++;
  }
  for (size_t i = 0, o = 0; o <= NCS_REPLAY_OPS; o++) { /* op o's runs: [first[o], first[o + 1]) */
    while (i < nruns && runs[i].op < o) i++;
    first[o] = i;
  }
  for (size_t i = 0; rc == 0 && i < r->nk; i++) {
    struct rkern *k = &r->k[i];
    if (k->tag || k->s < r->t0) continue;
    /* the latest capture of its op that began before it started, among those on its device;
       when none is on it, among those whose device is not known; when none, among all */
    struct run *u = NULL;
    if (k->op >= 0) {
      size_t lo = first[k->op], hi = first[k->op + 1];
      if (latest_run(runs, lo, hi, k->dev, UINT64_MAX)) u = latest_run(runs, lo, hi, k->dev, k->s);
      else if (latest_run(runs, lo, hi, 0, UINT64_MAX)) u = latest_run(runs, lo, hi, 0, k->s);
      else
        for (size_t j = lo; j < hi; j++) /* a device no captured call's communicator is on: any capture */
          if (runs[j].t <= k->s && (!u || runs[j].t >= u->t)) u = &runs[j];
    }
    if (!u) { s->unexplained++; continue; }
    uint32_t e = order[u->start + u->at].e;
    u->at = u->at + 1 == u->n ? 0 : u->at + 1;
    u->kernels++;
    k->tag = 2 + e;
    s->kernels++;
    s->calls += r->el[e].n;
    s->op[k->op].kernels++;
    s->op[k->op].calls += r->el[e].n;
  }
  for (int o = 0; o < s->nops; o++) {
    struct ncs_replay_op *op = &s->op[o];
    op->whole = 1;
    op->sizes_exact = 1;
    const struct ncs_replay_call *one = NULL;
    for (size_t u = first[o]; rc == 0 && u < first[o + 1]; u++) {
      if (runs[u].kernels % runs[u].n) op->whole = 0;
      for (uint32_t j = 0; j < runs[u].n; j++)
        for (uint32_t m = r->el[order[runs[u].start + j].e].head + 1; m; m = r->mem[m - 1].next) {
          const struct ncs_replay_call *c = &r->mem[m - 1].c;
          if (!one) one = c;
          else if (c->op != one->op || c->S != one->S || c->n != one->n || c->bytes != one->bytes) op->sizes_exact = 0;
        }
    }
  }
  free(order);
  free(runs);
  if (rc != 0) { s->counted = 0; s->kernels = s->calls = 0; s->why_not = "out of memory"; }
  *out = *s;
  return rc;
}

void ncs_replay_sum_of(const struct ncs_replay *r, struct ncs_replay_sum *out) { *out = r->sum; }

void ncs_replay_each(const struct ncs_replay *r, uint64_t from,
                     void (*fn)(void *ctx, const struct ncs_replay_call *c, uint64_t s, uint64_t e), void *ctx) {
  if (!r->sum.counted) return;
  for (size_t i = 0; i < r->nk; i++) {
    const struct rkern *k = &r->k[i];
    if (k->tag < 2 || k->s < from) continue;
    for (uint32_t m = r->el[k->tag - 2].head + 1; m; m = r->mem[m - 1].next) fn(ctx, &r->mem[m - 1].c, k->s, k->e);
  }
}

void ncs_replay_extra(const struct ncs_replay *r, uint64_t from, void (*fn)(void *ctx, uint64_t s, uint64_t e), void *ctx) {
  if (!r->sum.counted) return;
  size_t w = 0;
  uint64_t ws = 0, we = 0; /* the merged GPU interval being walked: [ws, we) */
  int have_w = 0;
  for (size_t i = 0; i < r->nk;) {
    if (r->k[i].tag < 2 || r->k[i].s < from || r->k[i].e <= r->k[i].s) { i++; continue; }
    uint64_t s = r->k[i].s, e = r->k[i].e; /* merge the replayed kernels overlapping it */
    for (i++; i < r->nk; i++) {
      const struct rkern *k = &r->k[i];
      if (k->tag < 2 || k->s < from || k->e <= k->s) continue;
      if (k->s > e) break;
      if (k->e > e) e = k->e;
    }
    /* [s, e) minus the merged GPU intervals (kernels and intervals are sorted by start) */
    while (s < e) {
      while (!have_w || we <= s) {
        if (w >= r->nw) { have_w = 0; break; }
        ws = r->w[w].s; we = r->w[w].e; w++;
        while (w < r->nw && r->w[w].s <= we) { if (r->w[w].e > we) we = r->w[w].e; w++; }
        have_w = we > ws;
      }
      if (!have_w || ws >= e) { fn(ctx, s, e); break; }
      if (ws > s) fn(ctx, s, ws);
      s = we;
    }
  }
}
