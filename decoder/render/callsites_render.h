/* callsites_render.h — report's call sites (analysis/callsites.h, report --callsites) as text and
 * JSON. Text: the "Call sites" section, the first 10 rows (every row and each site's whole stack
 * when job->detail), the most exposed site, or how to record call sites when there are none.
 * JSON: top-level "callsites" (and "callsites_missing" when there is no row; docs/JSON.md).
 * Ranks are named by job->rank[file].label. Nothing for a NULL result (no --callsites). */
#ifndef NCS_CALLSITES_RENDER_H
#define NCS_CALLSITES_RENDER_H
#include <stdio.h>
#include "analysis/analysis.h"
#include "analysis/callsites.h"
#include "base/json.h"

void ncs_callsites_print_text(const struct ncs_callsites_result *r, FILE *out, const struct ncs_job *job);
void ncs_callsites_print_json(const struct ncs_callsites_result *r, struct ncs_json *j, const struct ncs_job *job);
#endif
