/* gate_samples.c — per-call samples and block shares for the CI gate (contract in
 * gate_samples.h). */
#include "analysis/gate_samples.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/mix.h"
#include "model/ivunion.h"

#define FINE_MAX 4096
#define FINE_NS0 1000000 /* 1 ms blocks to start with */
/* job-clock ns (signed) to the union's unsigned ns and back, order kept */
#define TO_U(t) ncs_ivu_of_signed(t)
#define TO_S(u) ncs_ivu_to_signed(u)
/* a call's time in us, from its ns */
#define US(ns) ((double)(ns) / 1e3)
/* how far ahead of a call's open collective the entry of a later call is fetched (open_get) */
#define GS_AHEAD 16

struct ncs_gs_file {
  struct ncs_gsamples *g;
  int file;
  uint64_t ncall;           /* its collectives and point-to-point calls so far: a call's index */
  int64_t t0, t_end;        /* the union's first committed start (the earliest start but for
                               late intervals), latest end */
  struct ncs_ivu u;         /* the union of its calls' intervals, exact across threads
                               (model/ivunion.h); its committed pieces go to the blocks */
  int have;                 /* t0 is set: a piece was committed */
  int64_t block_ns;         /* width of a fine block */
  int64_t blk, blk_s, blk_e; /* the fine block the last interval ended in, [blk_s, blk_e) on
                                the job clock (blk_e <= blk_s: none yet) */
  double comm_ns[FINE_MAX]; /* communication time in each fine block from t0 */
};

/* A collective whose ranks are still coming in (24 bytes: every later file's call of it reads
 * and updates one, so a window of a run's seqs is walked once a file; 40 bytes before): the
 * quickest call so far, as key = (not GPU-timed) << 63 | its time in ns (ns > 0: one compare
 * orders GPU-timed first, then the least time; its busbw, the time in us and the logarithms are
 * taken when it becomes a sample: ns orders the calls as us would, without a division a call),
 * its ranks still to come (rem 0: no collective open at that seq). What only the quickest call
 * changes (its bus bytes, its file for ties) sits in a ring of its own (ncs_gs_quick). */
struct ncs_gs_open {
  int64_t start;  /* the earliest start of its ranks' calls: the collective's time */
  uint64_t key;
  uint32_t rem;
  uint16_t op;
  uint8_t bucket;
};
struct ncs_gs_quick {
  double bb;      /* the quickest call's bus bytes */
  int file;       /* its file (ties of key: the lowest file) */
};

/* One communicator's open collectives, indexed by seq: the window [lo, hi) of seqs from the
 * lowest open one to one past the highest, in a ring of cap (a power of two) entries at
 * seq & (cap - 1). The ranks of a communicator issue its seqs in the same order, so the window
 * holds the seqs between the slowest file read so far and the fastest one, and a call's entry
 * is next to its previous call's. */
struct ncs_gs_comm {
  uint64_t comm_id, lo, hi;
  size_t cap;
  struct ncs_gs_open *e;
  struct ncs_gs_quick *q; /* [cap], at the same places as e */
};

struct ncs_gsamples *ncs_gsamples_new(int nfiles) {
  struct ncs_gsamples *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->last = -1;
  g->nfile = nfiles > 0 ? nfiles : 0;
  if (!(g->file = calloc((size_t)(g->nfile ? g->nfile : 1), sizeof *g->file))) { free(g); return NULL; }
  pthread_mutex_init(&g->mu, NULL);
  return g;
}

void ncs_gsamples_free(struct ncs_gsamples *g) {
  if (!g) return;
  for (int o = 0; o < NCS_OP_LIMIT; o++)
    for (int b = 0; b < NCS_NBUCKETS; b++)
      if (g->row[o][b]) { free(g->row[o][b]->lbw); free(g->row[o][b]->lt); free(g->row[o][b]->smp); free(g->row[o][b]); }
  for (int i = 0; i < g->nfile; i++) {
    if (g->file[i]) ncs_ivu_free(&g->file[i]->u);
    free(g->file[i]);
  }
  free(g->file);
  for (int i = 0; i < g->ncomm; i++) { free(g->comm[i].e); free(g->comm[i].q); }
  free(g->comm);
  free(g->cidx);
  pthread_mutex_destroy(&g->mu);
  free(g);
}

/* The sample's identity: a call's (file, index in the file), a collective's (comm_id, seq). */
static uint64_t key_call(int file, uint64_t idx) { return ncs_mix64(((uint64_t)(uint32_t)file << 40) ^ idx); }
static uint64_t key_coll(uint64_t comm_id, uint64_t seq) { return ncs_mix64(ncs_mix64(comm_id) + seq) ^ 0x8000000000000000ull; }

/* Orders by hash (bottom-k), then time (a total order whatever the hashes). */
static int cmp_hash(const void *a, const void *b) {
  const struct ncs_gs_samp *x = a, *y = b;
  if (x->h != y->h) return x->h < y->h ? -1 : 1;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  if (x->lbw != y->lbw) return x->lbw < y->lbw ? -1 : 1;
  return x->lt < y->lt ? -1 : x->lt > y->lt;
}
/* Orders by time, then hash (the run's order). */
static int cmp_time(const void *a, const void *b) {
  const struct ncs_gs_samp *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return cmp_hash(a, b);
}

/* Keeps the NCS_GS_CAP samples of smallest hash of s (sorting by hash), the cut at the largest. */
static void row_cut(struct ncs_gs_row *s) {
  qsort(s->smp, (size_t)s->nsmp, sizeof *s->smp, cmp_hash);
  s->nsmp = NCS_GS_CAP;
  s->cut = s->smp[NCS_GS_CAP - 1].h;
  s->cutting = 1;
}

/* A sample of bb bus bytes in ns ns (stored as the logarithms of its busbw GB/s and time us,
 * the busbw as the event's, analysis/jobsum.h) at job time start with identity hash h; past
 * the cut (a larger hash than NCS_GS_CAP samples already seen) it is dropped at once. */
static void row_add(struct ncs_gsamples *g, uint32_t op, int bucket, double bb, int64_t ns, int64_t start, uint64_t h) {
  struct ncs_gs_row **pp = &g->row[op][bucket], *s = *pp;
  if (!s) {
    if (!(s = calloc(1, sizeof *s))) return;
    *pp = s;
  }
  s->seen++;
  if (s->cutting && h > s->cut) return;
  if (s->nsmp == s->cap) {
    int nc = s->cap ? 2 * s->cap : 256;
    struct ncs_gs_samp *m = nc <= 2 * NCS_GS_CAP ? realloc(s->smp, (size_t)nc * sizeof *m) : NULL;
    if (!m) return;
    s->smp = m; s->cap = nc;
  }
  s->smp[s->nsmp++] = (struct ncs_gs_samp){.start = start, .h = h, .lbw = log(ncs_busbw_gbps(bb, ns)), .lt = log(US(ns))};
  if (s->nsmp == 2 * NCS_GS_CAP) row_cut(s);
}

/* The row's kept samples in time order into lbw and lt (a row that was never cut mostly came in
 * that order: collectives complete in seq order, one pass finds it). */
static void row_close(struct ncs_gs_row *s) {
  if (s->nsmp > NCS_GS_CAP) row_cut(s);
  int i = 1;
  while (i < s->nsmp && cmp_time(&s->smp[i - 1], &s->smp[i]) <= 0) i++;
  if (i < s->nsmp) qsort(s->smp, (size_t)s->nsmp, sizeof *s->smp, cmp_time);
  free(s->lbw); free(s->lt);
  s->n = 0;
  s->lbw = malloc((size_t)(s->nsmp ? s->nsmp : 1) * sizeof *s->lbw);
  s->lt = malloc((size_t)(s->nsmp ? s->nsmp : 1) * sizeof *s->lt);
  if (!s->lbw || !s->lt) { free(s->lbw); free(s->lt); s->lbw = s->lt = NULL; return; }
  for (int i = 0; i < s->nsmp; i++) { s->lbw[i] = s->smp[i].lbw; s->lt[i] = s->smp[i].lt; }
  s->n = s->nsmp;
  free(s->smp); s->smp = NULL; s->nsmp = s->cap = 0;
}

static int v_chunk(void *ctx, uint64_t index, uint64_t dropped, uint32_t flags, uint64_t offset) {
  struct ncs_gs_file *f = ctx;
  ncs_ivu_chunk(&f->u); /* the union's threads (model/ivlanes.h) */
  return 0;
}

static void file_pieces(void *ctx, const uint64_t (*iv)[2], uint32_t n);
void ncs_gsamples_attach(struct ncs_gsamples *g, int file, struct ncs_mux *m) {
  if (file < 0 || file >= g->nfile || m->n >= NCS_MUX_MAX) return;
  struct ncs_gs_file *f = g->file[file];
  if (!f && !(f = g->file[file] = calloc(1, sizeof *f))) return; /* its calls are taken one at a time */
  f->g = g;
  f->file = file;
  f->block_ns = FINE_NS0;
  f->t_end = INT64_MIN;
  ncs_ivu_by_chunk(&f->u);
  f->u.sink = file_pieces; /* the union's committed pieces go to the blocks */
  f->u.sink_ctx = f;
  m->v[m->n++] = (struct ncs_visitor){.ctx = f, .chunk = v_chunk};
}

/* A piece [s, e) outside the block the previous one ended in: coarsens the blocks while e is
 * past the last one, spreads [s, e) over the blocks it covers and notes the block e ends in
 * (the last it covered). A piece starting in the block after that one (the common case) finds
 * its block without a division. */
static void file_close_slow(struct ncs_gs_file *f, int64_t s, int64_t e) {
  int same = 1; /* blk, blk_e are of this block width */
  while (e - f->t0 >= FINE_MAX * f->block_ns) { /* (e - t0) / block_ns >= FINE_MAX */
    for (int i = 0; i < FINE_MAX / 2; i++) f->comm_ns[i] = f->comm_ns[2 * i] + f->comm_ns[2 * i + 1];
    memset(f->comm_ns + FINE_MAX / 2, 0, FINE_MAX / 2 * sizeof *f->comm_ns);
    f->block_ns *= 2;
    same = 0;
  }
  int64_t b = same && f->blk_e > f->blk_s && s >= f->blk_e && s - f->blk_e < f->block_ns ? f->blk + 1 : (s - f->t0) / f->block_ns;
  int64_t bs = f->t0 + b * f->block_ns;
  for (int64_t t = s;; b++, bs += f->block_ns) {
    int64_t bend = bs + f->block_ns, u = e < bend ? e : bend;
    f->comm_ns[b] += (double)(u - t);
    if (u == e) break;
    t = u;
  }
  f->blk = b; f->blk_s = bs; f->blk_e = bs + f->block_ns;
}

/* Committed pieces of the file's union (the ivunion's sink: disjoint, in time order, none
 * reversed; an empty one, a late interval's, adds nothing): the first sets the window's start.
 * Most pieces lie inside the block the previous one ended in: a piece after that one ends in it
 * (on the union's unsigned ns: TO_U keeps the order and the differences) only when it lies in it
 * (it starts after the previous end, in the block; an empty piece anywhere adds 0), so the run of
 * pieces ending before the block's end is found on their ends alone, and their lengths summed in
 * an integer and added to the block once (a block's
 * time is a sum of integer ns below 2^53, exact either way). */
static void file_pieces(void *ctx, const uint64_t (*iv)[2], uint32_t n) {
  struct ncs_gs_file *f = ctx;
  uint64_t be = TO_U(f->blk_e);
  uint32_t i = 0;
  if (f->blk_e <= f->blk_s) be = 0; /* no block yet: no piece is inside */
  for (;;) {
    uint32_t j = i;
    uint64_t sum = 0;
    for (; j < n && iv[j][1] < be; j++) sum += iv[j][1] - iv[j][0];
    if (sum) f->comm_ns[f->blk] += (double)sum;
    if (j == n) return;
    i = j + 1;
    if (iv[j][1] <= iv[j][0]) continue;
    int64_t s = TO_S(iv[j][0]), e = TO_S(iv[j][1]);
    if (!f->have) { f->t0 = s; f->have = 1; }
    file_close_slow(f, s, e);
    be = TO_U(f->blk_e);
  }
}

/* Commits what the file's union still holds (its end). */
static void file_union_end(struct ncs_gs_file *f) {
  if (!f->u.iv && !f->u.n) return;
  ncs_ivu_total(&f->u);
}

/* The communicator comm_id's ring, a new one when absent; NULL out of memory. An index of
 * comm_id -> ring (open addressing, at most half full) finds it; the last one found is tried
 * first (a file's calls are mostly on one communicator). */
static struct ncs_gs_comm *comm_find(struct ncs_gsamples *g, uint64_t comm_id);
static inline __attribute__((always_inline)) struct ncs_gs_comm *comm_get(struct ncs_gsamples *g, uint64_t comm_id) {
  if (g->last >= 0 && g->comm[g->last].comm_id == comm_id) return &g->comm[g->last];
  return comm_find(g, comm_id);
}
/* (comm_get) not the last one looked up */
static __attribute__((noinline)) struct ncs_gs_comm *comm_find(struct ncs_gsamples *g, uint64_t comm_id) {
  size_t mask = g->cidx_cap - 1, j;
  if (g->cidx_cap) {
    for (j = (size_t)(comm_id * 0x9e3779b97f4a7c15ull >> 32) & mask; g->cidx[j]; j = (j + 1) & mask)
      if (g->comm[g->cidx[j] - 1].comm_id == comm_id) { g->last = g->cidx[j] - 1; return &g->comm[g->last]; }
  }
  if (2 * (g->ncomm + 1) > (int)g->cidx_cap) { /* grow the index, then the rings' array */
    size_t nc = g->cidx_cap ? 2 * g->cidx_cap : 16;
    int *t = calloc(nc, sizeof *t);
    struct ncs_gs_comm *c = t ? realloc(g->comm, nc / 2 * sizeof *c) : NULL;
    if (!c) { free(t); return NULL; }
    g->comm = c;
    for (int i = 0; i < g->ncomm; i++) {
      for (j = (size_t)(c[i].comm_id * 0x9e3779b97f4a7c15ull >> 32) & (nc - 1); t[j]; j = (j + 1) & (nc - 1)) {}
      t[j] = i + 1;
    }
    free(g->cidx);
    g->cidx = t; g->cidx_cap = nc; mask = nc - 1;
  }
  for (j = (size_t)(comm_id * 0x9e3779b97f4a7c15ull >> 32) & mask; g->cidx[j]; j = (j + 1) & mask) {}
  g->cidx[j] = g->ncomm + 1;
  g->comm[g->ncomm] = (struct ncs_gs_comm){.comm_id = comm_id};
  g->last = g->ncomm++;
  return &g->comm[g->last];
}

/* Copies the ring's window into a ring of nc entries (nc >= the window, a power of two). */
static int ring_resize(struct ncs_gs_comm *c, size_t nc) {
  struct ncs_gs_open *t = calloc(nc, sizeof *t);
  struct ncs_gs_quick *q = t ? calloc(nc, sizeof *q) : NULL;
  if (!q) { free(t); return -1; }
  for (uint64_t s = c->lo; s < c->hi; s++) {
    t[s & (nc - 1)] = c->e[s & (c->cap - 1)];
    q[s & (nc - 1)] = c->q[s & (c->cap - 1)];
  }
  free(c->e); free(c->q);
  c->e = t; c->q = q; c->cap = nc;
  return 0;
}

/* The open collective (comm_id, seq), a new one (rem 0) when absent; NULL when the windows of
 * all communicators together would pass NCS_GS_OPEN seqs, or out of memory. */
static struct ncs_gs_open *open_widen(struct ncs_gsamples *g, struct ncs_gs_comm *c, uint64_t seq);
static inline __attribute__((always_inline)) struct ncs_gs_open *open_get(struct ncs_gsamples *g, struct ncs_gs_comm *c,
                                                                         uint64_t seq) {
  if (seq - c->lo < c->hi - c->lo) { /* lo <= seq < hi (an empty window holds none) */
    /* a file's next calls take the entries after this one: fetched ahead, as the window (a
     * run's seqs between the slowest file and the fastest: megabytes when whole files are read
     * in turn) is mostly out of cache when a file walks it */
    __builtin_prefetch(&c->e[(seq + GS_AHEAD) & (c->cap - 1)], 1);
    return &c->e[seq & (c->cap - 1)];
  }
  return open_widen(g, c, seq);
}
/* (open_get) seq outside c's window: the window widened to it (an empty one starts at seq) */
static __attribute__((noinline)) struct ncs_gs_open *open_widen(struct ncs_gsamples *g, struct ncs_gs_comm *c, uint64_t seq) {
  if (seq == UINT64_MAX) return NULL;
  if (c->lo == c->hi) c->lo = c->hi = seq;
  uint64_t lo = seq < c->lo ? seq : c->lo, hi = seq < c->hi ? c->hi : seq + 1;
  uint64_t grow = (hi - lo) - (c->hi - c->lo);
  if (hi - lo > (uint64_t)NCS_GS_OPEN || g->open_span + grow > (uint64_t)NCS_GS_OPEN) return NULL;
  if (hi - lo > c->cap) {
    size_t nc = c->cap ? c->cap : 8;
    while (nc < hi - lo) nc *= 2;
    if (ring_resize(c, nc)) return NULL;
  }
  /* the seqs the window takes in are empty (closed ones were cleared) */
  c->lo = lo; c->hi = hi;
  g->open_span += grow;
  return &c->e[seq & (c->cap - 1)];
}

/* Closes an entry of c; the window's ends move in past the empty entries (every entry outside
 * the window is empty). */
static void open_del(struct ncs_gsamples *g, struct ncs_gs_comm *c, struct ncs_gs_open *o) {
  o->rem = 0;
  uint64_t span0 = c->hi - c->lo;
  while (c->lo < c->hi && !c->e[c->lo & (c->cap - 1)].rem) c->lo++;
  while (c->hi > c->lo && !c->e[(c->hi - 1) & (c->cap - 1)].rem) c->hi--;
  g->open_span -= span0 - (c->hi - c->lo);
}

/* The time in ns of an open collective's quickest call (its key less the GPU bit). */
#define KEY_NS(k) ((int64_t)((k) & ~(1ull << 63)))

/* An open collective of c as a sample (its quickest call's bus bytes and time). */
static void open_sample(struct ncs_gsamples *g, const struct ncs_gs_comm *c, const struct ncs_gs_open *o, uint64_t seq) {
  row_add(g, o->op, o->bucket, c->q[seq & (c->cap - 1)].bb, KEY_NS(o->key), o->start, key_coll(c->comm_id, seq));
}

void ncs_gsamples_finish(struct ncs_gsamples *g) {
  if (!g) return;
  /* the collectives still open, by (comm_id, seq) */
  int *ord = g->ncomm ? malloc((size_t)g->ncomm * sizeof *ord) : NULL;
  for (int i = 0; ord && i < g->ncomm; i++) {
    int j = i;
    for (; j > 0 && g->comm[ord[j - 1]].comm_id > g->comm[i].comm_id; j--) ord[j] = ord[j - 1];
    ord[j] = i;
  }
  for (int k = 0; k < g->ncomm; k++) {
    struct ncs_gs_comm *c = &g->comm[ord ? ord[k] : k];
    for (uint64_t s = c->lo; s < c->hi; s++) {
      const struct ncs_gs_open *o = &c->e[s & (c->cap - 1)];
      if (o->rem) open_sample(g, c, o, s);
    }
  }
  free(ord);
  for (int i = 0; i < g->ncomm; i++) { free(g->comm[i].e); free(g->comm[i].q); }
  free(g->comm);
  free(g->cidx);
  g->comm = NULL; g->cidx = NULL; g->ncomm = 0; g->cidx_cap = 0; g->open_span = 0; g->last = -1;
  for (int o = 0; o < NCS_OP_LIMIT; o++)
    for (int b = 0; b < NCS_NBUCKETS; b++)
      if (g->row[o][b] && g->row[o][b]->smp) row_close(g->row[o][b]);
}

/* The communicator's ring a run's calls found last (valid while g->mu is held: only comm_find
 * moves the rings, and its answer replaces this one). */
struct gs_last { uint64_t comm_id; struct ncs_gs_comm *c; };

/* One call that moved data and took time (caller holds g->mu): a sample, or its collective's
 * ranks lined up. coll: a collective of a communicator of several ranks; key as an open
 * collective's (ncs_gs_open); idx: the call's index in its file (a sample's identity). */
static inline __attribute__((always_inline)) void take_call(struct ncs_gsamples *g, const struct ncs_jev *e, int coll,
                                                            uint64_t key, int file, uint64_t idx, struct gs_last *k) {
  const struct ncs_call *c = e->c;
  uint32_t op = c->op, bucket = (uint8_t)e->bucket;
  uint64_t seq = c->seq;
  struct ncs_gs_comm *cm = NULL;
  struct ncs_gs_open *o = NULL;
  if (coll) {
    if (!k->c || k->comm_id != e->comm_id) { k->c = comm_get(g, e->comm_id); k->comm_id = e->comm_id; }
    if ((cm = k->c)) o = open_get(g, cm, seq);
  }
  if (!o || (o->rem && (o->op != op || o->bucket != bucket))) { /* its own sample (or not lined up) */
    row_add(g, op, (int)bucket, e->busbytes, KEY_NS(key), e->start, key_call(file, idx));
    return;
  }
  struct ncs_gs_quick *q = &cm->q[seq & (cm->cap - 1)];
  if (!o->rem) {
    *o = (struct ncs_gs_open){.start = e->start, .key = key, .rem = (uint32_t)e->nranks - 1, .op = (uint16_t)op,
                              .bucket = (uint8_t)bucket};
    *q = (struct ncs_gs_quick){.bb = e->busbytes, .file = file};
    return; /* nranks > 1: more to come */
  }
  if (e->start < o->start) o->start = e->start;
  if (key < o->key || (key == o->key && file < q->file)) { /* the rank that waited least */
    o->key = key; q->bb = e->busbytes; q->file = file;
  }
  if (!--o->rem) {
    open_sample(g, cm, o, seq);
    open_del(g, cm, o);
  }
}

void ncs_gsamples_done(struct ncs_gsamples *g, int file) {
  struct ncs_gs_file *f = file >= 0 && file < g->nfile ? g->file[file] : NULL;
  if (!f) return;
  file_union_end(f);
  pthread_mutex_lock(&g->mu);
  g->late += f->u.late; g->late_ns += f->u.late_ns; g->forced += f->u.forced;
  f->u.late = f->u.late_ns = f->u.forced = 0;
  pthread_mutex_unlock(&g->mu);
}

/* The op ids of collectives and of collectives or point-to-point calls, as bits (ops.h) */
#define GS_COLL_(id, Name, kind, bw) | ((kind) == NCS_KIND_COLL ? 1ull << (id) : 0)
#define GS_MOVE_(id, Name, kind, bw) | ((kind) == NCS_KIND_COLL || (kind) == NCS_KIND_P2P ? 1ull << (id) : 0)
static const uint64_t COLL_OPS = 0 NCCLSCOPE_OPS(GS_COLL_), MOVE_OPS = 0 NCCLSCOPE_OPS(GS_MOVE_);
_Static_assert(NCS_OP_LIMIT <= 64, "op ids fit the masks' 64 bits");
#define IS_MOVE(op) ((op) < 64 && (MOVE_OPS >> (op) & 1))

/* A run's calls in two passes over its collective and point-to-point calls: the first (no lock)
 * takes their intervals into the file's union (per calling thread, ivlanes.h), the second
 * numbers them (a call's index in its file) and takes the ones that moved data and took time
 * (bus bytes > 0: an op with a busbw rule, model/rules.h) to the windows under g->mu. */
void ncs_gsamples_calls(struct ncs_gsamples *g, int file, const struct ncs_jev *e, size_t n) {
  struct ncs_gs_file *f = file >= 0 && file < g->nfile ? g->file[file] : NULL;
  uint64_t idx = 0;
  if (f) {
    int64_t t_end = f->t_end;
    for (size_t i = 0; i < n; i++) {
      const struct ncs_jev *x = &e[i];
      if (!IS_MOVE(x->c->op) || x->end <= x->start) continue;
      ncs_ivu_add(&f->u, x->c->thread, TO_U(x->start), TO_U(x->end));
      if (x->end > t_end) t_end = x->end;
    }
    f->t_end = t_end;
    idx = f->ncall;
  }
  int locked = 0;
  struct gs_last k = {0, NULL};
  for (size_t i = 0; i < n; i++) {
    const struct ncs_jev *x = &e[i];
    uint32_t op = x->c->op;
    if (!IS_MOVE(op)) continue;
    uint64_t id = f ? idx++ : x->c->seq ^ (uint64_t)x->start;
    if (x->end <= x->start || !(x->busbytes > 0)) continue;
    if (!locked) { pthread_mutex_lock(&g->mu); locked = 1; }
    take_call(g, x, (COLL_OPS >> op & 1) && x->nranks > 1, (uint64_t)!x->has_gpu << 63 | (uint64_t)(x->end - x->start),
              file, id, &k);
  }
  if (locked) pthread_mutex_unlock(&g->mu);
  if (f) f->ncall = idx;
}

int ncs_gsamples_shares(const struct ncs_gsamples *g, double **out) {
  *out = NULL;
  if (!g->nfile || !(*out = malloc((size_t)g->nfile * NCS_GS_BLOCKS * sizeof **out))) return 0;
  int n = 0;
  for (int i = 0; i < g->nfile; i++) {
    struct ncs_gs_file *f = g->file[i];
    if (!f) continue;
    file_union_end(f); /* what it still held */
    if (!f->have) continue;
    double span = (double)(f->t_end - f->t0);
    if (span <= 0) continue;
    /* each part [p0, p1) of the window takes the fine blocks' time in proportion to overlap */
    for (int p = 0; p < NCS_GS_BLOCKS; p++) {
      double p0 = span * p / NCS_GS_BLOCKS, p1 = span * (p + 1) / NCS_GS_BLOCKS, comm = 0;
      for (int64_t b = (int64_t)(p0 / f->block_ns); b < FINE_MAX && (double)b * f->block_ns < p1; b++) {
        double b0 = (double)b * f->block_ns, b1 = b0 + f->block_ns;
        double lo = b0 > p0 ? b0 : p0, hi = b1 < p1 ? b1 : p1;
        if (hi > lo) comm += f->comm_ns[b] * (hi - lo) / f->block_ns;
      }
      (*out)[n++] = 100.0 * comm / (p1 - p0);
    }
  }
  /* in time order: every file's first block, then every file's second, ... (the drift's
   * halves are then the first and the second half of every rank's window) */
  int nf = n / NCS_GS_BLOCKS;
  double *t = nf > 1 ? malloc((size_t)n * sizeof *t) : NULL;
  if (t) {
    for (int i = 0; i < nf; i++)
      for (int p = 0; p < NCS_GS_BLOCKS; p++) t[p * nf + i] = (*out)[i * NCS_GS_BLOCKS + p];
    memcpy(*out, t, (size_t)n * sizeof *t);
    free(t);
  }
  return n;
}
