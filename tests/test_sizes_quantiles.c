/* test_sizes_quantiles.c — the `sizes` analysis (decoder/analysis/sizes.c) gives a row's mean,
 * median and p99 exactly: the mean of its timed calls in call order, the ceil(n/2)-th and
 * ceil(0.99 n)-th smallest of their times, as a sort of the times gives them. Rows of one key
 * whose times are spread wide, tied, bunched with a few far outliers, equal, or few; host-timed
 * alone, or with every other call GPU-timed (the row then takes the GPU times alone). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/sizes.h"
#include "check.h"
#include "io/trace.h"
#include "ncclscope/format.h"
#include "ncclscope/nccl_abi.h"
#include "ncclscope/ops.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* The row of n + 1 calls (the communicator's first, then n timed) of times t[0..n): call i
 * host-timed t[i] when gpu is 0, else GPU-timed t[i] when i is even and host-timed t[i] + 7
 * when odd. Checks its figures against a sort of the times it must take. */
static void check_row(const char *what, const uint64_t *t, size_t n, int gpu) {
  size_t nc = n + 1;
  struct ncs_call *c = calloc(nc, sizeof *c);
  struct ncs_gpu_time *g = calloc(nc, sizeof *g);
  uint8_t *order = calloc(2 * nc, 1);
  uint64_t *want = calloc(n, sizeof *want);
  if (!c || !g || !order || !want) { CHECK(0, "sizes quantiles %s: memory", what); goto done; }
  size_t ng = 0, no = 0, nw = 0;
  double sum = 0;
  for (size_t i = 0; i < nc; i++) {
    uint64_t ti = i ? t[i - 1] : 5;
    int timed_gpu = gpu && i && (i - 1) % 2 == 0;
    c[i] = (struct ncs_call){.op = NCS_OP_AllReduce, .thread = 1, .comm = 1, .datatype = 7, .root = -1, .count = 4096,
                             .flags = NCS_CALL_F_OUTOFPLACE, .tcall = i + 1, .seq = i + 1,
                             .t_enter = 1000000 * (i + 1), .t_exit = 1000000 * (i + 1) + (timed_gpu ? ti + 7 : ti)};
    order[no++] = 0;
    if (timed_gpu) {
      g[ng++] = (struct ncs_gpu_time){.kind = NCS_GPU_KIND_CALL, .thread = 1, .ref = i + 1, .gpu_start = 3000000 * (i + 1),
                                      .gpu_end = 3000000 * (i + 1) + ti};
      order[no++] = 1;
    }
    if (i && (!gpu || timed_gpu)) { want[nw++] = ti; sum += (double)ti; }
  }
  struct ncs_rank_info info = {.path = "t", .rank = 0};
  int ord = 0;
  const char *opts[1] = {NULL};
  struct ncs_job job = {.n = 1, .rank = &info, .order = &ord, .options = opts};
  const struct ncs_analysis *a = &ncs_analysis_sizes;
  void *st = a->create(&job);
  if (!st) { CHECK(0, "sizes quantiles %s: create", what); goto done; }
  struct ncs_visitor v = {0};
  a->visitor(st, 0, &v);
  struct ncs_comm cm = {.comm = 1, .init_op = NCS_OP_CommInitRank, .comm_id = 0x51, .rank = 0, .nranks = 4, .color = -1};
  v.comm(v.ctx, &cm);
  struct ncs_stretch s = {.c = c, .g = g, .nc = nc, .ng = ng, .order = order};
  v.stretch(v.ctx, &s);
  struct ncs_read_status rs = {0};
  a->file_done(st, 0, &rs);
  a->finish(st, &job);
  const struct ncs_sizes_result *res = a->result(st);
  qsort(want, nw, sizeof *want, cmp_u64);
  double p50 = (double)want[(nw + 1) / 2 - 1], p99 = (double)want[(99 * nw + 99) / 100 - 1], mean = sum / (double)nw;
  int one = res && res->nrows == 1;
  const struct ncs_sizes_row *r = one ? &res->rows[0] : NULL;
  CHECK(one && r->timed == nw && r->gpu == (gpu != 0), "sizes quantiles %s: one row, %zu calls timed on the %s", what, nw, gpu ? "GPU" : "host");
  CHECK(one && r->median_ns == p50, "sizes quantiles %s: median %.0f (want %.0f)", what, r ? r->median_ns : -1, p50);
  CHECK(one && r->p99_ns == p99, "sizes quantiles %s: p99 %.0f (want %.0f)", what, r ? r->p99_ns : -1, p99);
  CHECK(one && r->mean_ns == mean, "sizes quantiles %s: mean %.6f (want %.6f, summed in call order)", what, r ? r->mean_ns : -1, mean);
  a->destroy(st);
done:
  free(c);
  free(g);
  free(order);
  free(want);
}

int main(void) {
  enum { N = 40000 };
  uint64_t *t = malloc(N * sizeof *t);
  if (!t) return 1;
  for (int gpu = 0; gpu <= 1; gpu++) {
    char what[64];
    const char *mode = gpu ? "GPU and host" : "host";
    for (size_t i = 0; i < N; i++) t[i] = next_rand() >> 20; /* 44 bits */
    snprintf(what, sizeof what, "(%s, wide)", mode);
    check_row(what, t, N, gpu);
    for (size_t i = 0; i < N; i++) t[i] = 1000 + next_rand() % 5; /* ties, one bucket */
    snprintf(what, sizeof what, "(%s, ties)", mode);
    check_row(what, t, N, gpu);
    for (size_t i = 0; i < N; i++) t[i] = i % 997 == 0 ? (1ull << 40) + next_rand() % 1000 : 50000 + next_rand() % 300;
    snprintf(what, sizeof what, "(%s, bunched with far outliers)", mode); /* p99 among the bunch, median too */
    check_row(what, t, N, gpu);
    for (size_t i = 0; i < N; i++) t[i] = i % 50 == 0 ? (1ull << 40) + next_rand() % 1000 : 50000 + next_rand() % 300;
    snprintf(what, sizeof what, "(%s, bunched, 2%% far)", mode); /* p99 among the outliers */
    check_row(what, t, N, gpu);
    for (size_t i = 0; i < N; i++) t[i] = 123456;
    snprintf(what, sizeof what, "(%s, equal)", mode);
    check_row(what, t, N, gpu);
    for (size_t n = 1; n <= 5; n++) {
      for (size_t i = 0; i < 2 * n; i++) t[i] = next_rand() % 100000;
      snprintf(what, sizeof what, "(%s, %zu calls)", mode, n);
      check_row(what, t, gpu ? 2 * n : n, gpu);
    }
  }
  free(t);
  return check_done();
}
