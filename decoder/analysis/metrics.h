/* metrics.h — what report's `metrics` analysis (decoder/analysis/metrics.c, docs/METRICS.md)
 * found, as data: per rank its window, communication time, compute-to-communication ratio,
 * steps, verdict, graph replays and per operation and message size its timed calls; for the
 * job the dominant operation (the headline's inputs). The formulas are model/rules.h.
 * Built in the analysis' finish(); render/metrics_render.c prints it as text and JSON. Valid
 * until the analysis' destroy(). */
#ifndef NCS_METRICS_H
#define NCS_METRICS_H
#include <stddef.h>
#include <stdint.h>
#include "model/kact.h"
#include "model/replay.h"

#define NCS_METRICS_BUCKETS 66 /* size classes: 0 bytes, then [2^0, 2^1) .. [2^64, ...) */

/* Timed operations: an op's totals, or those of one size class of it. Sums over the calls. */
struct ncs_metrics_row {
  int bucket;                 /* size class: 0 for S < 1, b for S in [2^(b-1), 2^b); -1: the op's totals */
  uint64_t calls;             /* timed calls (graph replays included) */
  uint64_t gpu_calls;         /* of calls, timed on the GPU (the rest on the host) */
  uint64_t replays;           /* of calls, CUDA-graph replays (model/replay.h) */
  uint64_t time_ns, replay_ns;/* their time; of it, the replays' */
  uint64_t S;                 /* nccl-tests' S, summed: algbw = S / time */
  double busS;                /* S x the busbw factor, summed: busbw = busS / time */
  double steps;               /* the calls' algorithm steps (ncs_rule_steps), summed */
  int have_quantiles;         /* p50 / p99 known (a size class with its histogram) */
  double p50_ns, p99_ns;
};
struct ncs_metrics_op {
  unsigned op;                /* NCS_OP_* */
  struct ncs_metrics_row total;
  uint64_t replayed_count, replayed_bytes; /* replayed calls' element counts and bytes */
  struct ncs_metrics_row *sizes; int nsizes; /* size classes with calls, smallest first */
};

struct ncs_metrics_rank {
  int used;                /* the file had records metrics reads (else every figure is 0) */
  int valid;               /* the rank had traced calls in the window */
  double wall_s, comm_s, compute_to_comm; /* compute_to_comm: the one ratio (ncs_kact_compute_to_comm:
                              on GPU time with kernel activity, else (wall - comm) / comm); NaN
                              when its divisor is 0 */
  int ratio_estimate;      /* compute_to_comm is the estimate (no kernel activity) */
  uint64_t comm_late;      /* intervals (merged) that came after the streaming union was committed
                              past their start: comm_s is exact when 0, else it may lack up to
                              comm_late_s (docs/METRICS.md "Communication time") */
  double comm_late_s;
  uint64_t comm_forced;    /* commits forced by a full interval buffer (the cause of most late ones) */
  const char *timing;      /* "gpu", "host", "mixed", or "none" (no call timed); NULL when !used */
  uint64_t timed_gpu, timed_host, captured; /* calls timed on the GPU, the host; captured into graphs */
  const struct ncs_replay_sum *replays; /* graph replays found (model/replay.h) */
  /* the verdict: with kernel activity on exposed communication (gpu: its figures), else on
   * the share of the window in NCCL calls, an estimate */
  const char *verdict;
  const char *verdict_basis; /* "exposed_gpu_time", "comm_share_estimate"; NULL: no window */
  const struct ncs_kact_fig *gpu; /* the file's kernel-activity figures when they have a span, else NULL */
  unsigned top_op;         /* the operation taking most time (0: none) */
  /* steps (docs/METRICS.md "Steps") */
  uint32_t steps;
  const char *boundary_op; /* NULL: no boundary found */
  const char *found_by;    /* "detected", "--step-op", "NCCLSCOPE_STEP_MARK"; NULL: none */
  double step_s, step_comm_share;
  struct ncs_metrics_op *ops; int nops; /* operations with timed calls, in NCS_OP_* order */
};
/* The operation taking most communication time, all ranks together (the headline's). */
struct ncs_metrics_top {
  unsigned op;             /* 0: none (no timed call) */
  double share;            /* of all operations' time */
  double time_ns, busS, steps; /* its summed time, S x busbw factor and algorithm steps */
};
struct ncs_metrics_result {
  int n;                           /* files */
  const struct ncs_metrics_rank *rank; /* [n], in file order */
  struct ncs_metrics_top top;
};
/* Rank `file`'s row of operation op, NULL when it has no timed call of it. */
const struct ncs_metrics_op *ncs_metrics_op_of(const struct ncs_metrics_rank *r, unsigned op);
/* The counted steps of each file (the entry time, trace clock ns, of each step boundary call
 * after the warm-up, in order; docs/METRICS.md "Steps": step g runs from start g to start g+1)
 * go to the report's stages (model/stages.h) in metrics' file_done of that file. */
#endif
