/* test_gputime_steps.c — gputime's summary of a rank's step windows (analysis/gputime.c,
 * analysis/gputime.h): min / median / max of each figure over the steps, against figures worked
 * out by hand. One file, three steps of 1000 ns (starts 0, 1000, 2000, 3000), each an NCCL kernel
 * then a compute kernel on one stream, nothing overlapped: exposed 100 / 300 / 50, compute-only
 * 300 / 100 / 700, idle the rest. Built for every renderer (all six figures) and for report's
 * text alone (step, exposed, idle; the others stay 0); the same file without step starts has no
 * step and every figure 0. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/gputime.h"
#include "check.h"
#include "give_records.h"
#include "model/stages.h"
#include "ncclscope/encode.h"

static const uint64_t kern[][3] = { /* start, end, NCCL */
  {100, 200, 1}, {300, 600, 0}, {1100, 1400, 1}, {1500, 1600, 0}, {2100, 2150, 1}, {2200, 2900, 0}};
enum { NK = sizeof kern / sizeof *kern };
static const uint64_t starts[] = {0, 1000, 2000, 3000};

/* want[k]: {min, median, max} of figure k; NULL row: not built (all 0) */
static void run(const char *how, int text_only, size_t nstarts, const uint64_t (*want)[3]) {
  struct ncs_stages st;
  if (ncs_stages_init(&st, 1) != 0) { CHECK(0, "gputime steps (%s): stages", how); return; }
  struct ncs_rank_info info = {.path = "x.ncs", .host = "", .rank = 0, .nranks = 1, .held = 1, .label = "0"};
  int order[1] = {0};
  const char *opts[1] = {NULL};
  struct ncs_job job = {.n = 1, .rank = &info, .order = order, .options = opts, .stages = &st, .text_only = text_only};
  void *g = ncs_analysis_gputime.create(&job);
  struct ncs_visitor v;
  memset(&v, 0, sizeof v);
  ncs_analysis_gputime.visitor(g, 0, &v);
  give_name(&v, 1, NCS_KCLASS_NCCL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  give_name(&v, 2, NCS_KCLASS_COMPUTE, "sgemm_128x64");
  struct ncs_kernel k[NK];
  for (int i = 0; i < NK; i++)
    k[i] = (struct ncs_kernel){.kclass = kern[i][2] ? NCS_KCLASS_NCCL : NCS_KCLASS_COMPUTE, .start = kern[i][0],
                               .duration = kern[i][1] - kern[i][0], .name = kern[i][2] ? 1 : 2};
  v.kernels(v.ctx, k, NULL, NK);
  struct ncs_step_starts s = {0};
  for (size_t i = 0; i < nstarts; i++) ncs_starts_add(&s, starts[i]);
  ncs_stages_put_starts(&st, 0, &s);
  ncs_analysis_gputime.file_done(g, 0, NULL);
  const struct ncs_gputime_result *r = ncs_analysis_gputime.result(g);
  const struct ncs_gputime_steps *o = r ? &r->rank[0].steps : NULL;
  size_t nsteps = nstarts > 1 ? nstarts - 1 : 0;
  CHECK(o && o->n == nsteps, "gputime steps (%s): %zu steps (got %zu)", how, nsteps, o ? o->n : 0);
  static const char *const name[NCS_GT_FIGURES] = {"step", "busy", "compute-only", "overlapped", "exposed", "idle"};
  for (int f = 0; o && f < NCS_GT_FIGURES; f++) {
    uint64_t w0 = want ? want[f][0] : 0, w1 = want ? want[f][1] : 0, w2 = want ? want[f][2] : 0;
    CHECK(o->min[f] == w0 && o->med[f] == w1 && o->max[f] == w2, "gputime steps (%s): %s min / median / max %llu / %llu / %llu ns (by hand %llu / %llu / %llu)",
          how, name[f], (unsigned long long)o->min[f], (unsigned long long)o->med[f], (unsigned long long)o->max[f],
          (unsigned long long)w0, (unsigned long long)w1, (unsigned long long)w2);
  }
  ncs_analysis_gputime.destroy(g);
  ncs_stages_free(&st);
}

int main(void) {
  /* step, busy, compute-only, overlapped, exposed, idle: {min, median, max} */
  static const uint64_t all[NCS_GT_FIGURES][3] = {
    {1000, 1000, 1000}, {400, 400, 750}, {100, 300, 700}, {0, 0, 0}, {50, 100, 300}, {250, 600, 600}};
  static const uint64_t text[NCS_GT_FIGURES][3] = {
    {1000, 1000, 1000}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {50, 100, 300}, {250, 600, 600}};
  run("every figure", 0, 4, all);
  run("report's text", 1, 4, text);
  run("no step starts", 0, 0, NULL);
  return check_done();
}
