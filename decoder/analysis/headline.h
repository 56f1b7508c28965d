/* headline.h — the job's answer in a few facts, as data: how much of each rank's traced time is
 * communication (and the compute-to-communication ratio), the bus bandwidth of its large
 * collectives, which transports NCCL used against what the box has, and the doctor's problems.
 *
 * Contract: ncs_headline_build() reads the doctor's facts and verdicts after ncs_doctor_run()
 * (analysis/doctor.h) and keeps pointers into them (valid while the doctor lives). Because
 * `report`, `doctor` and `html` all build it from the same facts, they state the same figures
 * (docs/METRICS.md, "communication share"). render/headline_render.h prints it. */
#ifndef NCS_HEADLINE_H
#define NCS_HEADLINE_H
#include "analysis/doctor.h"
#include "model/rules.h"
#include "model/linkref.h"

#define NCS_HEADLINE_PROBLEMS 4

struct ncs_headline {
  int built;                    /* 1 once ncs_headline_build() filled it */
  int processes;                /* traces (and logs) the doctor read */
  int ranks;                    /* ranks in processes with a traced window long enough to judge
                                   (a process with a rank per thread counts each of its ranks) */
  int rank_procs;               /* those processes */
  int gpu_timed;                /* of those ranks, with GPU intervals */
  double share_min, share_med, share_max; /* communication share of a process's window, 0..1
                                   (several ranks: the union of their intervals); NaN: none */
  int rank_min, rank_max;       /* ranks (-1 unknown) at the lowest and highest share */
  double ratio_med;             /* the compute-to-communication ratio of the process at the median
                                   share, the one definition (ncs_kact_compute_to_comm): on GPU
                                   time with kernel activity, else an estimate; NaN none */
  int ratio_est_ranks;          /* of the judged ranks, those whose ratio is an estimate */
  int kact_ranks;               /* ranks with kernel activity (exposed vs overlapped known) */
  double exposed_med, hidden_med; /* at the median exposed share: exposed / span, overlapped /
                                     NCCL kernel time (docs/METRICS.md "GPU time"); NaN none */
  /* estimates and why (docs/METRICS.md "Estimates"): of the judged ranks, those without kernel
   * activity (their exposed time is unknown, their share counts hidden communication as
   * exposed) and those timed on the host; each with the first such rank's reason */
  int no_kact_ranks, host_timed_ranks;
  char no_kact_why[160], host_timed_why[96];
  /* CUDA-graph replays (docs/METRICS.md "Graph replays"): of the processes with captured calls,
   * those whose replays were counted (with the replayed calls) and those whose were not, with
   * the first one's reason */
  /* device API (docs/METRICS.md "Device-API kernels"): processes with a device communicator,
   * and the compute kernels launched while one existed, possibly communicating: how many and
   * their GPU time, all processes together; never in the communication share */
  struct ncs_devapi_total devapi;
  int replay_procs, replay_uncounted_procs;
  uint64_t replayed_calls;
  char replay_why[96];
  double busbw_med;             /* median over ranks of their median busbw of large collectives, GB/s; 0 none */
  unsigned transports;          /* 1 << NCS_TC_* of every connection NCCL logged */
  int nvlink_in_box;            /* the traced GPUs have NVLink between them: 1, 0, -1 unknown */
  int problems;                 /* the doctor's problem verdicts */
  int kinds;                    /* distinct checks among them */
  const struct ncs_verdict *first[NCS_HEADLINE_PROBLEMS]; /* the first of each check, in check order */
  int count[NCS_HEADLINE_PROBLEMS];                       /* verdicts of that check */
  int nfirst;
  /* the operation with the most communication time, all ranks together (added by the metrics
   * analysis in report, from the loader's sums in html; top_op[0] == 0 when unknown) */
  char top_op[32];
  double top_op_share;          /* its share of all collective/p2p time, 0..1 */
  double top_busbw;             /* its busbw, GB/s (0 when it moves no data) */
  double top_busbytes, top_steps; /* its calls' summed bus bytes and algorithm steps
                                     (ncs_rule_steps): what its expected busbw is priced on */
  struct ncs_link link;         /* the link that bounds the job's collectives (ncs_headline_build:
                                   the slowest transport class NCCL used, on the slowest host's
                                   topology); tclass 0 when no transport was logged */
  /* who is slow (added by the straggler analysis when it ran; slowest_rank -1 otherwise) */
  int slowest_rank;
  char slowest_host[64];
  double slowest_last_pct, slowest_wait_s, skew_mean_us;
  uint64_t mismatches, incomplete;
  /* what each problem costs in step time (added by report's what_if analysis, analysis/whatif.h;
   * ncost 0 otherwise): the finding's id (a doctor check's, or straggler / exposed-comm), the
   * step on the GPU now and if it were fixed, in s */
  int ncost;
  struct ncs_headline_cost { char id[32]; double step_s, fixed_s; } cost[6];
  /* the doctor's first missing-collective note (a collective some ranks had not entered when
   * the traces end: too soon to call a hang), so every first screen names those ranks; NULL none */
  const struct ncs_verdict *missing;
  /* the most exposed call site (added from analysis/callsites.h by doctor, html and report
   * --callsites; top_site[0] == 0 when unknown): where, its operation, ranks, exposed and GPU ms */
  char top_site[200], top_site_op[32];
  int top_site_ranks;
  double top_site_exp_ms, top_site_gpu_ms;
};
/* The cost of problem `id` (exposed-comm also answers comm-bound), or NULL. */
const struct ncs_headline_cost *ncs_headline_cost_of(const struct ncs_headline *h, const char *id);

void ncs_headline_build(struct ncs_headline *h, const struct ncs_doctor *d);
/* Adds who is slow (the rank last to arrive most often) and the mismatched / incomplete
 * collective counts from the straggler engine, after ncs_strag_finish. */
struct ncs_strag;
void ncs_headline_add_stragglers(struct ncs_headline *h, const struct ncs_strag *s);
/* The dominant operation (top_op and its figures) from the loader's per-op sums over every
 * rank (html; report takes it from its metrics analysis): the op with the most time. */
struct ncs_jobdata;
/* The most exposed call site (ncs_callsites_most_exposed after ncs_callsites_finish); cs NULL
 * or no such site: nothing. */
struct ncs_callsites;
void ncs_headline_add_callsite(struct ncs_headline *h, const struct ncs_callsites *cs);
void ncs_headline_add_top_op(struct ncs_headline *h, const struct ncs_jobdata *J);
/* The expected busbw of the dominant operation's calls, GB/s: the α-β reference of the job's
 * link priced on their sizes (model/linkref.h); 0 when unknown. */
double ncs_headline_expected(const struct ncs_headline *h);
/* The link of transport class tclass in this job: the slowest over the hosts' recorded
 * topologies (d may be NULL: assumed, as its why says). The one choice of link for report,
 * doctor and html. */
void ncs_headline_link_of(const struct ncs_doctor *d, int tclass, struct ncs_link *out);
/* A rank's communication share of its window (0..1), and the window in ns; -1 when too short
 * to judge (fewer than 10 calls or under 1 ms). The one definition (docs/METRICS.md). */
double ncs_headline_share(const struct ncs_dfacts *f, double *window_ns);
#endif
