/* ivunion.h — the total length of a union of intervals that arrive in any order, streaming.
 *
 * Contract: ncs_ivu_add() each interval [s, e) (ns) with the trace thread it came from,
 * ncs_ivu_chunk() at each chunk end when the caller reads a trace (set by_chunk first:
 * ncs_ivu_by_chunk()), ncs_ivu_total() once after the last. Intervals are buffered as runs
 * (each in order, merged as it comes: a thread's batch) and the runs merged when the buffer is
 * full (model/ivsort.h ncs_ivruns_union: one chain per thread, no sort); the merged ones that end by the cut are committed, and a
 * later interval's part before the committed frontier is not counted again. The cut is the
 * earlier of (a) the earliest of the threads' latest starts (model/ivlanes.h: a thread's
 * intervals come in order, one thread's batch after another's, so no interval still to come
 * from a known thread starts before it) and (b) the start of the buffer's NCS_IVU_CAP / 2-th
 * latest interval (a thread's own intervals may come slightly out of order: GPU intervals of
 * several streams). So the union is exact unless an interval arrives after more than
 * NCS_IVU_CAP / 2 intervals that start after it AND after its thread's own later ones (or
 * its thread is new after the first chunk, idle for two chunks, or passed by a forced commit:
 * ivlanes.h). The buffer grows (doubling from NCS_IVU_CAP) while the cut leaves it more than
 * half full, up to NCS_IVU_MAX intervals (16 B each); full at that size, the union falls back
 * to cut (b) alone (a forced commit, counted in `forced`). Every interval that arrives
 * starting before the frontier is counted in `late`, and the part of it before the frontier
 * in `late_ns`: the most the total can lack (it lacks nothing where that part was covered
 * already). Several ranks of one process (a rank per thread) interleave their intervals: the
 * union counts an instant once, so the total never exceeds the span it covers. The buffer is
 * allocated at the first interval and freed by ncs_ivu_total() / ncs_ivu_free(); without
 * memory, intervals are swept in arrival order (exact while they come sorted). A union of one
 * stream (thread 0 throughout, by_chunk 0) keeps cut (b) alone. With `sink` set, the pieces
 * each commit adds are also handed to sink(sink_ctx, iv, n) as they are committed: n intervals
 * [iv[i][0], iv[i][1]) after the frontier's clip (disjoint, in increasing order, across calls
 * too; one with iv[i][0] == iv[i][1] added nothing), valid during the call
 * (analysis/gate_samples.c spreads them over time blocks). */
#ifndef NCS_IVUNION_H
#define NCS_IVUNION_H
#include <stdint.h>

#include "model/ivlanes.h"
#include "model/ivsort.h"
#include "ncclscope/records.h"

#define NCS_IVU_CAP 4096
#define NCS_IVU_MAX (1u << 20)

struct ncs_ivu {
  uint64_t (*iv)[2];    /* [cap] buffered intervals: runs, each in order and merged as it came */
  uint32_t n, cap;
  struct ncs_ivruns runs; /* where the runs start after the first (model/ivsort.h) */
  uint64_t frontier;    /* committed up to here */
  double total;         /* committed length */
  int nomem;
  uint64_t late, late_ns, forced; /* (above) */
  struct ncs_lanes lanes;
  void (*sink)(void *ctx, const uint64_t (*iv)[2], uint32_t n); /* NULL: none */
  void *sink_ctx;
};

void ncs_ivu_add_slow(struct ncs_ivu *u, uint64_t s, uint64_t e);
/* Adds [s, e) of `thread` (nothing when e <= s). Inline: the common case, an interval starting
 * within or after the latest one buffered, extends it or follows it in its run (what
 * ncs_ivu_add_slow does with room left). */
static inline void ncs_ivu_add(struct ncs_ivu *u, uint32_t thread, uint64_t s, uint64_t e) {
  if (e <= s) return;
  if (thread != ncs_lane_at(&u->lanes, u->lanes.cur)->thread) ncs_lanes_switch(&u->lanes, thread);
  struct ncs_lane *ln = ncs_lane_at(&u->lanes, u->lanes.cur);
  if (s > ln->last) ln->last = s;
  if (u->n && s >= u->iv[u->n - 1][0]) {
    if (s <= u->iv[u->n - 1][1]) {
      if (e > u->iv[u->n - 1][1]) u->iv[u->n - 1][1] = e;
      return;
    }
    if (u->n < u->cap) { u->iv[u->n][0] = s; u->iv[u->n][1] = e; u->n++; return; }
  }
  ncs_ivu_add_slow(u, s, e);
}
/* ncs_ivu_add of each call's host interval [t_enter, t_exit) with its thread, in order: what
 * one call at a time gives, with the current lane's latest start and the latest buffered
 * interval kept in locals while the calls are its thread's and extend or follow it (any other
 * call goes through ncs_ivu_add). */
void ncs_ivu_add_calls(struct ncs_ivu *u, const struct ncs_call *c, size_t n);
/* A signed time (the job clock's ns) as the union's unsigned ns and back, order kept. */
static inline uint64_t ncs_ivu_of_signed(int64_t t) { return (uint64_t)t ^ (1ull << 63); }
static inline int64_t ncs_ivu_to_signed(uint64_t u) { return (int64_t)(u ^ (1ull << 63)); }
/* The caller reads a trace and reports its chunk ends (ivlanes.h). */
static inline void ncs_ivu_by_chunk(struct ncs_ivu *u) { u->lanes.by_chunk = 1; }
static inline void ncs_ivu_chunk(struct ncs_ivu *u) { ncs_lanes_chunk(&u->lanes); }
/* The union's length; commits what is buffered and frees the buffer (adding after it starts
 * a new buffer and counts on from the frontier). */
double ncs_ivu_total(struct ncs_ivu *u);
void ncs_ivu_free(struct ncs_ivu *u);
/* ncs_ivu_add of each GPU time's interval [gpu_start, gpu_end) with its thread, in order, those
 * with flags set skipped: what one at a time gives, the way ncs_ivu_add_calls adds calls. */
void ncs_ivu_add_gpus(struct ncs_ivu *u, const struct ncs_gpu_time *g, size_t n);
/* In intervals iv[i .. n) whose ends increase (merged ones, a sink's pieces): the first index at
 * or after i whose end is above t, n when none. Galloping from i, then bisecting: about twice
 * the log of the distance found, for a run of a few or of thousands. */
static inline uint32_t ncs_iv_ends_upto(const uint64_t (*iv)[2], uint32_t i, uint32_t n, uint64_t t) {
  uint32_t lo = i, step = 1; /* iv[lo - 1] ends by t (or lo == i) */
  while (lo < n && iv[lo][1] <= t) {
    uint32_t hi = n - lo > step ? lo + step : n; /* the first end above t is in (lo, hi]? */
    if (hi < n && iv[hi][1] <= t) { lo = hi + 1; step *= 2; continue; }
    for (lo++; lo < hi;) { /* in [lo, hi]: hi is n or ends above t */
      uint32_t m = lo + (hi - lo) / 2;
      if (iv[m][1] <= t) lo = m + 1;
      else hi = m;
    }
    return lo;
  }
  return lo;
}
#endif
