/* test_sizes_runs.c — the `sizes` analysis (decoder/analysis/sizes.c) with the rows' keys alone
 * (report's text without --sizes) skips a call of a run that is like the latest one that got
 * its row (s_calls' rowkey): a call that differs from it in any field of the key (op,
 * communicator, datatype, count, reduction, placement) is a row of its own. Calls that follow
 * a base AllReduce each differing from it in one field, then calls like one of them: fed as one
 * run, fed one call at a time, and read by the full analysis (every figure, no skipping), the
 * same number of rows, the one the calls hold. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/sizes.h"
#include "check.h"
#include "ncclscope/format.h"
#include "ncclscope/nccl_abi.h"
#include "ncclscope/ops.h"

#define MAXC 64

/* The table's rows of calls c[0..n) in runs of `run` calls; text_only 1: the keys alone. */
static size_t rows_of(const struct ncs_call *c, size_t n, size_t run, int text_only) {
  struct ncs_rank_info info = {.path = "t", .rank = 0};
  int order = 0;
  const char *opts[1] = {NULL};
  struct ncs_job job = {.n = 1, .rank = &info, .order = &order, .options = opts, .text_only = text_only};
  const struct ncs_analysis *a = &ncs_analysis_sizes;
  void *st = a->create(&job);
  if (!st) return 0;
  struct ncs_visitor v = {0};
  a->visitor(st, 0, &v);
  for (uint32_t idx = 1; idx <= 2; idx++) {
    struct ncs_comm cm = {.comm = idx, .init_op = NCS_OP_CommInitRank, .comm_id = 0x50 + idx, .rank = 0, .nranks = idx == 1 ? 4 : 2, .color = -1};
    v.comm(v.ctx, &cm);
  }
  for (size_t i = 0; i < n; i += run) v.calls(v.ctx, c + i, n - i < run ? n - i : run);
  struct ncs_read_status rs = {0};
  a->file_done(st, 0, &rs);
  a->finish(st, &job);
  const struct ncs_sizes_result *res = a->result(st);
  size_t rows = res ? res->nrows : 0;
  a->destroy(st);
  return rows;
}

int main(void) {
  struct ncs_call c[MAXC];
  size_t n = 0;
  const struct ncs_call base = {.op = NCS_OP_AllReduce, .thread = 1, .comm = 1, .datatype = 7, .redop = 0, .root = -1,
                                .count = 1024, .flags = NCS_CALL_F_OUTOFPLACE};
  for (uint64_t t = 0; t < 3; t++) c[n++] = base; /* the communicator's first, then two like it */
  struct ncs_call v;
  const char *what[] = {"op", "communicator", "datatype", "count", "reduction", "placement"};
  for (int f = 0; f < 6; f++) {
    v = base;
    if (f == 0) v.op = NCS_OP_ReduceScatter;
    if (f == 1) v.comm = 2;
    if (f == 2) v.datatype = 9;
    if (f == 3) v.count = 2048;
    if (f == 4) v.redop = 3;
    if (f == 5) v.flags = NCS_CALL_F_INPLACE;
    c[n++] = base;
    c[n++] = v; /* right after a call like base that got its row */
    c[n++] = v;
  }
  c[n++] = base;
  for (size_t i = 0; i < n; i++) { c[i].tcall = i + 1; c[i].seq = i + 1; c[i].t_enter = 1000 * (i + 1); c[i].t_exit = 1000 * (i + 1) + 500; }
  size_t want = 1 + 6; /* base's row (on communicator 1; on communicator 2: its own), one per variant */
  size_t one = rows_of(c, n, 1, 1), whole = rows_of(c, n, n, 1), full = rows_of(c, n, n, 0);
  CHECK(full == want, "sizes runs: the full analysis finds a row for the base call and each of its %d variants (%zu rows, want %zu)", 6, full, want);
  CHECK(one == want, "sizes runs: keys alone, one call at a time: %zu rows (want %zu)", one, want);
  CHECK(whole == want, "sizes runs: keys alone, one run: a call differing in any of %s, %s, %s, %s, %s or %s is not skipped (%zu rows, want %zu)",
        what[0], what[1], what[2], what[3], what[4], what[5], whole, want);
  /* each variant alone after the base, in one run */
  for (int f = 0; f < 6; f++) {
    struct ncs_call d[4] = {base, base, c[3 + 3 * f + 1], c[3 + 3 * f + 1]};
    for (int i = 0; i < 4; i++) { d[i].tcall = (uint64_t)i + 1; d[i].seq = (uint64_t)i + 1; d[i].t_enter = 1000 * ((uint64_t)i + 1); d[i].t_exit = d[i].t_enter + 500; }
    size_t r = rows_of(d, 4, 4, 1);
    CHECK(r == 2, "sizes runs: a call differing from the one before it only in its %s makes a row of its own in a run (%zu rows)", what[f], r);
  }
  return check_done();
}
