/* metrics.h — the ratio metrics of `ncclscope report` (decoder/analysis/metrics.c, docs/METRICS.md):
 * a rank's headline numbers (the formulas are model/rules.h). */
#ifndef NCS_METRICS_H
#define NCS_METRICS_H
#include <stddef.h>
#include <stdint.h>


struct ncs_metrics_rank {
  int valid;               /* the rank had traced calls in the window */
  double wall_s, comm_s, compute_to_comm; /* compute_to_comm: the one ratio (ncs_kact_compute_to_comm:
                              on GPU time with kernel activity, else (wall - comm) / comm); NaN
                              when its divisor is 0 */
  int ratio_estimate;      /* compute_to_comm is the estimate (no kernel activity) */
  const char *timing;      /* "gpu", "host", "mixed", or "none" (no call timed) */
  uint32_t steps;
  double step_s, step_comm_share;
};
/* The counted steps of each file (the entry time, trace clock ns, of each step boundary call
 * after the warm-up, in order; docs/METRICS.md "Steps": step g runs from start g to start g+1)
 * go to the report's stages (model/stages.h) in metrics' file_done of that file. */
/* Headline numbers of file `file` from the metrics analysis' state (after the read). */
void ncs_metrics_rank(const void *state, int file, struct ncs_metrics_rank *out);
#endif
