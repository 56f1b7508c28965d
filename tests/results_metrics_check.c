/* results_metrics_check.c — report's `metrics` and `gputime` results read as numbers (analysis/metrics.h,
 * analysis/gputime.h), not as JSON text, against the truth a job on the doubles wrote of the
 * same run. Run by tests/test_results_metrics.sh:
 *   results_metrics_check ddp TRACEDIR TRUTHDIR      ddp_job --truth --measure (its GPU_TIME, no kernels)
 *   results_metrics_check overlap TRACEDIR TRUTHDIR  overlap_job --truth (kernel activity)
 * It reads every trace in TRACEDIR once through the loader (model/jobload.h) with the two
 * analyses plugged in as report plugs them (the run's stages, metrics before gputime), then
 * for each file the truth of its rank (the trace's env.RANK): TRUTHDIR/truth-rank<R>.json.
 * ddp: per operation the timed calls and nccl-tests' S (the job's count x datatype size
 * summed; x ranks for AllGather and ReduceScatter, whose count is per rank) exactly, every
 * call timed on the GPU, the step count, and comm_s between the double's model (steps x
 * comm_ns_per_step) and the job's own CUDA-event measurement (the shim's events lie inside its
 * brackets), each give or take 256 ns a call: GPU_TIME's resolution rounds start and end up).
 * overlap: kernels and NCCL kernels exactly; span, NCCL kernel time, overlapped, exposed and
 * idle time, and the AllReduce's exposed time per position in the step, each within
 * 2 x kernel_resolution_ns x the rank's kernels + 5 us (what the trace's rounding and the
 * shim's clock conversion can move them, as tests/test_overlap.sh allows). */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/gputime.h"
#include "analysis/metrics.h"
#include "check.h"
#include "model/jobload.h"
#include "model/stages.h"
#include "ncclscope/ops.h"

#define MAXF 16
struct fileinfo { int rank; uint64_t kres; };
struct run {
  void *met, *gt;
  struct ncs_stages *stages;
  struct fileinfo info[MAXF];
};

static int on_process(void *ctx, const struct ncs_process *p) {
  struct fileinfo *f = ctx;
  const char *v = ncs_process_get(p, "env.RANK");
  if (v) f->rank = atoi(v);
  if ((v = ncs_process_get(p, "kernel_resolution_ns")) != NULL) f->kres = strtoull(v, NULL, 10);
  return 0;
}
static void file_visitor(void *ctx, int file, struct ncs_mux *m) {
  struct run *r = ctx;
  m->v[m->n] = (struct ncs_visitor){0};
  m->v[m->n].ctx = &r->info[file];
  m->v[m->n++].process = on_process;
  ncs_analysis_metrics.visitor(r->met, file, &m->v[m->n++]);
  ncs_analysis_gputime.visitor(r->gt, file, &m->v[m->n++]);
}
static void file_done(void *ctx, int file, int rc, const struct ncs_read_status *st) {
  struct run *r = ctx;
  (void)rc;
  ncs_analysis_metrics.file_done(r->met, file, st);
  ncs_analysis_gputime.file_done(r->gt, file, st);
  ncs_stages_drop_file(r->stages, file);
}

/* The truth file's whole text, NULL when it cannot be read. */
static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  return buf;
}
/* The number after "key": in s (from `from` on), NAN when absent. */
static double num(const char *s, const char *key) {
  char k[80];
  snprintf(k, sizeof k, "\"%s\":", key);
  const char *p = s ? strstr(s, k) : NULL;
  return p ? strtod(p + strlen(k), NULL) : NAN;
}
/* The k-th number (0-based) of the array "key": [...], NAN when absent. */
static double nth(const char *s, const char *key, int k) {
  char kk[80];
  snprintf(kk, sizeof kk, "\"%s\": [", key);
  const char *p = s ? strstr(s, kk) : NULL;
  if (!p) return NAN;
  p += strlen(kk);
  for (int i = 0; i < k; i++) {
    p = strpbrk(p, ",]");
    if (!p || *p == ']') return NAN;
    p++;
  }
  char *end;
  double v = strtod(p, &end);
  return end == p ? NAN : v;
}

static void check_ddp(const struct ncs_metrics_rank *x, int rank, const char *t) {
  static const unsigned ops[] = {NCS_OP_AllReduce, NCS_OP_Broadcast, NCS_OP_AllGather, NCS_OP_ReduceScatter, NCS_OP_Send, NCS_OP_Recv};
  double nranks = num(t, "nranks");
  uint64_t calls = 0;
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
    const char *name = ncs_op_name(ops[i]);
    char key[64];
    snprintf(key, sizeof key, "\"%s\": {", name);
    const char *o = strstr(t, key);
    double want_calls = num(o, "calls"), want_S = num(o, "bytes");
    if (ops[i] == NCS_OP_AllGather || ops[i] == NCS_OP_ReduceScatter) want_S *= nranks;
    const struct ncs_metrics_op *m = ncs_metrics_op_of(x, ops[i]);
    CHECK(o && m && (double)m->total.calls == want_calls && (double)m->total.S == want_S,
          "results ddp rank %d %s: %llu timed calls, S %llu bytes (the job's: %.0f calls, S %.0f)", rank, name,
          m ? (unsigned long long)m->total.calls : 0, m ? (unsigned long long)m->total.S : 0, want_calls, want_S);
    calls += m ? m->total.calls : 0;
  }
  CHECK(x->timed_gpu == calls && x->timed_host == 0 && x->timing && !strcmp(x->timing, "gpu"),
        "results ddp rank %d: every timed call timed on the GPU (%llu of %llu, timing %s)", rank,
        (unsigned long long)x->timed_gpu, (unsigned long long)calls, x->timing ? x->timing : "none");
  CHECK(x->steps == num(t, "steps"), "results ddp rank %d: %u steps (the job ran %.0f)", rank, x->steps, num(t, "steps"));
  double model = num(t, "comm_ns_per_step") * num(t, "steps"), measured = num(t, "comm_ns");
  double got = x->comm_s * 1e9;
  /* GPU_TIME rounds start and end up to 256 ns, so an interval may read up to 256 ns longer or
   * shorter than the events gave: the job's own bracket bounds it within that */
  CHECK(model > 0 && got >= model - 256.0 * (double)calls && got <= measured + 256.0 * (double)calls,
        "results ddp rank %d: comm_s %.9f s between the model's %.9f s and the job's measurement %.9f s (each give or take 256 ns a call)",
        rank, x->comm_s, model / 1e9, measured / 1e9);
}

static void near(int rank, const char *what, uint64_t got, double want, double tol) {
  CHECK(fabs((double)got - want) <= tol, "results overlap rank %d: %s %llu ns (the job's %.0f, within %.0f)", rank, what,
        (unsigned long long)got, want, tol);
}

static void check_gpu(const struct ncs_gputime_rank *x, int rank, uint64_t kres, const char *t) {
  const struct ncs_kact_fig *g = x->fig;
  CHECK(g && g->have && g->kernels == num(t, "kernels") && g->nccl_kernels == num(t, "nccl_kernels"),
        "results overlap rank %d: kernel activity, %llu kernels of which %llu NCCL (the job's %.0f, %.0f)", rank,
        g ? (unsigned long long)g->kernels : 0, g ? (unsigned long long)g->nccl_kernels : 0, num(t, "kernels"), num(t, "nccl_kernels"));
  if (!g || !g->have) return;
  double tol = 2.0 * (double)(kres ? kres : 1) * (double)g->kernels + 5000;
  near(rank, "span", g->span_ns, num(t, "span_ns"), tol);
  near(rank, "NCCL kernel time", g->comm_ns, num(t, "comm_ns"), tol);
  near(rank, "overlapped", g->overlapped_ns, num(t, "overlapped_ns"), tol);
  near(rank, "exposed communication", g->exposed_ns, num(t, "exposed_ns"), tol);
  near(rank, "idle", g->idle_ns, num(t, "idle_ns"), tol);
  const struct ncs_kact_op *ar = NULL;
  for (int o = 0; o < g->nops; o++)
    if (!strcmp(g->op[o].name, "AllReduce")) ar = &g->op[o];
  int npos = 0;
  while (!isnan(nth(t, "positions_exposed_ns", npos))) npos++;
  CHECK(ar && ar->sized && ar->npos >= npos && npos > 0, "results overlap rank %d: the AllReduce's positions in the step (%d, the job's %d)",
        rank, ar ? ar->npos : 0, npos);
  for (int p = 0; ar && p < npos && p < ar->npos; p++) {
    char what[64];
    snprintf(what, sizeof what, "AllReduce #%d exposed", p + 1);
    near(rank, what, ar->pos_exposed_ns[p], nth(t, "positions_exposed_ns", p), tol);
  }
}

int main(int argc, char **argv) {
  if (argc != 4 || (strcmp(argv[1], "ddp") && strcmp(argv[1], "overlap"))) {
    fprintf(stderr, "usage: results_check ddp|overlap TRACEDIR TRUTHDIR\n");
    return 2;
  }
  char *files[MAXF];
  int n = 0;
  DIR *d = opendir(argv[2]);
  for (struct dirent *e; d && (e = readdir(d)) != NULL && n < MAXF;) {
    size_t l = strlen(e->d_name);
    if (l < 4 || strcmp(e->d_name + l - 4, ".ncs")) continue;
    if (asprintf(&files[n], "%s/%s", argv[2], e->d_name) < 0) return 2;
    n++;
  }
  if (d) closedir(d);
  CHECK(n > 0, "results %s: %d trace files in %s", argv[1], n, argv[2]);
  if (!n) return check_done();

  struct ncs_stages stages = {0};
  struct ncs_rank_info info[MAXF] = {{0}};
  int order[MAXF];
  const char *opts[1] = {NULL};
  for (int i = 0; i < n; i++) { info[i].path = files[i]; order[i] = i; }
  if (ncs_stages_init(&stages, n) != 0) return 2;
  struct ncs_job job = {.n = n, .rank = info, .order = order, .options = opts, .stages = &stages};
  struct run r = {.stages = &stages};
  for (int i = 0; i < n; i++) r.info[i].rank = -1;
  r.met = ncs_analysis_metrics.create(&job);
  r.gt = ncs_analysis_gputime.create(&job);
  CHECK(r.met && r.gt, "results %s: the analyses made", argv[1]);
  if (!r.met || !r.gt) return check_done();
  struct ncs_load_opts lo = {.ctx = &r, .file_visitor = file_visitor, .file_done = file_done};
  struct ncs_jobread *jr = NULL;
  int rc = ncs_job_load(n, files, &lo, &jr);
  CHECK(rc == 0, "results %s: the loader read the job (%d)", argv[1], rc);
  ncs_analysis_metrics.finish(r.met, &job);
  if (ncs_analysis_gputime.finish) ncs_analysis_gputime.finish(r.gt, &job);
  const struct ncs_metrics_result *mr = ncs_analysis_metrics.result(r.met);
  const struct ncs_gputime_result *gr = ncs_analysis_gputime.result(r.gt);
  CHECK(mr && gr && mr->n == n && gr->n == n, "results %s: both results, one entry per file", argv[1]);
  for (int i = 0; mr && gr && i < n; i++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/truth-rank%d.json", argv[3], r.info[i].rank);
    const char *t = slurp(path);
    CHECK(t != NULL, "results %s: %s holds rank %d, its truth %s", argv[1], files[i], r.info[i].rank, path);
    if (!t) continue;
    if (!strcmp(argv[1], "ddp")) check_ddp(&mr->rank[i], r.info[i].rank, t);
    else check_gpu(&gr->rank[i], r.info[i].rank, r.info[i].kres, t);
  }
  ncs_jobread_free(jr);
  ncs_analysis_gputime.destroy(r.gt);
  ncs_analysis_metrics.destroy(r.met);
  ncs_stages_free(&stages);
  for (int i = 0; i < n; i++) free(files[i]);
  return check_done();
}
