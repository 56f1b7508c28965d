/* runsort.c — the natural merge sort of runsort.h. */
#include "base/runsort.h"

#include <stdlib.h>
#include <string.h>

/* merge [a, a+na) and [b, b+nb) (adjacent runs of src) into dst; ties from the left run first */
static void merge(char *dst, const char *a, size_t na, const char *b, size_t nb, size_t size,
                  int (*cmp)(const void *, const void *)) {
  const char *ae = a + na * size, *be = b + nb * size;
  while (a < ae && b < be) {
    if (cmp(b, a) < 0) { memcpy(dst, b, size); b += size; }
    else { memcpy(dst, a, size); a += size; }
    dst += size;
  }
  if (a < ae) memcpy(dst, a, (size_t)(ae - a));
  if (b < be) memcpy(dst, b, (size_t)(be - b));
}

void ncs_runsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
  char *p = base;
  if (n < 2) return;
  size_t nruns = 1;
  for (size_t i = 1; i < n; i++)
    if (cmp(p + (i - 1) * size, p + i * size) > 0) nruns++;
  if (nruns == 1) return;
  /* runs under 8 long (not near order), or elements over 32 bytes, whose scratch copy would
   * outgrow glibc's (it sorts pointers to them): qsort as before */
  if (nruns > n / 8 || size > 32) { qsort(base, n, size, cmp); return; }
  size_t *start = malloc((nruns + 1) * sizeof *start);
  char *tmp = malloc(n * size);
  if (!start || !tmp) { free(start); free(tmp); qsort(base, n, size, cmp); return; }
  size_t r = 0;
  start[r++] = 0;
  for (size_t i = 1; i < n; i++)
    if (cmp(p + (i - 1) * size, p + i * size) > 0) start[r++] = i;
  start[r] = n;
  char *src = p, *dst = tmp;
  while (r > 1) { /* one pass: runs 2j and 2j+1 merged into one, a lone last run copied */
    size_t w = 0;
    for (size_t j = 0; j < r; j += 2) {
      size_t s0 = start[j], s1 = j + 1 < r ? start[j + 1] : start[r], s2 = j + 1 < r ? start[j + 2] : start[r];
      merge(dst + s0 * size, src + s0 * size, s1 - s0, src + s1 * size, s2 - s1, size, cmp);
      start[w++] = s0;
    }
    start[w] = n;
    r = w;
    char *t = src; src = dst; dst = t;
  }
  if (src != p) memcpy(p, src, n * size);
  free(tmp);
  free(start);
}
