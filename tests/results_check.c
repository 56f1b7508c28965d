/* results_check.c — report's analyses read as data (issue 31 step 4): runs one analysis on a
 * job's traces the way report does (create, a visitor per file, file_done, finish) and checks
 * the numbers of its result struct (analysis/sizes.h, callsites.h, straggler.h) against the
 * truth of the job that made the traces, given on the command line by tests/test_results.sh
 * (which builds this file against the decoder's library and runs the jobs on the doubles).
 *
 *   results_check sizes DIR LAT_US BW_GBPS OP:CALLS:COUNT...
 *       ddp_job's truth, summed over its ranks: per collective operation its calls and the sum
 *       of their count arguments. Every call is in one row of its operation (timed, warm-up or
 *       its communicator's first); busbw factors are nccl-tests' (2(n-1)/n, (n-1)/n, 1); each
 *       row's median time is the double's link model for its size (ndbl_model_ns) within the
 *       GPU_TIME record's 256 ns rounding of start and end.
 *   results_check callsites DIR CALLS RANKS TRUTHFILE
 *       site_job's truth: each function "NAME FILE:LINE" is one row with CALLS calls from RANKS
 *       ranks, at that line where source lines can be read.
 *   results_check stragglers DIR RANK US STEPS COLLECTIVES
 *       ddp_job --straggler-rank RANK --straggler-us US: RANK is the worst row; the others'
 *       wait it caused is at least (ranks - 1) x US a step (less 10 %: the job's design; the
 *       files' clock alignment, which depends on the host's load, may add to it), the other
 *       ranks' under a quarter of that; every one of the job's COLLECTIVES lined up complete,
 *       none mismatched or missing. */
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/callsites.h"
#include "analysis/sizes.h"
#include "analysis/straggler.h"
#include "check.h"
#include "doubles/include/nccl_double.h"
#include "model/rules.h"
#include "ncclscope/ops.h"

struct run {
  glob_t g;
  struct ncs_rank_info *info;
  int *order;
  const char *opts[2];
  struct ncs_job job;
};

/* The job of the traces in dir, read as report reads them; -1 when there is none. */
static int run_open(struct run *r, const char *dir, const char *option) {
  char pat[4096];
  memset(r, 0, sizeof *r);
  snprintf(pat, sizeof pat, "%s/*.ncs", dir);
  if (glob(pat, 0, NULL, &r->g) != 0 || !r->g.gl_pathc) return -1;
  int n = (int)r->g.gl_pathc;
  r->info = calloc((size_t)n, sizeof *r->info);
  r->order = calloc((size_t)n, sizeof *r->order);
  if (!r->info || !r->order) return -1;
  for (int i = 0; i < n; i++) {
    r->info[i].path = r->g.gl_pathv[i];
    r->info[i].rank = i;
    snprintf(r->info[i].label, sizeof r->info[i].label, "%d", i);
    r->order[i] = i;
  }
  r->opts[0] = option;
  r->job = (struct ncs_job){.n = n, .rank = r->info, .order = r->order, .options = r->opts};
  return 0;
}
static void run_close(struct run *r) {
  globfree(&r->g);
  free(r->info);
  free(r->order);
}
/* Runs analysis a over every file; its state (destroy it with a->destroy). */
static void *analyse(const struct ncs_analysis *a, struct run *r) {
  void *st = a->create(&r->job);
  for (int i = 0; st && i < r->job.n; i++) {
    struct ncs_visitor v = {0};
    struct ncs_read_status rs = {0};
    if (a->visitor) a->visitor(st, i, &v);
    ncs_trace_read(r->info[i].path, &v, &rs);
    if (a->file_done) a->file_done(st, i, &rs);
  }
  if (st && a->finish) a->finish(st, &r->job);
  return st;
}

static int sizes(const char *dir, double lat_us, double bw_gbps, int nt, char **truth) {
  struct run r;
  if (run_open(&r, dir, NULL)) { CHECK(0, "results sizes: traces in %s", dir); return 1; }
  void *st = analyse(&ncs_analysis_sizes, &r);
  const struct ncs_sizes_result *res = st ? ncs_analysis_sizes.result(st) : NULL;
  CHECK(res && res->nrows > 0, "results sizes: the analysis returns a table (%zu rows)", res ? res->nrows : 0);
  for (int t = 0; res && t < nt; t++) {
    char op[64];
    unsigned long long calls = 0, count = 0;
    if (sscanf(truth[t], "%63[^:]:%llu:%llu", op, &calls, &count) != 3) { CHECK(0, "results sizes: truth %s", truth[t]); continue; }
    unsigned long long got_calls = 0, got_count = 0;
    int rows = 0, model_ok = 0, timed_rows = 0;
    double fac = -1, want_fac = 0;
    for (size_t i = 0; i < res->nrows; i++) {
      const struct ncs_sizes_row *w = &res->rows[i];
      if (strcmp(w->op_name, op)) continue;
      rows++;
      uint64_t n = w->timed + w->warmup + w->first;
      got_calls += n;
      got_count += n * w->count;
      int nr = w->nranks;
      enum ndbl_rule rule = w->op == NCS_OP_AllReduce ? NDBL_RULE_ALLREDUCE
                            : w->op == NCS_OP_AllGather || w->op == NCS_OP_ReduceScatter ? NDBL_RULE_NTIMES
                                                                                         : NDBL_RULE_ONE;
      want_fac = rule == NDBL_RULE_ALLREDUCE ? 2.0 * (nr - 1) / nr : rule == NDBL_RULE_NTIMES ? (double)(nr - 1) / nr : 1.0;
      if (fac < 0 || fabs(w->busbw_factor - want_fac) > 1e-12) fac = w->busbw_factor;
      if (!w->timed || !w->gpu) continue;
      timed_rows++;
      double model = (double)ndbl_model_ns(rule, w->count, ncs_rule_dtype_size(w->dtype), nr, lat_us, bw_gbps);
      if (fabs(w->median_ns - model) <= 512) model_ok++;
      else printf("    %s count %llu on %d ranks: median %.0f ns, the model %.0f ns\n", op, (unsigned long long)w->count, nr,
                  w->median_ns, model);
    }
    CHECK(got_calls == calls, "results sizes: %s: the rows hold the job's %llu calls (got %llu in %d rows)", op, calls,
          got_calls, rows);
    CHECK(got_count == count, "results sizes: %s: their counts sum to the job's %llu (got %llu)", op, count, got_count);
    CHECK(rows && fabs(fac - want_fac) <= 1e-12, "results sizes: %s: busbw factor %.4f, nccl-tests' %.4f", op, fac, want_fac);
    CHECK(timed_rows && model_ok == timed_rows,
          "results sizes: %s: each GPU-timed row's median is the double's model within 512 ns (%d of %d rows)", op,
          model_ok, timed_rows);
  }
  if (st) ncs_analysis_sizes.destroy(st);
  run_close(&r);
  return 0;
}

static int callsites(const char *dir, unsigned long long calls, int ranks, const char *truthfile) {
  struct run r;
  if (run_open(&r, dir, "--callsites=1")) { CHECK(0, "results callsites: traces in %s", dir); return 1; }
  void *st = analyse(&ncs_analysis_callsites, &r);
  const struct ncs_callsites_result *res = st ? ncs_analysis_callsites.result(st) : NULL;
  CHECK(res && res->nrow > 0, "results callsites: the analysis returns rows (%zu)", res ? res->nrow : 0);
  FILE *f = fopen(truthfile, "r");
  char fn[256], at[1024];
  int nt = 0;
  while (res && f && fscanf(f, "%255s %1023s", fn, at) == 2) {
    nt++;
    const char *colon = strrchr(at, ':');
    int line = colon ? atoi(colon + 1) : -1;
    const struct ncs_csrow *w = NULL;
    for (size_t i = 0; i < res->nrow && !w; i++)
      if (!strcmp(res->row[i].func, fn)) w = &res->row[i];
    CHECK(w != NULL, "results callsites: %s has a row", fn);
    if (!w) continue;
    CHECK(w->calls == calls && w->ranks == ranks, "results callsites: %s: %llu calls from %d ranks (got %llu from %d)", fn,
          calls, ranks, (unsigned long long)w->calls, w->ranks);
    CHECK(w->nstack > 0 && strstr(w->stack[0], fn), "results callsites: %s: its stack's first frame names it (%s)", fn,
          w->nstack ? w->stack[0] : "no frame");
    if (res->have_lines)
      CHECK(w->line == line, "results callsites: %s at line %d (got %d)", fn, line, w->line);
    else
      printf("SKIP: results callsites: %s's line: no source lines (libdw.so.1, elfutils, is not installed)\n", fn);
  }
  CHECK(nt == 3, "results callsites: the job's truth names its 3 functions (%d)", nt);
  if (f) fclose(f);
  if (st) ncs_analysis_callsites.destroy(st);
  run_close(&r);
  return 0;
}

static int stragglers(const char *dir, int rank, double us, int steps, unsigned long long colls) {
  struct run r;
  if (run_open(&r, dir, NULL)) { CHECK(0, "results stragglers: traces in %s", dir); return 1; }
  void *st = analyse(&ncs_analysis_stragglers, &r);
  const struct ncs_strag_result *res = st ? ncs_analysis_stragglers.result(st) : NULL;
  CHECK(res && res->nranks == r.job.n, "results stragglers: one row per rank (%d of %d)", res ? res->nranks : -1, r.job.n);
  if (res && res->nranks > 0) {
    const struct ncs_strag_rank *w = &res->rank[0];
    double want = (res->nranks - 1) * us * 1e-6 * steps;
    CHECK(w->rank == rank, "results stragglers: the worst row is rank %d (got %d)", rank, w->rank);
    CHECK(w->wait_caused_s >= 0.9 * want, "results stragglers: it caused %.6f s of waiting, at least (ranks - 1) x %.0f us x %d steps = %.6f s (- 10 %%)",
          w->wait_caused_s, us, steps, want);
    double others = 0;
    for (int i = 1; i < res->nranks; i++) others += res->rank[i].wait_caused_s;
    CHECK(others < 0.25 * want, "results stragglers: the other ranks together caused less than a quarter of that (%.6f s)", others);
    CHECK(w->last_count >= (uint64_t)steps, "results stragglers: it entered last at least once a step (%llu times, %d steps)",
          (unsigned long long)w->last_count, steps);
  }
  CHECK(res && res->complete == colls && res->incomplete == 0,
        "results stragglers: the job's %llu collectives lined up complete (got %llu, %llu incomplete)", colls,
        res ? (unsigned long long)res->complete : 0, res ? (unsigned long long)res->incomplete : 0);
  CHECK(res && !res->mismatches && !res->nmissing, "results stragglers: none mismatched or missing");
  if (st) ncs_analysis_stragglers.destroy(st);
  run_close(&r);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 6 && !strcmp(argv[1], "sizes")) sizes(argv[2], atof(argv[3]), atof(argv[4]), argc - 5, argv + 5);
  else if (argc == 6 && !strcmp(argv[1], "callsites")) callsites(argv[2], strtoull(argv[3], NULL, 10), atoi(argv[4]), argv[5]);
  else if (argc == 7 && !strcmp(argv[1], "stragglers"))
    stragglers(argv[2], atoi(argv[3]), atof(argv[4]), atoi(argv[5]), strtoull(argv[6], NULL, 10));
  else { fprintf(stderr, "usage: results_check sizes|callsites|stragglers DIR ...\n"); return 2; }
  return check_done();
}
