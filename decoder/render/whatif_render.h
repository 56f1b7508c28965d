/* whatif_render.h — report's "What the problems cost" (analysis/whatif.h) as text and JSON.
 * Text: the step, where it goes, each finding and the user's --what-if with the step time if
 * fixed; when nothing could be computed, why, only when `detail`. JSON: top-level "what_if"
 * (docs/JSON.md). Nothing for a NULL result. */
#ifndef NCS_WHATIF_RENDER_H
#define NCS_WHATIF_RENDER_H
#include <stdio.h>
#include "analysis/whatif.h"
#include "base/json.h"

void ncs_whatif_print_text(const struct ncs_whatif *r, FILE *out, int detail);
void ncs_whatif_print_json(const struct ncs_whatif *r, struct ncs_json *j);
#endif
