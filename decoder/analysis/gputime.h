/* gputime.h — what report's `gputime` analysis (analysis/gputime.c, docs/METRICS.md "GPU time")
 * found, as data: per rank its kernel-activity figures (model/kact.h: busy, compute-only,
 * overlapped, exposed communication and idle time, per NCCL operation, size and position in
 * the step, device communicators), a summary of its steps' figures (the steps metrics counts,
 * through the report's stages, model/stages.h), and why its calls were timed on the host.
 * Built as each file is done; render/gputime_render.c prints it as text and JSON. Valid until
 * the analysis' destroy(). */
#ifndef NCS_GPUTIME_H
#define NCS_GPUTIME_H
#include <stddef.h>
#include <stdint.h>
#include "model/kact.h"

/* A step's figures, in this order: its length, busy, compute-only, overlapped, exposed
 * communication and idle time (ns). */
enum { NCS_GT_LEN, NCS_GT_BUSY, NCS_GT_COMPUTE_ONLY, NCS_GT_OVERLAPPED, NCS_GT_EXPOSED, NCS_GT_IDLE, NCS_GT_FIGURES };
static inline uint64_t ncs_gputime_step_figure(const struct ncs_kact_step *x, int k) {
  switch (k) {
  case NCS_GT_LEN: return x->len_ns;
  case NCS_GT_BUSY: return x->len_ns - x->idle_ns;
  case NCS_GT_COMPUTE_ONLY: return x->compute_only_ns;
  case NCS_GT_OVERLAPPED: return x->overlapped_ns;
  case NCS_GT_EXPOSED: return x->exposed_ns;
  default: return x->idle_ns;
  }
}

#define NCS_GT_ROWS 1024 /* steps whose rows are kept, at most, per rank */
/* A rank's steps with GPU-time figures: min / median / max over them of each figure (the
 * median exact up to 65536 steps, else within 6.25%: model/median.h), the slowest step, and the
 * first NCS_GT_ROWS steps' rows. All 0 when the rank has no figures. When only report's text
 * prints the result (job->text_only), only the figures it prints are built (step, exposed and
 * idle: busy, compute-only and overlapped stay 0) and the rows only with --detail. */
struct ncs_gputime_steps {
  size_t n;                       /* steps with GPU-time figures */
  uint64_t min[NCS_GT_FIGURES], med[NCS_GT_FIGURES], max[NCS_GT_FIGURES];
  size_t slowest;                 /* index of the longest step */
  struct ncs_kact_step slow;
  struct ncs_kact_step *rows;     /* [min(n, NCS_GT_ROWS)]; NULL: none kept */
};
struct ncs_gputime_rank {
  const struct ncs_kact_fig *fig; /* its figures (fig->have: it had kernel activity) */
  struct ncs_gputime_steps steps;
  const char *host_timed_why;     /* why its calls were timed on the host; NULL: on the GPU, or no call */
};
struct ncs_gputime_result {
  int n;                          /* files */
  const struct ncs_gputime_rank *rank; /* [n], in file order */
};
#endif
