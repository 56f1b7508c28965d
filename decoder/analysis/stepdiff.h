/* stepdiff.h — where a change in step time between two runs comes from (docs/COMPARE.md,
 * "Where a step-time change comes from"): each run's step on the GPU split into its parts
 * (analysis/whatif.h, ncs_whatif_split: compute, each operation's transfer, what overlap hid,
 * waiting for other ranks, idle), and the change of each part.
 *
 * Contract: parts are seconds per step, medians over each run's ranks; a part is listed when it
 * changed by at least 0.1% of the base step, the others go to "remainder", which also takes
 * what medians of parts leave out (the median of parts is not the part of the median): the
 * listed parts and the remainder add up to the change of the step exactly. Listed by the size
 * of their change, largest first, the remainder last. Pure: no I/O. */
#ifndef NCS_STEPDIFF_H
#define NCS_STEPDIFF_H
#include "analysis/whatif.h"

struct ncs_stepdiff_part {
  const char *id;          /* "transfer" (an operation's data movement: busbw, transport),
                              "overlap" (transfer hidden under compute or other communication),
                              "waiting" (for other ranks: a straggler), "compute", "idle" (no
                              kernel: host gaps, launches), "remainder" */
  const char *op;          /* transfer: the kernel operation ("AllReduce", "SendRecv"); else NULL */
  int rank;                /* waiting: the new run's rank the others waited for most; else -1 */
  double base_s, new_s, change_s;
  double gbps_base, gbps_new;  /* transfer: the operation's busbw over its transfer time, 0 unknown */
};
#define NCS_STEPDIFF_MAX (NCS_WHATIF_KOPS + 6)
struct ncs_stepdiff {
  int have;                /* both runs' steps are known */
  char why_not[200];
  double base_s, new_s, change_s;
  int n;
  struct ncs_stepdiff_part p[NCS_STEPDIFF_MAX];
};
void ncs_stepdiff(const struct ncs_whatif *base, const struct ncs_whatif *new_, struct ncs_stepdiff *o);
#endif
