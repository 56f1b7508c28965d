/* test_metrics_exact.c — the metrics analysis (decoder/analysis/metrics.c) on synthetic traces with
 * known answers: busbw exactly by nccl-tests' formulas (docs/REFERENCE-FIGURES.md),
 * communication time as the union of GPU intervals (and its double sum past 2^53 ns),
 * host-timing fallback and its label, groups timed as their group, step detection, --step-op,
 * NCCLSCOPE_STEP_MARK (trace's and own environment), --skip-warmup, verdicts and their evidence. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "base/settings.h"
#include "check.h"
#include "model/hist.h"
#include "analysis/metrics.h"
#include "render/metrics_render.h"
#include "model/rules.h"
#include "test_trace_writer.h"

static char dir[] = "/tmp/ncs-metrics.XXXXXX";

/* Runs the metrics analysis on one file as the loader does (one read); returns
 * its state (destroy with the analysis). */
struct run { void *st; struct ncs_rank_info info; int order; const char *opts[4]; struct ncs_job job; };
static void run_metrics(struct run *r, const char *path, const char *opt1, const char *opt2) {
  memset(r, 0, sizeof *r);
  r->info.path = path;
  r->info.rank = 0;
  r->opts[0] = opt1;
  r->opts[1] = opt1 ? opt2 : NULL;
  r->job = (struct ncs_job){1, &r->info, &r->order, r->opts, 0, NULL, NULL, NULL, NULL, NULL, 0};
  const struct ncs_analysis *a = &ncs_analysis_metrics;
  r->st = a->create(&r->job);
  struct ncs_visitor v = {0};
  struct ncs_read_status s;
  a->visitor(r->st, 0, &v);
  ncs_trace_read(path, &v, &s);
  a->file_done(r->st, 0, &s);
  if (a->finish) a->finish(r->st, &r->job);
}
/* The rank's figures from the analysis' result (all 0 without one). */
static void rank0(void *st, struct ncs_metrics_rank *x) {
  const struct ncs_metrics_result *res = ncs_analysis_metrics.result(st);
  if (res && res->n > 0) *x = res->rank[0];
  else memset(x, 0, sizeof *x);
}
/* The per-op JSON of op, as text. */
static char *op_json(struct run *r, unsigned op) {
  char *buf = NULL; size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  struct ncs_json j;
  ncs_json_init(&j, f, 0);
  ncs_json_obj_begin(&j, NULL);
  ncs_metrics_print_op_json(ncs_analysis_metrics.result(r->st), &j, 0, op);
  ncs_json_obj_end(&j);
  fclose(f);
  return buf;
}
/* The per-rank JSON members, as text. */
static char *rank_json(struct run *r) {
  char *buf = NULL; size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  struct ncs_json j;
  ncs_json_init(&j, f, 0);
  ncs_json_obj_begin(&j, NULL);
  ncs_metrics_print_rank_json(ncs_analysis_metrics.result(r->st), &j, 0);
  ncs_json_obj_end(&j);
  fclose(f);
  return buf;
}
static double json_num(const char *s, const char *key) {
  char k[64];
  snprintf(k, sizeof k, "\"%s\":", key);
  const char *p = strstr(s, k);
  return p ? strtod(p + strlen(k), NULL) : NAN;
}
static int close_rel(double a, double b, double rel) { return fabs(a - b) <= rel * fabs(b); }

static uint64_t T0 = 1000000000ull;
static void call(struct tw *t, struct ncs_call *c, unsigned op, uint64_t count, unsigned dt, uint64_t t_enter, uint64_t dur) {
  c->op = op; c->tcall++; c->thread = 1; c->comm = 1; c->count = count; c->datatype = dt;
  c->t_enter = t_enter; c->t_exit = t_enter + dur; c->root = -1; c->redop = 0;
  tw_call(t, c);
}
static void gpu(struct tw *t, unsigned kind, uint64_t ref, uint64_t s, uint64_t e) {
  struct ncs_gpu_time g = {kind, 1, 0, ref, s, e};
  tw_gpu_time(t, &g);
}
static void comm8(struct tw *t, int n) {
  struct ncs_comm cm = {.comm = 1, .init_op = NCS_OP_CommInitRank, .comm_id = 42, .rank = 0, .nranks = n, .t_enter = 1, .t_exit = 2};
  tw_comm(t, &cm);
}

static void test_busbw(void) {
  char path[256];
  snprintf(path, sizeof path, "%s/bw.ncs", dir);
  struct tw t;
  tw_open(&t, path, 1, 1);
  comm8(&t, 8);
  struct ncs_call c = {0};
  uint64_t now = T0;
  for (int i = 0; i < 10; i++) { call(&t, &c, NCS_OP_AllReduce, 1 << 20, 7, now, 1000); gpu(&t, 0, c.tcall, now + 100, now + 100 + 1000000); now += 2000000; }
  for (int i = 0; i < 5; i++) { call(&t, &c, NCS_OP_AllGather, 1 << 20, 6, now, 1000); gpu(&t, 0, c.tcall, now + 100, now + 100 + 3000000); now += 4000000; }
  for (int i = 0; i < 4; i++) { call(&t, &c, NCS_OP_ReduceScatter, 3 << 18, 9, now, 1000); gpu(&t, 0, c.tcall, now + 100, now + 100 + 700000); now += 1000000; }
  for (int i = 0; i < 3; i++) { call(&t, &c, NCS_OP_Broadcast, 5 << 20, 0, now, 1000); gpu(&t, 0, c.tcall, now + 100, now + 100 + 1300000); now += 2000000; }
  tw_close(&t, 1);
  struct run r;
  run_metrics(&r, path, NULL, NULL);
  struct { unsigned op; double S, t, fac; } want[] = {
    {NCS_OP_AllReduce, 4194304.0, 1e6, 2.0 * 7 / 8},
    {NCS_OP_AllGather, 2097152.0 * 8, 3e6, 7.0 / 8},
    {NCS_OP_ReduceScatter, 1572864.0 * 8, 7e5, 7.0 / 8},
    {NCS_OP_Broadcast, 5242880.0, 1.3e6, 1.0},
  };
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    char *js = op_json(&r, want[i].op);
    double alg = json_num(js, "algbw_gbps"), bus = json_num(js, "busbw_gbps");
    double ealg = want[i].S / want[i].t; /* bytes/ns = GB/s */
    CHECK(close_rel(alg, ealg, 1e-8) && close_rel(bus, ealg * want[i].fac, 1e-8),
          "%s on 8 ranks: algbw %.9g (want %.9g), busbw %.9g (want S/t x factor = %.9g)", ncs_op_name(want[i].op), alg, ealg, bus, ealg * want[i].fac);
    free(js);
  }
  CHECK(ncs_rule_busbw_factor(NCS_OP_Send, 8) == 1.0 && ncs_rule_busbw_factor(NCS_OP_AlltoAll, 4) == 0.75 &&
        ncs_rule_busbw_factor(NCS_OP_AllReduce, 1) == 0.0 && ncs_rule_S(NCS_OP_Gather, 10, 8, 4) == 320.0 &&
        ncs_rule_log2(0) == -1 && ncs_rule_log2(1) == 0 && ncs_rule_log2((double)(1ull << 50) - 1) == 49,
        "busbw factors and S: Send 1, AlltoAll(4) 3/4, AllReduce(1) 0, Gather S = count x sz x n");
  char *js = op_json(&r, NCS_OP_AllReduce);
  CHECK(strstr(js, "\"bytes_min\":4194304,") && json_num(js, "p50_s") > 0.94e-3 && json_num(js, "p50_s") < 1.07e-3,
        "AllReduce size bucket [4 MiB, 8 MiB), p50 within the histogram's 6.25%% of 1 ms (%s)", js);
  free(js);
  struct ncs_metrics_rank x;
  rank0(r.st, &x);
  double comm = (10 * 1e6 + 5 * 3e6 + 4 * 7e5 + 3 * 1.3e6) / 1e9;
  CHECK(strcmp(x.timing, "gpu") == 0 && close_rel(x.comm_s, comm, 1e-12), "timing gpu; comm_s = sum of disjoint GPU intervals (%.9f, want %.9f)", x.comm_s, comm);
  ncs_analysis_metrics.destroy(r.st);
}

static void test_union_and_fallback(void) {
  char path[256];
  snprintf(path, sizeof path, "%s/u.ncs", dir);
  struct tw t;
  tw_open(&t, path, 1, 1);
  comm8(&t, 2);
  struct ncs_call c = {0};
  /* two streams: [10,20) ms and [15,30) ms overlap, [40,45) alone; one call without GPU time
   * (host [50, 52) ms); the window runs from the first call (t=0) to 60 ms */
  call(&t, &c, NCS_OP_AllReduce, 100, 7, T0, 1000); gpu(&t, 0, c.tcall, T0 + 10000000, T0 + 20000000);
  call(&t, &c, NCS_OP_AllReduce, 100, 7, T0 + 1000000, 1000); gpu(&t, 0, c.tcall, T0 + 15000000, T0 + 30000000);
  call(&t, &c, NCS_OP_AllReduce, 100, 7, T0 + 35000000, 1000); gpu(&t, 0, c.tcall, T0 + 40000000, T0 + 45000000);
  call(&t, &c, NCS_OP_AllReduce, 100, 7, T0 + 50000000, 2000000);
  c.op = NCS_OP_GetVersion; c.tcall++; c.comm = 0; c.t_enter = T0 + 59000000; c.t_exit = T0 + 60000000;
  tw_call(&t, &c);
  tw_close(&t, 1);
  struct run r;
  run_metrics(&r, path, NULL, NULL);
  struct ncs_metrics_rank x;
  rank0(r.st, &x);
  CHECK(close_rel(x.comm_s, 0.027, 1e-12) && close_rel(x.wall_s, 0.060, 1e-12), "union of overlapping GPU intervals + host fallback: comm 27 ms of a 60 ms window (%.9f of %.9f)", x.comm_s, x.wall_s);
  CHECK(strcmp(x.timing, "mixed") == 0 && close_rel(x.compute_to_comm, 33.0 / 27.0, 1e-12), "a call without GPU time makes timing 'mixed'; compute_to_comm = (wall-comm)/comm (%g)", x.compute_to_comm);
  char *js = op_json(&r, NCS_OP_AllReduce);
  CHECK(strstr(js, "\"timed_calls\":4,") && strstr(js, "\"busbw_gbps\":") && strstr(strstr(js, "\"busbw_gbps\":"), "\"timing\":\"mixed\"") &&
        strstr(js, "\"bytes_min\":256,") && strstr(strstr(js, "\"bytes_min\":256,"), "\"timing\":\"mixed\""),
        "the op and its size row labelled timing mixed (3 GPU-timed calls, 1 host-timed): %s", js);
  free(js);
  ncs_analysis_metrics.destroy(r.st);
}

/* Communication time is a sum of doubles in commit order. Under 2^53 ns of span metrics adds
 * whole nanoseconds as integers (the same bits); past it the double sum rounds, and the figure
 * must be that rounded sum: 1 + 2^53 + 1 ns is 2^53 in doubles, 2^53 + 2 as integers. */
static void test_comm_past_2_53(void) {
  char path[256];
  snprintf(path, sizeof path, "%s/big.ncs", dir);
  struct tw t;
  tw_open(&t, path, 1, 1);
  comm8(&t, 2);
  struct ncs_call c = {0};
  uint64_t big = 1ull << 53;
  call(&t, &c, NCS_OP_AllReduce, 100, 7, T0, 1);
  call(&t, &c, NCS_OP_AllReduce, 100, 7, T0 + 10, big);
  call(&t, &c, NCS_OP_AllReduce, 100, 7, T0 + 20 + big, 1);
  tw_close(&t, 1);
  struct run r;
  run_metrics(&r, path, NULL, NULL);
  struct ncs_metrics_rank x;
  rank0(r.st, &x);
  volatile double sum = 0; /* the three intervals, added as doubles in order */
  sum += 1.0; sum += (double)big; sum += 1.0;
  CHECK(sum == (double)big && x.comm_s == sum / 1e9, "comm of 1 + 2^53 + 1 ns host intervals: the double sum 2^53 ns (%.17g s, want %.17g)", x.comm_s, sum / 1e9);
  ncs_analysis_metrics.destroy(r.st);
}

static void test_groups_and_host(void) {
  char path[256];
  for (int mode = 0; mode < 2; mode++) {
    snprintf(path, sizeof path, "%s/g%d.ncs", dir, mode);
    struct tw t;
    tw_open(&t, path, 1, 1);
    comm8(&t, 4);
    struct ncs_call c = {0};
    uint64_t now = T0;
    for (int step = 0; step < 3; step++) {
      uint64_t gid = c.tcall + 1;
      c.group = gid; c.depth = 0;
      call(&t, &c, NCS_OP_GroupStart, 0, 255, now, 100);
      c.depth = 1;
      call(&t, &c, NCS_OP_Send, 1 << 20, 7, now + 1000, 100);
      call(&t, &c, NCS_OP_Recv, 1 << 20, 7, now + 2000, 100);
      c.depth = 0;
      call(&t, &c, NCS_OP_GroupEnd, 0, 255, now + 3000, 4000000); /* host: the launch */
      if (mode == 1) gpu(&t, 1, gid, now + 5000, now + 5000 + 2000000);
      c.group = 0;
      now += 10000000;
    }
    tw_close(&t, 1);
    struct run r;
    run_metrics(&r, path, NULL, NULL);
    struct ncs_metrics_rank x;
    rank0(r.st, &x);
    char *js = op_json(&r, NCS_OP_Send);
    double per = mode ? 2e-3 : 4e-3;
    CHECK(strcmp(x.timing, mode ? "gpu" : "host") == 0 && close_rel(x.comm_s, 3 * per, 1e-9) &&
          json_num(js, "timed_calls") == 3 && close_rel(json_num(js, "time_s"), 3 * per, 1e-9) &&
          close_rel(json_num(js, "busbw_gbps"), 4194304.0 / (per * 1e9), 1e-8),
          "grouped Send/Recv timed as their group (%s timing): comm %.6f s, Send busbw = S / group time", mode ? "GPU" : "host", x.comm_s);
    free(js);
    ncs_analysis_metrics.destroy(r.st);
  }
}

static void write_steps(const char *path, int steps, const char *mark) {
  struct tw t;
  tw_open(&t, path, 1, 1);
  if (mark) { struct ncs_kv kv[] = {{"env.NCCLSCOPE_STEP_MARK", mark, strlen(mark)}}; tw_kv(&t, kv, 1); }
  comm8(&t, 4);
  struct ncs_call c = {0};
  uint64_t now = T0;
  call(&t, &c, NCS_OP_Broadcast, 1000, 7, now, 1000); /* init broadcast, once */
  gpu(&t, 0, c.tcall, now + 1000, now + 1000000);
  now += 5000000;
  for (int s = 0; s < steps; s++) {
    /* a step: 10 ms compute, then AllReduce x2 (different buckets), AllGather; 3 ms of comm */
    now += 10000000;
    c.callsite = 5;
    call(&t, &c, NCS_OP_AllReduce, 1 << 20, 7, now, 1000); gpu(&t, 0, c.tcall, now, now + 1000000);
    call(&t, &c, NCS_OP_AllReduce, 1 << 18, 7, now + 1000000, 1000); gpu(&t, 0, c.tcall, now + 1000000, now + 2000000);
    c.callsite = 6;
    call(&t, &c, NCS_OP_AllGather, 1 << 16, 7, now + 2000000, 1000); gpu(&t, 0, c.tcall, now + 2000000, now + 3000000);
    now += 3000000;
  }
  tw_close(&t, 1);
}

static void test_steps(void) {
  char path[256];
  snprintf(path, sizeof path, "%s/s.ncs", dir);
  write_steps(path, 20, NULL);
  struct run r;
  run_metrics(&r, path, NULL, NULL);
  struct ncs_metrics_rank x;
  rank0(r.st, &x);
  CHECK(x.steps == 20 && close_rel(x.step_s, 0.013, 0.01) && close_rel(x.step_comm_share, 3.0 / 13, 0.02),
        "steps detected: 20 steps, 13 ms between boundaries, 23%% communication (%u, %.6f s, %.3f)", x.steps, x.step_s, x.step_comm_share);
  ncs_analysis_metrics.destroy(r.st);
  run_metrics(&r, path, "--skip-warmup=5", NULL);
  rank0(r.st, &x);
  /* from step 5's first AllReduce to the end: 15 steps, the last ending at its AllGather */
  CHECK(x.steps == 15 && close_rel(x.wall_s, 14 * 0.013 + 0.003, 1e-9) && close_rel(x.comm_s, 15 * 0.003, 1e-9),
        "--skip-warmup 5 (steps): 15 steps, window and comm from step 5 on (%u, %.6f, %.6f)", x.steps, x.wall_s, x.comm_s);
  ncs_analysis_metrics.destroy(r.st);
  run_metrics(&r, path, "--skip-warmup=0.05s", NULL);
  rank0(r.st, &x);
  CHECK(x.steps == 17 && close_rel(x.comm_s, 17 * 0.003, 1e-9), "--skip-warmup 0.05s: calls entering in the first 50 ms skipped (%u steps, comm %.6f)", x.steps, x.comm_s);
  ncs_analysis_metrics.destroy(r.st);
  run_metrics(&r, path, "--step-op=AllGather", NULL);
  rank0(r.st, &x);
  char *js = NULL; size_t len = 0;
  FILE *f = open_memstream(&js, &len);
  struct ncs_json j;
  ncs_json_init(&j, f, 0);
  ncs_json_obj_begin(&j, NULL);
  ncs_metrics_print_rank_json(ncs_analysis_metrics.result(r.st), &j, 0);
  ncs_json_obj_end(&j);
  fclose(f);
  CHECK(x.steps == 20 && strstr(js, "\"boundary_op\":\"AllGather\"") && strstr(js, "\"found_by\":\"--step-op\""), "--step-op AllGather names the boundary (%s)", js);
  free(js);
  ncs_analysis_metrics.destroy(r.st);
  snprintf(path, sizeof path, "%s/s3.ncs", dir);
  write_steps(path, 10000, NULL);
  run_metrics(&r, path, NULL, NULL);
  rank0(r.st, &x);
  CHECK(x.steps == 10000 && close_rel(x.step_s, 0.013, 1e-9) && close_rel(x.step_comm_share, 3.0 / 13, 1e-9),
        "10000 steps (more than the 4096 kept in the ring): 13 ms each, 3/13 communication (%u, %.9f, %.9f)", x.steps, x.step_s, x.step_comm_share);
  ncs_analysis_metrics.destroy(r.st);
  /* 300 003 CALL, GPU_TIME and COMM records: more than metrics holds (2^18) before it chooses
   * the boundary, so it is chosen from the first 2^18; every step is still counted and timed */
  write_steps(path, 50000, NULL);
  run_metrics(&r, path, NULL, NULL);
  rank0(r.st, &x);
  CHECK(x.steps == 50000 && close_rel(x.step_s, 0.013, 1e-9) && close_rel(x.step_comm_share, 3.0 / 13, 1e-9) &&
        close_rel(x.comm_s, 50000 * 0.003 + 0.000999, 1e-9),
        "50000 steps, boundary chosen from the first 2^18 records: 13 ms each, 3/13 communication, every call timed (%u, %.9f, %.9f, %.6f)",
        x.steps, x.step_s, x.step_comm_share, x.comm_s);
  ncs_analysis_metrics.destroy(r.st);
  snprintf(path, sizeof path, "%s/s2.ncs", dir);
  write_steps(path, 8, "ncclAllGather");
  run_metrics(&r, path, NULL, NULL);
  rank0(r.st, &x);
  js = op_json(&r, NCS_OP_AllGather);
  free(js);
  js = rank_json(&r);
  /* detection alone would pick the step's first AllReduce: the mark must win */
  CHECK(x.steps == 8 && strstr(js, "\"boundary_op\":\"AllGather\"") && strstr(js, "\"found_by\":\"NCCLSCOPE_STEP_MARK\""),
        "NCCLSCOPE_STEP_MARK=ncclAllGather from the trace's environment names the boundary (%u steps, %s)", x.steps, js);
  free(js);
  ncs_analysis_metrics.destroy(r.st);
  /* the same variable in ncclscope's own environment, for a trace that has none */
  snprintf(path, sizeof path, "%s/s.ncs", dir);
  setenv("NCCLSCOPE_STEP_MARK", "AllGather", 1);
  ncs_settings_read();
  run_metrics(&r, path, NULL, NULL);
  unsetenv("NCCLSCOPE_STEP_MARK");
  ncs_settings_read();
  rank0(r.st, &x);
  js = rank_json(&r);
  CHECK(x.steps == 20 && strstr(js, "\"boundary_op\":\"AllGather\"") && strstr(js, "\"found_by\":\"NCCLSCOPE_STEP_MARK\""),
        "NCCLSCOPE_STEP_MARK=AllGather in ncclscope's own environment names the boundary (%u steps, %s)", x.steps, js);
  free(js);
  ncs_analysis_metrics.destroy(r.st);
  run_metrics(&r, path, NULL, NULL);
  js = rank_json(&r);
  CHECK(strstr(js, "\"boundary_op\":\"AllReduce\"") && strstr(js, "\"found_by\":\"detected\"") && strstr(js, "\"count\":20"),
        "without a mark the boundary is detected: the step's first AllReduce, 20 steps (%s)", js);
  free(js);
  ncs_analysis_metrics.destroy(r.st);
}

/* Verdict thresholds (comm_share >= 0.5 bound, >= 0.25 heavy) and the evidence sentence: a
 * 100 ms window with C ms of AllReduce (4 MiB on 8 ranks: busbw = 4 MiB x 7/4 / C) and 1 ms of Broadcast. */
static void test_verdicts(void) {
  static const struct { int comm_ms; const char *verdict, *evidence; } cases[] = {
    {59, "communication-bound", "60.0% of the window in communication (gpu timing), AllReduce 98.3% of it at 0.12 GB/s busbw"},
    {29, "communication-heavy", "30.0% of the window in communication (gpu timing), AllReduce 96.7% of it at 0.25 GB/s busbw"},
    {9, "not communication-bound", "10.0% of the window in communication (gpu timing), AllReduce 90.0% of it at 0.82 GB/s busbw"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char path[256];
    snprintf(path, sizeof path, "%s/v%zu.ncs", dir, i);
    struct tw t;
    tw_open(&t, path, 1, 1);
    comm8(&t, 8);
    struct ncs_call c = {0};
    call(&t, &c, NCS_OP_AllReduce, 1 << 20, 7, T0, 1000);
    gpu(&t, 0, c.tcall, T0 + 1000000, T0 + 1000000 + (uint64_t)cases[i].comm_ms * 1000000);
    call(&t, &c, NCS_OP_Broadcast, 1 << 10, 7, T0 + 80000000, 1000);
    gpu(&t, 0, c.tcall, T0 + 90000000, T0 + 91000000);
    c.op = NCS_OP_GetVersion; c.tcall++; c.comm = 0; c.t_enter = T0 + 99000000; c.t_exit = T0 + 100000000;
    tw_call(&t, &c);
    tw_close(&t, 1);
    struct run r;
    run_metrics(&r, path, NULL, NULL);
    char *js = rank_json(&r), want_v[96], want_e[200];
    snprintf(want_v, sizeof want_v, "\"verdict\":\"%s\"", cases[i].verdict);
    snprintf(want_e, sizeof want_e, "\"evidence\":\"%s\"", cases[i].evidence);
    CHECK(strstr(js, want_v) && strstr(js, want_e), "%d ms of 100: verdict %s with its evidence (%s)", cases[i].comm_ms + 1, cases[i].verdict, js);
    free(js);
    ncs_analysis_metrics.destroy(r.st);
  }
}

static void test_hist(void) {
  struct ncs_hist *h = calloc(1, sizeof *h);
  int ok = 1;
  for (uint64_t v = 1; v < (1ull << 40); v = v * 3 + 1) {
    double lo, hi;
    ncs_hist_range(ncs_hist_index(v), &lo, &hi);
    if (!(lo <= (double)v && (double)v < hi) || (hi - lo) > lo / 8 + 1) ok = 0;
  }
  CHECK(ok, "histogram buckets hold their values and are at most 1/8 wide");
  for (int i = 1; i <= 1000; i++) ncs_hist_add(h, (uint64_t)i * 1000);
  double p50 = ncs_hist_quantile(h, 0.5), p99 = ncs_hist_quantile(h, 0.99);
  CHECK(close_rel(p50, 500000, 0.0625) && close_rel(p99, 990000, 0.0625), "p50 %.0f and p99 %.0f of 1..1000 us within 6.25%%", p50, p99);
  free(h);
}

/* Several threads of one process, their calls interleaved in the file chunk by chunk (as the
 * shim's per-thread rings flush), each thread's clock of calls drifting from the others' (its
 * own period, gaps between calls): comm_s must be the exact union of the calls' host intervals,
 * computed here by sorting and merging them all. Committing all but the latest buffered
 * interval at each flush (the rule before) clipped the slower threads' intervals still to come. */
static int cmp_iv(const void *a, const void *b) {
  const uint64_t *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0];
}
/* Threads' calls a chunk of `chunk` calls of each thread after another's (the shim's chunks);
 * from 6,000 a batch is longer than the union's first buffer (4,096: metrics.c flush_iv), and
 * with `quads` each thread's calls come in groups of 4 overlapping ones (the union merges them
 * as they come, then meets the next thread's batch out of order: its counts after merges). */
static void test_threads_interleaved(void) {
  static const struct { int threads, chunk, per, quads; uint64_t gap; } cases[] = {
    {2, 37, 5000, 0, 1000}, {2, 500, 5000, 0, 50000}, {4, 1, 5000, 0, 1000}, {4, 37, 5000, 0, 50000},
    {4, 500, 5000, 0, 1000}, {3, 37, 5000, 0, 0}, {2, 6000, 18000, 0, 1000}, {3, 9000, 18000, 0, 700},
    {2, 20000, 20000, 1, 0}, {4, 7000, 14000, 1, 300}};
  enum { PER = 20000 };
  static uint64_t ivs[4 * PER][2];
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    int nt = cases[k].threads, ch = cases[k].chunk, per = cases[k].per;
    char path[256];
    snprintf(path, sizeof path, "%s/thr%zu.ncs", dir, k);
    struct tw t;
    tw_open(&t, path, 1, 1);
    comm8(&t, 2);
    struct ncs_call c[4] = {{0}};
    int next[4] = {0};
    size_t n = 0;
    for (int done = 0; done < nt;) {
      done = 0;
      for (int th = 0; th < nt; th++) {
        for (int i = 0; i < ch && next[th] < per; i++, next[th]++) {
          /* thread th: calls of 3000 + 700 th ns, every 3000 + 700 th + gap + 200 th ns (quads:
           * 4 every 4 times that, each a quarter of a call after the one before) */
          uint64_t dur = 3000 + 700 * (uint64_t)th, step = dur + cases[k].gap + 200 * (uint64_t)th, i4 = (uint64_t)next[th];
          uint64_t at = T0 + (cases[k].quads ? i4 / 4 * 4 * step + i4 % 4 * (dur / 4) : i4 * step);
          struct ncs_call *cc = &c[th];
          cc->op = NCS_OP_AllReduce; cc->tcall++; cc->thread = (uint32_t)th + 1; cc->comm = 1; cc->count = 100;
          cc->datatype = 7; cc->t_enter = at; cc->t_exit = at + dur; cc->root = -1; cc->redop = 0;
          tw_call(&t, cc);
          ivs[n][0] = at; ivs[n][1] = at + dur; n++;
        }
        if (next[th] == per) done++;
      }
      tw_flush(&t, 0);
    }
    tw_close(&t, 1);
    qsort(ivs, n, sizeof *ivs, cmp_iv);
    uint64_t un = 0, s = ivs[0][0], e = ivs[0][1];
    for (size_t i = 1; i < n; i++) {
      if (ivs[i][0] <= e) { if (ivs[i][1] > e) e = ivs[i][1]; continue; }
      un += e - s; s = ivs[i][0]; e = ivs[i][1];
    }
    un += e - s;
    struct run r;
    run_metrics(&r, path, NULL, NULL);
    struct ncs_metrics_rank x;
    rank0(r.st, &x);
    CHECK(x.comm_s == (double)un / 1e9 && x.comm_late == 0,
          "%d threads interleaved by %d calls%s, gap %llu ns, %zu calls: comm_s %.9f = the exact union %.9f, none late (%llu)",
          nt, ch, cases[k].quads ? " in overlapping fours" : "", (unsigned long long)cases[k].gap, n, x.comm_s, (double)un / 1e9,
          (unsigned long long)x.comm_late);
    ncs_analysis_metrics.destroy(r.st);
  }
}

int main(void) {
  (void)tw_golden_rank;
  if (!mkdtemp(dir)) { printf("FAIL: mkdtemp\n"); return 1; }
  test_hist();
  test_busbw();
  test_union_and_fallback();
  test_comm_past_2_53();
  test_threads_interleaved();
  test_groups_and_host();
  test_steps();
  test_verdicts();
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) {}
  return check_done();
}
