/* whatif.h — what each problem costs in step time and what fixing it would give, as data
 * (docs/METRICS.md, "What fixing it would give"): the `what_if` analysis of `report` fills it,
 * render/whatif_render.h prints it.
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
/* Where the step goes (model/relayout.h, ncs_rl_split), each part the median over the ranks of
 * its seconds per step: the parts need not add up to step_s exactly (medians of parts are not
 * the parts of the median); `rest` is step_s minus their sum. */
#define NCS_WHATIF_KOPS 8
struct ncs_whatif_split {
  double compute, wait, idle, rest;
  double transfer[NCS_WHATIF_KOPS];      /* exposed transfer per kernel operation */
  double transfer_all[NCS_WHATIF_KOPS];  /* all transfer per kernel operation, hidden or not */
  double busbw_gbps[NCS_WHATIF_KOPS];    /* bus bytes per step / transfer_all (median rank's
                                            figures): 0 when its kernels' sizes are unknown */
  const char *kop[NCS_WHATIF_KOPS];      /* the operations' names; NULL: slot unused */
  int wait_rank;           /* the rank whose lateness made the others wait most, -1 none */
  double wait_caused_s;    /* that waiting, summed over the other ranks, per step */
};
struct ncs_whatif {
  int have;               /* steps on the GPU were found: the figures below are meaningful */
  char why_not[160];      /* when not, why */
  double step_s;          /* the observed step time on the GPU (median rank) */
  int steps;              /* boundaries (steps + 1) of the median rank */
  int n;
  struct ncs_whatif_item it[NCS_WHATIF_MAX]; /* findings by saved time, descending; then the
                                                 user's what-if */
  struct ncs_whatif_split split;  /* valid with `have` */
  double min_share;       /* a finding is listed when fixing it saves this share of the step */
};
/* The result held by a what-if analysis' state (ncs_analysis_whatif.create's; NULL: NULL). */
const struct ncs_whatif *ncs_whatif_result(const void *state);
#endif
