/* shift.h — how far one sample set moved from another, with a confidence interval that makes no
 * normal assumption: the Hodges-Lehmann shift estimator and its Mann-Whitney (Moses) interval.
 * compare judges every per-call figure with it (docs/COMPARE.md, "Method").
 *
 * Contract: x[0..n) (the base) and y[0..m) (the new run) are finite values; they are sorted in
 * place. The shift is y - x: the estimate is the median of the n*m pairwise differences
 * y_j - x_i, the interval [D_(k), D_(nm+1-k)] of the sorted differences with
 * k = floor(nm/2 - z * sqrt(nm(n+m+1)/12)) (the normal approximation of the Mann-Whitney U
 * distribution, no tie correction: ties make the interval wider, never narrower), z the
 * two-sided normal quantile of `conf`. A k-th smallest difference is found exactly: a bracket
 * on the count of differences <= d (starting from the tightest the earlier searches' counts give), narrowed by regula falsi, until at most 2(n+m) of them
 * remain between its bounds, which are then listed and selected (O((n+m) log) time, O(n+m)
 * memory for the list, stepping through the distinct differences to the end without it).
 * When k < 1 (too few samples for that confidence) the interval is unbounded (-inf, +inf).
 * Pure: no state. */
#ifndef NCS_SHIFT_H
#define NCS_SHIFT_H

struct ncs_shift {
  int n, m;          /* sample counts */
  double est;        /* Hodges-Lehmann estimate of y - x; 0 when n or m is 0 */
  double lo, hi;     /* the interval at conf; -inf / +inf when the samples are too few */
};

/* Returns 0, or -1 when n or m is below 1 (*s then holds the counts, est 0, an unbounded
 * interval). conf in (0, 1), e.g. 0.95; conf 0: the estimate only (the interval is left
 * unbounded, its two searches saved). */
int ncs_shift_hl(double *x, int n, double *y, int m, double conf, struct ncs_shift *s);
/* The two-sided standard normal quantile: z with P(|Z| <= z) = conf (conf in (0, 1)). */
double ncs_shift_z(double conf);
/* Sorts v[0..n) ascending: what qsort with a `<` comparison gives (for large sets a bucket pass
 * on the values' bits, then an insertion pass; a set in order already costs one pass). */
void ncs_sort_asc(double *v, int n);
/* The k-th smallest of a[0..n) (0-based; a is reordered): what sorting a and taking a[k] gives,
 * in linear time (Hoare's selection). */
double ncs_kth_smallest(double *a, int n, int k);
#endif
