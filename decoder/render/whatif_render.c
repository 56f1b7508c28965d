/* whatif_render.c — report's "what the problems cost" as text and JSON (whatif_render.h). */
#include "render/whatif_render.h"

#include <math.h>
#include <string.h>

static void print_item(FILE *f, const struct ncs_whatif_item *it) {
  if (!isfinite(it->step_s_if_fixed)) {
    fprintf(f, "  %-14s %s: cannot be laid out (the ranks' kernels do not line up)\n", it->id, it->title);
    return;
  }
  fprintf(f, "  %-14s %s: step %.3f -> %.3f ms (%+.3f ms per step, %+.0f%%)\n", it->id, it->title, it->step_s * 1e3,
          it->step_s_if_fixed * 1e3, -it->saved_s_per_step * 1e3,
          it->step_s > 0 ? -100.0 * it->saved_s_per_step / it->step_s : 0.0);
  if (!strcmp(it->id, "straggler"))
    fprintf(f, "  %-14s the others' waiting it causes: %.3f ms per step\n", "", it->evidence * 1e3);
}

/* "where it goes: compute 0.400, AllReduce transfer 0.120, waiting 0.010 (rank 2 last in), idle 0.019 ms" */
static void split_text(FILE *f, const struct ncs_whatif_split *p) {
  fprintf(f, "  where it goes (median rank per part, ms per step): compute %.3f", p->compute * 1e3);
  for (int k = 0; k < NCS_WHATIF_KOPS; k++)
    if (p->kop[k] && p->transfer[k] > 0) fprintf(f, ", %s exposed %.3f", p->kop[k], p->transfer[k] * 1e3);
  fprintf(f, ", waiting for other ranks %.3f", p->wait * 1e3);
  if (p->wait_rank >= 0 && p->wait > 0) fprintf(f, " (rank %d last in most)", p->wait_rank);
  fprintf(f, ", idle %.3f", p->idle * 1e3);
  if (fabs(p->rest) >= 0.0005e-3) fprintf(f, ", rest %+.3f", p->rest * 1e3);
  fprintf(f, "\n");
}

/* The split's JSON object (docs/JSON.md what_if.step_split). */
static void split_json(struct ncs_json *j, const struct ncs_whatif_split *p) {
  ncs_json_obj_begin(j, "step_split");
  ncs_json_num(j, "compute_s", p->compute);
  ncs_json_num(j, "waiting_s", p->wait);
  ncs_json_num(j, "idle_s", p->idle);
  ncs_json_num(j, "rest_s", p->rest);
  ncs_json_obj_begin(j, "exposed_transfer_s");
  for (int k = 0; k < NCS_WHATIF_KOPS; k++)
    if (p->kop[k] && (p->transfer[k] > 0 || p->transfer_all[k] > 0)) ncs_json_num(j, p->kop[k], p->transfer[k]);
  ncs_json_obj_end(j);
  ncs_json_obj_begin(j, "transfer_s");
  for (int k = 0; k < NCS_WHATIF_KOPS; k++)
    if (p->kop[k] && (p->transfer[k] > 0 || p->transfer_all[k] > 0)) ncs_json_num(j, p->kop[k], p->transfer_all[k]);
  ncs_json_obj_end(j);
  if (p->wait_rank >= 0) {
    ncs_json_int(j, "last_in_rank", p->wait_rank);
    ncs_json_num(j, "wait_caused_s", p->wait_caused_s);
  }
  ncs_json_obj_end(j);
}

void ncs_whatif_print_text(const struct ncs_whatif *r, FILE *f, int detail) {
  if (!r || (!r->have && !detail)) return; /* why not: under --detail and in JSON */
  fprintf(f, "\nWhat the problems cost (step time on the GPU clock, laid out again from the trace; docs/METRICS.md \"What fixing it would give\"):\n");
  if (!r->have) {
    fprintf(f, "  not computed: %s\n", r->why_not[0] ? r->why_not : "no steps on the GPU");
    return;
  }
  fprintf(f, "  step %.3f ms (median rank, %d step boundaries on the GPU)\n", r->step_s * 1e3, r->steps);
  split_text(f, &r->split);
  if (r->why_not[0]) fprintf(f, "  %s\n", r->why_not);
  int findings = 0;
  for (int i = 0; i < r->n; i++) findings += strcmp(r->it[i].id, "what-if") != 0;
  if (!findings) fprintf(f, "  nothing found that costs %.0f%% of the step or more\n", r->min_share * 100);
  for (int i = 0; i < r->n; i++) print_item(f, &r->it[i]);
}

void ncs_whatif_print_json(const struct ncs_whatif *r, struct ncs_json *j) {
  if (!r) return;
  ncs_json_obj_begin(j, "what_if");
  ncs_json_bool(j, "computed", r->have);
  if (r->why_not[0]) ncs_json_str(j, "why_not", r->why_not);
  if (r->have) {
    ncs_json_num(j, "step_s", r->step_s);
    ncs_json_int(j, "step_boundaries", r->steps);
    split_json(j, &r->split);
  }
  ncs_json_arr_begin(j, "findings");
  for (int i = 0; i < r->n; i++) {
    const struct ncs_whatif_item *it = &r->it[i];
    ncs_json_obj_begin(j, NULL);
    ncs_json_str(j, "id", it->id);
    ncs_json_str(j, "title", it->title);
    if (isfinite(it->step_s_if_fixed)) {
      ncs_json_num(j, "saved_s_per_step", it->saved_s_per_step);
      ncs_json_num(j, "step_s", it->step_s);
      ncs_json_num(j, "step_s_if_fixed", it->step_s_if_fixed);
    } else {
      ncs_json_null(j, "saved_s_per_step");
      ncs_json_num(j, "step_s", it->step_s);
      ncs_json_null(j, "step_s_if_fixed");
    }
    if (it->rank >= 0) {
      ncs_json_int(j, "rank", it->rank);
      ncs_json_num(j, "wait_caused_s_per_step", it->evidence);
    }
    ncs_json_str(j, "model", it->model);
    ncs_json_arr_begin(j, "assumptions");
    for (int a = 0; it->assumptions[a]; a++) ncs_json_str(j, NULL, it->assumptions[a]);
    ncs_json_arr_end(j);
    ncs_json_obj_end(j);
  }
  ncs_json_arr_end(j);
  ncs_json_obj_end(j);
}

