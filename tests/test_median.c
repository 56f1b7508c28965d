/* test_median.c — the bounded median (decoder/model/median.c): exact while the values kept
 * are at most its cap (the ((n - 1) / 2)-th of the sorted values, odd and even counts), within
 * 6.25% once past it (the histogram, model/hist.h), on values whose true median the test knows
 * from sorting its own copy; no value, and one value. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/median.h"

static int cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* n pseudo-random step lengths around 2 ms through a median with cap `cap`; returns the
 * median's answer, *truth the sorted copy's */
static int run(size_t n, size_t cap, uint64_t *got, uint64_t *truth) {
  struct ncs_median m;
  memset(&m, 0, sizeof m);
  m.cap = cap;
  uint64_t *v = malloc(n * sizeof *v);
  for (size_t i = 0; i < n; i++) {
    v[i] = 1500000 + (uint64_t)(rand() % 1000000) + (i % 97 == 0 ? 50000000 : 0);
    ncs_median_add(&m, v[i]);
  }
  qsort(v, n, sizeof *v, cmp);
  *truth = v[(n - 1) / 2];
  int rc = ncs_median_get(&m, got);
  ncs_median_free(&m);
  free(v);
  return rc;
}

int main(void) {
  srand(11);
  uint64_t got = 0, truth = 0;
  struct ncs_median m;
  memset(&m, 0, sizeof m);
  m.cap = 16;
  CHECK(ncs_median_get(&m, &got) == -1, "median: no value, no median");
  ncs_median_add(&m, 42);
  CHECK(ncs_median_get(&m, &got) == 0 && got == 42, "median: one value is its own median (%llu)", (unsigned long long)got);
  ncs_median_free(&m);
  int rc = run(1001, 4096, &got, &truth);
  CHECK(rc == 0 && got == truth, "median: 1001 values under the cap: exact (%llu, truth %llu)", (unsigned long long)got, (unsigned long long)truth);
  rc = run(1000, 1000, &got, &truth);
  CHECK(rc == 0 && got == truth, "median: 1000 values at the cap, even count: the lower middle (%llu, truth %llu)",
        (unsigned long long)got, (unsigned long long)truth);
  rc = run(100000, 1000, &got, &truth);
  double err = got > truth ? (double)(got - truth) / (double)truth : (double)(truth - got) / (double)truth;
  CHECK(rc == 1 && err < 0.0625, "median: 100000 values past a cap of 1000: from the histogram, %.2f%% from the truth (%llu vs %llu)",
        100 * err, (unsigned long long)got, (unsigned long long)truth);
  return check_done();
}
