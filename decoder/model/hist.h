/* hist.h — a bounded log histogram of durations (ns) for percentiles without stored samples.
 *
 * Contract: 8 sub-buckets per power of two, so a reported percentile is the midpoint of a
 * bucket whose width is at most 1/8 of its lower bound: relative error under 6.25%. Values
 * below 16 ns are exact. Fixed size (NCS_HIST_BUCKETS counters), no allocation. */
#ifndef NCS_HIST_H
#define NCS_HIST_H
#include <stdint.h>

#define NCS_HIST_SUB 8
#define NCS_HIST_BUCKETS (64 * NCS_HIST_SUB)

struct ncs_hist { uint32_t c[NCS_HIST_BUCKETS]; }; /* the count: their sum */

/* The p-quantile (0 < p <= 1): the midpoint of the bucket holding the ceil(p*n)-th smallest
 * value; 0 when empty. */
double ncs_hist_quantile(const struct ncs_hist *h, double p);
/* Bucket index of v (at most 61 * NCS_HIST_SUB + 7: always a bucket), and the [lo, hi)
 * range of bucket i. */
static inline unsigned ncs_hist_index(uint64_t v) {
  if (v < 2 * NCS_HIST_SUB) return (unsigned)v; /* exact: buckets 0..15 */
  /* v = (8 + sub) << k with k = e - 3 (e: v's top bit, >= 4): bucket (e - 2) * 8 + sub,
   * that is 8k + (v >> k) */
  unsigned k = (63u ^ (unsigned)__builtin_clzll(v)) - 3u; /* (63 ^ clz: the top bit, one bsr) */
  return NCS_HIST_SUB * k + (unsigned)(v >> k);
}
void ncs_hist_range(unsigned i, double *lo, double *hi);
/* Counts v (inline: metrics adds one per timed operation). */
static inline void ncs_hist_add(struct ncs_hist *h, uint64_t v) { h->c[ncs_hist_index(v)]++; }
#endif
