/* test_gate.c — the CI gate's statistics (model/shift.c, analysis/gate.c) on sample sets with
 * known answers: the Hodges-Lehmann estimate and interval against the brute-force median and
 * order statistics of all pairwise differences (the definition, computed independently);
 * identical distributions are never a regression; a 25% busbw loss with enough calls always
 * is; 3 calls are not enough to judge; a change smaller than the threshold is no regression
 * however many calls; the detectable change shrinks with more calls. Seeded: deterministic. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/gate.h"
#include "model/shift.h"
#include "check.h"

static uint64_t rng = 88172645463325252ull;
static double urand(void) { /* xorshift64*, in (0, 1) */
  rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
  return ((rng * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0) + 1e-17;
}
static double nrand(void) { return sqrt(-2 * log(urand())) * cos(2 * M_PI * urand()); }

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
/* All n*m differences y - x, sorted. */
static double *diffs(const double *x, int n, const double *y, int m) {
  double *d = malloc((size_t)n * m * sizeof *d);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++) d[(size_t)i * m + j] = y[j] - x[i];
  qsort(d, (size_t)n * m, sizeof *d, cmp);
  return d;
}

/* Per-call log busbw of a run: median `mu`, per-call spread `sd` (lognormal). */
static void draw(double *v, int n, double mu, double sd) {
  for (int i = 0; i < n; i++) v[i] = mu + sd * nrand();
}

int main(void) {
  /* z quantiles: the textbook values */
  CHECK(fabs(ncs_shift_z(0.95) - 1.959964) < 1e-5, "shift: z(0.95) = 1.95996");
  CHECK(fabs(ncs_shift_z(0.99) - 2.575829) < 1e-5, "shift: z(0.99) = 2.57583");

  /* A hand-worked case: x = {1,2,3}, y = {4,5,6}: differences 1,2,2,3,3,3,4,4,5, median 3 */
  {
    double x[] = {3, 1, 2}, y[] = {6, 4, 5};
    struct ncs_shift s;
    ncs_shift_hl(x, 3, y, 3, 0.95, &s);
    CHECK(fabs(s.est - 3) < 1e-9, "shift: {1,2,3} to {4,5,6}: estimate 3 (got %g)", s.est);
    CHECK(isinf(s.lo) && isinf(s.hi), "shift: 3 against 3 samples: the 95%% interval is unbounded");
  }

  /* Against brute force: estimate = median of the differences, interval = D_(k), D_(nm+1-k) */
  int worst_est = 0, worst_ci = 0;
  const int sizes[][2] = {{7, 9}, {20, 20}, {33, 50}, {101, 64}, {200, 300}};
  for (int c = 0; c < 5; c++) {
    int n = sizes[c][0], m = sizes[c][1];
    double *x = malloc(n * sizeof *x), *y = malloc(m * sizeof *y);
    draw(x, n, 0, 1);
    draw(y, m, 0.3, 2);
    double *d = diffs(x, n, y, m);
    size_t N = (size_t)n * m;
    double med = N % 2 ? d[N / 2] : (d[N / 2 - 1] + d[N / 2]) / 2;
    double k = floor(N / 2.0 - 1.959964 * sqrt((double)N * (n + m + 1) / 12.0));
    struct ncs_shift s;
    ncs_shift_hl(x, n, y, m, 0.95, &s);
    double tol = 1e-9 * (d[N - 1] - d[0]);
    if (fabs(s.est - med) > tol) worst_est++;
    if (k < 1 || fabs(s.lo - d[(size_t)k - 1]) > tol || fabs(s.hi - d[N - (size_t)k]) > tol) worst_ci++;
    free(d); free(x); free(y);
  }
  CHECK(worst_est == 0, "shift: estimate is the median of all pairwise differences (5 sample sets, brute force)");
  CHECK(worst_ci == 0, "shift: interval is [D_(k), D_(nm+1-k)] of the sorted differences (brute force)");

  /* A pure shift: y = x + c exactly; the estimate is c, the interval holds it */
  {
    double x[50], y[50];
    draw(x, 50, 1, 0.5);
    for (int i = 0; i < 50; i++) y[i] = x[i] + 0.25;
    struct ncs_shift s;
    ncs_shift_hl(x, 50, y, 50, 0.99, &s);
    CHECK(fabs(s.est - 0.25) < 1e-9 && s.lo <= 0.25 && s.hi >= 0.25, "shift: y = x + 0.25: estimate 0.25, inside its interval");
  }

  /* The gate's verdicts over 200 seeded pairs each; busbw, 10% threshold, 16 figures judged */
  const double conf = 1 - 0.05 / 16;
  enum { N = 400 };
  double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
  int fa = 0, hit = 0, small_flagged = 0, few_judged = 0, ok_same = 0;
  struct ncs_gate_fig f;
  for (int it = 0; it < 200; it++) {
    draw(a, N, log(100), 0.3); /* 30% per-call spread */
    draw(b, N, log(100), 0.3);
    ncs_gate_judge(a, N, b, N, -1, 0, 10, conf, &f);
    fa += f.verdict == NCS_GATE_REGRESSION;
    draw(a, N, log(100), 0.15); /* a quieter figure: its interval rules a 10% loss out */
    draw(b, N, log(100), 0.15);
    ncs_gate_judge(a, N, b, N, -1, 0, 10, conf, &f);
    ok_same += f.verdict == NCS_GATE_OK;
    draw(a, N, log(100), 0.3);
    draw(b, N, log(75), 0.3); /* a 25% busbw loss */
    ncs_gate_judge(a, N, b, N, -1, 0, 10, conf, &f);
    hit += f.verdict == NCS_GATE_REGRESSION;
    draw(a, N, log(100), 0.3);
    draw(b, N, log(95), 0.3); /* a 5% loss: real, but under the threshold */
    ncs_gate_judge(a, N, b, N, -1, 0, 10, conf, &f);
    small_flagged += f.verdict == NCS_GATE_REGRESSION;
    draw(a, 3, log(100), 0.3);
    draw(b, 3, log(50), 0.3); /* 3 calls, even of a 50% loss */
    ncs_gate_judge(a, 3, b, 3, -1, 0, 10, conf, &f);
    few_judged += f.verdict != NCS_GATE_TOO_FEW;
  }
  CHECK(fa == 0, "gate: identical distributions, 400 calls each: 0 regressions in 200 pairs (got %d)", fa);
  CHECK(ok_same == 200, "gate: identical distributions, 15%% spread: judged ok (the interval rules a 10%% loss out) in %d of 200", ok_same);
  CHECK(hit == 200, "gate: a 25%% busbw loss, 400 calls each: a regression in 200 of 200 pairs (got %d)", hit);
  CHECK(small_flagged == 0, "gate: a 5%% loss (under the 10%% threshold) is never a regression (got %d)", small_flagged);
  CHECK(few_judged == 0, "gate: 3 calls against 3: 'not enough calls to judge' in 200 of 200 pairs (judged %d)", few_judged);

  /* Few calls of a noisy figure: not enough to judge, and the detectable change says why */
  draw(a, 12, log(100), 0.6);
  draw(b, 12, log(100), 0.6);
  ncs_gate_judge(a, 12, b, 12, -1, 0, 10, conf, &f);
  CHECK(f.verdict == NCS_GATE_TOO_FEW && f.detectable_pct > 10,
        "gate: 12 calls with 60%% spread: not enough calls to judge, detectable drop %.1f%% > 10%%", f.detectable_pct);
  double det12 = f.detectable_pct;
  draw(a, N, log(100), 0.6);
  draw(b, N, log(100), 0.6);
  ncs_gate_judge(a, N, b, N, -1, 0, 10, conf, &f);
  CHECK(f.detectable_pct < det12 && f.detectable_pct > 10, "gate: 400 calls: the detectable drop shrinks (%.1f%% < %.1f%%), never under the threshold",
        f.detectable_pct, det12);

  /* Time (a rise is worse) mirrors busbw: a 40% time rise is a regression, a 40% fall is not */
  draw(a, N, log(50), 0.3);
  draw(b, N, log(70), 0.3);
  ncs_gate_judge(a, N, b, N, +1, 0, 10, conf, &f);
  CHECK(f.verdict == NCS_GATE_REGRESSION && f.change_pct > 25 && f.change_pct < 55,
        "gate: time/call up 40%%: regression, change %+.1f%%", f.change_pct);
  ncs_gate_judge(b, N, a, N, +1, 0, 10, conf, &f);
  CHECK(f.verdict == NCS_GATE_OK, "gate: time/call down 29%%: ok");

  /* Points (the communication share): +8 points against a 5-point threshold is a regression;
   * +1 point is ok; the same +8 with 4 blocks a side is not enough to judge */
  for (int i = 0; i < 64; i++) { a[i] = 40 + 2 * nrand(); b[i] = 48 + 2 * nrand(); }
  ncs_gate_judge(a, 64, b, 64, +1, 1, 5, conf, &f);
  CHECK(f.verdict == NCS_GATE_REGRESSION && fabs(f.change_pct - 8) < 1.5, "gate: share +8 points (64 blocks): regression, %+.1f", f.change_pct);
  for (int i = 0; i < 64; i++) { a[i] = 40 + 2 * nrand(); b[i] = 41 + 2 * nrand(); }
  ncs_gate_judge(a, 64, b, 64, +1, 1, 5, conf, &f);
  CHECK(f.verdict == NCS_GATE_OK, "gate: share +1 point (64 blocks): ok");
  for (int i = 0; i < 4; i++) { a[i] = 40 + 2 * nrand(); b[i] = 48 + 2 * nrand(); }
  ncs_gate_judge(a, 4, b, 4, +1, 1, 5, conf, &f);
  CHECK(f.verdict == NCS_GATE_TOO_FEW, "gate: share +8 points, 4 blocks a side: not enough to judge");
  free(a); free(b);
  return check_done();
}
