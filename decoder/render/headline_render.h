/* headline_render.h — the job's answer (analysis/headline.h) as the first lines of `report`
 * and `doctor`, a "headline" member of their JSON, and the first section of the HTML page.
 * Nothing is read or computed here; strings from traces are escaped. */
#ifndef NCS_HEADLINE_RENDER_H
#define NCS_HEADLINE_RENDER_H
#include <stdio.h>
#include "analysis/headline.h"
#include "base/json.h"

/* Two to six lines, starting "ncclscope: N ranks — ..." (with_problems and a problem: pointing
 * to `ncclscope doctor` on that line), then (with_problems) the doctor's
 * missing-collective note and each kind of problem with its first evidence line. */
void ncs_headline_print_text(const struct ncs_headline *h, FILE *f, int with_problems);
/* "headline": {...} inside an open JSON object. */
void ncs_headline_print_json(const struct ncs_headline *h, struct ncs_json *j);
/* <section id="headline">...</section> */
void ncs_headline_print_html(const struct ncs_headline *h, FILE *f);
#endif
