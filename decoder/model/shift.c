/* shift.c — the Hodges-Lehmann shift and its Mann-Whitney interval (contract in shift.h). */
#include "model/shift.h"

#include <math.h>
#include <stdlib.h>

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Sorts v[0..n) ascending; a set already in order (the gate hands most of them over sorted) is
 * left as it is after one pass. */
static void sort_asc(double *v, int n) {
  for (int i = 1; i < n; i++)
    if (v[i] < v[i - 1]) { qsort(v, (size_t)n, sizeof *v, cmp_dbl); return; }
}

/* Number of pairs (i, j) with y[j] - x[i] <= d, both sorted ascending: for each j the x[i]
 * whose difference is at most d, from the first such index on, which only grows with j. The
 * test is on the difference as computed (a rounded subtraction is monotone in each operand),
 * so the counts agree with the differences themselves, ties included. */
static double count_le(const double *x, int n, const double *y, int m, double d) {
  double c = 0;
  int i = 0;
  for (int j = 0; j < m; j++) {
    while (i < n && y[j] - x[i] > d) i++;
    c += n - i;
  }
  return c;
}

/* The smallest difference y[j] - x[i] greater than d (both sorted ascending): for each j the
 * last x[i] whose difference is above d, whose index only grows with j. */
static double min_diff_above(const double *x, int n, const double *y, int m, double d) {
  double best = INFINITY;
  int i = 0;
  for (int j = 0; j < m; j++) {
    while (i < n && y[j] - x[i] > d) i++;
    if (i > 0 && y[j] - x[i - 1] < best) best = y[j] - x[i - 1];
  }
  return best;
}

double ncs_kth_smallest(double *a, int n, int k) {
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    double pivot = a[lo + (hi - lo) / 2];
    int i = lo, j = hi;
    while (i <= j) {
      while (a[i] < pivot) i++;
      while (a[j] > pivot) j--;
      if (i <= j) { double t = a[i]; a[i] = a[j]; a[j] = t; i++; j--; }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else break;
  }
  return a[k];
}

/* The differences in (lo, hi] into out, at most cap of them; returns how many. */
static int diffs_between(const double *x, int n, const double *y, int m, double lo, double hi, double *out, int cap) {
  int a = 0, b = 0, k = 0;
  for (int j = 0; j < m; j++) {
    while (a < n && y[j] - x[a] > hi) a++;
    if (b < a) b = a;
    while (b < n && y[j] - x[b] > lo) b++;
    for (int i = a; i < b && k < cap; i++) out[k++] = y[j] - x[i];
  }
  return k;
}

/* The k-th smallest difference (1 <= k <= n*m), exactly: bisection between the smallest and
 * the largest difference narrows it to (lo, hi] with count_le(lo) < k <= count_le(hi) until
 * that bracket holds at most 2(n + m) differences (about a dozen passes on the gate's 16,384
 * samples a side, where bisecting to 1e-12 of the range took about forty); they are then
 * listed and the one wanted selected. Where the bracket is down to 1e-12 of the range and
 * still holds more (ties: equal differences), or there is no room for the list, the distinct
 * differences above lo are stepped through (a few within that width) to the k-th. */
static double kth_diff(const double *x, int n, const double *y, int m, double k) {
  double lo = y[0] - x[n - 1], hi = y[m - 1] - x[0];
  double clo = count_le(x, n, y, m, lo);
  if (clo >= k) return lo;
  double chi = count_le(x, n, y, m, hi), cap = 2.0 * ((double)n + m), eps = (hi - lo) * 1e-12;
  for (int it = 0; it < 200 && chi - clo > cap && hi - lo > eps; it++) {
    double mid = lo + (hi - lo) / 2;
    if (mid <= lo || mid >= hi) break;
    double c = count_le(x, n, y, m, mid);
    if (c >= k) { hi = mid; chi = c; }
    else { lo = mid; clo = c; }
  }
  if (chi >= k && chi - clo <= cap) {
    double *d = malloc((size_t)(chi - clo + 1) * sizeof *d);
    if (d) {
      int got = diffs_between(x, n, y, m, lo, hi, d, (int)(chi - clo));
      double r = got == (int)(chi - clo) ? ncs_kth_smallest(d, got, (int)(k - clo) - 1) : NAN;
      free(d);
      if (!isnan(r)) return r;
    }
  }
  double d = min_diff_above(x, n, y, m, lo); /* count_le(lo) < k: the k-th is d or above */
  while (!isinf(d) && count_le(x, n, y, m, d) < k) d = min_diff_above(x, n, y, m, d);
  return d;
}

/* The (k+1)-th smallest difference given d, the k-th: d again when more than k differences are
 * <= d (ties), else the smallest difference above it. One pass or two, no search. */
static double next_diff(const double *x, int n, const double *y, int m, double k, double d) {
  if (count_le(x, n, y, m, d) >= k + 1) return d;
  return min_diff_above(x, n, y, m, d);
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
  sort_asc(x, n);
  sort_asc(y, m);
  double N = (double)n * m;
  if (fmod(N, 2) == 1) s->est = kth_diff(x, n, y, m, (N + 1) / 2);
  else {
    double a = kth_diff(x, n, y, m, N / 2);
    s->est = (a + next_diff(x, n, y, m, N / 2, a)) / 2;
  }
  if (!(conf > 0)) return 0; /* the estimate only */
  double k = floor(N / 2 - ncs_shift_z(conf) * sqrt(N * (n + m + 1) / 12.0));
  if (k >= 1) {
    s->lo = kth_diff(x, n, y, m, k);
    s->hi = kth_diff(x, n, y, m, N + 1 - k);
  }
  return 0;
}
