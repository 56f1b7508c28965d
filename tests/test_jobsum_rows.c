/* test_jobsum_rows.c — the job summary's per-rank rows (analysis/jobsum.c): a rank calling more
 * sizes than its row array first holds (16) has every call counted in its row, also the calls
 * of sizes seen before the array grew (the size memo keeps each size's row, moved with it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "test_trace_writer.h"
#include "analysis/jobsum.h"

enum { SIZES = 20, ROUNDS = 3 };

static int write_trace(const char *path) {
  struct tw t;
  if (tw_open(&t, path, 1000, 1700000000000000000ull)) return -1;
  struct ncs_kv kv[] = {{"host", "node-a", 6}, {"pid", "1000", 4}, {"format_version", "1.0", 3}};
  tw_kv(&t, kv, sizeof kv / sizeof *kv);
  struct ncs_clock ck = {1700000000000000000ull, 1000000000ull, 40};
  tw_clock(&t, &ck);
  struct ncs_comm cm = {.comm = 1, .init_op = NCS_OP_CommInitRank, .thread = 1, .comm_id = 0xabcdef12ull,
                        .t_enter = 1000100000ull, .t_exit = 1000200000ull, .rank = 0, .nranks = 2};
  tw_comm(&t, &cm);
  uint64_t now = 1001000000ull, n = 0;
  for (int r = 0; r < ROUNDS; r++)
    for (int i = 0; i < SIZES; i++) {
      n++;
      struct ncs_call c = {.op = NCS_OP_AllReduce, .thread = 1, .tcall = n, .comm = 1, .seq = n, .datatype = 7, .root = -1,
                           .count = 1ull << (i + 4), .t_enter = now, .t_exit = now + 5000};
      now += 10000;
      tw_call(&t, &c);
    }
  struct ncs_clock ck2 = {1700000000000000000ull + now + 1000 - 1000000000ull, now + 1000, 40};
  tw_clock(&t, &ck2);
  return tw_close(&t, 1);
}

int main(void) {
  (void)tw_golden_rank;
  char dir[] = "/tmp/ncs-test-jobsum-rows.XXXXXX", path[64];
  CHECK(mkdtemp(dir) != NULL, "jobsum_rows: a scratch directory");
  snprintf(path, sizeof path, "%s/r0.ncs", dir);
  CHECK(write_trace(path) == 0, "jobsum_rows: trace written");
  char *files[1] = {path};
  struct ncs_load_opts o = {.threads = 1};
  struct ncs_jobdata *J = NULL;
  int rc = ncs_jobsum_load(1, files, &o, NULL, &J);
  int rows = 0, right = 0;
  uint64_t calls = 0;
  if (rc == 0 && J) {
    const struct ncs_jrank *r = &J->r[0];
    rows = r->nops;
    for (int k = 0; k < r->nops; k++) { right += r->ops[k].calls == ROUNDS; calls += r->ops[k].calls; }
  }
  CHECK(rc == 0 && rows == SIZES && right == SIZES && calls == SIZES * ROUNDS,
        "jobsum_rows: %d sizes called %d times each: %d rows, %d of them with every call (%llu calls)", SIZES, ROUNDS,
        rows, right, (unsigned long long)calls);
  ncs_job_free(J);
  unlink(path);
  rmdir(dir);
  return check_done();
}
