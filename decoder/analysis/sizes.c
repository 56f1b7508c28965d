/* sizes.c — the `sizes` analysis of `ncclscope report`: a per-size table comparable with
 * nccl-tests' rows. One row per (communicator size, op, datatype, reduction, count, placement)
 * over the job: the calls timed, the calls left out as warm-up and as their communicator's first
 * call, mean, median and p99 time, and algbw / busbw from the median (nccl-tests' S and busbw
 * factor: model/rules.h). docs/METRICS.md ("Per-size table") defines every figure.
 *
 * What a row holds, per communicator of a file (the definitions of docs/METRICS.md):
 *   - a collective (ncs_op_kind COLL) that returned ncclSuccess, or a SendRecv: a Send and a
 *     Recv of one count and datatype on one communicator in one group, not captured (nccl-tests
 *     sendrecv_perf; op "SendRecv", S = count x size, busbw factor 1, placement unknown: the
 *     trace records none for Send and Recv; its runs and first call apart from the
 *     communicator's collectives'); inside a group only when every call of its group has the
 *     same key (as
 *     nccl-tests -g makes: one call per GPU), each then taking the group's GPU time (the span of
 *     its GPU_TIME records of kind GROUP, one per stream); other group members are counted
 *     (`grouped`), not timed;
 *   - its communicator's first collective is counted apart (`first`), whatever its key;
 *   - a collective captured into a CUDA graph runs no kernel when made: it stands for its
 *     replays (model/replay.h, solved by `metrics`, read from the job's stages at file_done),
 *     each a call of its key timed on its kernel's device interval (a kernel running several
 *     calls of one captured group on its communicator, nccl-tests -m, gives each its share);
 *     without kernel activity it stands for none;
 *   - calls of one key made one after another on a communicator form a run (a captured call
 *     counting as its replays); the key's steady run is its longest (the earliest of equals);
 *     the key's calls before the steady run's first call are warm-up (`warmup`), the rest are
 *     timed. nccl-tests -G: per size, the sync call and the captured iterations make one run of
 *     1 + N x M x G calls, its timed calls.
 * Time: the call's GPU time (GPU_TIME record: CUDA events around the call on its stream, the
 * device clock) where it has one, its host time (entry to return) otherwise; a row with any
 * GPU-timed call takes its figures from those alone (its host-timed calls are counted:
 * `host_only`), a row with none is labelled host.
 *
 * Contract: each file is read once, files in parallel (per-file state; the job's rows are
 * merged under a lock at file_done). Memory per file: its keys x the samples each holds (at most
 * ROW_CAP each: past it a call is counted, `over_cap`, and not timed), a table of PEND calls
 * awaiting their GPU_TIME (a call pushed out of it keeps its host time), its captured calls (24
 * bytes each) and, at file_done, their replays' times; per job:
 * its rows x at most JOB_CAP samples each (12 bytes: the time and a hash; a full row keeps the
 * samples whose hash is below a threshold it halves: row_add). The table is its result (analysis/sizes.h);
 * render/sizes_render.c prints it: option --sizes all|OP the text table; the JSON always has it
 * (top-level "sizes", docs/JSON.md). Text without --sizes (job->text_only) prints the rows'
 * count alone: then only the rows' keys are kept (no sample, no GPU time, no figure). */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analysis/analysis.h"
#include "base/mix.h"
#include "analysis/sizes.h"
#include "io/grow.h"
#include "model/replay.h"
#include "model/rules.h"
#include "model/stages.h"
#include "ncclscope/format.h"
#include "ncclscope/ops.h"

#define ROW_CAP (1u << 16)  /* samples one (communicator, key) keeps */
#define JOB_CAP (1u << 20)  /* samples one job row keeps */
#define PEND (1u << 14)     /* calls awaiting their GPU_TIME (pend_at) */
#define GPEND (1u << 10)    /* groups awaiting their GPU_TIME (gpend_at) */
#define GMAX 16             /* members a group's time is given to */
#define HOST_BIT (1ull << 63) /* a sample timed on the host (no GPU_TIME came) */
#define UNTIMED UINT64_MAX  /* a group member that got no time of its own */
#define PH_BIT (1ull << 62)   /* (bit 63 clear) a captured call: its index in sfile.ph; after
                                 file_done, a replayed call's sample */
#define IS_PH(v) (((v) >> 62) == 1)

enum { PL_UNKNOWN = NCS_PLACE_UNKNOWN, PL_OUT = NCS_PLACE_OUT, PL_IN = NCS_PLACE_IN };
#define OP_SENDRECV NCS_SIZES_SENDRECV /* a row's op: one Send and one Recv of a group (below) */
#define P2P_COMM (1u << 31)      /* a communicator's SendRecv calls: their own runs and first call */
#define NO_AT UINT32_MAX         /* a group member with no sample (its communicator's first) */

struct key { uint64_t count; uint32_t op, dtype, redop, place; int nranks; };

/* one key on one communicator of a file */
struct crow {
  struct key k;
  uint32_t comm;
  uint64_t *v;              /* samples in call order (ns; HOST_BIT: host-timed) */
  size_t n, cap;
  uint64_t first, over;     /* communicator's first call; calls past ROW_CAP */
  size_t best, steady_at;   /* longest run without captured calls so far; index in v where it starts */
  struct prun { uint32_t s, e; } *prun; /* the runs holding captured calls: [s, e) in v */
  size_t nprun, capprun;
  int32_t next;             /* the row of its communicator's call after its latest one, -1: none yet */
};
/* last: the row of the current run (-1: none); prev: the row of the communicator's latest call,
   whose next predicts this call's row (a training step repeats its keys in one order) */
struct scomm { uint32_t idx; int nranks; int seen; int32_t last, prev; size_t run_len, run_start; uint32_t ph_run; /* prun + 1 */ };
struct ph { uint64_t tcall; uint32_t thread, n; size_t at; }; /* a captured call; its replays' samples rp[at..at+n) */
struct pend { uint64_t tcall; uint32_t thread, row, at, used; };
struct gpend {              /* a group's members, awaiting the group's GPU time */
  uint64_t group;
  uint32_t thread, used, n, mixed; /* mixed: members of different keys, or more than GMAX */
  uint32_t nstreams, got;   /* the members' distinct streams; the group's GPU_TIMEs so far (one per stream) */
  uint64_t start, end;      /* their span */
  struct key k;
  uint32_t row[GMAX], at[GMAX];
  uint32_t comm[GMAX], half[GMAX]; /* half: a SendRecv member's op while its other half is awaited, else 0 */
  uint64_t stream[GMAX];
};
struct sfile {
  struct crow *row;
  size_t nrow, caprow;
  struct scomm *comm;
  size_t ncomm, capcomm;
  size_t clast;             /* the comm found last (calls come in runs of one communicator) */
  struct pend *pend;        /* PEND slots, made at the first timed call */
  uint32_t npend;           /* of them in use (0: a GPU time that follows its call at once
                               needs no slot: s_call's `next`) */
  struct gpend *gpend;      /* GPEND slots, made at the first group member */
  uint64_t captured;
  struct ph *ph;            /* captured calls, in call order */
  size_t nph, capph;
  int rows_only;            /* the rows' keys alone (sstate.rows_only) */
  int rowed;                /* rows_only: s_call's call got its row (s_calls) */
};

/* one key over the job */
struct jrow {
  struct key k;
  uint64_t *v;
  uint32_t *h;              /* [cap] each sample's identity hash (sample_hash) */
  size_t n, cap, hcap;
  uint64_t thr;             /* a sample is kept while its hash is below (2^32 >> level) */
  uint64_t warm, first, over, host_only, timed_gpu, replayed;
  /* figures (finish) */
  int gpu;                  /* 1: GPU-timed samples; 0: host */
  uint64_t used;
  double mean_ns, p50_ns, p99_ns, S, fac;
};
struct sstate {
  int n;
  struct sfile *file;
  pthread_mutex_t mu;
  struct jrow *row;
  size_t nrow, caprow;
  uint64_t grouped, captured; /* group members without a time of their own; captured calls */
  uint64_t replays;         /* replayed calls put in rows (warm-up ones too) */
  const struct ncs_job *job;
  const char *want;         /* --sizes: NULL, "all" or an op name */
  int rows_only;            /* text without --sizes: it prints how many rows, nothing of them */
  int bad;
  struct ncs_sizes_result res; /* finish: the rows below, as data */
};

static const char *op_name(uint32_t op) { return op == OP_SENDRECV ? "SendRecv" : ncs_op_name(op); }
static uint32_t rule_op(uint32_t op) { return op == OP_SENDRECV ? NCS_OP_Send : op; } /* S = count x size, factor 1 */

static int place_of(uint32_t flags) {
  return flags & NCS_CALL_F_INPLACE ? PL_IN : flags & NCS_CALL_F_OUTOFPLACE ? PL_OUT : PL_UNKNOWN;
}
static int key_eq(const struct key *a, const struct key *b) {
  return a->count == b->count && a->op == b->op && a->dtype == b->dtype && a->redop == b->redop &&
         a->place == b->place && a->nranks == b->nranks;
}

static struct scomm *comm_find(struct sfile *f, uint32_t idx) {
  for (size_t i = 0; i < f->ncomm; i++)
    if (f->comm[i].idx == idx) { f->clast = i; return &f->comm[i]; }
  if (ncs_grow((void **)&f->comm, &f->capcomm, f->ncomm + 1, sizeof *f->comm)) return NULL;
  struct scomm *c = &f->comm[f->ncomm++];
  memset(c, 0, sizeof *c);
  c->idx = idx;
  c->last = c->prev = -1;
  return c;
}
static inline struct scomm *comm_get(struct sfile *f, uint32_t idx) {
  if (f->clast < f->ncomm && f->comm[f->clast].idx == idx) return &f->comm[f->clast]; /* runs of one comm */
  return comm_find(f, idx);
}

static int s_comm(void *ctx, const struct ncs_comm *c) {
  struct scomm *x = comm_get(ctx, c->comm);
  if (x && c->nranks > 0) x->nranks = c->nranks;
  return 0;
}

/* the row of key k on communicator comm: its index, or -1 (out of memory) */
static int32_t row_get(struct sfile *f, uint32_t comm, const struct key *k) {
  for (size_t i = f->nrow; i-- > 0;)
    if (f->row[i].comm == comm && key_eq(&f->row[i].k, k)) return (int32_t)i;
  if (ncs_grow((void **)&f->row, &f->caprow, f->nrow + 1, sizeof *f->row)) return -1;
  struct crow *r = &f->row[f->nrow];
  memset(r, 0, sizeof *r);
  r->k = *k;
  r->comm = comm;
  r->next = -1;
  return (int32_t)f->nrow++;
}

/* A call's pending slot: its home slot or one of the PROBE after it. put: the first free one
 * (the home slot, its occupant then keeping its host time, when none is); get: the one holding
 * (thread, tcall), or NULL. A thread's consecutive calls (tcall counts them) have consecutive
 * homes, so calls and their GPU times walk the table in order: a hashed home made every call
 * and every GPU time a cache miss, a sixth of `report`'s CPU time at 4,096 ranks. */
#define PROBE 8
static uint32_t pend_home(uint32_t thread, uint64_t ref, uint32_t size) {
  return (uint32_t)(ref + (uint64_t)thread * 2654435761u) & (size - 1);
}
static struct pend *pend_at(struct sfile *f, uint32_t thread, uint64_t tcall, int put) {
  uint32_t home = pend_home(thread, tcall, PEND);
  for (uint32_t i = 0; i < PROBE; i++) {
    struct pend *p = &f->pend[(home + i) & (PEND - 1)];
    if (put ? !p->used : p->used && p->thread == thread && p->tcall == tcall) { f->npend += put ? 1 : -1; return p; }
  }
  return put ? &f->pend[home] : NULL; /* (its occupant then keeps its host time) */
}

/* The same for a group (thread, group id): put takes a free slot, else the home slot (whose
 * members then stay untimed). */
static struct gpend *gpend_at(struct sfile *f, uint32_t thread, uint64_t group, int put) {
  uint32_t home = pend_home(thread, group, GPEND);
  for (uint32_t i = 0; i < PROBE; i++) {
    struct gpend *p = &f->gpend[(home + i) & (GPEND - 1)];
    if (p->used && p->thread == thread && p->group == group) return p;
    if (put && !p->used) { memset(p, 0, sizeof *p); p->used = 1; p->thread = thread; p->group = group; return p; }
  }
  if (!put) return NULL;
  struct gpend *p = &f->gpend[home];
  memset(p, 0, sizeof *p);
  p->used = 1; p->thread = thread; p->group = group;
  return p;
}

/* The other half of a SendRecv already in group g (same communicator and key, the other op):
 * paired with this call, which then adds no call of its own. */
static int pair_half(struct gpend *g, uint32_t comm, const struct key *k, uint32_t op) {
  for (uint32_t i = 0; i < g->n; i++)
    if (g->half[i] && g->half[i] != op && g->comm[i] == comm && key_eq(&g->k, k)) { g->half[i] = 0; return 1; }
  return 0;
}

/* One call. next: the GPU_TIME record right after it in the file, or NULL. Returns 1 when it
 * took next as its own GPU time (next is then done), else 0. A call whose GPU time follows at
 * once, with no other call awaiting one, takes it without a pending slot: what put and get would
 * have done, leaving the table as it was (empty). */
static inline __attribute__((always_inline)) int s_call(void *ctx, const struct ncs_call *c, const struct ncs_gpu_time *next) {
  struct sfile *f = ctx;
  int p2p = ncs_op_kind(c->op) == NCS_KIND_P2P;
  /* Send and Recv: only inside a group, not captured; a group's Send and Recv of one count and
     datatype on a communicator are one SendRecv call (nccl-tests sendrecv_perf) */
  if (!(ncs_op_kind(c->op) == NCS_KIND_COLL || (p2p && c->depth && !(c->flags & NCS_CALL_F_CAPTURED)))) return 0;
  struct scomm *sc = comm_get(f, c->comm | (p2p ? P2P_COMM : 0));
  if (!sc) return 0;
  if (p2p && !sc->nranks) { struct scomm *cc = comm_get(f, c->comm); sc = comm_get(f, c->comm | P2P_COMM); if (cc && sc) sc->nranks = cc->nranks; }
  if (!sc) return 0;
  int captured = (c->flags & NCS_CALL_F_CAPTURED) != 0;
  if (captured) f->captured++;
  if (c->rc != 0) return 0;
  struct key k = {.count = c->count, .op = p2p ? OP_SENDRECV : c->op == NCS_OP_Bcast ? NCS_OP_Broadcast : c->op,
                  .dtype = c->datatype, .redop = p2p ? 0 : c->redop, .place = p2p ? PL_UNKNOWN : (uint32_t)place_of(c->flags),
                  .nranks = sc->nranks};
  if (p2p && !f->rows_only) { /* a paired half has its other half's key: no row of its own */
    if (!f->gpend && !(f->gpend = calloc(GPEND, sizeof *f->gpend))) return 0;
    if (pair_half(gpend_at(f, c->thread, c->group, 1), c->comm, &k, c->op)) return 0;
  }
  int first = !sc->seen;
  sc->seen = 1;
  /* the predicted row (in a run, the run's own: its next is itself), else the run's, else a
     search (a (communicator, key) has one row: the order of the guesses changes no result) */
  int32_t ri = sc->prev >= 0 ? f->row[sc->prev].next : -1;
  if (ri < 0 || f->row[ri].comm != c->comm || !key_eq(&f->row[ri].k, &k))
    ri = sc->last >= 0 && key_eq(&f->row[sc->last].k, &k) ? sc->last : row_get(f, c->comm, &k);
  if (ri < 0) return 0;
  if (sc->prev >= 0) f->row[sc->prev].next = ri;
  sc->prev = ri;
  if (f->rows_only) { f->rowed = 1; return 0; }
  struct crow *r = &f->row[ri];
  if (first && !captured) {
    r->first++;
    sc->last = -1;
    if (p2p) { /* its other half is still to come */
      struct gpend *g = gpend_at(f, c->thread, c->group, 1);
      if (g->n == 0) g->k = k;
      if (g->n < GMAX) { g->row[g->n] = (uint32_t)ri; g->at[g->n] = NO_AT; g->comm[g->n] = c->comm; g->half[g->n] = c->op; g->n++; }
      else g->mixed = 1;
    }
    return 0;
  }
  if (r->n >= ROW_CAP) { r->over++; return 0; }
  if (ncs_grow((void **)&r->v, &r->cap, r->n + 1, sizeof *r->v)) { r->over++; return 0; }
  if (captured && (ncs_grow((void **)&f->ph, &f->capph, f->nph + 1, sizeof *f->ph) ||
                   ncs_grow((void **)&r->prun, &r->capprun, r->nprun + 1, sizeof *r->prun))) { r->over++; return 0; }
  if (sc->last == ri) sc->run_len++;
  else { sc->run_len = 1; sc->run_start = r->n; sc->last = ri; sc->ph_run = 0; }
  if (captured && !sc->ph_run) { r->prun[r->nprun++] = (struct prun){(uint32_t)sc->run_start, 0}; sc->ph_run = (uint32_t)r->nprun; }
  if (sc->ph_run) r->prun[sc->ph_run - 1].e = (uint32_t)r->n + 1;
  else if (sc->run_len > r->best) { r->best = sc->run_len; r->steady_at = sc->run_start; }
  if (captured) { /* its replays take its place at file_done */
    f->ph[f->nph] = (struct ph){.tcall = c->tcall, .thread = c->thread};
    r->v[r->n++] = PH_BIT | f->nph++;
    return 0;
  }
  if (c->depth) { /* a group member: the group's time, when the group is of one key */
    r->v[r->n] = UNTIMED;
    if (!f->gpend && !(f->gpend = calloc(GPEND, sizeof *f->gpend))) { r->n++; return 0; }
    struct gpend *g = gpend_at(f, c->thread, c->group, 1);
    if (g->n == 0) g->k = k;
    else if (!key_eq(&g->k, &k)) g->mixed = 1;
    if (g->n < GMAX) {
      g->row[g->n] = (uint32_t)ri; g->at[g->n] = (uint32_t)r->n; g->comm[g->n] = c->comm; g->half[g->n] = p2p ? c->op : 0;
      g->n++;
    } else {
      g->mixed = 1;
    }
    uint32_t si = 0;
    while (si < g->nstreams && g->stream[si] != c->stream) si++;
    if (si == g->nstreams && si < GMAX) g->stream[g->nstreams++] = c->stream;
    r->n++;
    return 0;
  }
  r->v[r->n] = (c->t_exit >= c->t_enter ? c->t_exit - c->t_enter : 0) | HOST_BIT;
  if (next && !f->npend && next->kind == NCS_GPU_KIND_CALL && next->thread == c->thread && next->ref == c->tcall) {
    if (!(next->flags & (NCS_GPU_F_FAILED | NCS_GPU_F_CAPTURED)) && next->gpu_end >= next->gpu_start) r->v[r->n] = next->gpu_end - next->gpu_start;
    r->n++;
    return 1;
  }
  if (!f->pend && !(f->pend = calloc(PEND, sizeof *f->pend))) { r->n++; return 0; }
  struct pend *p = pend_at(f, c->thread, c->tcall, 1);
  *p = (struct pend){.tcall = c->tcall, .thread = c->thread, .row = (uint32_t)ri, .at = (uint32_t)r->n, .used = 1};
  r->n++;
  return 0;
}

/* With the rows' keys alone, a call is like an earlier one for s_call when every field it reads
 * then (op, communicator, count, datatype, reduction, flags, rc, whether in a group) is the
 * same. The earlier call's, as words (struct rowkey: pairs of adjacent fields, compared by one
 * xor each; depth and root compared whole, a stricter test: a call it fails goes through s_call,
 * which gives the same). */
struct rowkey { uint64_t comm_dt, redop_depth, root_rc, count; uint32_t op, flags; };
_Static_assert(offsetof(struct ncs_call, datatype) == offsetof(struct ncs_call, comm) + 4, "comm, datatype");
_Static_assert(offsetof(struct ncs_call, depth) == offsetof(struct ncs_call, redop) + 4, "redop, depth");
_Static_assert(offsetof(struct ncs_call, rc) == offsetof(struct ncs_call, root) + 4, "root, rc");
static inline struct rowkey rowkey_of(const struct ncs_call *c) {
  return (struct rowkey){ncs_u32_pair(&c->comm), ncs_u32_pair(&c->redop), ncs_u32_pair((const uint32_t *)&c->root), c->count,
                         c->op, c->flags};
}
static inline int rowkey_is(const struct rowkey *k, const struct ncs_call *c) {
  return !((k->comm_dt ^ ncs_u32_pair(&c->comm)) | (k->redop_depth ^ ncs_u32_pair(&c->redop)) |
           (k->root_rc ^ ncs_u32_pair((const uint32_t *)&c->root)) | (k->count ^ c->count) |
           (uint64_t)((k->op ^ c->op) | (k->flags ^ c->flags)));
}

/* A run of CALL records (trace.h), each as s_call: one call per run, not one per record. With
 * the rows' keys alone, a call like the latest one that got its row, not captured (a captured
 * call is counted: with its flags, a call like it is captured too), has that row and changes
 * nothing s_call keeps then but the row guesses (which change no result): skipped. */
static int s_calls(void *ctx, const struct ncs_call *x, size_t n) {
  struct sfile *f = ctx;
  if (!f->rows_only) {
    for (const struct ncs_call *c = x, *end = x + n; c < end; c++) s_call(ctx, c, NULL);
    return 0;
  }
  struct rowkey k;
  int have = 0; /* k: the latest call that got its row, not captured */
  for (const struct ncs_call *c = x, *end = x + n; c < end; c++) {
    if (have) { /* the calls like it, in a loop of their own (k in registers) */
      const struct rowkey kk = k;
      while (c < end && c->count == kk.count && rowkey_is(&kk, c)) c++; /* (count first: a call of another
                                                                           size leaves at once) */
      if (c == end) break;
    }
    f->rowed = 0;
    s_call(ctx, c, NULL);
    have = f->rowed && !(c->flags & NCS_CALL_F_CAPTURED);
    if (have) k = rowkey_of(c);
  }
  return 0;
}

static inline __attribute__((always_inline)) int s_gpu(void *ctx, const struct ncs_gpu_time *g) {
  struct sfile *f = ctx;
  int bad = (g->flags & (NCS_GPU_F_FAILED | NCS_GPU_F_CAPTURED)) || g->gpu_end < g->gpu_start;
  if (g->kind == NCS_GPU_KIND_GROUP) {
    struct gpend *p = f->gpend ? gpend_at(f, g->thread, g->ref, 0) : NULL;
    if (!p) return 0;
    if (bad) p->mixed = 1;
    if (!p->got || g->gpu_start < p->start) p->start = g->gpu_start;
    if (!p->got || g->gpu_end > p->end) p->end = g->gpu_end;
    if (++p->got < p->nstreams) return 0;
    for (uint32_t i = 0; i < p->n; i++) p->mixed |= p->half[i] != 0; /* a Send or Recv without its other half */
    for (uint32_t i = 0; i < p->n && !p->mixed; i++)
      if (p->row[i] < f->nrow && p->at[i] != NO_AT && p->at[i] < f->row[p->row[i]].n) f->row[p->row[i]].v[p->at[i]] = p->end - p->start;
    p->used = 0;
    return 0;
  }
  if (g->kind != NCS_GPU_KIND_CALL || !f->pend) return 0;
  struct pend *p = pend_at(f, g->thread, g->ref, 0);
  if (!p) return 0;
  p->used = 0;
  if ((g->flags & (NCS_GPU_F_FAILED | NCS_GPU_F_CAPTURED)) || g->gpu_end < g->gpu_start) return 0;
  if (p->row < f->nrow && p->at < f->row[p->row].n) f->row[p->row].v[p->at] = g->gpu_end - g->gpu_start;
  return 0;
}

/* A stretch (io/trace.h) in file order: a call's pending slot may be taken by a later call
 * before its GPU time comes (pend_at), so the interleaving counts; a call followed at once by a
 * GPU_TIME is offered it (s_call's next). */
static int s_stretch(void *ctx, const struct ncs_stretch *s) {
  const struct ncs_call *c = s->c;
  const struct ncs_gpu_time *g = s->g;
  for (const uint8_t *o = s->order, *e = o + s->nc + s->ng; o < e; o++) {
    if (*o) { s_gpu(ctx, g++); continue; }
    if (s_call(ctx, c++, o + 1 < e && o[1] ? g : NULL)) { g++; o++; }
  }
  return 0;
}

static void *s_create(const struct ncs_job *job) {
  struct sstate *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->n = job->n;
  s->file = calloc((size_t)(job->n ? job->n : 1), sizeof *s->file);
  if (!s->file) { free(s); return NULL; }
  pthread_mutex_init(&s->mu, NULL);
  s->job = job;
  s->want = ncs_job_option(job, "sizes");
  s->rows_only = job->text_only && !s->want;
  if (s->want && strcmp(s->want, "all")) {
    unsigned op;
    for (op = 1; op < NCS_OP_LIMIT; op++)
      if (ncs_op_kind(op) == NCS_KIND_COLL && ncs_op_name(op) && !strcasecmp(ncs_op_name(op), s->want)) break;
    if (op == NCS_OP_LIMIT && strcasecmp(s->want, op_name(OP_SENDRECV))) {
      fprintf(stderr, "ncclscope report: --sizes takes 'all' or a collective's name (AllReduce, AllGather, ..., SendRecv), not '%s'\n", s->want);
      s->bad = 1;
    }
  }
  return s;
}

static void s_visitor(void *state, int file, struct ncs_visitor *v) {
  struct sstate *s = state;
  if (!s || file < 0 || file >= s->n) return;
  struct sfile *f = &s->file[file];
  f->rows_only = s->rows_only;
  v->ctx = f;
  v->comm = s_comm;
  v->calls = s_calls;
  if (!f->rows_only) { /* (text without --sizes: the calls alone, so any order of a stretch) */
    v->gpu_time = s_gpu;
    v->stretch = s_stretch;
  }
}

static struct jrow *jrow_get(struct sstate *s, const struct key *k) {
  for (size_t i = 0; i < s->nrow; i++)
    if (key_eq(&s->row[i].k, k)) return &s->row[i];
  if (ncs_grow((void **)&s->row, &s->caprow, s->nrow + 1, sizeof *s->row)) return NULL;
  struct jrow *r = &s->row[s->nrow++];
  memset(r, 0, sizeof *r);
  r->k = *k;
  return r;
}

/* ---- captured calls: their replays (model/replay.h) in their place ---- */
struct phmap { struct sfile *f; uint32_t *slot, mask; uint64_t *rp; int fill; };

static uint32_t ph_hash(uint32_t thread, uint64_t tcall) {
  return (uint32_t)(((tcall * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)thread * 0xC2B2AE3D27D4EB4Full)) >> 32);
}
/* The captured call (thread, tcall): its index + 1 in f->ph, 0 when it is not one of ours (a
 * point-to-point call, or a call this table had no room for). */
static uint32_t ph_find(const struct phmap *m, uint32_t thread, uint64_t tcall) {
  for (uint32_t h = ph_hash(thread, tcall) & m->mask;; h = (h + 1) & m->mask) {
    uint32_t i = m->slot[h];
    if (!i || (m->f->ph[i - 1].thread == thread && m->f->ph[i - 1].tcall == tcall)) return i;
  }
}
/* ncs_replay_each's callback: counts (fill 0), then stores (fill 1) each replay's time, the
 * kernel's share of one call (its kernel may run several calls of a captured group) */
static void on_replay(void *ctx, const struct ncs_replay_call *c, uint64_t s, uint64_t e) {
  struct phmap *m = ctx;
  uint32_t i = ph_find(m, c->thread, c->tcall);
  if (!i) return;
  struct ph *p = &m->f->ph[i - 1];
  uint64_t d = e > s ? e - s : 0, k = c->members > 1 ? c->members : 1;
  if (m->fill) m->rp[p->at + p->n] = (d + k / 2) / k;
  p->n++;
}

/* A row's samples with each captured call replaced by its replays' (marked PH_BIT), and its
 * steady run chosen among its runs without captured calls (best) and those with (prun, each
 * as long as its calls plus its captured calls' replays). 0, or -1 when out of memory (the
 * captured calls are then dropped, counted over the cap). */
static int row_expand(struct crow *r, const struct sfile *f, const uint64_t *rp) {
  size_t best = r->best, at = r->steady_at, n = 0;
  for (size_t i = 0; i < r->nprun; i++) {
    size_t len = 0;
    for (uint32_t k = r->prun[i].s; k < r->prun[i].e && k < r->n; k++) len += IS_PH(r->v[k]) ? f->ph[r->v[k] & ~PH_BIT].n : 1;
    if (len > best || (len == best && r->prun[i].s < at)) { best = len; at = r->prun[i].s; }
  }
  for (size_t k = 0; k < r->n; k++) n += IS_PH(r->v[k]) ? f->ph[r->v[k] & ~PH_BIT].n : 1;
  size_t cap = n > ROW_CAP ? ROW_CAP : n;
  uint64_t *v = cap ? malloc(cap * sizeof *v) : NULL;
  if (cap && !v) {
    size_t kept = 0, nat = 0;
    for (size_t k = 0; k < r->n; k++) {
      if (k == r->steady_at) nat = kept;
      if (IS_PH(r->v[k])) r->over++;
      else r->v[kept++] = r->v[k];
    }
    r->steady_at = r->steady_at < r->n ? nat : kept;
    r->n = kept;
    return -1;
  }
  size_t m = 0, nat = cap;
  for (size_t k = 0; k < r->n; k++) {
    if (k == at && nat == cap) nat = m;
    if (!IS_PH(r->v[k])) { if (m < cap) v[m++] = r->v[k]; else r->over++; continue; }
    const struct ph *p = &f->ph[r->v[k] & ~PH_BIT];
    for (uint32_t j = 0; j < p->n; j++) {
      if (m < cap) v[m++] = rp[p->at + j] | PH_BIT;
      else r->over++;
    }
  }
  free(r->v);
  r->v = v;
  r->n = r->cap = m;
  r->steady_at = nat < m ? nat : m;
  r->best = best;
  return 0;
}

/* The file's captured calls replaced by their replays in every row (nothing when the run kept
 * no solved replays: then they stand for none). */
static uint64_t expand_captured(struct sstate *s, int file, struct sfile *f) {
  if (!f->nph) return 0;
  const struct ncs_replay *rp = ncs_stages_replay(s->job ? s->job->stages : NULL, file);
  uint32_t size = 16;
  while (size < 2 * f->nph && size < (1u << 31)) size *= 2;
  struct phmap m = {f, rp ? calloc(size, sizeof *m.slot) : NULL, size - 1, NULL, 0};
  uint64_t total = 0;
  if (m.slot) {
    for (size_t i = 0; i < f->nph; i++) {
      uint32_t h = ph_hash(f->ph[i].thread, f->ph[i].tcall) & m.mask;
      while (m.slot[h]) h = (h + 1) & m.mask;
      m.slot[h] = (uint32_t)i + 1;
    }
    ncs_replay_each(rp, 0, on_replay, &m); /* count */
    for (size_t i = 0; i < f->nph; i++) { f->ph[i].at = total; total += f->ph[i].n; f->ph[i].n = 0; }
    if (total && (m.rp = malloc(total * sizeof *m.rp)) != NULL) {
      m.fill = 1;
      ncs_replay_each(rp, 0, on_replay, &m); /* store */
    } else {
      for (size_t i = 0; i < f->nph; i++) f->ph[i].n = 0; /* out of memory: none */
      total = 0;
    }
  } else {
    for (size_t i = 0; i < f->nph; i++) f->ph[i].n = 0;
  }
  for (size_t i = 0; i < f->nrow; i++)
    if (f->row[i].nprun) row_expand(&f->row[i], f, m.rp);
  free(m.slot);
  free(m.rp);
  return total;
}

/* A file's identity for sample_hash: FNV-1a of its name (the process's host and pid, as the
 * shim names it), not its place on the command line nor the order files finish in. */
static uint64_t file_id(const struct sstate *s, int file) {
  const char *p = s->job && s->job->rank && s->job->rank[file].path ? s->job->rank[file].path : "";
  const char *b = strrchr(p, '/');
  b = b ? b + 1 : p;
  return ncs_fnv64(NCS_FNV64_OFFSET, b, strlen(b));
}
/* A sample's identity: its file and its place in the file's row (call order); a 64-bit mix
 * (splitmix64's finaliser), its high 32 bits. */
static uint32_t sample_hash(uint64_t file, size_t k) {
  return (uint32_t)(ncs_mix64(file ^ ((uint64_t)k * 0x9e3779b97f4a7c15ull)) >> 32);
}
/* Adds a sample to a job row. A row holds at most JOB_CAP: the ones whose hash is below its
 * threshold (2^32 at first), which a full row halves, dropping those at or above it (counted in
 * `over`), before it takes one more. The row's samples are then the ones whose hash is below
 * the largest threshold 2^32 >> L under which at most JOB_CAP are: a set that depends on the
 * samples alone, whatever order the files were merged in (two reader threads: before, a row
 * kept the first JOB_CAP in the order the files finished, a few files' calls for the whole
 * job's). -1 without memory. */
static int row_add(struct jrow *j, uint64_t v, uint32_t h) {
  while (h < j->thr && j->n == JOB_CAP && j->thr > 1) {
    j->thr >>= 1;
    size_t kept = 0;
    for (size_t k = 0; k < j->n; k++)
      if (j->h[k] < j->thr) { j->v[kept] = j->v[k]; j->h[kept++] = j->h[k]; }
    j->over += j->n - kept;
    j->n = kept;
  }
  if (h >= j->thr || j->n == JOB_CAP) { j->over++; return 0; }
  if (ncs_grow((void **)&j->v, &j->cap, j->n + 1, sizeof *j->v) != 0 ||
      ncs_grow((void **)&j->h, &j->hcap, j->n + 1, sizeof *j->h) != 0) return -1;
  j->v[j->n] = v;
  j->h[j->n++] = h;
  return 0;
}

static void s_file_done(void *state, int file, const struct ncs_read_status *st) {
  struct sstate *s = state;
  if (!s || file < 0 || file >= s->n) return;
  struct sfile *f = &s->file[file];
  uint64_t replays = expand_captured(s, file, f), fid = file_id(s, file);
  pthread_mutex_lock(&s->mu);
  s->captured += f->captured;
  s->replays += replays;
  for (size_t i = 0; i < f->nrow; i++) {
    struct crow *r = &f->row[i];
    struct jrow *j = jrow_get(s, &r->k);
    if (!j) continue;
    j->first += r->first;
    j->warm += r->steady_at;
    j->over += r->over;
    if (!j->thr) j->thr = 1ull << 32;
    for (size_t k = r->steady_at; k < r->n; k++)
      if (row_add(j, r->v[k], sample_hash(fid, k)) != 0) { j->over += r->n - k; break; } /* no memory */
  }
  pthread_mutex_unlock(&s->mu);
  for (size_t i = 0; i < f->nrow; i++) { free(f->row[i].v); free(f->row[i].prun); }
  free(f->row);
  free(f->comm);
  free(f->pend);
  free(f->gpend);
  free(f->ph);
  memset(f, 0, sizeof *f);
  (void)st;
}

/* rows in print order: op, communicator size, datatype, reduction, size, out-of-place first */
static int cmp_row(const void *a, const void *b) {
  const struct jrow *x = a, *y = b;
  if (x->k.op != y->k.op) return x->k.op < y->k.op ? -1 : 1;
  if (x->k.nranks != y->k.nranks) return x->k.nranks < y->k.nranks ? -1 : 1;
  if (x->k.dtype != y->k.dtype) return x->k.dtype < y->k.dtype ? -1 : 1;
  if (x->k.redop != y->k.redop) return x->k.redop < y->k.redop ? -1 : 1;
  if (x->k.count != y->k.count) return x->k.count < y->k.count ? -1 : 1;
  int px = x->k.place == PL_OUT ? 0 : x->k.place == PL_IN ? 1 : 2, py = y->k.place == PL_OUT ? 0 : y->k.place == PL_IN ? 1 : 2;
  return (px > py) - (px < py);
}

/* The k-th smallest (1-based, clamped to [1, n]) of v[0..n), which it reorders: every element
 * before it is no larger, every one after no smaller (quickselect, three-way partition so runs of
 * equal times, the common case, end it at once). */
static double kth(uint64_t *v, size_t n, size_t k) {
  k = (k < 1 ? 1 : k > n ? n : k) - 1;
  size_t lo = 0, hi = n; /* the k-th lies in v[lo..hi) */
  while (hi - lo > 1) {
    uint64_t a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi - 1]; /* median of three */
    uint64_t pivot = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
    size_t lt = lo, i = lo, gt = hi; /* [lo,lt) < pivot, [lt,i) == pivot, [gt,hi) > pivot */
    while (i < gt) {
      uint64_t x = v[i];
      if (x < pivot) { v[i++] = v[lt]; v[lt++] = x; }
      else if (x > pivot) { v[i] = v[--gt]; v[gt] = x; }
      else i++;
    }
    if (k < lt) hi = lt;
    else if (k >= gt) lo = gt;
    else return (double)pivot;
  }
  return (double)v[k];
}

/* Moves the values of v[from..n) in bucket b ((x - lo) >> shift) to v[from..): how many. */
static size_t gather(uint64_t *v, size_t from, size_t n, uint64_t lo, unsigned shift, uint64_t b) {
  size_t m = from;
  for (size_t i = from; i < n; i++)
    if ((v[i] - lo) >> shift == b) { uint64_t t = v[m]; v[m++] = v[i]; v[i] = t; }
  return m - from;
}

/* The ka-th and kb-th smallest (1-based, 1 <= ka <= kb <= n) of v[0..n), whose values lie in
 * [lo, hi]; v is reordered. A histogram of SEL_BITS buckets over [lo, hi] names the bucket
 * each lies in and its rank there; kth then selects among that bucket's values alone, gathered
 * at the front. Exact, as kth on the whole row, in about three passes over it instead of kth's
 * six or so: a row holds up to JOB_CAP samples, and finish runs on one thread. */
#define SEL_BITS 12
static void kth2(uint64_t *v, size_t n, size_t ka, size_t kb, uint64_t lo, uint64_t hi, double *a, double *b) {
  uint32_t cnt[1u << SEL_BITS] = {0};
  unsigned bits = hi > lo ? 64 - (unsigned)__builtin_clzll(hi - lo) : 0;
  unsigned shift = bits > SEL_BITS ? bits - SEL_BITS : 0;
  for (size_t i = 0; i < n; i++) cnt[(v[i] - lo) >> shift]++;
  size_t below = 0, below_a, ba, bb;
  for (ba = 0; below + cnt[ba] < ka; ba++) below += cnt[ba];
  below_a = below;
  for (bb = ba; below + cnt[bb] < kb; bb++) below += cnt[bb];
  size_t na = gather(v, 0, n, lo, shift, ba);
  *a = kth(v, na, ka - below_a);
  if (bb == ba) { *b = kth(v, na, kb - below_a); return; }
  size_t nb = gather(v, na, n, lo, shift, bb);
  *b = kth(v + na, nb, kb - below);
}

static void s_finish(void *state, const struct ncs_job *job) {
  struct sstate *s = state;
  if (!s) return;
  for (size_t i = 0; i < s->nrow; i++) {
    struct jrow *r = &s->row[i];
    size_t g = 0, kept = 0;
    for (size_t k = 0; k < r->n; k++) { /* group members without a time out; replays counted */
      uint64_t x = r->v[k];
      if (x == UNTIMED) continue;
      if (IS_PH(x)) { r->replayed++; x &= ~PH_BIT; }
      r->v[kept++] = x;
      g += !(x & HOST_BIT);
    }
    s->grouped += r->n - kept;
    r->n = kept;
    r->gpu = g > 0;
    r->host_only = r->gpu ? r->n - g : 0;
    r->used = r->gpu ? g : r->n;
    r->S = ncs_rule_S(rule_op(r->k.op), r->k.count, r->k.dtype, r->k.nranks);
    r->fac = ncs_rule_busbw_factor(rule_op(r->k.op), r->k.nranks);
    if (!r->used) continue;
    double sum = 0; /* (in call order, GPU-timed samples alone when the row has any) */
    uint64_t lo = UINT64_MAX, hi = 0;
    size_t m = 0;
    for (size_t k = 0; k < r->n; k++) {
      uint64_t x = r->v[k];
      if (r->gpu && (x & HOST_BIT)) continue;
      x &= ~HOST_BIT;
      r->v[m++] = x;
      sum += (double)x;
      lo = x < lo ? x : lo;
      hi = x > hi ? x : hi;
    }
    r->mean_ns = sum / (double)r->used;
    size_t k99 = (99 * r->used + 99) / 100, k50 = (r->used + 1) / 2; /* the ceil(0.99 n)-th, ceil(n/2)-th */
    kth2(r->v, r->used, k50, k99, lo, hi, &r->p50_ns, &r->p99_ns);
  }
  if (s->nrow) qsort(s->row, s->nrow, sizeof *s->row, cmp_row);
  s->res = (struct ncs_sizes_result){.want = s->want, .grouped = s->grouped, .captured = s->captured, .replays = s->replays};
  struct ncs_sizes_row *out = s->nrow ? calloc(s->nrow, sizeof *out) : NULL;
  if (!out) return; /* no room for the table: it has no row */
  for (size_t i = 0; i < s->nrow; i++) {
    const struct jrow *r = &s->row[i];
    double algbw = r->p50_ns > 0 ? r->S / r->p50_ns : 0; /* GB/s (1e9 bytes) from the median */
    out[i] = (struct ncs_sizes_row){.op = r->k.op, .op_name = op_name(r->k.op), .nranks = r->k.nranks,
                                    .dtype = r->k.dtype, .redop = r->k.redop, .place = (enum ncs_sizes_place)r->k.place,
                                    .count = r->k.count, .bytes = r->S, .busbw_factor = r->fac, .timed = r->used,
                                    .replayed = r->replayed, .warmup = r->warm, .first = r->first,
                                    .host_only = r->host_only, .over_cap = r->over, .gpu = r->gpu,
                                    .mean_ns = r->mean_ns, .median_ns = r->p50_ns, .p99_ns = r->p99_ns,
                                    .algbw_gbps = algbw, .busbw_gbps = algbw * r->fac};
  }
  s->res.rows = out;
  s->res.nrows = s->nrow;
  (void)job;
}

static const void *s_result(void *state) {
  const struct sstate *s = state;
  return s ? &s->res : NULL;
}

static int s_bad_options(void *state) { return state && ((const struct sstate *)state)->bad; }

static void s_destroy(void *state) {
  struct sstate *s = state;
  if (!s) return;
  for (int i = 0; i < s->n; i++) { /* files whose read never ended (file_done frees the others) */
    for (size_t k = 0; k < s->file[i].nrow; k++) { free(s->file[i].row[k].v); free(s->file[i].row[k].prun); }
    free(s->file[i].row);
    free(s->file[i].ph);
    free(s->file[i].comm);
    free(s->file[i].pend);
    free(s->file[i].gpend);
  }
  for (size_t i = 0; i < s->nrow; i++) { free(s->row[i].v); free(s->row[i].h); }
  free(s->row);
  free((void *)s->res.rows);
  free(s->file);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

static const struct ncs_analysis_option s_options[] = {
  {"sizes", "all|OP", "print the per-size table (every collective, or one: AllReduce, ...)"},
  {NULL, NULL, NULL}};

const struct ncs_analysis ncs_analysis_sizes = {
  .name = "sizes",
  .options = s_options,
  .bad_options = s_bad_options,
  .create = s_create,
  .visitor = s_visitor,
  .file_done = s_file_done,
  .finish = s_finish,
  .result = s_result,
  .destroy = s_destroy,
};
