/* profile_render.h — report's NCCL-profiler section (analysis/profile.h) as text and JSON.
 * Text: one line per collective function over all ranks. JSON: top-level "profile" {...} and
 * per rank "profile" {...} (docs/JSON.md). */
#ifndef NCS_PROFILE_RENDER_H
#define NCS_PROFILE_RENDER_H
#include <stdio.h>
#include "base/json.h"
#include "analysis/profile.h"

void ncs_profile_print_text(const struct ncs_profile_result *r, FILE *out);
void ncs_profile_print_json(const struct ncs_profile_result *r, struct ncs_json *j);
void ncs_profile_print_rank_json(const struct ncs_profile_result *r, struct ncs_json *j, int file);
#endif
