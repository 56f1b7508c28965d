/* whatif.h — what each problem costs in step time and what fixing it would give, as data
 * (docs/METRICS.md, "What fixing it would give"): the `what_if` analysis of `report` fills it,
 * its renderers print it.
 *
 * Contract: one result per report run, valid until the analysis is destroyed; every time in
 * seconds per step on the GPU's clock. */
#ifndef NCS_WHATIF_H
#define NCS_WHATIF_H

#define NCS_WHATIF_MAX 6
struct ncs_whatif_item {
  char id[32];            /* the finding: nvlink-unused, low-busbw, straggler, exposed-comm; or
                             "what-if" for the user's --what-if */
  char title[224];        /* what was changed, in words */
  double step_s;          /* the step time now (median rank) */
  double step_s_if_fixed; /* the step time with the change (median rank); NaN when unknown */
  double saved_s_per_step;/* step_s - step_s_if_fixed */
  const char *model;      /* how the second figure was made, one sentence */
  const char *assumptions[4]; /* NULL-terminated */
  double evidence;        /* straggler: others' waiting it caused per step, s; else 0 */
  int rank;               /* straggler: its rank; else -1 */
};
struct ncs_whatif {
  int have;               /* steps on the GPU were found: the figures below are meaningful */
  char why_not[160];      /* when not, why */
  double step_s;          /* the observed step time on the GPU (median rank) */
  int steps;              /* boundaries (steps + 1) of the median rank */
  int n;
  struct ncs_whatif_item it[NCS_WHATIF_MAX]; /* findings by saved time, descending; then the
                                                 user's what-if */
};
/* The running report's result (NULL when the analysis did not run). */
const struct ncs_whatif *ncs_whatif_result(void);
#endif
