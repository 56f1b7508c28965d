/* gputime_render.c — report's GPU time (analysis/gputime.h) as text and JSON (gputime_render.h). */
#include "render/gputime_render.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ncclscope/encode.h"

static const char *const sf_json[NCS_GT_FIGURES] = {"step_s", "busy_s", "compute_only_s", "overlapped_s", "exposed_comm_s", "idle_s"};

static void rank_label(char *buf, size_t n, const struct ncs_job *job, int i) {
  snprintf(buf, n, "%s", job->rank[i].label[0] ? job->rank[i].label : "?"); /* "0-3": a rank per thread */
}

/* Per-step GPU time: per rank, min / median / max over its steps and the slowest step's parts;
 * with --detail every kept step. */
static void print_steps_text(const struct ncs_gputime_result *s, FILE *out, const struct ncs_job *job) {
  int any = 0;
  for (int i = 0; i < s->n; i++) any |= s->rank[i].fig->have && s->rank[i].steps.n;
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
  for (int k = 0; k < s->n; k++) rows += s->rank[job->order[k]].fig->have && s->rank[job->order[k]].steps.n;
  if (!job->detail && rows > 8 && (pick = malloc((size_t)rows * sizeof *pick)) != NULL) {
    for (int k = 0; k < s->n; k++)
      if (s->rank[job->order[k]].fig->have && s->rank[job->order[k]].steps.n) pick[npick++] = job->order[k];
    for (int a = 1; a < npick; a++) /* by median step time (insertion sort: stable, ranks in order) */
      for (int b = a; b > 0 && s->rank[pick[b]].steps.med[NCS_GT_LEN] < s->rank[pick[b - 1]].steps.med[NCS_GT_LEN]; b--) {
        int t = pick[b]; pick[b] = pick[b - 1]; pick[b - 1] = t;
      }
    int slow = pick[0];
    for (int a = 1; a < npick; a++) if (s->rank[pick[a]].steps.slow.len_ns > s->rank[slow].steps.slow.len_ns) slow = pick[a];
    int keep[4] = {pick[0], pick[(npick - 1) / 2], pick[npick - 1], slow};
    memcpy(pick, keep, sizeof keep);
    npick = 4;
  }
  int shown = 0;
  for (int k = 0; k < s->n; k++) {
    int i = job->order[k];
    const struct ncs_gputime_steps *st = &s->rank[i].steps;
    if (!s->rank[i].fig->have || !st->n) continue;
    if (pick) {
      int in = 0;
      for (int a = 0; a < npick; a++) in |= pick[a] == i;
      if (!in) continue;
    } else if (!job->detail && shown >= 8) continue;
    shown++;
    char rk[40], c[3][40];
    rank_label(rk, sizeof rk, job, i);
    const int col[3] = {NCS_GT_LEN, NCS_GT_EXPOSED, NCS_GT_IDLE};
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
    const struct ncs_gputime_steps *st = &s->rank[i].steps;
    if (!s->rank[i].fig->have || !st->n || !st->rows) continue;
    char rk[40];
    rank_label(rk, sizeof rk, job, i);
    fprintf(out, "\n  steps of rank %s (ms; start from its first kernel):\n  %6s %10s %9s %9s %12s %11s %9s %9s\n", rk,
            "step", "start", "step", "busy", "compute-only", "overlapped", "exposed", "idle");
    size_t keep = st->n < NCS_GT_ROWS ? st->n : NCS_GT_ROWS;
    for (size_t g = 0; g < keep; g++) {
      const struct ncs_kact_step *x = &st->rows[g];
      fprintf(out, "  %6zu %10.3f %9.3f %9.3f %12.3f %11.3f %9.3f %9.3f\n", g + 1,
              ((double)x->start_ns - (double)s->rank[i].fig->first_ns) / 1e6, x->len_ns / 1e6, (x->len_ns - x->idle_ns) / 1e6,
              x->compute_only_ns / 1e6, x->overlapped_ns / 1e6, x->exposed_ns / 1e6, x->idle_ns / 1e6);
    }
    if (st->n > keep) fprintf(out, "  (%zu more steps: their figures are in the min / median / max above)\n", st->n - keep);
  }
}

/* Per rank with device communicators (NCCL's device API): each one's life and requirements, and
 * the kernels possibly communicating, beside (not inside) NCCL's communication. */
static void devapi_text(const struct ncs_gputime_result *s, FILE *out, const struct ncs_job *job) {
  int any = 0;
  for (int i = 0; i < s->n; i++) any += s->rank[i].fig->dev.n > 0;
  if (!any) return; /* a trace without device communicators: nothing new */
  fprintf(out, "\nDevice communicators (NCCL device API: ncclDevCommCreate / Destroy; docs/METRICS.md \"Device-API kernels\";\n"
               "  times from the rank's first kernel)\n");
  for (int k = 0; k < s->n; k++) {
    int i = job->order[k];
    const struct ncs_kact_fig *g = s->rank[i].fig;
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

void ncs_gputime_print_text(const struct ncs_gputime_result *s, FILE *out, const struct ncs_job *job) {
  if (!s || !s->n) return;
  int have = 0;
  for (int i = 0; i < s->n; i++) have += s->rank[i].fig->have;
  if (!have && !job->detail && job->n > 8) return; /* the headline's "exposed: unknown" line says why */
  fprintf(out, "\nGPU time (kernel activity; docs/METRICS.md \"GPU time\")\n");
  if (have) {
    fprintf(out, "  %6s %10s %7s %9s %9s %9s %7s %12s  %s\n", "rank", "span_s", "busy%", "compute%",
            "overlap%", "exposed%", "idle%", "compute/comm", "verdict");
    int rows = 0;
    for (int k = 0; k < s->n; k++) {
      int i = job->order[k];
      const struct ncs_kact_fig *g = s->rank[i].fig;
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
      const struct ncs_kact_fig *g = s->rank[i].fig;
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
  for (int k = 0; k < s->n; k++) without += !s->rank[job->order[k]].fig->have && !job->rank[job->order[k]].no_comm;
  for (int k = 0, told = 0; k < s->n; k++) {
    int i = job->order[k];
    const struct ncs_kact_fig *g = s->rank[i].fig;
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
  for (int k = 0; k < s->n; k++) host += s->rank[job->order[k]].host_timed_why != NULL && !job->rank[job->order[k]].no_comm;
  for (int k = 0, told = 0; k < s->n; k++) {
    int i = job->order[k];
    const char *why = s->rank[i].host_timed_why;
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
  for (int k = 0; k < NCS_GT_FIGURES; k++) ncs_json_num(j, sf_json[k], ncs_gputime_step_figure(x, k) / 1e9);
  ncs_json_obj_end(j);
}

static void steps_json(struct ncs_json *j, const struct ncs_gputime_rank *f) {
  const struct ncs_gputime_steps *st = &f->steps;
  ncs_json_obj_begin(j, "steps");
  ncs_json_uint(j, "count", st->n);
  if (st->n) {
    for (int k = 0; k < NCS_GT_FIGURES; k++) {
      ncs_json_obj_begin(j, sf_json[k]);
      ncs_json_num(j, "min", st->min[k] / 1e9);
      ncs_json_num(j, "median", st->med[k] / 1e9);
      ncs_json_num(j, "max", st->max[k] / 1e9);
      ncs_json_obj_end(j);
    }
    step_row_json(j, "slowest", st->slowest, &st->slow, f->fig->first_ns);
    size_t keep = st->rows ? (st->n < NCS_GT_ROWS ? st->n : NCS_GT_ROWS) : 0;
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

void ncs_gputime_print_rank_json(const struct ncs_gputime_result *s, struct ncs_json *j, int file) {
  if (!s || file < 0 || file >= s->n) return;
  const struct ncs_kact_fig *g = s->rank[file].fig;
  if (g->dev.n) devapi_json(j, g); /* a trace without device communicators: nothing new */
  ncs_json_obj_begin(j, "gpu_time");
  ncs_json_str(j, "source", g->have ? "kernels" : "none");
  ncs_json_str(j, "state", g->state == NCS_KSTATE_ON ? "on" : g->state == NCS_KSTATE_STOOD_ASIDE ? "stood_aside"
                            : g->state == NCS_KSTATE_OFF ? "off" : NULL);
  ncs_json_str(j, "reason", g->have ? (g->reason[0] ? g->reason : NULL) : ncs_kact_why_none(g));
  const char *host = s->rank[file].host_timed_why;
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
  steps_json(j, &s->rank[file]);
  ncs_json_obj_end(j);
}
