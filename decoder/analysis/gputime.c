/* gputime.c — the `gpu_time` analysis of `ncclscope report`: per rank, what its GPU did
 * (docs/METRICS.md, "GPU time"): busy, compute-only, overlapped, exposed communication and
 * idle time, the compute-to-communication ratio on GPU time, exposed communication per NCCL
 * operation and size, and a verdict on exposed communication; without kernel activity, why,
 * and why a rank's calls were timed on the host. Its result is analysis/gputime.h, printed by
 * render/gputime_render.c.
 *
 * Per step (the metrics' steps), the same figures in each step window: min / median / max per
 * rank, the slowest step, and the first NCS_GT_ROWS steps' rows, gathered as the sweep hands
 * each step over (build_step): no array of steps. When only report's text prints them
 * (job->text_only), only what it prints: step, exposed and idle time, rows with --detail.
 *
 * Contract: an analysis (analysis.h), after metrics and before whatif in the registry. Reads
 * KERNEL*, and CALL records for sizes and positions (none kept when the PROCESS record says
 * format 1.0, which has no KERNEL record), into a model/kact.h accumulator per file,
 * its kernels in the file's store in the report's stages (model/kstore.h: kept once for
 * gputime and whatif, filled by the first of them to ask); figures are
 * computed when the file is done, with metrics' step starts of that file (the report's stages,
 * model/stages.h), and the accumulator freed. The figures are kept in those stages, where
 * metrics reads them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/gputime.h"
#include "model/median.h"
#include "model/stages.h"
#include "model/rules.h"
#include "ncclscope/encode.h"

struct gt_file {
  struct ncs_kact *acc;
  struct ncs_kstore *ks;                /* the file's kernels (the stages'), fill: appended here */
  int fill;
  uint64_t calls, gpu_records;          /* host timing: calls but no GPU_TIME record */
  uint64_t kernels;                     /* KERNEL records */
  char timing[8], gpu_timing_env[8];    /* PROCESS timing, env.NCCLSCOPE_GPU_TIMING */
};
/* Why file f's calls were timed on the host, or NULL when they were timed on the GPU. */
static const char *host_timed_why(const struct gt_file *f) {
  if (!f->calls || f->gpu_records) return NULL;
  return ncs_rule_why_host_timed(f->timing[0] ? f->timing : NULL, f->gpu_timing_env[0] ? f->gpu_timing_env : NULL);
}
struct gt {
  int n;
  struct gt_file *f;
  struct ncs_gputime_rank *rank;        /* [n]: the result's */
  struct ncs_gputime_result res;
  struct ncs_stages *stages;
  int text_only, detail;                /* the job's: what its renderers print (build_step) */
};

static void *gt_create(const struct ncs_job *job) {
  if (!job->stages || job->stages->n != job->n) return NULL;
  struct gt *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->n = job->n;
  s->f = calloc(job->n ? (size_t)job->n : 1, sizeof *s->f);
  s->rank = calloc(job->n ? (size_t)job->n : 1, sizeof *s->rank);
  if (!s->f || !s->rank) { free(s->f); free(s->rank); free(s); return NULL; }
  s->res = (struct ncs_gputime_result){s->n, s->rank};
  s->stages = job->stages;
  s->stages->fig_on = 1;
  s->text_only = job->text_only;
  s->detail = job->detail;
  for (int i = 0; i < s->n; i++) s->rank[i].fig = &s->stages->fig[i];
  return s;
}

static struct ncs_kact *new_acc(struct gt_file *f) {
  struct ncs_kact *k = ncs_kact_new();
  if (k) ncs_kact_share(k, f->ks, f->fill);
  return k;
}

static int gt_raw(void *ctx, const struct ncs_raw *r) {
  struct gt_file *f = ctx;
  if ((r->type < NCS_REC_KERNEL || r->type > NCS_REC_KERNEL_STATUS) && r->type != NCS_REC_DEVCOMM) return 0;
  if (!f->acc && !(f->acc = new_acc(f))) return 0;
  f->kernels += r->type == NCS_REC_KERNEL;
  ncs_kact_add_raw(f->acc, r->type, r->body, r->len);
  return 0;
}

static int gt_kernels(void *ctx, const struct ncs_kernel *k, const struct ncs_raw *raw, size_t n) {
  struct gt_file *f = ctx;
  (void)raw;
  if (!f->acc && !(f->acc = new_acc(f))) return 0;
  f->kernels += n;
  ncs_kact_add_kernels(f->acc, k, n);
  return 0;
}

static int gt_gpu_times(void *ctx, const struct ncs_gpu_time *g, size_t n) {
  (void)g;
  ((struct gt_file *)ctx)->gpu_records += n;
  return 0;
}

static int gt_process(void *ctx, const struct ncs_process *p) {
  struct gt_file *f = ctx;
  if (f->acc || (f->acc = new_acc(f))) ncs_kact_process(f->acc, p); /* a 1.0 file: no call logged */
  const char *v = ncs_process_get(p, "timing");
  if (v) snprintf(f->timing, sizeof f->timing, "%s", v);
  if ((v = ncs_process_get(p, "env.NCCLSCOPE_GPU_TIMING")) != NULL) snprintf(f->gpu_timing_env, sizeof f->gpu_timing_env, "%s", v);
  return 0;
}

static int gt_calls(void *ctx, const struct ncs_call *x, size_t n) {
  struct gt_file *f = ctx;
  f->calls += n;
  if (!f->acc && !(f->acc = new_acc(f))) return 0;
  ncs_kact_add_calls(f->acc, x, n);
  return 0;
}

static void gt_visitor(void *state, int file, struct ncs_visitor *v) {
  struct gt *s = state;
  if (!s || file < 0 || file >= s->n) return;
  v->ctx = &s->f[file];
  s->f[file].ks = ncs_stages_kernels(s->stages, file, &s->f[file].fill);
  v->raw = gt_raw;
  v->kernels = gt_kernels;
  v->calls = gt_calls;
  v->gpu_times = gt_gpu_times;
  v->process = gt_process;
}

/* Per-step summary of a file's step windows, built as kact's sweep hands them over
 * (ncs_kact_figures_each), in bounded memory: min / max, the slowest and the first NCS_GT_ROWS rows
 * as they come; the median of each figure exact from the values of up to GT_EXACT steps (kept
 * while the file's figures are made, then freed), past that from a log histogram of every step
 * (model/median.h: within 6.25%; docs/METRICS.md "GPU time"). Of figures and rows, only those
 * some renderer of the run prints (text_fig below). */
#define GT_EXACT (1u << 16)
struct gt_build {
  struct ncs_gputime_steps *o;
  size_t caprows;
  int nfig;                       /* the figures built: fig[0..nfig) */
  const int *fig;
  struct ncs_median med[NCS_GT_FIGURES];
  int failed;                     /* out of memory: no summary */
};
/* The figures report's text prints (render/gputime_render.c: step, exposed and idle min /
 * median / max; rows only with --detail), built alone when only the text prints (job->text_only);
 * the others stay 0. */
static const int all_fig[NCS_GT_FIGURES] = {NCS_GT_LEN, NCS_GT_BUSY, NCS_GT_COMPUTE_ONLY, NCS_GT_OVERLAPPED, NCS_GT_EXPOSED, NCS_GT_IDLE};
static const int text_fig[] = {NCS_GT_LEN, NCS_GT_EXPOSED, NCS_GT_IDLE}; /* (build_text adds them) */
/* Figure k of a step, value v: its min (UINT64_MAX before the first step: build_begin), max
 * and median. */
static inline __attribute__((always_inline)) void build_fig(struct gt_build *b, int k, uint64_t v) {
  struct ncs_gputime_steps *o = b->o;
  if (v < o->min[k]) o->min[k] = v;
  if (v > o->max[k]) o->max[k] = v;
  if (ncs_median_add(&b->med[k], v) != 0) b->failed = 1;
}
/* The slowest step, and the step's row (rows: when kept); then the step is counted. */
static inline __attribute__((always_inline)) void build_row(struct gt_build *b, const struct ncs_kact_step *x, int rows) {
  struct ncs_gputime_steps *o = b->o;
  if (!o->n || x->len_ns > o->slow.len_ns) { o->slowest = o->n; o->slow = *x; }
  if (rows && o->n < NCS_GT_ROWS) {
    if (o->n == b->caprows) {
      size_t nc = b->caprows ? 2 * b->caprows : 16;
      if (nc > NCS_GT_ROWS) nc = NCS_GT_ROWS;
      struct ncs_kact_step *p = realloc(o->rows, nc * sizeof *p);
      if (!p) { b->failed = 1; return; }
      o->rows = p;
      b->caprows = nc;
    }
    o->rows[o->n] = *x;
  }
  o->n++;
}
/* (steps come with consecutive indices from 0: g == o->n) */
static void build_step(void *ctx, size_t g, const struct ncs_kact_step *x) {
  struct gt_build *b = ctx;
  (void)g;
  if (b->failed) return;
  for (int k = 0; k < NCS_GT_FIGURES; k++) build_fig(b, k, ncs_gputime_step_figure(x, k));
  build_row(b, x, 1);
}
/* text_fig's figures alone (rows: with --detail) */
static inline __attribute__((always_inline)) void build_text(struct gt_build *b, const struct ncs_kact_step *x, int rows) {
  if (b->failed) return;
  build_fig(b, NCS_GT_LEN, x->len_ns);
  build_fig(b, NCS_GT_EXPOSED, x->exposed_ns);
  build_fig(b, NCS_GT_IDLE, x->idle_ns);
  build_row(b, x, rows);
}
static void build_step_text(void *ctx, size_t g, const struct ncs_kact_step *x) { (void)g; build_text(ctx, x, 0); }
static void build_step_text_rows(void *ctx, size_t g, const struct ncs_kact_step *x) { (void)g; build_text(ctx, x, 1); }
/* Before the first step: the built figures' minima above any value (no test of o->n a step). */
static void build_begin(struct gt_build *b) {
  for (int j = 0; j < b->nfig; j++) b->o->min[b->fig[j]] = UINT64_MAX;
}
/* The medians (minima 0 without a step), and the builder's memory given back; a failed summary
 * is emptied. */
static void build_done(struct gt_build *b) {
  struct ncs_gputime_steps *o = b->o;
  for (int j = 0; j < b->nfig; j++) {
    int k = b->fig[j];
    if (!o->n) o->min[k] = 0;
    if (!b->failed && o->n && ncs_median_get(&b->med[k], &o->med[k]) < 0) b->failed = 1;
    ncs_median_free(&b->med[k]);
  }
  if (b->failed) { free(o->rows); memset(o, 0, sizeof *o); }
}

static void gt_file_done(void *state, int file, const struct ncs_read_status *st) {
  struct gt *s = state;
  if (!s || file < 0 || file >= s->n) return;
  struct gt_file *f = &s->f[file];
  struct ncs_gputime_rank *x = &s->rank[file];
  struct ncs_kact_fig *fig = &s->stages->fig[file];
  const struct ncs_step_starts *log = NULL;
  size_t n = f->kernels ? ncs_stages_starts(s->stages, file, &log) : 0; /* no kernel: no step has figures */
  uint64_t *t = n ? malloc(n * sizeof *t) : NULL;
  if (t) ncs_starts_copy(log, t); else n = 0;
  memset(&x->steps, 0, sizeof x->steps);
  struct gt_build b = {.o = &x->steps, .nfig = NCS_GT_FIGURES, .fig = all_fig};
  void (*sink)(void *, size_t, const struct ncs_kact_step *) = build_step;
  if (s->text_only) {
    b.nfig = (int)(sizeof text_fig / sizeof *text_fig), b.fig = text_fig;
    sink = s->detail ? build_step_text_rows : build_step_text;
  }
  for (int k = 0; k < NCS_GT_FIGURES; k++) b.med[k].cap = GT_EXACT;
  build_begin(&b);
  if (f->acc && ncs_kact_figures_each(f->acc, fig, t, n, sink, &b) != 0) fig->have = 0;
  build_done(&b);
  free(t);
  if (!fig->have) { free(x->steps.rows); memset(&x->steps, 0, sizeof x->steps); }
  ncs_kact_free(f->acc);
  f->acc = NULL;
  x->host_timed_why = host_timed_why(f);
}


static const void *gt_result(void *state) {
  const struct gt *s = state;
  return s ? &s->res : NULL;
}

static void gt_destroy(void *state) {
  struct gt *s = state;
  if (!s) return;
  for (int i = 0; i < s->n; i++) { ncs_kact_free(s->f[i].acc); free(s->rank[i].steps.rows); }
  free(s->f);
  free(s->rank);
  free(s);
}

const struct ncs_analysis ncs_analysis_gputime = {
  .name = "gputime",
  .create = gt_create,
  .visitor = gt_visitor,
  .file_done = gt_file_done,
  .destroy = gt_destroy,
  .result = gt_result,
};
