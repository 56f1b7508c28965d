/* shift.c — the Hodges-Lehmann shift and its Mann-Whitney interval (contract in shift.h). */
#include "model/shift.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* A double's bits as an unsigned key in the doubles' order (-0 below +0: ncs_sort_asc leaves a
 * set holding -0 to qsort). */
static inline uint64_t dkey(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u >> 63 ? ~u : u | 1ull << 63;
}
static inline double dval(uint64_t k) {
  uint64_t u = k >> 63 ? k & ~(1ull << 63) : ~k;
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

/* A bucket this large is spread again over buckets of its own; smaller ones are left to the
 * final insertion pass. */
#define BUCKET_BIG 48
/* Buckets a spread takes from a local array (more: allocated) */
#define LOCAL_BUCKETS 1024

/* Spreads the keys a[0..n) (n > BUCKET_BIG), lo the least and hi the greatest, into b[0..n) by
 * bucket: n / 2 to n buckets of equal width between lo and hi (the top bits of key - lo), so
 * every key of a bucket is below every key of the next; a bucket of more than BUCKET_BIG keys is
 * spread the same way over its own range (a clustered set). a is scratch after. -1 out of
 * memory. Each level narrows the keys' range by at least the bits it spreads on (5 or more), so
 * it recurses at most 13 deep. */
static int spread_keys(uint64_t *a, uint64_t *b, int n, uint64_t lo, uint64_t hi) {
  if (lo == hi) { memcpy(b, a, (size_t)n * sizeof *a); return 0; }
  int bits = 31 - __builtin_clz((unsigned)n), span = 64 - __builtin_clzll(hi - lo);
  if (bits > 16) bits = 16;
  int shift = span > bits ? span - bits : 0, big = 0;
  uint32_t local[LOCAL_BUCKETS] = {0}, *cnt = 1 << bits <= LOCAL_BUCKETS ? local : calloc((size_t)1 << bits, sizeof *cnt);
  if (!cnt) return -1;
  for (int i = 0; i < n; i++) cnt[(a[i] - lo) >> shift]++;
  uint32_t sum = 0;
  for (int c = 0; c < 1 << bits; c++) {
    uint32_t t = cnt[c];
    cnt[c] = sum; sum += t;
    if (t > BUCKET_BIG) big = 1;
  }
  for (int i = 0; i < n; i++) b[cnt[(a[i] - lo) >> shift]++] = a[i];
  int rc = 0;
  for (int c = 0; big && !rc && c < 1 << bits; c++) { /* cnt[c]: the end of bucket c */
    uint32_t s = c ? cnt[c - 1] : 0, e = cnt[c];
    if (e - s <= BUCKET_BIG) continue;
    uint64_t blo = b[s], bhi = b[s];
    for (uint32_t i = s + 1; i < e; i++) {
      blo = b[i] < blo ? b[i] : blo;
      bhi = b[i] > bhi ? b[i] : bhi;
    }
    rc = spread_keys(b + s, a + s, (int)(e - s), blo, bhi);
    memcpy(b + s, a + s, (size_t)(e - s) * sizeof *a);
  }
  if (cnt != local) free(cnt);
  return rc;
}

/* Sorts v[0..n) ascending; a set already in order (the gate hands most of them over sorted) is
 * left as it is after one pass. Large sets by their values' bits as keys: spread_keys puts them
 * in order of buckets of at most BUCKET_BIG keys, and one insertion pass orders those as it
 * writes the values back (a value moves only within its bucket). It gives what qsort gives: equal keys are equal doubles; -0 (equal to
 * +0 but not the same bits) and NaN go to qsort. */
void ncs_sort_asc(double *v, int n) {
  int i = 1;
  while (i < n && !(v[i] < v[i - 1])) i++;
  if (i >= n) return;
  uint64_t *a = n >= 256 ? malloc(2 * (size_t)n * sizeof *a) : NULL, *b = a ? a + n : NULL;
  if (!a) goto fallback;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (i = 0; i < n; i++) {
    uint64_t k = a[i] = dkey(v[i]);
    if (k == 0x7fffffffffffffffull || v[i] != v[i]) goto fallback; /* -0, NaN */
    lo = k < lo ? k : lo;
    hi = k > hi ? k : hi;
  }
  if (spread_keys(a, b, n, lo, hi)) goto fallback;
  v[0] = dval(b[0]);
  for (i = 1; i < n; i++) { /* (the values' order is the keys') */
    double x = dval(b[i]);
    int j = i;
    for (; j > 0 && x < v[j - 1]; j--) v[j] = v[j - 1];
    v[j] = x;
  }
  free(a);
  return;
fallback:
  free(a);
  qsort(v, (size_t)n, sizeof *v, cmp_dbl);
}

/* Number of pairs (i, j) with y[j] - x[i] <= d, both sorted ascending: for each j the x[i]
 * whose difference is at most d, from the first such index on, which only grows with j. The
 * test is on the difference as computed (a rounded subtraction is monotone in each operand),
 * so the counts agree with the differences themselves, ties included. The y[j] whose difference
 * with x[n - 1] (the least) is above d, a tail of y, have none (found by bisection); for the
 * others x[n - 1] stops the walk, which then needs no bound. */
static double count_le(const double *x, int n, const double *y, int m, double d) {
  double xl = x[n - 1];
  int a = 0, b = m; /* the first j with y[j] - xl > d in [a, b] */
  while (a < b) {
    int h = a + (b - a) / 2;
    if (y[h] - xl > d) b = h;
    else a = h + 1;
  }
  int64_t c = 0; /* the indexes summed in an integer: a double's add is a 4-cycle chain a j */
  int i = 0;
  for (int j = 0; j < a; j++) {
    while (y[j] - x[i] > d) i++;
    c += i;
  }
  return (double)((int64_t)n * a - c);
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

/* The counts one ncs_shift_hl took (at most SEEN of them): count_le(d[i]) == c[i]. */
#define SEEN 64
struct seen { int n; double d[SEEN], c[SEEN]; };
static double seen_count(const double *x, int n, const double *y, int m, double d, struct seen *sn) {
  for (int i = 0; i < sn->n; i++) if (sn->d[i] == d) return sn->c[i];
  double c = count_le(x, n, y, m, d);
  if (sn->n < SEEN) { sn->d[sn->n] = d; sn->c[sn->n++] = c; }
  return c;
}

/* The k-th smallest difference (1 <= k <= n*m), exactly. The bracket starts at the tightest
 * one the counts of the earlier searches of the same sets give (sn; this search's are added). A bracket (lo, hi] with
 * count_le(lo) < k <= count_le(hi), from the smallest and the largest difference, is narrowed
 * until it holds at most 2(n + m) differences, which are then listed and the one wanted
 * selected. Each step counts at the point where the straight line through the
 * bracket's two counts reaches k (regula falsi; Illinois: an end kept twice in a row has its
 * weight halved, so neither end stays put): about 7-20 passes on the gate's samples where
 * bisection on the value took 17-45. Ties (many pairs at one difference) stop any bracket from
 * emptying: a step that cut off no difference looks at the next difference above lo, which is
 * the k-th when its count reaches k (a cluster of near but unequal values: no such look for the
 * next two steps). Where the bracket is down to 1e-12 of the range and still holds more, or
 * there is no room for the list, the distinct differences above lo are stepped through to the
 * k-th. Every path ends on a count taken exactly, so the value is the same whichever finds it. */
static double kth_diff(const double *x, int n, const double *y, int m, double k, struct seen *sn) {
  double lo = y[0] - x[n - 1], hi = y[m - 1] - x[0];
  double clo = seen_count(x, n, y, m, lo, sn);
  if (clo >= k) return lo;
  /* every difference is <= hi (a rounded subtraction is monotone in each operand) */
  double chi = (double)n * m, cap = 2.0 * ((double)n + m);
  for (int i = 0; i < sn->n; i++) { /* the tightest bracket the earlier searches' counts give */
    if (sn->c[i] < k && sn->d[i] > lo) { lo = sn->d[i]; clo = sn->c[i]; }
    if (sn->c[i] >= k && sn->d[i] < hi) { hi = sn->d[i]; chi = sn->c[i]; }
  }
  double eps = (hi - lo) * 1e-12;
  int side = 0, wait = 0; /* Illinois: which end moved last (-1 lo, +1 hi), twice in a row halves the other's weight */
  double wlo = 1, whi = 1;
  for (int it = 0; it < 200 && chi - clo > cap && hi - lo > eps; it++) {
    double flo = (clo - k) * wlo, fhi = (chi - k) * whi, before = chi - clo;
    double mid = lo + (hi - lo) * (flo / (flo - fhi));
    if (!(mid > lo && mid < hi)) mid = lo + (hi - lo) / 2;
    if (mid <= lo || mid >= hi) break;
    double c = seen_count(x, n, y, m, mid, sn);
    if (c >= k) { hi = mid; chi = c; whi = 1; if (side == 1) wlo /= 2; side = 1; }
    else { lo = mid; clo = c; wlo = 1; if (side == -1) whi /= 2; side = -1; }
    if (wait-- <= 0 && chi - clo == before && chi - clo > cap) { /* no difference in the part cut off: ties? */
      double d = min_diff_above(x, n, y, m, lo);
      if (!(d <= hi)) break;
      double cd = seen_count(x, n, y, m, d, sn);
      if (cd >= k) return d;
      if (cd - clo <= (chi - clo) / 2) wait = 2; /* a cluster of near values, not a tie: no probe for two steps */
      lo = d; clo = cd;
    }
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
static double next_diff(const double *x, int n, const double *y, int m, double k, double d, struct seen *sn) {
  if (seen_count(x, n, y, m, d, sn) >= k + 1) return d;
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
  ncs_sort_asc(x, n);
  ncs_sort_asc(y, m);
  double N = (double)n * m;
  struct seen sn = {0};
  if (fmod(N, 2) == 1) s->est = kth_diff(x, n, y, m, (N + 1) / 2, &sn);
  else {
    double a = kth_diff(x, n, y, m, N / 2, &sn);
    s->est = (a + next_diff(x, n, y, m, N / 2, a, &sn)) / 2;
  }
  if (!(conf > 0)) return 0; /* the estimate only */
  double k = floor(N / 2 - ncs_shift_z(conf) * sqrt(N * (n + m + 1) / 12.0));
  if (k >= 1) {
    s->lo = kth_diff(x, n, y, m, k, &sn);
    s->hi = kth_diff(x, n, y, m, N + 1 - k, &sn);
  }
  return 0;
}
