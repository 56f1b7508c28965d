/* union_late_trace.c — writes one trace whose communication union must count late intervals
 * (tests/test_union_late.sh): thread 1 calls AllReduce every 5 us (2 us each) over 4 chunks of
 * 3,000 calls; thread 2 appears only in the 5th chunk, with 400 calls of 3 us every 5 us placed
 * 1 ms after the start, half overlapping thread 1's, half in its gaps. By then each streaming
 * union (model/ivunion.h, metrics.c) has committed past them: a thread first seen after the first
 * chunk (docs/METRICS.md "Communication time"). Deterministic: same bytes each run.
 * Usage: union_late_trace PATH */
#include "test_trace_writer.h"

int main(int argc, char **argv) {
  if (argc != 2) { fprintf(stderr, "usage: union_late_trace PATH\n"); return 2; }
  struct tw t;
  if (tw_open(&t, argv[1], 4242, 1700000000000000000ull)) { perror(argv[1]); return 1; }
  struct ncs_kv kv[] = {{"host", "late-host", 9}, {"pid", "4242", 4}, {"format_version", "1.0", 3}};
  tw_kv(&t, kv, sizeof kv / sizeof *kv);
  const uint64_t T0 = 1000000000ull;
  struct ncs_comm cm = {.comm = 1, .init_op = NCS_OP_CommInitRank, .thread = 1, .comm_id = 77, .rank = 0,
                        .nranks = 1, .t_enter = T0 - 2000, .t_exit = T0 - 1000};
  tw_comm(&t, &cm);
  struct ncs_call c[3] = {{0}};
  uint64_t seq = 0;
  for (int chunk = 0; chunk < 4; chunk++) {
    for (int i = 0; i < 3000; i++) {
      struct ncs_call *x = &c[1];
      x->op = NCS_OP_AllReduce; x->thread = 1; x->tcall++; x->comm = 1; x->seq = ++seq; x->count = 8;
      x->datatype = 7; x->redop = 0; x->root = -1;
      x->t_enter = T0 + (uint64_t)(chunk * 3000 + i) * 5000; x->t_exit = x->t_enter + 2000;
      tw_call(&t, x);
    }
    tw_flush(&t, 0);
  }
  for (int i = 0; i < 400; i++) {
    struct ncs_call *x = &c[2];
    x->op = NCS_OP_AllReduce; x->thread = 2; x->tcall++; x->comm = 1; x->seq = ++seq; x->count = 8;
    x->datatype = 7; x->redop = 0; x->root = -1;
    x->t_enter = T0 + 1000000 + (uint64_t)i * 5000 + 1000; x->t_exit = x->t_enter + 3000;
    tw_call(&t, x);
  }
  return tw_close(&t, 1) ? 1 : 0;
}
