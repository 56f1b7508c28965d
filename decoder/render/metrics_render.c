/* metrics_render.c — report's metrics as text and JSON (metrics_render.h). */
#include "render/metrics_render.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/stepmark.h"
#include "ncclscope/ops.h"

static double gbps(double bytes, uint64_t ns) { return ns ? bytes / (double)ns : NAN; } /* bytes/ns = GB/s */

/* Timing source of a row's figures: gpu, host or mixed. */
static const char *row_timing(const struct ncs_metrics_row *z) {
  return z->gpu_calls == z->calls ? "gpu" : z->gpu_calls ? "mixed" : "host";
}

/* The verdict's evidence, one sentence (empty when there is nothing to say). */
static void evidence(const struct ncs_metrics_rank *x, char *buf, size_t n) {
  buf[0] = 0;
  const struct ncs_kact_fig *g = x->gpu;
  if (g) {
    snprintf(buf, n, "GPU time: %.1f%% exposed communication, %.1f%% of NCCL kernel time hidden under compute, %.1f%% idle",
             100.0 * (double)g->exposed_ns / (double)g->span_ns,
             g->comm_ns ? 100.0 * (double)g->overlapped_ns / (double)g->comm_ns : 0.0,
             100.0 * (double)g->idle_ns / (double)g->span_ns);
    return;
  }
  const struct ncs_metrics_op *t = ncs_metrics_op_of(x, x->top_op);
  if (!t || x->wall_s <= 0) return;
  const char *name = ncs_op_name(t->op);
  /* the op's share of the time of all operations (a sum over calls, as the op's own time is):
   * not of comm_s, a union, which calls overlapping in time (streams, a rank per thread) make
   * smaller than the sum (docs/METRICS.md) */
  double all = 0;
  for (int o = 0; o < x->nops; o++) all += (double)x->ops[o].total.time_ns;
  int k = snprintf(buf, n, "%.1f%% of the window in communication (%s timing), %s %.1f%% of it",
                   100 * x->comm_s / x->wall_s, x->timing, name ? name : "?",
                   all > 0 ? 100 * (double)t->total.time_ns / all : 0);
  if (k > 0 && (size_t)k < n && ncs_op_bw(t->op) != NCS_BW_NONE)
    snprintf(buf + k, n - (size_t)k, " at %.2f GB/s busbw", gbps(t->total.busS, t->total.time_ns));
}

/* The rank's graph-replayed calls, their time and all operations' time. */
static void replay_sums(const struct ncs_metrics_rank *x, uint64_t *calls, uint64_t *timed, uint64_t *ns, uint64_t *all_ns) {
  *calls = *timed = *ns = *all_ns = 0;
  for (int o = 0; o < x->nops; o++) {
    const struct ncs_metrics_row *t = &x->ops[o].total;
    *calls += t->replays; *timed += t->calls; *ns += t->replay_ns; *all_ns += t->time_ns;
  }
}

/* The rank's graph replays (docs/JSON.md "graph_replays"). */
static void replays_json(struct ncs_json *j, const struct ncs_metrics_rank *x) {
  const struct ncs_replay_sum *p = x->replays;
  uint64_t calls, timed, ns, all_ns;
  replay_sums(x, &calls, &timed, &ns, &all_ns);
  ncs_json_obj_begin(j, "graph_replays");
  ncs_json_bool(j, "counted", p->counted);
  ncs_json_str(j, "why_not", p->counted ? NULL : p->why_not);
  ncs_json_uint(j, "captured", p->captured);
  ncs_json_uint(j, "kernels", p->kernels);
  ncs_json_uint(j, "calls", calls);
  ncs_json_num(j, "time_s", ns / 1e9);
  ncs_json_num(j, "time_share", all_ns ? (double)ns / (double)all_ns : NAN);
  ncs_json_uint(j, "unexplained_kernels", p->unexplained);
  ncs_json_obj_begin(j, "ops");
  for (int o = 0; o < p->nops; o++) {
    const struct ncs_replay_op *y = &p->op[o];
    if (!y->captured) continue;
    ncs_json_obj_begin(j, y->name);
    ncs_json_uint(j, "captured", y->captured);
    ncs_json_uint(j, "graph_elements", y->elements);
    ncs_json_uint(j, "kernels", y->kernels);
    ncs_json_uint(j, "calls", y->calls);
    ncs_json_bool(j, "whole_replays", y->whole);
    ncs_json_str(j, "sizes", y->sizes_exact ? "exact" : "capture_order");
    ncs_json_obj_end(j);
  }
  ncs_json_obj_end(j);
  ncs_json_obj_end(j);
}

void ncs_metrics_print_rank_json(const struct ncs_metrics_result *r, struct ncs_json *j, int file) {
  if (!r || file < 0 || file >= r->n) return;
  const struct ncs_metrics_rank *x = &r->rank[file];
  ncs_json_num(j, "wall_s", x->wall_s);
  ncs_json_num(j, "comm_s", x->comm_s);
  ncs_json_num(j, "noncomm_s", x->wall_s - x->comm_s);
  ncs_json_num(j, "comm_share", x->wall_s > 0 ? x->comm_s / x->wall_s : NAN);
  ncs_json_num(j, "compute_to_comm", x->compute_to_comm);
  ncs_json_str(j, "compute_to_comm_basis", x->ratio_estimate ? "estimate" : "gpu_time");
  ncs_json_str(j, "timing", x->timing);
  ncs_json_uint(j, "timed_gpu", x->timed_gpu);
  ncs_json_uint(j, "timed_host", x->timed_host);
  ncs_json_uint(j, "captured", x->captured);
  if (x->comm_late) { /* only then: comm_s may be low (docs/METRICS.md "Communication time") */
    ncs_json_obj_begin(j, "comm_late");
    ncs_json_uint(j, "intervals", x->comm_late);
    ncs_json_num(j, "max_missing_s", x->comm_late_s);
    ncs_json_uint(j, "forced_commits", x->comm_forced);
    ncs_json_obj_end(j);
  }
  replays_json(j, x);
  ncs_json_str(j, "verdict", x->verdict);
  ncs_json_str(j, "verdict_basis", x->verdict_basis);
  char ev[256];
  evidence(x, ev, sizeof ev);
  ncs_json_str(j, "evidence", ev);
  ncs_json_obj_begin(j, "steps");
  ncs_json_uint(j, "count", x->steps);
  ncs_json_str(j, "boundary_op", x->boundary_op);
  ncs_json_str(j, "found_by", x->found_by);
  ncs_json_num(j, "step_s", x->steps ? x->step_s : NAN);
  ncs_json_num(j, "comm_share", x->steps ? x->step_comm_share : NAN);
  ncs_json_obj_end(j);
}

static void size_row_json(struct ncs_json *j, const struct ncs_metrics_row *z) {
  int b = z->bucket;
  ncs_json_obj_begin(j, NULL);
  if (b == 0) ncs_json_uint(j, "bytes_min", 0);
  else if (b - 1 < 64) ncs_json_uint(j, "bytes_min", 1ull << (b - 1));
  else ncs_json_num(j, "bytes_min", ldexp(1.0, b - 1));
  ncs_json_uint(j, "calls", z->calls);
  ncs_json_num(j, "time_s", z->time_ns / 1e9);
  ncs_json_num(j, "mean_s", z->calls ? z->time_ns / 1e9 / z->calls : NAN);
  ncs_json_num(j, "p50_s", z->have_quantiles ? z->p50_ns / 1e9 : NAN);
  ncs_json_num(j, "p99_s", z->have_quantiles ? z->p99_ns / 1e9 : NAN);
  ncs_json_num(j, "algbw_gbps", gbps((double)z->S, z->time_ns));
  ncs_json_num(j, "busbw_gbps", gbps(z->busS, z->time_ns));
  ncs_json_str(j, "timing", row_timing(z));
  ncs_json_uint(j, "replayed_calls", z->replays);
  ncs_json_obj_end(j);
}

void ncs_metrics_print_op_json(const struct ncs_metrics_result *r, struct ncs_json *j, int file, unsigned op) {
  if (!r || file < 0 || file >= r->n || !r->rank[file].used || !ncs_stepmark_timed(op)) return;
  const struct ncs_metrics_op none = {.op = op}, *o = ncs_metrics_op_of(&r->rank[file], op);
  if (!o) o = &none;
  const struct ncs_metrics_row *t = &o->total;
  ncs_json_num(j, "time_s", t->time_ns / 1e9);
  ncs_json_uint(j, "timed_calls", t->calls);
  ncs_json_num(j, "algbw_gbps", t->calls ? gbps((double)t->S, t->time_ns) : NAN);
  ncs_json_num(j, "busbw_gbps", t->calls ? gbps(t->busS, t->time_ns) : NAN);
  ncs_json_str(j, "timing", t->calls ? row_timing(t) : NULL);
  ncs_json_uint(j, "replayed_calls", t->replays);
  ncs_json_uint(j, "replayed_count", o->replayed_count);
  ncs_json_uint(j, "replayed_bytes", o->replayed_bytes);
  ncs_json_num(j, "replayed_time_s", t->replay_ns / 1e9);
  ncs_json_arr_begin(j, "sizes");
  for (int s = 0; s < o->nsizes; s++) size_row_json(j, &o->sizes[s]);
  ncs_json_arr_end(j);
}

static void fmt_bytes(char *buf, size_t n, int b) {
  if (b == 0) { snprintf(buf, n, "0"); return; }
  double v = ldexp(1.0, b - 1);
  const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int k = 0;
  while (v >= 1024 && k < 6) { v /= 1024; k++; }
  snprintf(buf, n, "%g%s", v, u[k]);
}

/* A rank's captured calls and their replays, one line (docs/METRICS.md "Graph replays"). */
static void replays_text(FILE *out, const struct ncs_metrics_rank *x, const char *s, const char *label) {
  const struct ncs_replay_sum *p = x->replays;
  fprintf(out, "  rank%s %s: %llu call%s captured into CUDA graphs", s, label, (unsigned long long)x->captured,
          x->captured == 1 ? "" : "s");
  if (!p->counted) {
    fprintf(out, ", not timed; their replays are NOT counted (%s): communication is under-reported\n",
            p->why_not ? p->why_not : "not looked for");
    return;
  }
  uint64_t calls, timed, ns, all_ns;
  replay_sums(x, &calls, &timed, &ns, &all_ns);
  fprintf(out, "; %llu graph-replayed call%s counted from kernel activity: %llu of %llu timed calls, %.1f%% of operation time",
          (unsigned long long)calls, calls == 1 ? "" : "s", (unsigned long long)calls, (unsigned long long)timed,
          all_ns ? 100.0 * (double)ns / (double)all_ns : 0.0);
  int exact = 1, whole = 1;
  for (int o = 0; o < p->nops; o++) { exact &= p->op[o].sizes_exact; whole &= p->op[o].whole; }
  fprintf(out, "%s%s\n", exact ? "" : "; sizes by capture order (captured calls differ in size)",
          whole ? "" : "; replayed kernels are not a whole number of graph bodies");
}

void ncs_metrics_print_text(const struct ncs_metrics_result *res, FILE *out, const struct ncs_job *job) {
  if (!res) return;
  int any = 0;
  for (int i = 0; i < res->n; i++) any |= res->rank[i].valid;
  if (!any) return;
  /* short form (no --detail) past 8 ranks: the ranks at the lowest, median and highest share */
  int keep[3] = {-1, -1, -1}, nvalid = 0;
  if (!job->detail) {
    double *sh = calloc((size_t)res->n, sizeof *sh);
    int *ix = calloc((size_t)res->n, sizeof *ix);
    for (int k = 0; sh && ix && k < res->n; k++) {
      const struct ncs_metrics_rank *x = &res->rank[job->order[k]];
      if (!x->valid || x->wall_s <= 0 || job->rank[job->order[k]].no_comm) continue;
      double v = x->comm_s / x->wall_s;
      int at = nvalid++;
      while (at > 0 && sh[at - 1] > v) { sh[at] = sh[at - 1]; ix[at] = ix[at - 1]; at--; }
      sh[at] = v;
      ix[at] = job->order[k];
    }
    if (nvalid > 8) { keep[0] = ix[0]; keep[1] = ix[(nvalid - 1) / 2]; keep[2] = ix[nvalid - 1]; }
    free(sh);
    free(ix);
  }
  fprintf(out, "\nCommunication time (docs/METRICS.md; comm = union of operation intervals");
  if (keep[0] >= 0) fprintf(out, "; the ranks at the lowest, median and highest share of %d, every rank: --detail", nvalid);
  fprintf(out, ")\n");
  fprintf(out, "  %6s %10s %10s %6s %12s %6s %7s %10s %6s  %s\n", "rank", "wall_s", "comm_s", "comm%",
          "compute/comm", "timing", "steps", "step_s", "step%", "verdict");
  for (int k = 0; k < res->n; k++) {
    int i = job->order[k];
    const struct ncs_metrics_rank *x = &res->rank[i];
    if (!x->valid || job->rank[i].no_comm) continue; /* not a rank: a version probe */
    if (keep[0] >= 0 && i != keep[0] && i != keep[1] && i != keep[2]) continue;
    const char *rk = job->rank[i].label[0] ? job->rank[i].label : "?";
    char ratio[32];
    snprintf(ratio, sizeof ratio, "%s%.3f", x->ratio_estimate ? "~" : "", x->compute_to_comm);
    fprintf(out, "  %6s %10.6f %10.6f %5.1f%% %12s %6s %7u %10.6f %5.1f%%  %s", rk, x->wall_s, x->comm_s,
            100 * x->comm_s / x->wall_s, ratio, x->timing, x->steps, x->step_s, 100 * x->step_comm_share, x->verdict);
    char ev[256];
    evidence(x, ev, sizeof ev);
    fprintf(out, "%s%s\n", ev[0] ? ": " : "", ev);
  }
  fprintf(out, "  compute/comm: compute / NCCL kernel time on GPU time; ~ an estimate without kernel activity: "
               "(wall - comm) / comm, idle counted as compute\n");
  for (int k = 0; k < res->n; k++) { /* comm_s may be low (docs/METRICS.md "Communication time") */
    int i = job->order[k];
    const struct ncs_metrics_rank *x = &res->rank[i];
    if (!x->valid || job->rank[i].no_comm || !x->comm_late) continue;
    fprintf(out, "  rank%s %s: comm_s may be low by up to %.6f s: %llu interval%s came after the union was committed past their start (%llu forced commit%s)\n",
            job->rank[i].held > 1 ? "s" : "", job->rank[i].label[0] ? job->rank[i].label : "?", x->comm_late_s,
            (unsigned long long)x->comm_late, x->comm_late == 1 ? "" : "s", (unsigned long long)x->comm_forced,
            x->comm_forced == 1 ? "" : "s");
  }
  /* captured calls: counted apart, never timed (docs/METRICS.md "Which calls are timed") */
  for (int k = 0; k < res->n; k++) {
    int i = job->order[k];
    const struct ncs_metrics_rank *x = &res->rank[i];
    if (!x->valid || !x->captured) continue;
    replays_text(out, x, job->rank[i].held > 1 ? "s" : "", job->rank[i].label[0] ? job->rank[i].label : "?");
  }
  int shown = 0, ranks = 0;
  for (int i = 0; i < res->n; i++) ranks += res->rank[i].valid && !job->rank[i].no_comm;
  if (!job->detail && ranks > 8) { /* a first screen: one rank's table says little of thousands */
    return; /* the operations' title points at --detail, the sizes analysis at --sizes all */
  }
  for (int k = 0; k < res->n && shown < (job->detail ? res->n : 1); k++) {
    int i = keep[1] >= 0 && !shown ? keep[1] : job->order[k];
    const struct ncs_metrics_rank *x = &res->rank[i];
    if (!x->valid || job->rank[i].no_comm) continue;
    shown++;
    fprintf(out, "\n  per operation and message size, rank%s %s (size = nccl-tests' S; bw in GB/s):\n",
            job->rank[i].held > 1 ? "s" : "", job->rank[i].label[0] ? job->rank[i].label : "?");
    fprintf(out, "  %-14s %10s %8s %8s %10s %10s %10s %10s %9s %9s\n", "op", "size>=", "calls", "replays", "time_s",
            "mean_us", "p50_us", "p99_us", "algbw", "busbw");
    for (int o = 0; o < x->nops; o++)
      for (int s = 0; s < x->ops[o].nsizes; s++) {
        const struct ncs_metrics_row *z = &x->ops[o].sizes[s];
        char sz[32];
        fmt_bytes(sz, sizeof sz, z->bucket);
        fprintf(out, "  %-14s %10s %8llu %8llu %10.6f %10.1f %10.1f %10.1f %9.2f %9.2f\n", ncs_op_name(x->ops[o].op), sz,
                (unsigned long long)z->calls, (unsigned long long)z->replays, z->time_ns / 1e9, z->time_ns / 1e3 / z->calls,
                z->have_quantiles ? z->p50_ns / 1e3 : 0, z->have_quantiles ? z->p99_ns / 1e3 : 0,
                gbps((double)z->S, z->time_ns), gbps(z->busS, z->time_ns));
      }
  }
  if (ranks > shown) fprintf(out, "  (%d more ranks: --detail or --json)\n", ranks - shown);
}
