/* sizes_render.h — report's per-size table (analysis/sizes.h) as text and JSON. Text: with
 * report's --sizes all|OP the table (those rows) and the calls no row times, else one line
 * saying how many rows there are; nothing when there is none. JSON: top-level "sizes", every
 * row (docs/JSON.md). */
#ifndef NCS_SIZES_RENDER_H
#define NCS_SIZES_RENDER_H
#include <stdio.h>
#include "analysis/sizes.h"
#include "base/json.h"

void ncs_sizes_print_text(const struct ncs_sizes_result *r, FILE *out);
void ncs_sizes_print_json(const struct ncs_sizes_result *r, struct ncs_json *j);
#endif
