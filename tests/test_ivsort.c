/* test_ivsort.c — model/ivsort.h against qsort on the same intervals: buffers of 1 to 300 runs
 * (each in order, as several threads' chunks give), random ones, equal starts and tiny ones.
 * The truth: the starts in non-decreasing order, and the same multiset of (start, end) pairs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/ivsort.h"

static int cmp_pair(const void *a, const void *b) {
  const uint64_t *x = a, *y = b;
  if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
  return x[1] < y[1] ? -1 : x[1] > y[1];
}

static uint64_t rnd(uint64_t *s) { *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17; return *s; }

/* n intervals in `runs` runs, each run in order of start; starts drawn from [0, span) */
static int one(size_t n, size_t runs, uint64_t span, uint64_t seed) {
  uint64_t (*a)[2] = malloc(n * sizeof *a), (*b)[2] = malloc(n * sizeof *b);
  if (!a || !b) { free(a); free(b); return 0; }
  size_t per = runs ? (n + runs - 1) / runs : n;
  for (size_t i = 0; i < n; i++) {
    a[i][0] = rnd(&seed) % span;
    a[i][1] = a[i][0] + rnd(&seed) % 1000;
  }
  for (size_t r = 0; runs && r * per < n; r++) {
    size_t lo = r * per, m = n - lo < per ? n - lo : per;
    qsort(a + lo, m, sizeof *a, cmp_pair);
  }
  memcpy(b, a, n * sizeof *a);
  ncs_ivsort(a, n);
  int ok = 1;
  for (size_t i = 1; i < n; i++) ok &= a[i - 1][0] <= a[i][0];
  qsort(a, n, sizeof *a, cmp_pair);
  qsort(b, n, sizeof *b, cmp_pair);
  ok &= !memcmp(a, b, n * sizeof *a);
  free(a); free(b);
  return ok;
}

int main(void) {
  int bad = 0, cases = 0;
  size_t ns[] = {0, 1, 2, 3, 17, 4096, 10000};
  size_t rs[] = {0, 1, 2, 3, 7, 64, 300};
  uint64_t spans[] = {5, 1000000007};
  for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
    for (size_t j = 0; j < sizeof rs / sizeof *rs; j++)
      for (size_t k = 0; k < 2; k++) {
        cases++;
        if (!one(ns[i], rs[j], spans[k], 88172645463325252ull + i * 131 + j * 7 + k)) {
          bad++;
          fprintf(stderr, "  n %zu runs %zu span %llu: wrong\n", ns[i], rs[j], (unsigned long long)spans[k]);
        }
      }
  CHECK(bad == 0, "ivsort: %d of %d buffers (1 to 300 runs in order, random, equal starts) sorted as qsort sorts them", cases - bad, cases);
  return check_done();
}
