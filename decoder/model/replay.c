/* replay.c — CUDA-graph replays of one process: captured calls paired with the NCCL kernels no
 * uncaptured call explains (contract and rule in replay.h, docs/METRICS.md "Graph replays"). */
#include "model/replay.h"

#include <stdlib.h>
#include <string.h>

#include "model/knames.h"
#include "model/rules.h"
#include "ncclscope/encode.h"
#include "ncclscope/format.h"
#include "ncclscope/ops.h"

#define KEEP 4096                 /* before the first capture: at least this many kept */
#define TOL_NS 1000000ull         /* how far a call's kernel may lie outside its GPU interval
                                     (two clock conversions: events and CUPTI, docs/SHIM.md) */
#define MAX_NAME_ID 65536

struct rkern { uint64_t s, e; int32_t op; uint32_t tag; }; /* tag: 0 free, 1 a call's, 2 + element: a replay */
struct rwin { uint64_t s, e; uint32_t group; };
struct relem { int32_t op; uint32_t first, n; };             /* members [first, first + n) */
struct ncs_replay {
  struct rkern *k; size_t nk, capk;
  struct rwin *w; size_t nw, capw;
  struct ncs_replay_call *mem; size_t nmem, capmem;
  struct relem *el; size_t nel, capel;
  int8_t *name_op; uint32_t nname;  /* KERNEL_NAME id -> op slot + 1 (0: not NCCL / unknown) */
  int32_t *nranks; uint32_t ncomm;
  uint64_t t0;                      /* the first captured call's entry */
  uint32_t last_thread; uint64_t last_group; /* the group the last captured call was in (0: none) */
  int kact_on, kact_seen, gpu_seen;
  struct ncs_replay_sum sum;
};

struct ncs_replay *ncs_replay_new(void) { return calloc(1, sizeof(struct ncs_replay)); }

void ncs_replay_free(struct ncs_replay *r) {
  if (!r) return;
  free(r->k); free(r->w); free(r->mem); free(r->el); free(r->name_op); free(r->nranks);
  free(r);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t c = *cap ? *cap * 2 : 256;
  while (c < need) c *= 2;
  void *q = realloc(*p, c * elem);
  if (!q) return -1;
  *p = q;
  *cap = c;
  return 0;
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

void ncs_replay_comm(struct ncs_replay *r, uint32_t comm, int32_t nranks) {
  if (comm >= 65536) return;
  if (comm >= r->ncomm) {
    uint32_t n = r->ncomm ? r->ncomm : 8;
    while (n <= comm) n *= 2;
    int32_t *p = realloc(r->nranks, n * sizeof *p);
    if (!p) return;
    memset(p + r->ncomm, 0, (n - r->ncomm) * sizeof *p);
    r->nranks = p;
    r->ncomm = n;
  }
  r->nranks[comm] = nranks;
}

/* A captured call: a new body element, or a member of the captured group the last one is in. */
static void add_captured(struct ncs_replay *r, const struct ncs_call *c) {
  const char *kname = ncs_kernel_op_of_call(c->op);
  int op = kname ? op_slot(r, kname, strlen(kname)) : -1;
  if (op < 0) return;
  if (grow((void **)&r->mem, &r->capmem, r->nmem + 1, sizeof *r->mem) != 0) return;
  int n = c->comm < r->ncomm && r->nranks[c->comm] > 0 ? r->nranks[c->comm] : 1;
  r->mem[r->nmem] = (struct ncs_replay_call){c->op, c->comm, c->datatype, (uint32_t)n, c->count,
                                             ncs_rule_bytes(c->count, c->datatype), ncs_rule_S(c->op, c->count, c->datatype, n)};
  uint64_t group = c->depth > 0 ? c->group : 0;
  if (!r->sum.captured) r->t0 = c->t_enter;
  r->sum.captured++;
  r->sum.op[op].captured++;
  if (group && r->nel && group == r->last_group && c->thread == r->last_thread) {
    r->el[r->nel - 1].n++;
  } else {
    if (grow((void **)&r->el, &r->capel, r->nel + 1, sizeof *r->el) != 0) return;
    r->el[r->nel++] = (struct relem){op, (uint32_t)r->nmem, 1};
    r->sum.op[op].elements++;
  }
  r->nmem++;
  r->last_group = group;
  r->last_thread = c->thread;
}

void ncs_replay_calls(struct ncs_replay *r, const struct ncs_call *x, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const struct ncs_call *c = &x[i];
    if (!(c->flags & NCS_CALL_F_CAPTURED) || !ncs_rc_ok(c->rc)) continue;
    int kind = ncs_op_kind(c->op);
    if (kind == NCS_KIND_COLL || kind == NCS_KIND_P2P) add_captured(r, c);
  }
}

/* Before the first capture only the latest KEEP..2*KEEP entries of a list are kept. */
#define PRUNE(r, arr, cnt) do { \
    if (!(r)->sum.captured && (cnt) >= 2 * KEEP) { \
      memmove((arr), (arr) + (cnt) - KEEP, KEEP * sizeof *(arr)); \
      (cnt) = KEEP; } } while (0)

void ncs_replay_gpu_times(struct ncs_replay *r, const struct ncs_gpu_time *g, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (g[i].flags || g[i].gpu_end < g[i].gpu_start) continue;
    r->gpu_seen = 1;
    PRUNE(r, r->w, r->nw);
    if (grow((void **)&r->w, &r->capw, r->nw + 1, sizeof *r->w) != 0) return;
    r->w[r->nw++] = (struct rwin){g[i].gpu_start, g[i].gpu_end, g[i].kind == NCS_GPU_KIND_GROUP};
  }
}

int ncs_replay_add_raw(struct ncs_replay *r, const struct ncs_raw *x) {
  struct ncs_rbuf rb;
  if (x->type == NCS_REC_KERNEL) {
    struct ncs_kernel k;
    if (ncs_dec_kernel(ncs_rbuf_on(&rb, x->body, x->len), &k) != 0) return 1;
    r->kact_seen = 1;
    if (k.kclass != NCS_KCLASS_NCCL) return 1;
    PRUNE(r, r->k, r->nk);
    if (grow((void **)&r->k, &r->capk, r->nk + 1, sizeof *r->k) != 0) return 1;
    int op = k.name < r->nname ? r->name_op[k.name] - 1 : -1;
    uint64_t e = k.start + k.duration < k.start ? UINT64_MAX : k.start + k.duration;
    r->k[r->nk++] = (struct rkern){k.start, e, op, 0};
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
 * when none overlaps), among those starting within TOL_NS of it; a group's claims every free
 * kernel at least half inside it. */
static void claim(struct ncs_replay *r, const struct rwin *w) {
  size_t i = first_at(r, w->s > TOL_NS ? w->s - TOL_NS : 0), best = r->nk;
  uint64_t best_ov = 0, best_d = UINT64_MAX;
  for (; i < r->nk && r->k[i].s <= w->e + TOL_NS; i++) {
    struct rkern *k = &r->k[i];
    if (k->tag) continue;
    uint64_t ov = overlap(w->s, w->e, k->s, k->e), len = k->e - k->s;
    if (w->group) { if (2 * ov >= len && (ov || (k->s >= w->s && k->s <= w->e))) k->tag = 1; continue; }
    uint64_t d = k->s > w->s ? k->s - w->s : w->s - k->s;
    if (ov > best_ov || (ov == best_ov && d < best_d)) { best = i; best_ov = ov; best_d = d; }
  }
  if (best < r->nk) r->k[best].tag = 1;
}

int ncs_replay_solve(struct ncs_replay *r, struct ncs_replay_sum *out) {
  struct ncs_replay_sum *s = &r->sum;
  s->counted = 0;
  s->why_not = NULL;
  if (!s->captured) { *out = *s; return 0; }
  if (!r->kact_seen || !r->kact_on) s->why_not = "no kernel activity: replays run no NCCL call, only kernels show them";
  else if (!r->gpu_seen) s->why_not = "calls timed on the host: their kernels cannot be told from replays";
  if (s->why_not) { *out = *s; return 0; }
  s->counted = 1;
  if (r->nk > 1) qsort(r->k, r->nk, sizeof *r->k, cmp_kern);
  if (r->nw > 1) qsort(r->w, r->nw, sizeof *r->w, cmp_win);
  for (size_t i = 0; i < r->nw; i++) claim(r, &r->w[i]);
  /* the body of each op: its elements in capture order */
  uint32_t *body[NCS_REPLAY_OPS] = {0};
  size_t nb[NCS_REPLAY_OPS] = {0}, at[NCS_REPLAY_OPS] = {0};
  int rc = 0;
  for (int o = 0; o < s->nops; o++)
    if (s->op[o].elements && !(body[o] = malloc(s->op[o].elements * sizeof *body[o]))) rc = -1;
  for (size_t e = 0; rc == 0 && e < r->nel; e++) body[r->el[e].op][nb[r->el[e].op]++] = (uint32_t)e;
  for (size_t i = 0; rc == 0 && i < r->nk; i++) {
    struct rkern *k = &r->k[i];
    if (k->tag || k->s < r->t0) continue;
    if (k->op < 0 || !nb[k->op]) { s->unexplained++; continue; }
    uint32_t e = body[k->op][at[k->op]];
    at[k->op] = at[k->op] + 1 == nb[k->op] ? 0 : at[k->op] + 1;
    k->tag = 2 + e;
    s->kernels++;
    s->calls += r->el[e].n;
    s->op[k->op].kernels++;
    s->op[k->op].calls += r->el[e].n;
  }
  for (int o = 0; o < s->nops; o++) {
    struct ncs_replay_op *op = &s->op[o];
    op->whole = !op->elements || op->kernels % op->elements == 0;
    op->sizes_exact = 1;
    const struct ncs_replay_call *first = NULL;
    for (size_t e = 0; e < nb[o] && body[o]; e++) {
      const struct relem *x = &r->el[body[o][e]];
      for (uint32_t m = 0; m < x->n; m++) {
        const struct ncs_replay_call *c = &r->mem[x->first + m];
        if (!first) first = c;
        else if (c->op != first->op || c->S != first->S || c->n != first->n || c->bytes != first->bytes) op->sizes_exact = 0;
      }
    }
    free(body[o]);
  }
  if (rc != 0) { s->counted = 0; s->kernels = s->calls = 0; s->why_not = "out of memory"; }
  *out = *s;
  return rc;
}

void ncs_replay_each(const struct ncs_replay *r, uint64_t from,
                     void (*fn)(void *ctx, const struct ncs_replay_call *c, uint64_t s, uint64_t e), void *ctx) {
  if (!r->sum.counted) return;
  for (size_t i = 0; i < r->nk; i++) {
    const struct rkern *k = &r->k[i];
    if (k->tag < 2 || k->s < from) continue;
    const struct relem *x = &r->el[k->tag - 2];
    for (uint32_t m = 0; m < x->n; m++) fn(ctx, &r->mem[x->first + m], k->s, k->e);
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
