/* report_render.c — report's renderers of results (report_render.h). One entry per analysis
 * whose result is data: its text, JSON, per-rank and per-rank-and-operation JSON renderers
 * (any may be NULL). */
#include "render/report_render.h"

#include "analysis/headline.h"
#include "render/callsites_render.h"
#include "render/doctor_render.h"
#include "render/gputime_render.h"
#include "render/metrics_render.h"
#include "render/profile_render.h"
#include "render/sizes_render.h"
#include "render/straggler_render.h"
#include "render/transport_render.h"
#include "render/whatif_render.h"
#include "render/window_render.h"

static void transport_text(const void *r, FILE *out, const struct ncs_job *job) {
  ncs_transport_print_text(r, out, job->detail, job->names);
}
static void transport_json(const void *r, struct ncs_json *j, const struct ncs_job *job) {
  ncs_transport_print_json(r, j, job->names);
}
static void transport_rank_json(const void *r, struct ncs_json *j, int file) {
  ncs_transport_print_rank_json(r, j, file);
}

static void profile_text(const void *r, FILE *out, const struct ncs_job *job) {
  ncs_profile_print_text(r, out);
}
static void profile_json(const void *r, struct ncs_json *j, const struct ncs_job *job) {
  ncs_profile_print_json(r, j);
}
static void profile_rank_json(const void *r, struct ncs_json *j, int file) {
  ncs_profile_print_rank_json(r, j, file);
}

static void metrics_text(const void *r, FILE *out, const struct ncs_job *job) {
  ncs_metrics_print_text(r, out, job);
}
static void metrics_rank_json(const void *r, struct ncs_json *j, int file) {
  ncs_metrics_print_rank_json(r, j, file);
}
static void metrics_op_json(const void *r, struct ncs_json *j, int file, unsigned op) {
  ncs_metrics_print_op_json(r, j, file, op);
}

static void window_text(const void *r, FILE *out, const struct ncs_job *job) { ncs_window_print_text(r, out); }
static void window_json(const void *r, struct ncs_json *j, const struct ncs_job *job) { ncs_window_print_json(r, j); }

static void callsites_text(const void *r, FILE *out, const struct ncs_job *job) { ncs_callsites_print_text(r, out, job); }
static void callsites_json(const void *r, struct ncs_json *j, const struct ncs_job *job) { ncs_callsites_print_json(r, j, job); }

static void sizes_text(const void *r, FILE *out, const struct ncs_job *job) { ncs_sizes_print_text(r, out); }
static void sizes_json(const void *r, struct ncs_json *j, const struct ncs_job *job) { ncs_sizes_print_json(r, j); }

static void whatif_text(const void *r, FILE *out, const struct ncs_job *job) { ncs_whatif_print_text(r, out, job->detail); }
static void whatif_json(const void *r, struct ncs_json *j, const struct ncs_job *job) { ncs_whatif_print_json(r, j); }

/* "Who is slow": when anything lined up or failed to; more rows with --detail or 8 ranks or fewer;
 * the MISMATCH and MISSING lines only where the headline above does not name them already. */
static void strag_text(const void *r, FILE *out, const struct ncs_job *job) {
  const struct ncs_strag_result *s = r;
  if (!s || (!s->complete && !s->incomplete && !s->partial && !s->claimed_twice)) return;
  fputc('\n', out);
  int listed = 0;
  const struct ncs_headline *h = job->headline;
  for (int i = 0; h && i < h->nfirst; i++) listed |= h->first[i]->hang != NULL;
  if (h && h->missing) listed = 1;
  ncs_strag_print_text(s, out, job->detail ? 1 << 20 : job->n > 8 ? 3 : 5, job->detail || !listed || job->n <= 8,
                       job->names, job->detail);
}
static void strag_json(const void *r, struct ncs_json *j, const struct ncs_job *job) { ncs_strag_print_json(r, j, job->names); }
static void gputime_text(const void *r, FILE *out, const struct ncs_job *job) {
  ncs_gputime_print_text(r, out, job);
}
static void gputime_rank_json(const void *r, struct ncs_json *j, int file) {
  ncs_gputime_print_rank_json(r, j, file);
}

static void verdicts_json(const void *r, struct ncs_json *j, const struct ncs_job *job) { ncs_doctor_print_report_json(r, j); }

static const struct result_renderer {
  const struct ncs_analysis *a;
  void (*text)(const void *result, FILE *out, const struct ncs_job *job);
  void (*json)(const void *result, struct ncs_json *j, const struct ncs_job *job);
  void (*rank_json)(const void *result, struct ncs_json *j, int file);
  void (*op_json)(const void *result, struct ncs_json *j, int file, unsigned op);
} renderers[] = {
  {&ncs_analysis_verdicts, NULL, verdicts_json, NULL, NULL},
  {&ncs_analysis_metrics, metrics_text, NULL, metrics_rank_json, metrics_op_json},
  {&ncs_analysis_transport, transport_text, transport_json, transport_rank_json, NULL},
  {&ncs_analysis_profile, profile_text, profile_json, profile_rank_json, NULL},
  {&ncs_analysis_stragglers, strag_text, strag_json, NULL, NULL},
  {&ncs_analysis_sizes, sizes_text, sizes_json, NULL, NULL},
  {&ncs_analysis_whatif, whatif_text, whatif_json, NULL, NULL},
  {&ncs_analysis_callsites, callsites_text, callsites_json, NULL, NULL},
  {&ncs_analysis_window, window_text, window_json, NULL, NULL},
  {&ncs_analysis_gputime, gputime_text, NULL, gputime_rank_json, NULL},
};

static const struct result_renderer *renderer_of(const struct ncs_analysis *a) {
  if (!a->result) return NULL;
  for (size_t i = 0; i < sizeof renderers / sizeof renderers[0]; i++)
    if (renderers[i].a == a) return &renderers[i];
  return NULL;
}

void ncs_report_render_text(const struct ncs_analysis *a, void *state, FILE *out, const struct ncs_job *job) {
  const struct result_renderer *r = renderer_of(a);
  if (r && r->text) r->text(a->result(state), out, job);
}
void ncs_report_render_json(const struct ncs_analysis *a, void *state, struct ncs_json *j, const struct ncs_job *job) {
  const struct result_renderer *r = renderer_of(a);
  if (r && r->json) r->json(a->result(state), j, job);
}
void ncs_report_render_rank_json(const struct ncs_analysis *a, void *state, struct ncs_json *j, int file) {
  const struct result_renderer *r = renderer_of(a);
  if (r && r->rank_json) r->rank_json(a->result(state), j, file);
}
void ncs_report_render_op_json(const struct ncs_analysis *a, void *state, struct ncs_json *j, int file, unsigned op) {
  const struct result_renderer *r = renderer_of(a);
  if (r && r->op_json) r->op_json(a->result(state), j, file, op);
}
