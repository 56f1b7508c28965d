/* test_ivunion.c — model/ivunion.h against the exact union of the same intervals (all sorted at
 * once, then swept), in the orders traces give: one thread's intervals in order (back to back,
 * overlapping, with gaps), several threads' chunks interleaved (each chunk in order, chunks of
 * one time range from each thread in turn; with gaps between a thread's calls the threads'
 * times drift apart, so a thread's intervals arrive after the others' later ones: exact while
 * that is under NCS_IVU_CAP / 2 intervals, as ivunion.h promises), and fewer than NCS_IVU_CAP
 * in random order. */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "model/ivunion.h"

static uint64_t rnd(uint64_t *s) { *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17; return *s; }
static int cmp_pair(const void *a, const void *b) {
  const uint64_t *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0];
}
static double exact(uint64_t (*iv)[2], size_t n) {
  uint64_t (*a)[2] = malloc((n ? n : 1) * sizeof *a);
  if (!a) return -1;
  for (size_t i = 0; i < n; i++) { a[i][0] = iv[i][0]; a[i][1] = iv[i][1]; }
  qsort(a, n, sizeof *a, cmp_pair);
  double t = 0;
  uint64_t s = 0, e = 0;
  int open = 0;
  for (size_t i = 0; i < n; i++) {
    if (a[i][1] <= a[i][0]) continue;
    if (open && a[i][0] <= e) { if (a[i][1] > e) e = a[i][1]; continue; }
    if (open) t += (double)(e - s);
    s = a[i][0]; e = a[i][1]; open = 1;
  }
  if (open) t += (double)(e - s);
  free(a);
  return t;
}
static double streamed(uint64_t (*iv)[2], size_t n) {
  struct ncs_ivu u = {0};
  for (size_t i = 0; i < n; i++) ncs_ivu_add(&u, iv[i][0], iv[i][1]);
  return ncs_ivu_total(&u);
}

/* nthr threads, each with calls of up to `len` ns separated by gaps of up to `gap` ns (gap 0:
 * back to back or overlapping), written as chunks of `chunk` calls, thread after thread */
static int threads(size_t nthr, size_t per, size_t chunk, uint64_t len, uint64_t gap, uint64_t seed) {
  size_t n = nthr * per;
  uint64_t (*iv)[2] = malloc(n * sizeof *iv), (*t)[2] = malloc(nthr * per * sizeof *t);
  if (!iv || !t) { free(iv); free(t); return 0; }
  for (size_t k = 0; k < nthr; k++) {
    uint64_t now = 1000 + rnd(&seed) % 100;
    for (size_t i = 0; i < per; i++) {
      uint64_t l = rnd(&seed) % (len + 1);
      t[k * per + i][0] = now; t[k * per + i][1] = now + l;
      now += gap ? l + rnd(&seed) % gap : l / 2; /* gap 0: the next one overlaps this one */
    }
  }
  size_t m = 0;
  for (size_t c = 0; c * chunk < per; c++)
    for (size_t k = 0; k < nthr; k++)
      for (size_t i = c * chunk; i < per && i < (c + 1) * chunk; i++) { iv[m][0] = t[k * per + i][0]; iv[m][1] = t[k * per + i][1]; m++; }
  int ok = streamed(iv, n) == exact(iv, n);
  free(iv); free(t);
  return ok;
}

static int shuffled(size_t n, uint64_t seed) {
  uint64_t (*iv)[2] = malloc((n ? n : 1) * sizeof *iv);
  if (!iv) return 0;
  for (size_t i = 0; i < n; i++) { iv[i][0] = rnd(&seed) % 100000; iv[i][1] = iv[i][0] + rnd(&seed) % 300; }
  int ok = streamed(iv, n) == exact(iv, n);
  free(iv);
  return ok;
}

int main(void) {
  int bad = 0, cases = 0;
  size_t thr[] = {1, 2, 4};
  size_t chunks[] = {1, 37, 500};
  uint64_t gaps[] = {0, 1, 50};
  for (size_t a = 0; a < 3; a++)
    for (size_t b = 0; b < 3; b++)
      for (size_t c = 0; c < 3; c++) {
        cases++;
        if (!threads(thr[a], 6000, chunks[b], 40, gaps[c], 0x9e3779b97f4a7c15ull + a * 7 + b * 3 + c)) {
          bad++;
          fprintf(stderr, "  %zu threads, chunks of %zu, gap %llu: wrong\n", thr[a], chunks[b], (unsigned long long)gaps[c]);
        }
      }
  CHECK(bad == 0, "ivunion: %d of %d interleavings (1-4 threads' chunks of 1-500 calls, back to back, overlapping or with gaps) total the exact union", cases - bad, cases);
  bad = cases = 0;
  size_t ns[] = {0, 1, 2, 100, NCS_IVU_CAP - 1};
  for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
    cases++;
    if (!shuffled(ns[i], 88172645463325252ull + i)) { bad++; fprintf(stderr, "  %zu shuffled: wrong\n", ns[i]); }
  }
  CHECK(bad == 0, "ivunion: %d of %d buffers in random order (0 to NCS_IVU_CAP - 1 intervals) total the exact union", cases - bad, cases);
  return check_done();
}
