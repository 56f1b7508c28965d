/* report_render.h — how `report` prints an analysis' sections: through the renderer of its
 * result (render/, listed in report_render.c) when the analysis returns its result as data
 * (struct ncs_analysis.result), else through the analysis' own print_* callbacks. */
#ifndef NCS_REPORT_RENDER_H
#define NCS_REPORT_RENDER_H
#include <stdio.h>
#include "analysis/analysis.h"
#include "base/json.h"

/* Its text section, its top-level JSON members, its members in rank `file`'s JSON object, its
 * members in that rank's "ops": {"<Op>": {...}} entry of op. */
void ncs_report_render_text(const struct ncs_analysis *a, void *state, FILE *out, const struct ncs_job *job);
void ncs_report_render_json(const struct ncs_analysis *a, void *state, struct ncs_json *j, const struct ncs_job *job);
void ncs_report_render_rank_json(const struct ncs_analysis *a, void *state, struct ncs_json *j, int file);
void ncs_report_render_op_json(const struct ncs_analysis *a, void *state, struct ncs_json *j, int file, unsigned op);
#endif
