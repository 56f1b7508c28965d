/* gputime_render.h — report's GPU time (analysis/gputime.h) as text and JSON. Text: "GPU time"
 * per rank (span, busy, compute-only, overlapped, exposed and idle shares, compute/comm, the
 * verdict), per step min / median / max and the slowest step (every step's row with --detail),
 * device communicators, exposed communication per operation, size and position in the step, and
 * the ranks without kernel activity or timed on the host. JSON: per rank "device_api" (with
 * device communicators) and "gpu_time" (docs/JSON.md). Past 8 ranks without --detail, text
 * names a few ranks and counts the rest. */
#ifndef NCS_GPUTIME_RENDER_H
#define NCS_GPUTIME_RENDER_H
#include <stdio.h>
#include "analysis/analysis.h"
#include "analysis/gputime.h"
#include "base/json.h"

/* job: the ranks' order, labels, which are not ranks (no_comm), and --detail */
void ncs_gputime_print_text(const struct ncs_gputime_result *r, FILE *out, const struct ncs_job *job);
void ncs_gputime_print_rank_json(const struct ncs_gputime_result *r, struct ncs_json *j, int file);
#endif
