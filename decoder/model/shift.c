/* shift.c — the Hodges-Lehmann shift and its Mann-Whitney interval (contract in shift.h). */
#include "model/shift.h"

#include <math.h>
#include <stdlib.h>

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Number of pairs (i, j) with y[j] - x[i] <= d, both sorted ascending: for each j the x[i] >=
 * y[j] - d, whose first index only grows with j. */
static double count_le(const double *x, int n, const double *y, int m, double d) {
  double c = 0;
  int i = 0;
  for (int j = 0; j < m; j++) {
    double t = y[j] - d;
    while (i < n && x[i] < t) i++;
    c += n - i;
  }
  return c;
}

/* The smallest difference y[j] - x[i] greater than d (both sorted ascending): for each j the
 * largest x[i] < y[j] - d, whose index only grows with j. */
static double min_diff_above(const double *x, int n, const double *y, int m, double d) {
  double best = INFINITY;
  int i = 0;
  for (int j = 0; j < m; j++) {
    double t = y[j] - d;
    while (i < n && x[i] < t) i++;
    if (i > 0 && y[j] - x[i - 1] > d && y[j] - x[i - 1] < best) best = y[j] - x[i - 1];
  }
  return best;
}

/* The k-th smallest difference (1 <= k <= n*m): bisection between the smallest and the largest
 * difference narrows it to (lo, hi] with count_le(lo) < k <= count_le(hi), to a relative width
 * of 1e-12 of their range; the answer is then the smallest true difference above lo, so it is
 * one of the differences exactly (identical samples give a shift of exactly 0). */
static double kth_diff(const double *x, int n, const double *y, int m, double k) {
  double lo = y[0] - x[n - 1], hi = y[m - 1] - x[0];
  if (count_le(x, n, y, m, lo) >= k) return lo;
  double eps = (hi - lo) * 1e-12;
  for (int it = 0; it < 200 && hi - lo > eps; it++) {
    double mid = lo + (hi - lo) / 2;
    if (mid <= lo || mid >= hi) break;
    if (count_le(x, n, y, m, mid) >= k) hi = mid;
    else lo = mid;
  }
  double d = min_diff_above(x, n, y, m, lo);
  return d <= hi ? d : hi;
}

double ncs_shift_z(double conf) {
  /* P(|Z| <= z) = erf(z / sqrt 2): bisection, erf is monotone */
  double lo = 0, hi = 40;
  for (int it = 0; it < 200; it++) {
    double mid = (lo + hi) / 2;
    if (erf(mid / sqrt(2.0)) < conf) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

int ncs_shift_hl(double *x, int n, double *y, int m, double conf, struct ncs_shift *s) {
  s->n = n; s->m = m; s->est = 0; s->lo = -INFINITY; s->hi = INFINITY;
  if (n < 1 || m < 1) return -1;
  if (n > 1) qsort(x, (size_t)n, sizeof *x, cmp_dbl);
  if (m > 1) qsort(y, (size_t)m, sizeof *y, cmp_dbl);
  double N = (double)n * m;
  if (fmod(N, 2) == 1) s->est = kth_diff(x, n, y, m, (N + 1) / 2);
  else s->est = (kth_diff(x, n, y, m, N / 2) + kth_diff(x, n, y, m, N / 2 + 1)) / 2;
  double k = floor(N / 2 - ncs_shift_z(conf) * sqrt(N * (n + m + 1) / 12.0));
  if (k >= 1) {
    s->lo = kth_diff(x, n, y, m, k);
    s->hi = kth_diff(x, n, y, m, N + 1 - k);
  }
  return 0;
}
