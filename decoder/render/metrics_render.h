/* metrics_render.h — report's metrics (analysis/metrics.h) as text and JSON. Text: the
 * "Communication time" table (one row per rank; past 8 ranks without --detail the ranks at the
 * lowest, median and highest share), each rank's captured calls and graph replays, and a
 * rank's per operation and message size table (every rank with --detail). JSON: per rank
 * wall_s, comm_s, ..., "graph_replays", "verdict", "evidence", "steps"; per rank and operation
 * its timed figures and "sizes" (docs/JSON.md). */
#ifndef NCS_METRICS_RENDER_H
#define NCS_METRICS_RENDER_H
#include <stdio.h>
#include "analysis/analysis.h"
#include "analysis/metrics.h"
#include "base/json.h"

/* job: the ranks' order, labels and --detail */
void ncs_metrics_print_text(const struct ncs_metrics_result *r, FILE *out, const struct ncs_job *job);
void ncs_metrics_print_rank_json(const struct ncs_metrics_result *r, struct ncs_json *j, int file);
/* Members inside rank `file`'s "ops": {"<Op>": {...}} entry of op (a collective or
 * point-to-point operation; nothing for others). */
void ncs_metrics_print_op_json(const struct ncs_metrics_result *r, struct ncs_json *j, int file, unsigned op);
#endif
