/* doctor_render.c — the doctor's verdicts as text, JSON and HTML (doctor_render.h). */
#include "render/doctor_render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncclscope/ops.h"
#include "base/json.h"


/* Evidence lines per verdict that keep the text within max_lines (0: no limit): each verdict
 * costs a blank, its title, its next step and a "more" line besides its evidence; at least the
 * first evidence line (the blamed ranks), at most NCS_DOCTOR_BRIEF. */
static int brief_lines(const struct ncs_doctor *d, int max_lines) {
  if (max_lines <= 0 || !d->nv) return NCS_DOCTOR_BRIEF;
  int each = (max_lines - 3) / d->nv - 4;
  return each < 1 ? 1 : each > NCS_DOCTOR_BRIEF ? NCS_DOCTOR_BRIEF : each;
}

void ncs_doctor_print_text(const struct ncs_doctor *d, FILE *out, int detail, int max_lines) {
  int problems = 0, brief = brief_lines(d, max_lines);
  for (int i = 0; i < d->nv; i++) problems += d->v[i].problem;
  fprintf(out, "ncclscope doctor: %d process(es), %d finding(s)\n", d->n, d->nv);
  for (int i = 0; i < d->nv; i++) {
    const struct ncs_verdict *v = &d->v[i];
    fprintf(out, "\n%s %s: %s\n", v->problem ? "PROBLEM" : "NOTE", v->id, v->title);
    int shown = detail || v->nevidence <= brief + 1 ? v->nevidence : brief;
    for (int k = 0; k < shown; k++) {
      fprintf(out, "  - ");
      ncs_text_escape(out, v->evidence[k], strlen(v->evidence[k]));
      fputc('\n', out);
    }
    for (int k = 0; detail && v->per_what && strcmp(v->per_what, "none") && k < v->nper; k++) {
      fprintf(out, "    rank %d: ", v->per[k].rank);
      ncs_text_escape(out, v->per[k].line, strlen(v->per[k].line));
      fputc('\n', out);
    }
    if (v->more || shown < v->nevidence)
      fprintf(out, "  - ... and %d more line(s)%s\n", v->more + v->nevidence - shown, detail ? "" : ": --detail");
    fprintf(out, "  next step: %s\n", v->next);
  }
  if (!problems) fprintf(out, "\nhealthy: no check fired (checks: %s)\n", NCS_DOCTOR_CHECKS);
}

/* The data of a hang-check verdict (docs/JSON.md): what a dashboard or the HTML headline shows. */
static void print_hang_data(struct ncs_json *j, const struct ncs_hang_verdict *h) {
  char id[24];
  ncs_json_obj_begin(j, "data");
  snprintf(id, sizeof id, "%016llx", (unsigned long long)h->comm_id);
  ncs_json_str(j, "comm_id", id);
  ncs_json_int(j, "seq", (long long)h->seq);
  const char *op = ncs_op_name(h->op);
  ncs_json_str(j, "op", op ? op : "");
  ncs_json_int(j, "nranks", h->nranks);
  ncs_json_arr_begin(j, "entered");
  for (int k = 0; k < h->nentered && k < h->capentered; k++) ncs_json_int(j, NULL, h->entered[k]);
  ncs_json_arr_end(j);
  ncs_json_int(j, "entered_count", h->nentered);
  ncs_json_arr_begin(j, "missing");
  for (int k = 0; k < h->nmissing && k < h->capmissing; k++) ncs_json_int(j, NULL, h->missing[k]);
  ncs_json_arr_end(j);
  ncs_json_int(j, "missing_count", h->nmissing);
  ncs_json_int(j, "since_realtime_ns", (long long)h->since_rt);
  ncs_json_num(j, "waited_s", h->waited_s);
  if (h->lost_n) {
    ncs_json_obj_begin(j, "time_lost");
    ncs_json_num(j, "per_rank_max_s", h->lost_max_s);
    ncs_json_num(j, "per_rank_min_s", h->lost_min_s);
    ncs_json_num(j, "total_s", h->lost_s);
    ncs_json_num(j, "share_of_run", h->lost_share);
    ncs_json_int(j, "ranks", h->lost_n);
    ncs_json_arr_begin(j, "per_rank"); /* the first 64 by rank */
    for (int k = 0; k < h->lost_n && k < 64; k++) {
      ncs_json_obj_begin(j, NULL);
      ncs_json_int(j, "rank", h->lost_per[k].rank);
      ncs_json_num(j, "lost_s", h->lost_per[k].s);
      ncs_json_obj_end(j);
    }
    ncs_json_arr_end(j);
    ncs_json_obj_end(j);
  }
  ncs_json_obj_end(j);
}

void ncs_doctor_json_ranks(struct ncs_json *j, const struct ncs_verdict *v) {
  size_t cap = (size_t)v->ranks.n * 12 + 16;
  char *txt = malloc(cap);
  if (txt) ncs_ranks_format(&v->ranks, txt, cap);
  ncs_json_str(j, "ranks", txt ? txt : "");
  free(txt);
  ncs_json_int(j, "ranks_count", v->ranks.n);
  if (!v->per_what || !strcmp(v->per_what, "none") || !v->nper) return;
  ncs_json_str(j, "per_rank_value", v->per_what);
  ncs_json_arr_begin(j, "per_rank");
  for (int k = 0; k < v->nper; k++) {
    ncs_json_obj_begin(j, NULL);
    ncs_json_int(j, "rank", v->per[k].rank);
    ncs_json_str(j, "host", v->per[k].host);
    ncs_json_num(j, "value", v->per[k].value);
    ncs_json_obj_end(j);
  }
  ncs_json_arr_end(j);
}

void ncs_doctor_print_json(const struct ncs_doctor *d, FILE *out) {
  struct ncs_json j;
  int problems = 0;
  for (int i = 0; i < d->nv; i++) problems += d->v[i].problem;
  ncs_json_init(&j, out, 1);
  ncs_json_obj_begin(&j, NULL);
  ncs_json_int(&j, "version", 2);
  ncs_json_bool(&j, "healthy", problems == 0);
  ncs_json_int(&j, "processes", d->n);
  ncs_json_arr_begin(&j, "verdicts");
  for (int i = 0; i < d->nv; i++) {
    const struct ncs_verdict *v = &d->v[i];
    ncs_json_obj_begin(&j, NULL);
    ncs_json_str(&j, "id", v->id);
    ncs_json_str(&j, "severity", v->problem ? "problem" : "note");
    ncs_json_str(&j, "title", v->title);
    ncs_json_arr_begin(&j, "evidence");
    for (int k = 0; k < v->nevidence; k++) ncs_json_str(&j, NULL, v->evidence[k]);
    ncs_json_arr_end(&j);
    if (v->more) ncs_json_int(&j, "evidence_more", v->more);
    ncs_json_str(&j, "next_step", v->next);
    ncs_doctor_json_ranks(&j, v);
    if (v->hang) print_hang_data(&j, v->hang);
    ncs_json_obj_end(&j);
  }
  ncs_json_arr_end(&j);
  ncs_json_arr_begin(&j, "inputs");
  for (int i = 0; i < d->n; i++) {
    ncs_json_obj_begin(&j, NULL);
    ncs_json_str(&j, "path", d->f[i]->path);
    ncs_json_str(&j, "host", d->f[i]->host);
    if (d->f[i]->read_rc) ncs_json_str(&j, "error", d->f[i]->error);
    ncs_json_obj_end(&j);
  }
  ncs_json_arr_end(&j);
  ncs_json_obj_end(&j);
  ncs_json_done(&j);
}

void ncs_doctor_print_report_json(const struct ncs_doctor *d, struct ncs_json *j) {
  if (!d) return;
  ncs_json_arr_begin(j, "verdicts");
  for (int i = 0; i < d->nv; i++) {
    const struct ncs_verdict *v = &d->v[i];
    ncs_json_obj_begin(j, NULL);
    ncs_json_str(j, "id", v->id);
    ncs_json_str(j, "title", v->title);
    ncs_json_bool(j, "problem", v->problem);
    ncs_json_arr_begin(j, "evidence");
    for (int k = 0; k < v->nevidence; k++) ncs_json_str(j, NULL, v->evidence[k]);
    ncs_json_arr_end(j);
    ncs_json_str(j, "next", v->next);
    ncs_json_obj_end(j);
  }
  ncs_json_arr_end(j);
}

void ncs_doctor_print_html(const struct ncs_doctor *d, FILE *f) {
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  if (!m) { fprintf(f, "<p class=\"note\">The doctor's verdicts could not be written (out of memory).</p>"); return; }
  ncs_doctor_print_text(d, m, 0, 0);
  fclose(m);
  int problems = ncs_doctor_problems(d);
  fprintf(f, "<p class=\"%s\">%s</p><pre>", problems ? "bad" : "ok", problems ? "Problems found:" : "Healthy:");
  ncs_html_escape(f, text, len < (1u << 20) ? len : (1u << 20));
  fprintf(f, "</pre>");
  free(text);
}
