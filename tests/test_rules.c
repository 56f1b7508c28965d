/* test_rules.c — model/rules.h's per-communicator table (ncs_rule_ops) prices a call as
 * ncs_rule_busbytes and ncs_rule_steps do, double for double, for every operation; and the
 * figures themselves against nccl-tests' formulas worked by hand. */
#include <string.h>

#include "check.h"
#include "model/rules.h"
#include "ncclscope/ops.h"

int main(void) {
  static const int ranks[] = {0, 1, 2, 3, 7, 8, 24, 1000, 1024, 4096};
  static const uint64_t counts[] = {0, 1, 3, 1000, 262144, 12345679, 1ull << 40};
  struct ncs_rule_op t[NCS_OP_LIMIT];
  long tried = 0, bb_diff = 0, st_diff = 0;
  for (size_t r = 0; r < sizeof ranks / sizeof *ranks; r++) {
    ncs_rule_ops(t, ranks[r]);
    for (unsigned op = 0; op < NCS_OP_LIMIT; op++) {
      if (t[op].steps != ncs_rule_steps(op, ranks[r])) st_diff++;
      for (size_t c = 0; c < sizeof counts / sizeof *counts; c++)
        for (uint32_t dt = 0; dt < 12; dt++) {
          double want = ncs_rule_busbytes(op, counts[c], dt, ranks[r]);
          double got = t[op].fac > 0 ? ncs_rule_S(op, counts[c], dt, ranks[r]) * t[op].fac : 0;
          if (memcmp(&want, &got, sizeof want)) bb_diff++;
          tried++;
        }
    }
  }
  CHECK(tried > 20000 && bb_diff == 0, "rules: table bus bytes equal ncs_rule_busbytes bit for bit (%ld cases, %ld differ)", tried, bb_diff);
  CHECK(st_diff == 0, "rules: table steps equal ncs_rule_steps for every op and rank count (%ld differ)", st_diff);
  /* nccl-tests (PERFORMANCE.md): all-reduce busbw = algbw x 2(n-1)/n, all-gather S = n x count
   * x size and busbw = algbw x (n-1)/n, broadcast x 1; float32 is 4 bytes */
  ncs_rule_ops(t, 8);
  double ar = ncs_rule_S(NCS_OP_AllReduce, 262144, 7, 8) * t[NCS_OP_AllReduce].fac;
  double ag = ncs_rule_S(NCS_OP_AllGather, 262144, 7, 8) * t[NCS_OP_AllGather].fac;
  double bc = ncs_rule_S(NCS_OP_Broadcast, 262144, 7, 8) * t[NCS_OP_Broadcast].fac;
  CHECK(ar == 1048576.0 * 14 / 8 && ag == 8 * 1048576.0 * 7 / 8 && bc == 1048576.0,
        "rules: 1 MiB float32 on 8 ranks: all-reduce %.0f, all-gather %.0f, broadcast %.0f bus bytes", ar, ag, bc);
  CHECK(t[NCS_OP_AllReduce].steps == 14 && t[NCS_OP_Send].steps == 1 && t[NCS_OP_CommInitRank].fac == 0 &&
        t[NCS_OP_CommInitRank].steps == 0, "rules: steps 2(n-1) all-reduce, 1 send; an init moves nothing");
  return check_done();
}
