/* median.h — the median of a stream of values (ns) in bounded memory: exact while at most `cap`
 * values came (they are kept), past that from a log histogram of every value (model/hist.h:
 * the midpoint of the bucket holding it, within 6.25%).
 *
 * Contract: zero a struct ncs_median, set cap, ncs_median_add each value, ncs_median_get, then
 * ncs_median_free. The median is the ((n - 1) / 2)-th smallest (0-based: the lower one of an
 * even count). Memory: 8 bytes a value up to cap, then 2 KiB. Not thread-safe. */
#ifndef NCS_MEDIAN_H
#define NCS_MEDIAN_H
#include <stddef.h>
#include <stdint.h>
#include "model/hist.h"

struct ncs_median {
  size_t cap;                /* values kept for the exact median, at most */
  size_t n, capv;
  uint64_t *v;               /* [capv], the first n values while n <= cap */
  struct ncs_hist *h;        /* once n > cap */
  int failed;                /* out of memory: no median */
};
/* 0, or -1 when out of memory (the median is then unknown: ncs_median_get returns -1). The
 * common cases inline (a value kept in room there is, or counted in the histogram); the rest in
 * ncs_median_add_slow. */
int ncs_median_add_slow(struct ncs_median *m, uint64_t x);
static inline int ncs_median_add(struct ncs_median *m, uint64_t x) {
  if (m->failed) return -1;
  if (m->n < m->capv) { m->v[m->n++] = x; return 0; }
  if (m->h) { m->n++; ncs_hist_add(m->h, x); return 0; }
  return ncs_median_add_slow(m, x);
}
/* 0 and the median in *out; 1 when it came from the histogram (approximate); -1 with no value
 * or after running out of memory. Sorts the kept values. */
int ncs_median_get(struct ncs_median *m, uint64_t *out);
void ncs_median_free(struct ncs_median *m);
#endif
