/* test_gate.c — the CI gate's statistics (model/shift.c, analysis/gate.c) on sample sets with
 * known answers: the Hodges-Lehmann estimate and interval against the brute-force median and
 * order statistics of all pairwise differences (the definition, computed independently);
 * identical distributions are never a regression; a 25% busbw loss with enough calls always
 * is; 3 calls are not enough to judge; a change smaller than the threshold is no regression
 * however many calls; the detectable change shrinks with more calls; a run's drift (its halves
 * set apart by a known shift) is that shift, and it raises the bar by exactly that much; runs
 * made of offset blocks (calls not independent) are no false alarm with the drift added.
 * Seeded: deterministic. */
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

/* A run whose calls are not independent: `blocks` stretches of n / blocks calls, each with its
 * own offset (spread `sb`: the machine's state while they ran), calls spread `sd` around it. */
static void draw_blocks(double *v, int n, double mu, double sd, int blocks, double sb) {
  for (int b = 0; b < blocks; b++) {
    double off = sb * nrand();
    for (int i = b * n / blocks; i < (b + 1) * n / blocks; i++) v[i] = mu + off + sd * nrand();
  }
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

  /* Exactly, with ties (values on a 0.05 grid: many equal differences) and sets large enough
   * that the search lists the last differences between its bounds (more than 2(n+m) pairs);
   * conf 0 gives the same estimate and no interval */
  {
    int n = 300, m = 410, bad = 0, bad0 = 0;
    double *x = malloc(n * sizeof *x), *y = malloc(m * sizeof *y);
    for (int rep = 0; rep < 3; rep++) {
      draw(x, n, 0, 1);
      draw(y, m, 0.2, 1.5);
      if (rep > 0)
        for (int i = 0; i < n || i < m; i++) {
          if (i < n) x[i] = round(x[i] * 20) / 20;
          if (i < m) y[i] = round(y[i] * 20) / 20;
        }
      double *d = diffs(x, n, y, m);
      size_t N = (size_t)n * m;
      double med = (d[N / 2 - 1] + d[N / 2]) / 2;
      double k = floor(N / 2.0 - 2.575829 * sqrt((double)N * (n + m + 1) / 12.0));
      struct ncs_shift s, s0;
      ncs_shift_hl(x, n, y, m, 0.99, &s);
      bad += s.est != med || s.lo != d[(size_t)k - 1] || s.hi != d[N - (size_t)k];
      ncs_shift_hl(x, n, y, m, 0, &s0);
      bad0 += s0.est != med || !isinf(s0.lo) || !isinf(s0.hi);
      free(d);
    }
    CHECK(bad == 0, "shift: 300 x 410 samples, with and without ties: estimate and 99%% interval equal the brute-force differences exactly (%d of 3 differ)", bad);
    CHECK(bad0 == 0, "shift: conf 0: the same estimate, the interval left unbounded (%d of 3 differ)", bad0);
    free(x); free(y);
  }

  /* ncs_sort_asc gives what qsort gives, bit for bit: large random sets (the bucket pass, with
   * negatives, infinities, repeated values), a small one, one in order, one reversed, one
   * holding -0 beside +0 (left to qsort: equal values, not the same bits), one clustered (all
   * but a few values in one bucket: spread again, twice), and one of 40 clusters an octave
   * apart each (buckets spread again at several depths) */
  {
    enum { N = 3000 };
    double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    int bad = 0;
    for (int c = 0; c < 9; c++) {
      int n = c == 1 ? 200 : N;
      for (int i = 0; i < n; i++) {
        /* sets 7 and 8 draw on their own (i * a golden-ratio multiplier, as a fraction): the
         * later checks' random draws stay as they were */
        double v = c < 7 ? nrand() * (c == 2 ? 1e-300 : 1e3) : (double)((uint64_t)i * 0x9e3779b97f4a7c15ull >> 11) * 0x1p-53;
        if (c == 3) v = round(v / 100); /* many repeats */
        if (c == 4) v = i;               /* in order */
        if (c == 5) v = n - i;           /* reversed */
        if (c == 6) v = i % 3 == 0 ? -0.0 : i % 3 == 1 ? 0.0 : v;
        if (c == 7) v = i % 500 == 7 ? 1e300 : i % 3 ? 1 + v * 1e-9 : 2 + v * 1e-12;
        if (c == 8) v = ldexp(1 + v * 1e-6, i % 40 - 20);
        if (c == 0 && i % 97 == 0) v = i % 2 ? INFINITY : -INFINITY;
        a[i] = b[i] = v;
      }
      ncs_sort_asc(a, n);
      qsort(b, (size_t)n, sizeof *b, cmp);
      bad += memcmp(a, b, (size_t)n * sizeof *a) != 0;
    }
    CHECK(bad == 0, "shift: ncs_sort_asc equals qsort bit for bit on 9 sets (random, small, tiny values, repeats, in order, reversed, -0 beside +0, clustered, clusters an octave apart): %d differ", bad);
    free(a); free(b);
  }

  /* Exactly, on sets like the gate's: logarithms of integer times (many distinct differences
   * packed close together, and exact ties), 1,500 a side, against every difference sorted:
   * the estimate, and the 99% and 99.99% intervals (the second search starts from the first's
   * counts) */
  {
    int n = 1500, m = 1500, bad = 0;
    double *x = malloc(n * sizeof *x), *y = malloc(m * sizeof *y);
    for (int rep = 0; rep < 2; rep++) {
      for (int i = 0; i < n; i++) x[i] = log(1000 + floor(urand() * (rep ? 40 : 4000)));
      for (int j = 0; j < m; j++) y[j] = log(1010 + floor(urand() * (rep ? 40 : 4000)));
      double *d = diffs(x, n, y, m);
      size_t N = (size_t)n * m;
      for (int c = 0; c < 2; c++) {
        double z = c ? 3.890592 : 2.575829, conf = c ? 0.9999 : 0.99;
        double k = floor(N / 2.0 - z * sqrt((double)N * (n + m + 1) / 12.0));
        struct ncs_shift s;
        ncs_shift_hl(x, n, y, m, conf, &s);
        bad += s.est != (d[N / 2 - 1] + d[N / 2]) / 2 || s.lo != d[(size_t)k - 1] || s.hi != d[N - (size_t)k];
      }
      free(d);
    }
    CHECK(bad == 0, "shift: 1,500 x 1,500 logarithms of integer times (close differences, ties): estimate and 99%%, 99.99%% intervals equal the brute-force differences exactly (%d of 4 differ)", bad);
    free(x); free(y);
  }

  /* Ties at the median's count, by hand: x holds x1 ones and the rest zeros, y y0 zeros and
   * the rest ones, so the differences are -1 (y0 x1 of them), 0 and 1, and count(<= -1) =
   * y0 x1, count(<= 0) = y0 n + (m - y0) x1; every split whose count(<= -1) or count(<= 0)
   * lies within one of N/2, N/2 + 1 (the two middle ranks) or the 99% bounds' ranks, on sizes
   * 60-140: the estimate and the interval are the values those counts give */
  {
    int cases = 0, bad = 0;
    double x[141], y[142];
    for (int n = 60; n <= 140; n += 8)
      for (int m = n; m <= n + 1; m++) {
        double N = (double)n * m, kb = floor(N / 2 - 2.575829 * sqrt(N * (n + m + 1) / 12.0));
        double want[] = {N / 2, N / 2 + 1, kb, N + 1 - kb};
        for (int x1 = 0; x1 <= n; x1++)
          for (int y0 = 0; y0 <= m; y0++) {
            double c1 = (double)y0 * x1, c0 = (double)y0 * n + (double)(m - y0) * x1;
            int near = 0;
            for (int w = 0; w < 4; w++) near |= fabs(c1 - want[w]) <= 1 || fabs(c0 - want[w]) <= 1;
            if (!near) continue;
            for (int i = 0; i < n; i++) x[i] = i < x1 ? 1 : 0;
            for (int j = 0; j < m; j++) y[j] = j < y0 ? 0 : 1;
            double v[4]; /* the k-th difference from the counts */
            for (int w = 0; w < 4; w++) v[w] = want[w] <= c1 ? -1 : want[w] <= c0 ? 0 : 1;
            struct ncs_shift s;
            ncs_shift_hl(x, n, y, m, 0.99, &s);
            cases++;
            bad += s.est != (v[0] + v[1]) / 2 || s.lo != v[2] || s.hi != v[3];
          }
      }
    CHECK(cases >= 40 && bad == 0, "shift: 0/1 samples whose tie counts sit at the middle ranks or the bounds' (%d splits): estimate and 99%% interval as the counts give them (%d differ)", cases, bad);
  }

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
    ncs_gate_judge(a, N, b, N, -1, 0, 10, 0, conf, &f);
    fa += f.verdict == NCS_GATE_REGRESSION;
    draw(a, N, log(100), 0.15); /* a quieter figure: its interval rules a 10% loss out */
    draw(b, N, log(100), 0.15);
    ncs_gate_judge(a, N, b, N, -1, 0, 10, 0, conf, &f);
    ok_same += f.verdict == NCS_GATE_OK;
    draw(a, N, log(100), 0.3);
    draw(b, N, log(75), 0.3); /* a 25% busbw loss */
    ncs_gate_judge(a, N, b, N, -1, 0, 10, 0, conf, &f);
    hit += f.verdict == NCS_GATE_REGRESSION;
    draw(a, N, log(100), 0.3);
    draw(b, N, log(95), 0.3); /* a 5% loss: real, but under the threshold */
    ncs_gate_judge(a, N, b, N, -1, 0, 10, 0, conf, &f);
    small_flagged += f.verdict == NCS_GATE_REGRESSION;
    draw(a, 3, log(100), 0.3);
    draw(b, 3, log(50), 0.3); /* 3 calls, even of a 50% loss */
    ncs_gate_judge(a, 3, b, 3, -1, 0, 10, 0, conf, &f);
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
  ncs_gate_judge(a, 12, b, 12, -1, 0, 10, 0, conf, &f);
  CHECK(f.verdict == NCS_GATE_TOO_FEW && f.detectable_pct > 10,
        "gate: 12 calls with 60%% spread: not enough calls to judge, detectable drop %.1f%% > 10%%", f.detectable_pct);
  double det12 = f.detectable_pct;
  draw(a, N, log(100), 0.6);
  draw(b, N, log(100), 0.6);
  ncs_gate_judge(a, N, b, N, -1, 0, 10, 0, conf, &f);
  CHECK(f.detectable_pct < det12 && f.detectable_pct > 10, "gate: 400 calls: the detectable drop shrinks (%.1f%% < %.1f%%), never under the threshold",
        f.detectable_pct, det12);

  /* Time (a rise is worse) mirrors busbw: a 40% time rise is a regression, a 40% fall is not */
  draw(a, N, log(50), 0.3);
  draw(b, N, log(70), 0.3);
  ncs_gate_judge(a, N, b, N, +1, 0, 10, 0, conf, &f);
  CHECK(f.verdict == NCS_GATE_REGRESSION && f.change_pct > 25 && f.change_pct < 55,
        "gate: time/call up 40%%: regression, change %+.1f%%", f.change_pct);
  ncs_gate_judge(b, N, a, N, +1, 0, 10, 0, conf, &f);
  CHECK(f.verdict == NCS_GATE_OK, "gate: time/call down 29%%: ok");

  /* Points (the communication share): +8 points against a 5-point threshold is a regression;
   * +1 point is ok; the same +8 with 4 blocks a side is not enough to judge */
  for (int i = 0; i < 64; i++) { a[i] = 40 + 2 * nrand(); b[i] = 48 + 2 * nrand(); }
  ncs_gate_judge(a, 64, b, 64, +1, 1, 5, 0, conf, &f);
  CHECK(f.verdict == NCS_GATE_REGRESSION && fabs(f.change_pct - 8) < 1.5, "gate: share +8 points (64 blocks): regression, %+.1f", f.change_pct);
  for (int i = 0; i < 64; i++) { a[i] = 40 + 2 * nrand(); b[i] = 41 + 2 * nrand(); }
  ncs_gate_judge(a, 64, b, 64, +1, 1, 5, 0, conf, &f);
  CHECK(f.verdict == NCS_GATE_OK, "gate: share +1 point (64 blocks): ok");
  for (int i = 0; i < 4; i++) { a[i] = 40 + 2 * nrand(); b[i] = 48 + 2 * nrand(); }
  ncs_gate_judge(a, 4, b, 4, +1, 1, 5, 0, conf, &f);
  CHECK(f.verdict == NCS_GATE_TOO_FEW, "gate: share +8 points, 4 blocks a side: not enough to judge");

  /* The runs' own drift: the second half against the first, in the run's order */
  {
    double v[40];
    for (int i = 0; i < 40; i++) v[i] = i < 20 ? 0.0 : log(1.2);
    CHECK(fabs(ncs_gate_drift(v, 40) - log(1.2)) < 1e-12, "gate: drift of a run whose second half is 20%% up: ln 1.2 (got %g)", ncs_gate_drift(v, 40));
    CHECK(v[0] == 0.0 && v[39] == log(1.2), "gate: ... the run's samples are left in their order");
    for (int i = 0; i < 40; i++) v[i] = i < 20 ? log(1.2) : 0.0;
    CHECK(fabs(ncs_gate_drift(v, 40) - log(1.2)) < 1e-12, "gate: ... 20%% down: the same drift (absolute)");
    for (int i = 0; i < 40; i++) v[i] = (i % 2) * 0.3;
    CHECK(ncs_gate_drift(v, 40) == 0, "gate: alternating calls, halves alike: drift 0");
    CHECK(ncs_gate_drift(v, 7) == 0, "gate: 7 samples: drift 0 (too few to tell)");
  }
  /* The threshold grows by the drift: a pure 15% drop (every call, so the interval is the
   * point) against 10% is a regression; with a 10% drift the bar is 1 - 0.9 / 1.1 = 18.18%:
   * ok, and that is the smallest detectable drop */
  {
    double x[30], y[30];
    for (int i = 0; i < 30; i++) { x[i] = log(100); y[i] = log(85); }
    ncs_gate_judge(x, 30, y, 30, -1, 0, 10, 0, conf, &f);
    CHECK(f.verdict == NCS_GATE_REGRESSION && fabs(f.change_pct + 15) < 1e-9 && f.drift_pct == 0,
          "gate: a 15%% drop, no drift: regression (change %+.3f%%)", f.change_pct);
    ncs_gate_judge(x, 30, y, 30, -1, 0, 10, log(1.1), conf, &f);
    CHECK(f.verdict == NCS_GATE_OK && fabs(f.detectable_pct - 100 * (1 - 0.9 / 1.1)) < 1e-9 && fabs(f.drift_pct - 10) < 1e-9,
          "gate: ... with a 10%% drift: ok, detectable drop %.4f%% = 18.1818%%", f.detectable_pct);
    for (int i = 0; i < 30; i++) y[i] = log(75);
    ncs_gate_judge(x, 30, y, 30, -1, 0, 10, log(1.1), conf, &f);
    CHECK(f.verdict == NCS_GATE_REGRESSION, "gate: ... a 25%% drop with that drift: still a regression");
  }
  /* Runs made of blocks (4 blocks of 50 calls, calls 3% around their block's offset), as calls
   * close in time on a busy machine are. Block offsets of 3% (a quiet machine): no false alarm,
   * a 25% loss always caught. Of 9%: the per-call interval alone takes a run's offset for a
   * change (7 of 200 pairs flagged where the nominal rate gives 0.6); with the runs' drift
   * added to the threshold the rate is the nominal one again, at a cost in power (a 25% loss
   * caught in about 3 of 4). */
  {
    enum { NB = 200 };
    const double sbs[2] = {0.03, 0.09};
    const int want_hit[2] = {199, 140};
    double *ca = malloc(NB * sizeof *ca), *cb = malloc(NB * sizeof *cb);
    for (int l = 0; l < 2; l++) {
      int fa_per_call = 0, fa_drift = 0, hit_drift = 0;
      for (int it = 0; it < 200; it++) {
        draw_blocks(a, NB, log(100), 0.03, 4, sbs[l]);
        draw_blocks(b, NB, log(100), 0.03, 4, sbs[l]);
        memcpy(ca, a, NB * sizeof *a); memcpy(cb, b, NB * sizeof *b);
        double dr = fmax(ncs_gate_drift(a, NB), ncs_gate_drift(b, NB));
        ncs_gate_judge(ca, NB, cb, NB, -1, 0, 10, 0, conf, &f);
        fa_per_call += f.verdict == NCS_GATE_REGRESSION;
        ncs_gate_judge(a, NB, b, NB, -1, 0, 10, dr, conf, &f);
        fa_drift += f.verdict == NCS_GATE_REGRESSION;
        draw_blocks(a, NB, log(100), 0.03, 4, sbs[l]);
        draw_blocks(b, NB, log(75), 0.03, 4, sbs[l]);
        dr = fmax(ncs_gate_drift(a, NB), ncs_gate_drift(b, NB));
        ncs_gate_judge(a, NB, b, NB, -1, 0, 10, dr, conf, &f);
        hit_drift += f.verdict == NCS_GATE_REGRESSION;
      }
      int pct = (int)lround(100 * sbs[l]);
      /* the nominal rate of one figure is 0.05 / 16 = 0.31%: 0.6 of 200 expected, 3 or more
       * with probability 2.5%, 4 or more with 0.4% */
      if (l == 1)
        CHECK(fa_per_call >= 4, "gate: block noise %d%%: the per-call interval alone flags %d of 200 same-configuration pairs (>= 4: anticonservative)",
              pct, fa_per_call);
      CHECK(fa_drift <= (l ? 2 : 0), "gate: block noise %d%%, the runs' drift added to the threshold: %d of 200 same-configuration pairs flagged (<= %d)",
            pct, fa_drift, l ? 2 : 0);
      CHECK(hit_drift >= want_hit[l], "gate: block noise %d%%: a 25%% loss caught in %d of 200 (>= %d)", pct, hit_drift, want_hit[l]);
    }
    free(ca); free(cb);
  }
  free(a); free(b);
  return check_done();
}
