/* test_relayout.c — model/relayout.h on a hand-made timeline whose answers follow from its kernel
 * times: a kernel too long for the 32-bit duration (its end in the rank's long list) reads its
 * true end, and the observed and relaid step times use it; where a step goes (ncs_rl_split): kernels
 * that overlap, kernels that each run alone (one cut at its arrival), an end that wrapped, and one
 * rank's chain of kernels that run alone (NCCL of two operations, compute, one of no length) at
 * times past 2^32 ns, broken by an NCCL kernel a compute kernel overlaps. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "model/relayout.h"

static double half(void *ctx, const struct ncs_rl_size *size, double t) { (void)ctx; (void)size; return t / 2; }

int main(void) {
  /* one rank, one stream, three NCCL kernels back to back, each a step boundary; the middle one
   * runs 5 s (over 2^32 ns) */
  const uint64_t L = 5000000000ull;
  struct ncs_rl_k k[3] = {
    {0, 10, NCS_RL_NCCL},
    {10, NCS_RL_LONG, NCS_RL_NCCL},
    {L + 10, 10, NCS_RL_NCCL},
  };
  struct ncs_rl_long lng[1] = {{1, L + 10}};
  uint32_t bound[3] = {0, 1, 2};
  static const struct ncs_rl_size unknown = {0};
  struct ncs_rl_rank r = {.k = k, .n = 3, .lng = lng, .nlong = 1, .size = &unknown, .bound = bound, .nbound = 3};
  CHECK(ncs_rl_end(&r, 0) == 10 && ncs_rl_end(&r, 1) == L + 10 && ncs_rl_end(&r, 2) == L + 20,
        "relayout: ends from the duration, and from the long list for a 5 s kernel");
  struct ncs_rl rl = {1, &r, 0};
  CHECK(ncs_rl_prepare(&rl) == 0, "relayout: prepared");
  double want = (double)(L + 20 - 10) / 2; /* (last boundary's end - first's) / 2 steps */
  CHECK(ncs_rl_observed_step(&rl, 0) == want, "relayout: observed step %.0f ns with the long kernel (want %.0f)",
        ncs_rl_observed_step(&rl, 0), want);
  double step = 0;
  struct ncs_rl_change none = {.fix_rank = -1};
  CHECK(ncs_rl_run(&rl, &none, &step) == 0 && step == want, "relayout: laid out unchanged, the same step %.0f ns", step);
  /* every transfer halved: kernel 0 ends at 5, kernel 1 (after it on its stream) at 5 + L / 2,
   * kernel 2 at 5 + L / 2 + 5 */
  struct ncs_rl_change h = {half, NULL, -1};
  double want_h = ((5.0 + (double)L / 2 + 5) - 5) / 2;
  CHECK(ncs_rl_run(&rl, &h, &step) == 0 && fabs(step - want_h) < 1e-6, "relayout: transfers halved, step %.0f ns (want %.0f)",
        step, want_h);
  ncs_rl_free(&rl);

  /* where the step goes (ncs_rl_split), one rank: NCCL [0,10), compute [20,60), NCCL [50,100) and
   * [150,170), the NCCL ones step boundaries: in [10,170], 2 steps: idle [10,20) + [100,150),
   * compute [20,60), NCCL alone [60,100) + [150,170) (one rank: no wait, all transfer) */
  struct ncs_rl_k k2[4] = {
    {0, 10, NCS_RL_NCCL}, {20, 40, 0}, {50, 50, NCS_RL_NCCL}, {150, 20, NCS_RL_NCCL},
  };
  uint32_t bound2[3] = {0, 2, 3};
  struct ncs_rl_rank r2 = {.k = k2, .n = 4, .size = &unknown, .bound = bound2, .nbound = 3};
  struct ncs_rl rl2 = {1, &r2, 0};
  struct ncs_rl_split sp;
  CHECK(ncs_rl_prepare(&rl2) == 0 && ncs_rl_split(&rl2, 0, &sp) == 0, "relayout: split computed");
  CHECK(!sp.heaped && sp.compute == 20 && sp.idle == 30 && sp.wait == 0 && sp.transfer[NCS_RL_KOPS - 1] == 30 &&
        sp.transfer_all[NCS_RL_KOPS - 1] == 35 && sp.exposed == 30,
        "relayout: split per step: compute 20, idle 30, transfer 30 (all of it 35), exposed 30, no wait: %g %g %g %g %g %g",
        sp.compute, sp.idle, sp.wait, sp.transfer[NCS_RL_KOPS - 1], sp.transfer_all[NCS_RL_KOPS - 1], sp.exposed);
  ncs_rl_free(&rl2);
  /* one rank's split needs no dependencies: unprepared (synced set, as prepare would), the same */
  struct ncs_rl_split sp1;
  struct ncs_rl rl2b = {1, &r2, 1};
  CHECK(ncs_rl_split(&rl2b, 0, &sp1) == 0 && !r2.dep && !memcmp(&sp1, &sp, sizeof sp),
        "relayout: one rank, not prepared: the same split (compute %g, idle %g, transfer %g)", sp1.compute, sp1.idle,
        sp1.transfer[NCS_RL_KOPS - 1]);

  /* kernels that run alone (nothing running as each starts, the next starting after its end: the
   * split takes them without events), two ranks in step: rank 0's NCCL [0,10), [30,40), [60,70),
   * rank 1's [0,10), [35,40), [60,70), every one a boundary; rank 0's second collective arrives
   * at 35 (rank 1's start): in [10,70], 2 steps, rank 0 waits [30,35), moves [35,40) + [60,70),
   * idles [10,30) + [40,60); every NCCL moment is exposed */
  struct ncs_rl_k a0[3] = {{0, 10, NCS_RL_NCCL}, {30, 10, NCS_RL_NCCL}, {60, 10, NCS_RL_NCCL}};
  struct ncs_rl_k a1[3] = {{0, 10, NCS_RL_NCCL}, {35, 5, NCS_RL_NCCL}, {60, 10, NCS_RL_NCCL}};
  uint32_t bound3[3] = {0, 1, 2};
  struct ncs_rl_rank r3[2] = {{.k = a0, .n = 3, .size = &unknown, .bound = bound3, .nbound = 3},
                              {.k = a1, .n = 3, .size = &unknown, .bound = bound3, .nbound = 3}};
  struct ncs_rl rl3 = {2, r3, 0};
  CHECK(ncs_rl_prepare(&rl3) == 0 && rl3.synced && ncs_rl_split(&rl3, 0, &sp) == 0, "relayout: two ranks in step, split computed");
  CHECK(!sp.heaped && sp.idle == 20 && sp.wait == 2.5 && sp.transfer[NCS_RL_KOPS - 1] == 7.5 && sp.compute == 0 &&
        sp.transfer_all[NCS_RL_KOPS - 1] == 7.5 && sp.exposed == 10,
        "relayout: kernels alone, one cut at its arrival: idle 20, wait 2.5, transfer 7.5 (all 7.5), exposed 10 per step: "
        "%g %g %g %g %g %g", sp.idle, sp.wait, sp.transfer[NCS_RL_KOPS - 1], sp.transfer_all[NCS_RL_KOPS - 1], sp.compute, sp.exposed);
  ncs_rl_free(&rl3);

  /* bus bytes of the kernels ending in the window, one rank: NCCL [0,10) and [20,30) (50 bus
   * bytes) the boundaries, a kernel of no length at 30 (100 bytes): at the window's end, outside */
  static const struct ncs_rl_size sz5[3] = {{0, 0, 0}, {50, 1, 0}, {100, 1, 0}};
  struct ncs_rl_k k5[3] = {{0, 10, NCS_RL_NCCL}, {20, 10, NCS_RL_NCCL | 1}, {30, 0, NCS_RL_NCCL | 2}};
  uint32_t bound5[2] = {0, 1};
  struct ncs_rl_rank r5 = {.k = k5, .n = 3, .size = sz5, .bound = bound5, .nbound = 2};
  struct ncs_rl rl5 = {1, &r5, 1};
  CHECK(ncs_rl_split(&rl5, 0, &sp) == 0 && sp.busbytes[NCS_RL_KOPS - 1] == 50 && sp.idle == 10 && sp.transfer[NCS_RL_KOPS - 1] == 10,
        "relayout: bus bytes of the window's kernels only (50; a kernel at its end is not in it), idle 10, transfer 10: %g %g %g",
        sp.busbytes[NCS_RL_KOPS - 1], sp.idle, sp.transfer[NCS_RL_KOPS - 1]);

  /* a compute kernel whose end wrapped (start 20, end 15: in the long list) between two NCCL
   * boundaries [0,10) and [30,40): the split holds its events in the heap (heaped); in [10,40]
   * nothing computes (its end, at 15, comes before its start), so idle 20, transfer 10 */
  struct ncs_rl_k w4[3] = {{0, 10, NCS_RL_NCCL}, {20, NCS_RL_LONG, 0}, {30, 10, NCS_RL_NCCL}};
  struct ncs_rl_long l4[1] = {{1, 15}};
  uint32_t bound4[2] = {0, 2};
  struct ncs_rl_rank r4 = {.k = w4, .n = 3, .lng = l4, .nlong = 1, .size = &unknown, .bound = bound4, .nbound = 2};
  struct ncs_rl rl4 = {1, &r4, 0};
  CHECK(ncs_rl_prepare(&rl4) == 0 && ncs_rl_split(&rl4, 0, &sp) == 0 && sp.heaped && sp.idle == 20 && sp.compute == 0 &&
        sp.transfer[NCS_RL_KOPS - 1] == 10,
        "relayout: a wrapped end (long list) makes the split heaped: idle 20, compute 0, transfer 10: %d %g %g %g", sp.heaped,
        sp.idle, sp.compute, sp.transfer[NCS_RL_KOPS - 1]);
  ncs_rl_free(&rl4);

  /* one rank, from T0 = 10^12 ns (times whole ns, past 2^32): NCCL AllReduce (kop 0, 3.25 bus
   * bytes) [0,10) boundary, compute [20,50), AllReduce [60,70), AllGather (kop 3, 1000.5 bytes)
   * [75,95), compute [100,104), AllReduce of no length at 105, AllReduce [110,130) boundary,
   * AllReduce [140,170) with compute [160,180) beside it, AllReduce [200,210) boundary: in
   * [10,210], 2 steps: idle [10,20) [50,60) [70,75) [95,100) [104,110) [130,140) [180,200) = 66,
   * compute 30 + 4 + 20 (the overlap [160,170) is compute) = 54, AllReduce moves 10 + 20 + 20
   * (to 160) + 10 = 60 (all of its kernels' time 10 + 0 + 20 + 30 + 10 = 70), AllGather 20; exposed
   * 60 + 20 = 80; bus bytes of the NCCL kernels ending in the window: 5 x 3.25, 1000.5 */
  const uint64_t T0 = 1000000000000ull;
  const uint32_t AR = NCS_RL_NCCL | 1u << NCS_RL_KOP_SHIFT | 2, AG = NCS_RL_NCCL | 4u << NCS_RL_KOP_SHIFT | 1;
  struct ncs_rl_k k6[10] = {
    {T0, 10, AR}, {T0 + 20, 30, 0}, {T0 + 60, 10, AR}, {T0 + 75, 20, AG}, {T0 + 100, 4, 0}, {T0 + 105, 0, AR},
    {T0 + 110, 20, AR}, {T0 + 140, 30, AR}, {T0 + 160, 20, 0}, {T0 + 200, 10, AR},
  };
  static const struct ncs_rl_size sz6[3] = {{0, 0, 0}, {1000.5, 1, 0}, {3.25, 1, 0}};
  uint32_t bound6[3] = {0, 6, 9};
  struct ncs_rl_rank r6 = {.k = k6, .n = 10, .size = sz6, .bound = bound6, .nbound = 3};
  struct ncs_rl rl6 = {1, &r6, 1};
  CHECK(ncs_rl_split(&rl6, 0, &sp) == 0 && !sp.heaped && sp.idle == 33 && sp.compute == 27 && sp.wait == 0 &&
        sp.transfer[0] == 30 && sp.transfer[3] == 10 && sp.transfer_all[0] == 35 && sp.transfer_all[3] == 10 &&
        sp.exposed == 40 && sp.busbytes[0] == 8.125 && sp.busbytes[3] == 500.25,
        "relayout: one rank's chain run alone, per step: idle 33, compute 27, AllReduce 30 (all 35), AllGather 10 (10), "
        "exposed 40, bus bytes 8.125, 500.25: %g %g %g %g (%g) %g (%g) %g %g %g",
        sp.idle, sp.compute, sp.wait, sp.transfer[0], sp.transfer_all[0], sp.transfer[3], sp.transfer_all[3], sp.exposed,
        sp.busbytes[0], sp.busbytes[3]);
  return check_done();
}
