/* metrics.h — the ratio metrics of `ncclscope report` (decoder/analysis/metrics.c, docs/METRICS.md):
 * the formulas, exposed for tests, and a rank's headline numbers. */
#ifndef NCS_METRICS_H
#define NCS_METRICS_H
#include <stdint.h>

/* nccl-tests' S for one call (bytes): count x size(datatype), times nranks for AllGather,
 * ReduceScatter, AlltoAll, Gather, Scatter (docs/REFERENCE-FIGURES.md). */
double ncs_metrics_S(unsigned op, uint64_t count, unsigned datatype, int nranks);
/* busbw = algbw x this factor: 2(n-1)/n AllReduce, (n-1)/n the S x n ops, 1 Broadcast,
 * Reduce, Send, Recv; 0 for ops that move no data. */
double ncs_metrics_busbw_factor(unsigned op, int nranks);
/* Size bucket of S: 0 for S < 1, else 1 + floor(log2 S) (bucket b holds [2^(b-1), 2^b)). */
int ncs_metrics_bucket(double S);

struct ncs_metrics_rank {
  int valid;               /* the rank had traced calls in the window */
  double wall_s, comm_s, compute_to_comm; /* compute_to_comm NaN when comm_s is 0 */
  const char *timing;      /* "gpu", "host", "mixed", or "none" (no call timed) */
  uint32_t steps;
  double step_s, step_comm_share;
};
/* Headline numbers of file `file` from the metrics analysis' state (after the read). */
void ncs_metrics_rank(const void *state, int file, struct ncs_metrics_rank *out);
/* 1 when the analysis' options were invalid (report exits 2). */
int ncs_metrics_bad_option(const void *state);
#endif
