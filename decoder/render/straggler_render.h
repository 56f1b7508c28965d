/* straggler_render.h — the straggler engine's result (analysis/straggler.h) as text and JSON:
 * report's "Who is slow" section (html's findings take its MISMATCH and MISSING lines) and JSON
 * members "stragglers", "collectives", "clock_check", "mismatches" and "missing" (docs/JSON.md).
 * Communicators are named by `names` (model/commnames.h, finished), the id too when with_id
 * (--detail), JSON's "comm" beside "comm_id"; names NULL: by id. Nothing for a NULL result. */
#ifndef NCS_STRAGGLER_RENDER_H
#define NCS_STRAGGLER_RENDER_H
#include <stdio.h>
#include "analysis/straggler.h"
#include "base/json.h"
#include "model/commnames.h"

/* top: rows of the table; lists 0: the MISMATCH and MISSING lines left out (the caller's verdicts
 * name them already). Trace strings escaped. */
void ncs_strag_print_text(const struct ncs_strag_result *r, FILE *f, int top, int lists, const struct ncs_commnames *names,
                          int with_id);
/* written into the current JSON object */
void ncs_strag_print_json(const struct ncs_strag_result *r, struct ncs_json *j, const struct ncs_commnames *names);
#endif
