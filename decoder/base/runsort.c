/* runsort.c — the natural merge sort of runsort.h. Two adjacent runs are merged in place with a
 * scratch copy of the shorter one only (forward when the left is shorter, backward otherwise),
 * so a few stray elements in a long array cost little memory. */
#include "base/runsort.h"

#include <stdlib.h>
#include <string.h>

/* merges the runs [s0, s1) and [s1, s2) of p in place; tmp holds min(s1 - s0, s2 - s1) elements;
 * ties: the left run's first */
static void merge(char *p, size_t s0, size_t s1, size_t s2, size_t size, char *tmp,
                  int (*cmp)(const void *, const void *)) {
  size_t nl = s1 - s0, nr = s2 - s1;
  if (nl <= nr) {
    memcpy(tmp, p + s0 * size, nl * size);
    char *a = tmp, *ae = tmp + nl * size, *b = p + s1 * size, *be = p + s2 * size, *d = p + s0 * size;
    while (a < ae && b < be) {
      if (cmp(b, a) < 0) { memcpy(d, b, size); b += size; }
      else { memcpy(d, a, size); a += size; }
      d += size;
    }
    if (a < ae) memcpy(d, a, (size_t)(ae - a)); /* the right run's rest is in place */
  } else {
    memcpy(tmp, p + s1 * size, nr * size);
    char *a = p + s1 * size, *as = p + s0 * size, *b = tmp + nr * size, *d = p + s2 * size;
    while (a > as && b > tmp) { /* from the back: the later of two equal ones is the right run's */
      d -= size;
      if (cmp(b - size, a - size) < 0) { a -= size; memcpy(d, a, size); }
      else { b -= size; memcpy(d, b, size); }
    }
    if (b > tmp) memcpy(p + s0 * size, tmp, (size_t)(b - tmp)); /* the left run's rest is in place */
  }
}

void ncs_runsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
  char *p = base;
  if (n < 2) return;
  size_t nruns = 1;
  for (size_t i = 1; i < n; i++)
    if (cmp(p + (i - 1) * size, p + i * size) > 0) nruns++;
  if (nruns == 1) return;
  if (nruns > n / 8) { qsort(base, n, size, cmp); return; } /* runs under 8 long: not near order */
  size_t *start = malloc((nruns + 1) * sizeof *start);
  if (!start) { qsort(base, n, size, cmp); return; }
  size_t r = 0;
  start[r++] = 0;
  for (size_t i = 1; i < n; i++)
    if (cmp(p + (i - 1) * size, p + i * size) > 0) start[r++] = i;
  start[r] = n;
  char *tmp = NULL;
  size_t cap = 0;
  while (r > 1) { /* one pass: runs 2j and 2j+1 merged into one, a lone last run kept */
    size_t w = 0;
    for (size_t j = 0; j < r; j += 2) {
      size_t s0 = start[j];
      if (j + 1 < r) {
        size_t s1 = start[j + 1], s2 = start[j + 2], m = s1 - s0 < s2 - s1 ? s1 - s0 : s2 - s1;
        if (m > cap) {
          char *t = realloc(tmp, m * size);
          if (!t) { free(tmp); free(start); qsort(base, n, size, cmp); return; } /* runs still in p */
          tmp = t;
          cap = m;
        }
        merge(p, s0, s1, s2, size, tmp, cmp);
      }
      start[w++] = s0;
    }
    start[w] = n;
    r = w;
  }
  free(tmp);
  free(start);
}
