/* hist.c — bounded log histogram (hist.h). */
#include "model/hist.h"

void ncs_hist_range(unsigned i, double *lo, double *hi) {
  if (i < 2 * NCS_HIST_SUB) { *lo = i; *hi = i + 1; return; }
  unsigned e = i / NCS_HIST_SUB + 2, sub = i % NCS_HIST_SUB;
  double unit = (double)(1ull << (e - 3));
  *lo = (NCS_HIST_SUB + sub) * unit;
  *hi = *lo + unit;
}

double ncs_hist_quantile(const struct ncs_hist *h, double p) {
  uint64_t n = 0;
  for (unsigned i = 0; i < NCS_HIST_BUCKETS; i++) n += h->c[i];
  if (!n) return 0;
  uint64_t want = (uint64_t)(p * (double)n + 0.999999);
  if (want < 1) want = 1;
  if (want > n) want = n;
  uint64_t seen = 0;
  for (unsigned i = 0; i < NCS_HIST_BUCKETS; i++) {
    seen += h->c[i];
    if (seen >= want) {
      double lo, hi;
      ncs_hist_range(i, &lo, &hi);
      return i < 2 * NCS_HIST_SUB ? lo : (lo + hi) / 2;
    }
  }
  return 0;
}
