/* gputime.c — the `gpu_time` analysis of `ncclscope report`: per rank, what its GPU did
 * (docs/METRICS.md, "GPU time"): busy, compute-only, overlapped, exposed communication and
 * idle time, the compute-to-communication ratio on GPU time, exposed communication per NCCL
 * operation and size, and a verdict on exposed communication; without kernel activity it says
 * why, and that the communication figures of the report are estimates.
 *
 * Per step (the metrics' steps), the same figures in each step window: min / median / max per
 * rank, the slowest step, and the first GT_ROWS steps' rows, gathered as the sweep hands each
 * step over (build_step): no array of steps.
 *
 * Contract: an analysis (analysis.h), after metrics in the registry. Reads KERNEL*, and CALL
 * records for sizes and positions, into a model/kact.h accumulator per file; figures are
 * computed when the file is done, with metrics' step starts of that file (the report's stages,
 * model/stages.h), and the accumulator freed. The figures are kept in those stages, where
 * metrics reads them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "model/median.h"
#include "model/stages.h"
#include "model/rules.h"
#include "ncclscope/encode.h"

/* per rank and step: min / median / max over its steps of each figure, the slowest step, and
 * the first GT_ROWS steps' rows (memory stays bounded whatever the trace length) */
#define GT_ROWS 1024
enum { SF_LEN, SF_BUSY, SF_COMPUTE_ONLY, SF_OVERLAPPED, SF_EXPOSED, SF_IDLE, SF_N };
static const char *const sf_json[SF_N] = {"step_s", "busy_s", "compute_only_s", "overlapped_s", "exposed_comm_s", "idle_s"};
struct gt_steps {
  size_t n;                       /* steps with GPU-time figures */
  uint64_t min[SF_N], med[SF_N], max[SF_N];
  size_t slowest;                 /* index of the longest step */
  struct ncs_kact_step slow;
  struct ncs_kact_step *rows;     /* [min(n, GT_ROWS)] */
};
struct gt_file {
  struct ncs_kact *acc;
  struct ncs_kact_fig *fig;       /* its slot in the report's stages */
  struct gt_steps st;
  uint64_t calls, gpu_records;          /* host timing: calls but no GPU_TIME record */
  uint64_t kernels;                     /* KERNEL records */
  char timing[8], gpu_timing_env[8];    /* PROCESS timing, env.NCCLSCOPE_GPU_TIMING */
};
/* Why file f's calls were timed on the host, or NULL when they were timed on the GPU. */
static const char *host_timed_why(const struct gt_file *f) {
  if (!f->calls || f->gpu_records) return NULL;
  return ncs_rule_why_host_timed(f->timing[0] ? f->timing : NULL, f->gpu_timing_env[0] ? f->gpu_timing_env : NULL);
}
struct gt { int n; struct gt_file *f; struct ncs_stages *stages; };

static void *gt_create(const struct ncs_job *job) {
  if (!job->stages || job->stages->n != job->n) return NULL;
  struct gt *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->n = job->n;
  s->f = calloc(job->n ? (size_t)job->n : 1, sizeof *s->f);
  if (!s->f) { free(s); return NULL; }
  s->stages = job->stages;
  s->stages->fig_on = 1;
  for (int i = 0; i < s->n; i++) s->f[i].fig = &s->stages->fig[i];
  return s;
}

static int gt_raw(void *ctx, const struct ncs_raw *r) {
  struct gt_file *f = ctx;
  if ((r->type < NCS_REC_KERNEL || r->type > NCS_REC_KERNEL_STATUS) && r->type != NCS_REC_DEVCOMM) return 0;
  if (!f->acc && !(f->acc = ncs_kact_new())) return 0;
  f->kernels += r->type == NCS_REC_KERNEL;
  ncs_kact_add_raw(f->acc, r->type, r->body, r->len);
  return 0;
}

static int gt_gpu_times(void *ctx, const struct ncs_gpu_time *g, size_t n) {
  (void)g;
  ((struct gt_file *)ctx)->gpu_records += n;
  return 0;
}

static int gt_process(void *ctx, const struct ncs_process *p) {
  struct gt_file *f = ctx;
  const char *v = ncs_process_get(p, "timing");
  if (v) snprintf(f->timing, sizeof f->timing, "%s", v);
  if ((v = ncs_process_get(p, "env.NCCLSCOPE_GPU_TIMING")) != NULL) snprintf(f->gpu_timing_env, sizeof f->gpu_timing_env, "%s", v);
  return 0;
}

static int gt_calls(void *ctx, const struct ncs_call *x, size_t n) {
  struct gt_file *f = ctx;
  f->calls += n;
  if (!f->acc && !(f->acc = ncs_kact_new())) return 0;
  ncs_kact_add_calls(f->acc, x, n);
  return 0;
}

static void gt_visitor(void *state, int file, struct ncs_visitor *v) {
  struct gt *s = state;
  if (!s || file < 0 || file >= s->n) return;
  v->ctx = &s->f[file];
  v->raw = gt_raw;
  v->calls = gt_calls;
  v->gpu_times = gt_gpu_times;
  v->process = gt_process;
}

static uint64_t sf_get(const struct ncs_kact_step *x, int k) {
  switch (k) {
  case SF_LEN: return x->len_ns;
  case SF_BUSY: return x->len_ns - x->idle_ns;
  case SF_COMPUTE_ONLY: return x->compute_only_ns;
  case SF_OVERLAPPED: return x->overlapped_ns;
  case SF_EXPOSED: return x->exposed_ns;
  default: return x->idle_ns;
  }
}

/* Per-step summary of a file's step windows, built as kact's sweep hands them over
 * (ncs_kact_figures_each), in bounded memory: min / max, the slowest and the first GT_ROWS rows
 * as they come; the median of each figure exact from the values of up to GT_EXACT steps (kept
 * while the file's figures are made, then freed), past that from a log histogram of every step
 * (model/median.h: within 6.25%; docs/METRICS.md "GPU time"). */
#define GT_EXACT (1u << 16)
struct gt_build {
  struct gt_steps *o;
  size_t caprows;
  struct ncs_median med[SF_N];
  int failed;                     /* out of memory: no summary */
};
static void build_step(void *ctx, size_t g, const struct ncs_kact_step *x) {
  struct gt_build *b = ctx;
  struct gt_steps *o = b->o;
  (void)g; /* (steps come with consecutive indices from 0: g == o->n) */
  if (b->failed) return;
  if (!o->n || x->len_ns > o->slow.len_ns) { o->slowest = o->n; o->slow = *x; }
  for (int k = 0; k < SF_N; k++) {
    uint64_t v = sf_get(x, k);
    if (!o->n || v < o->min[k]) o->min[k] = v;
    if (!o->n || v > o->max[k]) o->max[k] = v;
    if (ncs_median_add(&b->med[k], v) != 0) b->failed = 1;
  }
  if (o->n < GT_ROWS) {
    if (o->n == b->caprows) {
      size_t nc = b->caprows ? 2 * b->caprows : 16;
      if (nc > GT_ROWS) nc = GT_ROWS;
      struct ncs_kact_step *p = realloc(o->rows, nc * sizeof *p);
      if (!p) { b->failed = 1; return; }
      o->rows = p;
      b->caprows = nc;
    }
    o->rows[o->n] = *x;
  }
  o->n++;
}
/* The medians, and the builder's memory given back; a failed summary is emptied. */
static void build_done(struct gt_build *b) {
  struct gt_steps *o = b->o;
  for (int k = 0; k < SF_N; k++) {
    if (!b->failed && o->n && ncs_median_get(&b->med[k], &o->med[k]) < 0) b->failed = 1;
    ncs_median_free(&b->med[k]);
  }
  if (b->failed) { free(o->rows); memset(o, 0, sizeof *o); }
}

static void gt_file_done(void *state, int file, const struct ncs_read_status *st) {
  struct gt *s = state;
  if (!s || file < 0 || file >= s->n) return;
  struct gt_file *f = &s->f[file];
  const struct ncs_step_starts *log = NULL;
  size_t n = f->kernels ? ncs_stages_starts(s->stages, file, &log) : 0; /* no kernel: no step has figures */
  uint64_t *t = n ? malloc(n * sizeof *t) : NULL;
  if (t) ncs_starts_copy(log, t); else n = 0;
  memset(&f->st, 0, sizeof f->st);
  struct gt_build b = {.o = &f->st};
  for (int k = 0; k < SF_N; k++) b.med[k].cap = GT_EXACT;
  if (f->acc && ncs_kact_figures_each(f->acc, f->fig, t, n, build_step, &b) != 0) f->fig->have = 0;
  build_done(&b);
  free(t);
  if (!f->fig->have) { free(f->st.rows); memset(&f->st, 0, sizeof f->st); }
  ncs_kact_free(f->acc);
  f->acc = NULL;
}


static void rank_label(char *buf, size_t n, const struct ncs_job *job, int i) {
  snprintf(buf, n, "%s", job->rank[i].label[0] ? job->rank[i].label : "?"); /* "0-3": a rank per thread */
}

/* Per-step GPU time: per rank, min / median / max over its steps and the slowest step's parts;
 * with --detail every kept step. */
static void print_steps_text(const struct gt *s, FILE *out, const struct ncs_job *job) {
  int any = 0;
  for (int i = 0; i < s->n; i++) any |= s->f[i].fig->have && s->f[i].st.n;
  if (!any) {
    fprintf(out, "  per step: no steps found (docs/METRICS.md \"Steps\"; --step-op OP names the boundary)\n");
    return;
  }
  fprintf(out, "\n  per step (GPU time in each step, from one boundary call to the next as in \"steps\"; ms min / median / max):\n");
  fprintf(out, "  %6s %6s %-22s %-22s %-22s  %s\n", "rank", "steps", "step_ms", "exposed_ms", "idle_ms",
          "slowest step: compute-only + overlapped + exposed + idle (ms)");
  /* short form past 8 ranks: the ranks at the lowest, median and highest median step time, and
   * the one whose slowest step is the job's slowest */
  int rows = 0, *pick = NULL, npick = 0;
  for (int k = 0; k < s->n; k++) rows += s->f[job->order[k]].fig->have && s->f[job->order[k]].st.n;
  if (!job->detail && rows > 8 && (pick = malloc((size_t)rows * sizeof *pick)) != NULL) {
    for (int k = 0; k < s->n; k++)
      if (s->f[job->order[k]].fig->have && s->f[job->order[k]].st.n) pick[npick++] = job->order[k];
    for (int a = 1; a < npick; a++) /* by median step time (insertion sort: stable, ranks in order) */
      for (int b = a; b > 0 && s->f[pick[b]].st.med[SF_LEN] < s->f[pick[b - 1]].st.med[SF_LEN]; b--) {
        int t = pick[b]; pick[b] = pick[b - 1]; pick[b - 1] = t;
      }
    int slow = pick[0];
    for (int a = 1; a < npick; a++) if (s->f[pick[a]].st.slow.len_ns > s->f[slow].st.slow.len_ns) slow = pick[a];
    int keep[4] = {pick[0], pick[(npick - 1) / 2], pick[npick - 1], slow};
    memcpy(pick, keep, sizeof keep);
    npick = 4;
  }
  int shown = 0;
  for (int k = 0; k < s->n; k++) {
    int i = job->order[k];
    const struct gt_steps *st = &s->f[i].st;
    if (!s->f[i].fig->have || !st->n) continue;
    if (pick) {
      int in = 0;
      for (int a = 0; a < npick; a++) in |= pick[a] == i;
      if (!in) continue;
    } else if (!job->detail && shown >= 8) continue;
    shown++;
    char rk[40], c[3][40];
    rank_label(rk, sizeof rk, job, i);
    const int col[3] = {SF_LEN, SF_EXPOSED, SF_IDLE};
    for (int x = 0; x < 3; x++)
      snprintf(c[x], sizeof c[x], "%.2f / %.2f / %.2f", st->min[col[x]] / 1e6, st->med[col[x]] / 1e6, st->max[col[x]] / 1e6);
    fprintf(out, "  %6s %6zu %-22s %-22s %-22s  #%zu %.2f = %.2f + %.2f + %.2f + %.2f\n", rk, st->n, c[0], c[1], c[2],
            st->slowest + 1, st->slow.len_ns / 1e6, st->slow.compute_only_ns / 1e6, st->slow.overlapped_ns / 1e6,
            st->slow.exposed_ns / 1e6, st->slow.idle_ns / 1e6);
  }
  if (pick) fprintf(out, "  (the ranks at the lowest, median and highest median step time, and with the slowest step; %d more: --detail or --json)\n", rows - shown);
  free(pick);
  if (!job->detail) return;
  for (int k = 0; k < s->n; k++) {
    int i = job->order[k];
    const struct gt_steps *st = &s->f[i].st;
    if (!s->f[i].fig->have || !st->n || !st->rows) continue;
    char rk[40];
    rank_label(rk, sizeof rk, job, i);
    fprintf(out, "\n  steps of rank %s (ms; start from its first kernel):\n  %6s %10s %9s %9s %12s %11s %9s %9s\n", rk,
            "step", "start", "step", "busy", "compute-only", "overlapped", "exposed", "idle");
    size_t keep = st->n < GT_ROWS ? st->n : GT_ROWS;
    for (size_t g = 0; g < keep; g++) {
      const struct ncs_kact_step *x = &st->rows[g];
      fprintf(out, "  %6zu %10.3f %9.3f %9.3f %12.3f %11.3f %9.3f %9.3f\n", g + 1,
              ((double)x->start_ns - (double)s->f[i].fig->first_ns) / 1e6, x->len_ns / 1e6, (x->len_ns - x->idle_ns) / 1e6,
              x->compute_only_ns / 1e6, x->overlapped_ns / 1e6, x->exposed_ns / 1e6, x->idle_ns / 1e6);
    }
    if (st->n > keep) fprintf(out, "  (%zu more steps: their figures are in the min / median / max above)\n", st->n - keep);
  }
}

/* Per rank with device communicators (NCCL's device API): each one's life and requirements, and
 * the kernels possibly communicating, beside (not inside) NCCL's communication. */
static void devapi_text(const struct gt *s, FILE *out, const struct ncs_job *job) {
  int any = 0;
  for (int i = 0; i < s->n; i++) any += s->f[i].fig->dev.n > 0;
  if (!any) return; /* a trace without device communicators: nothing new */
  fprintf(out, "\nDevice communicators (NCCL device API: ncclDevCommCreate / Destroy; docs/METRICS.md \"Device-API kernels\";\n"
               "  times from the rank's first kernel)\n");
  for (int k = 0; k < s->n; k++) {
    int i = job->order[k];
    const struct ncs_kact_fig *g = s->f[i].fig;
    if (!g->dev.n) continue;
    char rk[40];
    rank_label(rk, sizeof rk, job, i);
    for (int d = 0; d < g->dev.n; d++) {
      const struct ncs_devcomm_life *l = &g->dev.d[d];
      const struct ncs_devcomm *c = &l->create;
      /* times: from the rank's first kernel (as the step rows), else on the host's monotonic clock */
      double o = g->have ? (double)g->first_ns : 0;
      fprintf(out, "  rank %s: communicator %u, created at %s%.6f s (rc %d)", rk, c->comm, g->have ? "+" : "", (c->t_exit - o) / 1e9, c->rc);
      if (l->destroyed) fprintf(out, ", destroyed at %s%.6f s (rc %d), lived %.6f s\n", g->have ? "+" : "", (l->destroy_exit - o) / 1e9,
                                l->destroy_rc, (double)(l->destroy_exit - c->t_exit) / 1e9);
      else fprintf(out, c->rc == 0 ? ", never destroyed\n" : "\n");
      if (c->flags & NCS_DEVCOMM_F_REQS)
        fprintf(out, "    asked for: lsaMultimem %u, barriers %u (lsa %u, rail GIN %u), LL A2A %u blocks x %u slots, GIN %s%u contexts"
                " %u signals %u counters, %u resource buffers (%llu bytes), %u teams (%u multimem)%s\n",
                c->lsa_multimem, c->barrier_count, c->lsa_barrier_count, c->rail_gin_barrier_count, c->lsa_lla2a_block_count,
                c->lsa_lla2a_slot_count, c->gin_force_enable ? "forced, " : "", c->gin_context_count, c->gin_signal_count,
                c->gin_counter_count, c->resources, (unsigned long long)c->resource_bytes, c->teams, c->multimem_teams,
                (c->flags & NCS_DEVCOMM_F_LIST_CUT) ? " (lists cut at 1024)" : "");
      else if (c->rc == 0)
        fprintf(out, "    requirements not read (an NCCL version whose layout the shim does not know)\n");
    }
    if (g->dev.more) fprintf(out, "  rank %s: %llu more device communicators not kept\n", rk, (unsigned long long)g->dev.more);
    if (!g->have)
      fprintf(out, "  rank %s: no kernel activity: which kernels may communicate through them is unknown\n", rk);
    else
      fprintf(out, "  rank %s: possibly communicating (device API): %llu kernels, %.6f s GPU time (%.1f%% of the span), launched"
                   " while a device communicator existed; counted in compute%% above, not in NCCL's communication\n",
              rk, (unsigned long long)g->devapi_kernels, g->devapi_ns / 1e9, g->span_ns ? 100.0 * g->devapi_ns / g->span_ns : 0);
  }
}

static void gt_text(void *state, FILE *out, const struct ncs_job *job) {
  struct gt *s = state;
  if (!s || !s->n) return;
  int have = 0;
  for (int i = 0; i < s->n; i++) have += s->f[i].fig->have;
  if (!have && !job->detail && job->n > 8) return; /* the headline's "exposed: unknown" line says why */
  fprintf(out, "\nGPU time (kernel activity; docs/METRICS.md \"GPU time\")\n");
  if (have) {
    fprintf(out, "  %6s %10s %7s %9s %9s %9s %7s %12s  %s\n", "rank", "span_s", "busy%", "compute%",
            "overlap%", "exposed%", "idle%", "compute/comm", "verdict");
    int rows = 0;
    for (int k = 0; k < s->n; k++) {
      int i = job->order[k];
      const struct ncs_kact_fig *g = s->f[i].fig;
      if (!g->have || !g->span_ns) continue;
      if (!job->detail && ++rows > 8) continue; /* short form: counted below */
      char rk[40];
      rank_label(rk, sizeof rk, job, i);
      double sp = (double)g->span_ns;
      fprintf(out, "  %6s %10.6f %6.1f%% %8.1f%% %8.1f%% %8.1f%% %6.1f%% %12.3f  %s: exposed communication %.6f s of %.6f s in NCCL kernels (%.0f%% hidden under compute)\n",
              rk, sp / 1e9, 100 * g->busy_ns / sp, 100 * g->compute_only_ns / sp, 100 * g->overlapped_ns / sp,
              100 * g->exposed_ns / sp, 100 * g->idle_ns / sp, g->comm_ns ? (double)g->compute_ns / (double)g->comm_ns : 0,
              ncs_kact_verdict(g), g->exposed_ns / 1e9, g->comm_ns / 1e9,
              g->comm_ns ? 100.0 * (double)g->overlapped_ns / (double)g->comm_ns : 0);
    }
    if (rows > 8) fprintf(out, "  (%d more ranks: --detail or --json)\n", rows - 8);
    print_steps_text(s, out, job);
    devapi_text(s, out, job);
    int shown = 0;
    for (int k = 0; k < s->n && shown < (job->detail ? 4 : 1); k++) {
      int i = job->order[k];
      const struct ncs_kact_fig *g = s->f[i].fig;
      if (!g->have || !g->nccl_kernels) continue;
      shown++;
      char rk[40];
      rank_label(rk, sizeof rk, job, i);
      fprintf(out, "\n  exposed communication per operation, size and position in the step, rank %s (size = bytes per\n"
                   "  call; #k = the operation's k-th call after the step's boundary, e.g. DDP's k-th gradient bucket):\n", rk);
      fprintf(out, "  %-14s %10s %8s %12s %12s %8s\n", "op", "size>=", "kernels", "time_s", "exposed_s", "exposed%");
      for (int o = 0; o < g->nops; o++) {
        const struct ncs_kact_op *op = &g->op[o];
        if (!op->kernels) continue;
        fprintf(out, "  %-14s %10s %8llu %12.6f %12.6f %7.1f%%\n", op->name, "all", (unsigned long long)op->kernels,
                op->time_ns / 1e9, op->exposed_ns / 1e9, op->time_ns ? 100.0 * op->exposed_ns / op->time_ns : 0);
        if (!op->sized) { fprintf(out, "  %-14s %10s (kernels and calls do not pair one to one: no sizes)\n", "", ""); continue; }
        for (int b = 0; b < NCS_KACT_BUCKETS; b++) {
          if (!op->size_kernels[b]) continue;
          char sz[32];
          snprintf(sz, sizeof sz, "%llu", b ? 1ull << (b - 1) : 0ull);
          fprintf(out, "  %-14s %10s %8llu %12.6f %12.6f %7.1f%%\n", "", sz, (unsigned long long)op->size_kernels[b],
                  op->size_time_ns[b] / 1e9, op->size_exposed_ns[b] / 1e9,
                  op->size_time_ns[b] ? 100.0 * op->size_exposed_ns[b] / op->size_time_ns[b] : 0);
        }
        for (int p = 0; p < op->npos; p++) {
          if (!op->pos_kernels[p]) continue;
          char pos[32];
          snprintf(pos, sizeof pos, "#%d%s", p + 1, p == NCS_KACT_POS - 1 ? "+" : "");
          fprintf(out, "  %-14s %10s %8llu %12.6f %12.6f %7.1f%%  in step", "", pos, (unsigned long long)op->pos_kernels[p],
                  op->pos_time_ns[p] / 1e9, op->pos_exposed_ns[p] / 1e9,
                  op->pos_time_ns[p] ? 100.0 * op->pos_exposed_ns[p] / op->pos_time_ns[p] : 0);
          if (op->pos_bytes_min[p] == op->pos_bytes_max[p]) fprintf(out, ", %llu B\n", (unsigned long long)op->pos_bytes_min[p]);
          else fprintf(out, ", %llu-%llu B\n", (unsigned long long)op->pos_bytes_min[p], (unsigned long long)op->pos_bytes_max[p]);
        }
      }
    }
  }
  int without = 0; /* processes that are not ranks (no communicator: a version probe) are not counted */
  for (int k = 0; k < s->n; k++) without += !s->f[job->order[k]].fig->have && !job->rank[job->order[k]].no_comm;
  for (int k = 0, told = 0; k < s->n; k++) {
    int i = job->order[k];
    const struct ncs_kact_fig *g = s->f[i].fig;
    if (g->have || job->rank[i].no_comm) continue;
    if (!job->detail && told++) continue; /* short form: the first, and how many more */
    char rk[40];
    rank_label(rk, sizeof rk, job, i);
    if (!job->detail && without > 1) fprintf(out, "  %d ranks without kernel activity, e.g. rank %s (", without, rk);
    else fprintf(out, "  rank %s: no kernel activity (", rk);
    ncs_text_escape(out, ncs_kact_why_none(g), strlen(ncs_kact_why_none(g)));
    fprintf(out, "): compute/comm and the verdict above are estimates (compute = traced window minus NCCL intervals; overlap unknown)\n");
  }
  int host = 0;
  for (int k = 0; k < s->n; k++) host += host_timed_why(&s->f[job->order[k]]) != NULL && !job->rank[job->order[k]].no_comm;
  for (int k = 0, told = 0; k < s->n; k++) {
    int i = job->order[k];
    const char *why = host_timed_why(&s->f[i]);
    if (!why || job->rank[i].no_comm || (!job->detail && told++)) continue; /* not a rank: a version probe */
    char rk[40];
    rank_label(rk, sizeof rk, job, i);
    if (!job->detail && host > 1) fprintf(out, "  %d ranks timed on the host, e.g. rank %s (", host, rk);
    else fprintf(out, "  rank %s: timed on the host (", rk);
    ncs_text_escape(out, why, strlen(why));
    fprintf(out, "): its communication time (comm_s) is an estimate, call entry to return, not the GPU's\n");
  }
}

static void step_row_json(struct ncs_json *j, const char *key, size_t index, const struct ncs_kact_step *x, uint64_t first) {
  ncs_json_obj_begin(j, key);
  ncs_json_uint(j, "step", index + 1);
  ncs_json_num(j, "start_s", ((double)x->start_ns - (double)first) / 1e9);
  for (int k = 0; k < SF_N; k++) ncs_json_num(j, sf_json[k], sf_get(x, k) / 1e9);
  ncs_json_obj_end(j);
}

static void steps_json(struct ncs_json *j, const struct gt_file *f) {
  const struct gt_steps *st = &f->st;
  ncs_json_obj_begin(j, "steps");
  ncs_json_uint(j, "count", st->n);
  if (st->n) {
    for (int k = 0; k < SF_N; k++) {
      ncs_json_obj_begin(j, sf_json[k]);
      ncs_json_num(j, "min", st->min[k] / 1e9);
      ncs_json_num(j, "median", st->med[k] / 1e9);
      ncs_json_num(j, "max", st->max[k] / 1e9);
      ncs_json_obj_end(j);
    }
    step_row_json(j, "slowest", st->slowest, &st->slow, f->fig->first_ns);
    size_t keep = st->rows ? (st->n < GT_ROWS ? st->n : GT_ROWS) : 0;
    ncs_json_arr_begin(j, "rows");
    for (size_t g = 0; g < keep; g++) step_row_json(j, NULL, g, &st->rows[g], f->fig->first_ns);
    ncs_json_arr_end(j);
    ncs_json_uint(j, "rows_omitted", st->n - keep);
  }
  ncs_json_obj_end(j);
}

/* JSON "device_api": the rank's device communicators and the kernels possibly communicating */
static void devapi_json(struct ncs_json *j, const struct ncs_kact_fig *g) {
  const struct ncs_devcomms *d = &g->dev;
  ncs_json_obj_begin(j, "device_api");
  ncs_json_uint(j, "possibly_communicating_kernels", g->devapi_kernels);
  ncs_json_num(j, "possibly_communicating_s", g->devapi_ns / 1e9);
  ncs_json_bool(j, "kernel_activity", g->have);
  ncs_json_uint(j, "not_kept", d->more);
  ncs_json_uint(j, "unmatched_destroys", d->unmatched_destroys);
  ncs_json_arr_begin(j, "device_comms");
  for (int i = 0; i < d->n; i++) {
    const struct ncs_devcomm_life *l = &d->d[i];
    const struct ncs_devcomm *c = &l->create;
    ncs_json_obj_begin(j, NULL);
    ncs_json_uint(j, "comm", c->comm);
    ncs_json_int(j, "create_rc", c->rc);
    ncs_json_uint(j, "create_enter_ns", c->t_enter);
    ncs_json_uint(j, "create_exit_ns", c->t_exit);
    if (l->destroyed) {
      ncs_json_int(j, "destroy_rc", l->destroy_rc);
      ncs_json_uint(j, "destroy_enter_ns", l->destroy_enter);
      ncs_json_uint(j, "destroy_exit_ns", l->destroy_exit);
    } else {
      ncs_json_null(j, "destroy_rc");
    }
    if (c->flags & NCS_DEVCOMM_F_REQS) {
      ncs_json_obj_begin(j, "requirements");
      ncs_json_uint(j, "lsa_multimem", c->lsa_multimem);
      ncs_json_uint(j, "barrier_count", c->barrier_count);
      ncs_json_uint(j, "lsa_barrier_count", c->lsa_barrier_count);
      ncs_json_uint(j, "rail_gin_barrier_count", c->rail_gin_barrier_count);
      ncs_json_uint(j, "lsa_lla2a_block_count", c->lsa_lla2a_block_count);
      ncs_json_uint(j, "lsa_lla2a_slot_count", c->lsa_lla2a_slot_count);
      ncs_json_uint(j, "gin_force_enable", c->gin_force_enable);
      ncs_json_uint(j, "gin_context_count", c->gin_context_count);
      ncs_json_uint(j, "gin_signal_count", c->gin_signal_count);
      ncs_json_uint(j, "gin_counter_count", c->gin_counter_count);
      ncs_json_uint(j, "resources", c->resources);
      ncs_json_uint(j, "resource_bytes", c->resource_bytes);
      ncs_json_uint(j, "teams", c->teams);
      ncs_json_uint(j, "multimem_teams", c->multimem_teams);
      ncs_json_bool(j, "lists_cut", (c->flags & NCS_DEVCOMM_F_LIST_CUT) != 0);
      ncs_json_obj_end(j);
    } else {
      ncs_json_null(j, "requirements");
    }
    ncs_json_obj_end(j);
  }
  ncs_json_arr_end(j);
  ncs_json_obj_end(j);
}

static void gt_rank_json(void *state, struct ncs_json *j, int file) {
  struct gt *s = state;
  if (!s || file < 0 || file >= s->n) return;
  const struct ncs_kact_fig *g = s->f[file].fig;
  if (g->dev.n) devapi_json(j, g); /* a trace without device communicators: nothing new */
  ncs_json_obj_begin(j, "gpu_time");
  ncs_json_str(j, "source", g->have ? "kernels" : "none");
  ncs_json_str(j, "state", g->state == NCS_KSTATE_ON ? "on" : g->state == NCS_KSTATE_STOOD_ASIDE ? "stood_aside"
                            : g->state == NCS_KSTATE_OFF ? "off" : NULL);
  ncs_json_str(j, "reason", g->have ? (g->reason[0] ? g->reason : NULL) : ncs_kact_why_none(g));
  const char *host = host_timed_why(&s->f[file]);
  ncs_json_arr_begin(j, "estimates"); /* the rank's figures that are estimates */
  if (host) ncs_json_str(j, NULL, "comm_s");
  if (!g->have) { ncs_json_str(j, NULL, "compute_to_comm"); ncs_json_str(j, NULL, "verdict"); }
  ncs_json_arr_end(j);
  ncs_json_arr_begin(j, "estimates_why");
  if (host) {
    char why[160];
    snprintf(why, sizeof why, "host timing: %s", host);
    ncs_json_str(j, NULL, why);
  }
  if (!g->have) {
    char why[200];
    snprintf(why, sizeof why, "no kernel activity: %s", ncs_kact_why_none(g));
    ncs_json_str(j, NULL, why);
  }
  ncs_json_arr_end(j);
  if (!g->have) {
    ncs_json_obj_end(j);
    return;
  }
  ncs_json_uint(j, "kernels", g->kernels);
  ncs_json_uint(j, "nccl_kernels", g->nccl_kernels);
  ncs_json_uint(j, "copies", g->copies);
  ncs_json_num(j, "span_s", g->span_ns / 1e9);
  ncs_json_num(j, "busy_s", g->busy_ns / 1e9);
  ncs_json_num(j, "compute_s", g->compute_ns / 1e9);
  ncs_json_num(j, "comm_s", g->comm_ns / 1e9);
  ncs_json_num(j, "compute_only_s", g->compute_only_ns / 1e9);
  ncs_json_num(j, "overlapped_s", g->overlapped_ns / 1e9);
  ncs_json_num(j, "exposed_comm_s", g->exposed_ns / 1e9);
  ncs_json_num(j, "idle_s", g->idle_ns / 1e9);
  ncs_json_num(j, "compute_to_comm", g->comm_ns ? (double)g->compute_ns / (double)g->comm_ns : NAN);
  ncs_json_num(j, "exposed_share", g->span_ns ? (double)g->exposed_ns / (double)g->span_ns : NAN);
  ncs_json_num(j, "hidden_share", g->comm_ns ? (double)g->overlapped_ns / (double)g->comm_ns : NAN);
  ncs_json_str(j, "verdict", ncs_kact_verdict(g));
  ncs_json_uint(j, "bad_records", g->bad_records);
  ncs_json_obj_begin(j, "ops");
  for (int o = 0; o < g->nops; o++) {
    const struct ncs_kact_op *op = &g->op[o];
    if (!op->kernels) continue;
    ncs_json_obj_begin(j, op->name);
    ncs_json_uint(j, "kernels", op->kernels);
    ncs_json_num(j, "time_s", op->time_ns / 1e9);
    ncs_json_num(j, "exposed_s", op->exposed_ns / 1e9);
    ncs_json_bool(j, "sized", op->sized);
    ncs_json_arr_begin(j, "sizes");
    for (int b = 0; op->sized && b < NCS_KACT_BUCKETS; b++) {
      if (!op->size_kernels[b]) continue;
      ncs_json_obj_begin(j, NULL);
      ncs_json_uint(j, "bytes_min", b ? 1ull << (b - 1) : 0);
      ncs_json_uint(j, "kernels", op->size_kernels[b]);
      ncs_json_num(j, "time_s", op->size_time_ns[b] / 1e9);
      ncs_json_num(j, "exposed_s", op->size_exposed_ns[b] / 1e9);
      ncs_json_obj_end(j);
    }
    ncs_json_arr_end(j);
    ncs_json_arr_begin(j, "positions");
    for (int p = 0; op->sized && p < op->npos; p++) {
      if (!op->pos_kernels[p]) continue;
      ncs_json_obj_begin(j, NULL);
      ncs_json_int(j, "position", p + 1);
      ncs_json_bool(j, "and_later", p == NCS_KACT_POS - 1);
      ncs_json_uint(j, "bytes_min", op->pos_bytes_min[p]);
      ncs_json_uint(j, "bytes_max", op->pos_bytes_max[p]);
      ncs_json_uint(j, "kernels", op->pos_kernels[p]);
      ncs_json_num(j, "time_s", op->pos_time_ns[p] / 1e9);
      ncs_json_num(j, "exposed_s", op->pos_exposed_ns[p] / 1e9);
      ncs_json_obj_end(j);
    }
    ncs_json_arr_end(j);
    ncs_json_obj_end(j);
  }
  ncs_json_obj_end(j);
  steps_json(j, &s->f[file]);
  ncs_json_obj_end(j);
}

static void gt_destroy(void *state) {
  struct gt *s = state;
  if (!s) return;
  for (int i = 0; i < s->n; i++) { ncs_kact_free(s->f[i].acc); free(s->f[i].st.rows); }
  free(s->f);
  free(s);
}

const struct ncs_analysis ncs_analysis_gputime = {
  .name = "gputime",
  .create = gt_create,
  .visitor = gt_visitor,
  .file_done = gt_file_done,
  .print_text = gt_text,
  .print_rank_json = gt_rank_json,
  .destroy = gt_destroy,
};
