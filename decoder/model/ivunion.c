/* ivunion.c — streaming union of intervals (ivunion.h). */
#include "model/ivunion.h"

#include <stdlib.h>
#include <string.h>


/* Adds v = [s, e) clipped to the frontier to the committed length; v becomes the part
 * committed (s = e: none). */
static void commit(struct ncs_ivu *u, uint64_t *v) {
  if (v[0] < u->frontier) { /* it came after the union was committed past its start */
    u->late++;
    u->late_ns += (v[1] < u->frontier ? v[1] : u->frontier) - v[0];
    v[0] = v[1] < u->frontier ? v[1] : u->frontier;
  }
  if (v[1] <= v[0]) return;
  u->total += (double)(v[1] - v[0]);
  u->frontier = v[1];
}

/* Commits the merged intervals iv[0 .. n) that end by cut (to the sink too); keeps the others
 * at the front. Merged: in order, disjoint, none empty (ncs_ivu_add merges as it appends, and
 * ncs_ivruns_union), so only those before the first starting at or past the frontier can start
 * before it. */
static uint32_t commit_to(struct ncs_ivu *u, uint32_t n, uint64_t cut) {
  uint32_t i = 0, kept = 0;
  uint64_t (*iv)[2] = u->iv;
  if (n && u->total < 0x1p52 && iv[n - 1][1] - (iv[0][0] < u->frontier ? iv[0][0] : u->frontier) < (1ull << 52)) {
    /* every sum below 2^53 ns: the lengths added as integers, then once, give the bits the
     * double additions one by one give (the ends increase: the last bounds the sum) */
    uint64_t fr = u->frontier, sum = 0;
    for (; i < n && iv[i][1] <= cut && iv[i][0] < fr; i++) { /* as commit() */
      uint64_t *v = iv[i];
      u->late++;
      u->late_ns += (v[1] < fr ? v[1] : fr) - v[0];
      v[0] = v[1] < fr ? v[1] : fr;
      if (v[1] <= v[0]) continue;
      sum += v[1] - v[0];
      fr = v[1];
    }
    /* the rest start past the frontier: each adds its length (ends and starts summed apart;
     * how many end by the cut found by a search on their ends) */
    uint32_t j = ncs_iv_ends_upto((const uint64_t (*)[2])iv, i, n, cut);
    uint64_t se = 0, ss = 0;
    for (uint32_t k = i; k < j; k++) { se += iv[k][1]; ss += iv[k][0]; }
    sum += se - ss;
    if (j > i) fr = iv[j - 1][1];
    i = j;
    u->total += (double)sum;
    u->frontier = fr;
  }
  for (; i < n && iv[i][1] <= cut; i++) commit(u, iv[i]);
  if (i && u->sink) u->sink(u->sink_ctx, (const uint64_t (*)[2])iv, i);
  kept = n - i;
  if (i && kept) memmove(iv, iv + i, (size_t)kept * sizeof *iv);
  return kept;
}

/* Merges the buffer's runs; commits the merged intervals that end by the cut (ivunion.h),
 * keeps the others; `all`: commits every one. When the kept ones fill more than half the
 * buffer it doubles (up to NCS_IVU_MAX); at that size (or without memory) the cut is (b) alone. */
static void flush(struct ncs_ivu *u, int all) {
  if (!u->n) return;
  if (u->n >= NCS_LANES_FIRST_HOLD) ncs_lanes_hold_end(&u->lanes); /* a first chunk that long: 4 MiB held */
  if (!all && u->runs.nrun && !ncs_lanes_cut(&u->lanes) && u->cap < NCS_IVU_MAX) {
    uint64_t (*p)[2] = realloc(u->iv, 2 * (size_t)u->cap * sizeof *u->iv);
    if (p) { u->iv = p; u->cap *= 2; return; } /* nothing can be committed yet: not merged either */
  }
  if (u->runs.nrun) u->n = ncs_ivruns_union(&u->runs, &u->iv, &u->cap, u->n);
  uint64_t slack = u->n > NCS_IVU_CAP / 2 ? u->iv[u->n - NCS_IVU_CAP / 2][0] : 0; /* cut (b) */
  uint64_t lanes = ncs_lanes_cut(&u->lanes), cut = all ? UINT64_MAX : lanes < slack ? lanes : slack;
  u->n = commit_to(u, u->n, cut);
  if (all || u->n <= u->cap / 2) return;
  uint64_t (*p)[2] = u->cap < NCS_IVU_MAX ? realloc(u->iv, 2 * (size_t)u->cap * sizeof *u->iv) : NULL;
  if (p) { u->iv = p; u->cap *= 2; return; }
  u->forced++; /* the buffer cannot grow: cut (b) alone */
  u->n = commit_to(u, u->n, slack);
  ncs_lanes_forced(&u->lanes, u->frontier);
}

void ncs_ivu_add_slow(struct ncs_ivu *u, uint64_t s, uint64_t e) {
  if (!u->iv && !u->nomem) {
    if ((u->iv = malloc(NCS_IVU_CAP * sizeof *u->iv))) u->cap = NCS_IVU_CAP;
    else u->nomem = 1;
  }
  if (!u->iv) {
    uint64_t v[1][2] = {{s, e}};
    commit(u, v[0]);
    if (u->sink) u->sink(u->sink_ctx, (const uint64_t (*)[2])v, 1);
    return;
  }
  if (u->n == u->cap) flush(u, 0);
  if (u->n && s >= u->iv[u->n - 1][0] && s <= u->iv[u->n - 1][1]) { /* within the latest: extends it */
    if (e > u->iv[u->n - 1][1]) u->iv[u->n - 1][1] = e;
    return;
  }
  if (u->n && s < u->iv[u->n - 1][0]) ncs_ivruns_mark(&u->runs, u->n); /* a new run */
  u->iv[u->n][0] = s;
  u->iv[u->n][1] = e;
  u->n++;
}

/* The batch add of ncs_ivu_add_calls and ncs_ivu_add_gpus, for records r[0..n) of a type whose
 * thread, START and END members give an interval (SKIP(r) true: left out): while the records stay
 * on the current lane and go on its latest run, the lane and the latest buffered interval are
 * kept in locals (b: the latest buffered); any other record goes through ncs_ivu_add. */
#define IVU_ADD_BATCH(u, r, n, START, END, SKIP)                                            \
  do {                                                                                      \
    __typeof__(r) end_ = (r) + (n);                                                         \
    while (r < end_) {                                                                      \
      if ((u)->n) {                                                                         \
        struct ncs_lane *ln = ncs_lane_at(&(u)->lanes, (u)->lanes.cur);                     \
        uint32_t thread = ln->thread, nn = (u)->n, cap = (u)->cap;                          \
        uint64_t last = ln->last, (*b)[2] = (u)->iv + nn - 1, ls = (*b)[0], le = (*b)[1];   \
        for (; r < end_; r++) {                                                             \
          uint64_t s = r->START, e = r->END;                                                \
          if (SKIP(r) || e <= s) continue;                                                  \
          if (r->thread != thread) break; /* another lane */                                \
          if (s > last) last = s;                                                           \
          if (s < ls) break;              /* a new run (ncs_ivu_add_slow) */                \
          if (s <= le) { if (e > le) le = e; continue; }                                    \
          if (nn == cap) break;           /* full: a flush first */                         \
          (*b)[1] = le;                                                                     \
          b++; nn++;                                                                        \
          (*b)[0] = ls = s; le = e;                                                         \
        }                                                                                   \
        (*b)[1] = le;                                                                       \
        (u)->n = nn;                                                                        \
        ln->last = last;                                                                    \
        if (r == end_) break;                                                               \
      }                                                                                     \
      if (!SKIP(r)) ncs_ivu_add(u, r->thread, r->START, r->END); /* its start into the lane again: the same */ \
      r++;                                                                                  \
    }                                                                                       \
  } while (0)
#define IVU_KEEP(r) 0
#define IVU_FLAGGED(r) ((r)->flags)

void ncs_ivu_add_calls(struct ncs_ivu *u, const struct ncs_call *c, size_t n) {
  IVU_ADD_BATCH(u, c, n, t_enter, t_exit, IVU_KEEP);
}

double ncs_ivu_total(struct ncs_ivu *u) {
  if (u->iv) flush(u, 1);
  ncs_ivu_free(u);
  return u->total;
}

void ncs_ivu_free(struct ncs_ivu *u) {
  ncs_ivruns_free(&u->runs);
  ncs_lanes_free(&u->lanes);
  u->runs.nrun = 0;
  free(u->iv);
  u->iv = NULL;
  u->n = 0;
  u->cap = 0;
}

void ncs_ivu_add_gpus(struct ncs_ivu *u, const struct ncs_gpu_time *g, size_t n) {
  IVU_ADD_BATCH(u, g, n, gpu_start, gpu_end, IVU_FLAGGED);
}
