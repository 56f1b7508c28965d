/* median.c — a stream's median, exact up to a count of values, then from a histogram (median.h). */
#include "model/median.h"

#include <math.h>
#include <stdlib.h>

int ncs_median_add_slow(struct ncs_median *m, uint64_t x) {
  if (m->failed) return -1;
  size_t n = m->n++;
  if (n < m->cap) {
    if (n == m->capv) {
      size_t nc = m->capv ? 2 * m->capv : 256;
      if (nc > m->cap) nc = m->cap;
      uint64_t *p = realloc(m->v, nc * sizeof *p);
      if (!p) { m->failed = 1; return -1; }
      m->v = p;
      m->capv = nc;
    }
    m->v[n] = x;
    return 0;
  }
  if (!m->h) { /* past cap: the kept values go to the histogram */
    if (!(m->h = calloc(1, sizeof *m->h))) { m->failed = 1; return -1; }
    for (size_t i = 0; i < n; i++) ncs_hist_add(m->h, m->v[i]);
    free(m->v);
    m->v = NULL;
    m->capv = 0;
  }
  ncs_hist_add(m->h, x);
  return 0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

int ncs_median_get(struct ncs_median *m, uint64_t *out) {
  if (m->failed || !m->n) return -1;
  if (m->h) { *out = (uint64_t)llround(ncs_hist_quantile(m->h, 0.5)); return 1; }
  if (m->n > 1) qsort(m->v, m->n, sizeof *m->v, cmp_u64);
  *out = m->v[(m->n - 1) / 2];
  return 0;
}

void ncs_median_free(struct ncs_median *m) {
  free(m->v);
  free(m->h);
  m->v = NULL;
  m->h = NULL;
  m->n = m->capv = 0;
}
