/* doctor_render.h — the doctor's verdicts (analysis/doctor.h) as text, JSON and HTML.
 *
 * Contract: text is what `ncclscope doctor` prints (trace strings escaped for a terminal);
 * JSON is the document of docs/DOCTOR.md; HTML is the doctor section's body in
 * `ncclscope html` (the text form, escaped for HTML, at most 1 MiB). Nothing is read here.
 * Text by default is a first screen: each verdict's first NCS_DOCTOR_BRIEF evidence lines (the
 * first names the blamed ranks as ranges), the rest counted; `detail` prints every evidence
 * line and one line per blamed process. JSON always holds everything: every blamed rank
 * (`ranks`, as ranges, and `ranks_count`), each blamed process's figure (`per_rank`). */
#ifndef NCS_DOCTOR_RENDER_H
#define NCS_DOCTOR_RENDER_H
#include <stdio.h>
#include "analysis/doctor.h"

#define NCS_DOCTOR_BRIEF 4
/* max_lines > 0 (without detail): fewer evidence lines per verdict (at least the first, which
 * names the blamed ranks) so that the text fits in that many lines; 0: NCS_DOCTOR_BRIEF each. */
void ncs_doctor_print_text(const struct ncs_doctor *d, FILE *out, int detail, int max_lines);
void ncs_doctor_print_json(const struct ncs_doctor *d, FILE *out);
/* A verdict's blamed ranks as members of the current JSON object: "ranks" (ranges, whole),
 * "ranks_count", and when it has them "per_rank_value" and "per_rank" ([{rank, host, value}]). */
struct ncs_json;
void ncs_doctor_json_ranks(struct ncs_json *j, const struct ncs_verdict *v);
/* report --json's "verdicts" array (id, title, problem, evidence, next); nothing when d is NULL */
void ncs_doctor_print_report_json(const struct ncs_doctor *d, struct ncs_json *j);
void ncs_doctor_print_html(const struct ncs_doctor *d, FILE *out);
#endif
