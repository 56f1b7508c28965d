/* doctor_render.h — the doctor's verdicts (analysis/doctor.h) as text, JSON and HTML.
 *
 * Contract: text is what `ncclscope doctor` prints (trace strings escaped for a terminal);
 * JSON is the document of docs/DOCTOR.md; HTML is the doctor section's body in
 * `ncclscope html` (the text form, escaped for HTML, at most 1 MiB). Nothing is read here. */
#ifndef NCS_DOCTOR_RENDER_H
#define NCS_DOCTOR_RENDER_H
#include <stdio.h>
#include "analysis/doctor.h"

void ncs_doctor_print_text(const struct ncs_doctor *d, FILE *out);
void ncs_doctor_print_json(const struct ncs_doctor *d, FILE *out);
void ncs_doctor_print_html(const struct ncs_doctor *d, FILE *out);
#endif
