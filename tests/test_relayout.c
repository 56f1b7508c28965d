/* test_relayout.c — model/relayout.h on a hand-made timeline whose answers follow from its kernel
 * times: a kernel too long for the 32-bit duration (its end in the rank's long list) reads its
 * true end, and the observed and relaid step times use it; where a step goes (ncs_rl_split). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
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
  return check_done();
}
