/* test_ivsort.c — model/ivsort.h against qsort on the same intervals: buffers of 1 to 300 runs
 * (each in order, as several threads' chunks give), random ones, equal starts and tiny ones.
 * The truth: the starts in non-decreasing order, and the same multiset of (start, end) pairs.
 * ncs_ivmerge against a marking of every ns its runs cover: 1 to NCS_IVRUNS runs, empty ones,
 * runs that chain (a thread's batches, one after another) and runs that overlap. The truth:
 * out covers exactly the marked ns, in increasing order, no two touching. Buffers in order but
 * for strays (ncs_ivsort's own path), and ncs_ivruns_union on a flush's kept intervals with
 * runs that start among them, at, just after or inside one of them, or before them all. */
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

/* ncs_ivsort on a[0..n) (b: scratch of n): 1 when a ends in order of start holding the same
 * intervals it held (qsort of both sides the truth); frees a and b. */
static int sorts_right(uint64_t (*a)[2], uint64_t (*b)[2], size_t n) {
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
  return sorts_right(a, b, n);
}

/* n intervals in order of start but for strays: each with chance 1 in `every` starts up to
 * `back` before the interval it replaces (GPU times with a host-timed call among them); with
 * `nest`, a stray has a chance of a stray of its own (starting before the strays ahead of it).
 * The truth as one()'s. */
static int strays(size_t n, unsigned every, uint64_t back, int nest, uint64_t seed) {
  uint64_t (*a)[2] = malloc((n ? n : 1) * sizeof *a), (*b)[2] = malloc((n ? n : 1) * sizeof *b);
  if (!a || !b) { free(a); free(b); return 0; }
  uint64_t t = 1ull << 40;
  for (size_t i = 0; i < n; i++) {
    t += rnd(&seed) % 50;
    uint64_t s = t;
    if (rnd(&seed) % every == 0) {
      s = t - rnd(&seed) % back;
      if (nest && rnd(&seed) % 3 == 0) s -= back + rnd(&seed) % back;
    }
    a[i][0] = s;
    a[i][1] = s + rnd(&seed) % 100;
  }
  return sorts_right(a, b, n);
}

/* ncs_ivruns_union on a buffer as a flush leaves it and more come: run 0 the kept intervals
 * (in order, not touching) then `k` runs, each starting somewhere among them (at or near an
 * end: touching it, just after, just before) or before them all, and going on past them. The
 * truth as one_merge's: out covers exactly the ns the buffer covers, in order, none touching. */
#define USPAN 200000 /* > 2048 kept intervals of up to 41 ns */
static int one_union(uint32_t k, uint32_t nkept, uint64_t *seed) {
  static unsigned char mark[USPAN], got[USPAN];
  struct ncs_ivruns r = {0};
  uint64_t (*iv)[2] = malloc(8192 * sizeof *iv);
  if (!iv) return 0;
  memset(mark, 0, sizeof mark);
  memset(got, 0, sizeof got);
  uint32_t n = 0, cap = 8192;
  uint64_t p = 5;
  for (uint32_t i = 0; i < nkept; i++) { /* run 0 */
    p += 1 + rnd(seed) % 20;
    uint64_t e = p + 1 + rnd(seed) % 20;
    iv[n][0] = p; iv[n][1] = e; n++;
    p = e;
  }
  uint64_t kept_end = p;
  for (uint32_t r0 = 0; r0 < k; r0++) {
    uint64_t q;
    uint32_t at = nkept ? (uint32_t)(rnd(seed) % nkept) : 0;
    switch (rnd(seed) % 4) {
    case 0: q = nkept ? iv[at][1] : 1; break;     /* touching a kept one's end */
    case 1: q = nkept ? iv[at][1] + 1 : 2; break; /* just after it */
    case 2: q = nkept ? iv[at][1] - 1 : 0; break; /* inside it */
    default: q = rnd(seed) % 4; break;            /* before them all */
    }
    ncs_ivruns_mark(&r, n);
    int len = 1 + (int)(rnd(seed) % 30);
    for (int i = 0; i < len && n < 8000; i++) {
      uint64_t e = q + 1 + rnd(seed) % 15;
      if (e >= USPAN) break;
      iv[n][0] = q; iv[n][1] = e; n++;
      q = e + 1 + rnd(seed) % (i == 0 ? kept_end + 10 : 30);
      if (q >= USPAN - 40) break;
    }
  }
  for (uint32_t i = 0; i < n; i++)
    for (uint64_t x = iv[i][0]; x < iv[i][1]; x++) mark[x] = 1;
  uint32_t m = ncs_ivruns_union(&r, &iv, &cap, n);
  int ok = r.nrun == 0 && cap >= m;
  for (uint32_t i = 0; ok && i < m; i++) {
    if (iv[i][0] >= iv[i][1] || iv[i][1] > USPAN || (i && iv[i][0] <= iv[i - 1][1])) ok = 0;
    for (uint64_t x = iv[i][0]; ok && x < iv[i][1]; x++) got[x] = 1;
  }
  ok &= !memcmp(mark, got, sizeof mark);
  free(iv);
  ncs_ivruns_free(&r);
  return ok;
}

/* k runs (each disjoint, in order, not touching) of up to `len` intervals within [0, span) */
#define SPAN 6000
/* 1 when merged right, 2 when declined (more than NCS_IVCHAINS chains: allowed only then), 0 wrong;
 * chained: every run starts after the one before ends (one chain) */
static int one_merge(uint32_t k, int len, uint64_t *seed, int chained) {
  static uint64_t iv[NCS_IVRUNS * 40][2], out[NCS_IVRUNS * 40][2];
  static unsigned char mark[SPAN], got[SPAN];
  uint32_t st[NCS_IVRUNS + 1], n = 0;
  memset(mark, 0, sizeof mark);
  memset(got, 0, sizeof got);
  uint64_t p = 0;
  for (uint32_t r = 0; r < k; r++) {
    st[r] = n;
    int cnt = (int)(rnd(seed) % (uint64_t)(len + 1));
    if (!chained && rnd(seed) % 2) p = rnd(seed) % (SPAN / 2); /* else on from the previous run's end: chained */
    for (int i = 0; i < cnt; i++) {
      p += 1 + rnd(seed) % 40;
      uint64_t e = p + 1 + rnd(seed) % 30;
      if (e >= SPAN) break;
      iv[n][0] = p; iv[n][1] = e; n++;
      for (uint64_t x = p; x < e; x++) mark[x] = 1;
      p = e;
    }
  }
  st[k] = n;
  out[0][0] = out[0][1] = 7;
  uint32_t m = ncs_ivmerge((const uint64_t (*)[2])iv, st, k, out);
  if (m == UINT32_MAX) return k > NCS_IVCHAINS && !chained && out[0][0] == 7 && out[0][1] == 7 ? 2 : 0;
  for (uint32_t i = 0; i < m; i++) {
    if (out[i][0] >= out[i][1] || out[i][1] > SPAN || (i && out[i][0] <= out[i - 1][1])) return 0;
    for (uint64_t x = out[i][0]; x < out[i][1]; x++) got[x] = 1;
  }
  return !memcmp(mark, got, sizeof mark);
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
  int sbad = 0, scases = 0;
  size_t sn[] = {1, 2, 3, 100, 5000, 70000};
  unsigned every[] = {1, 2, 3, 40, 1000};
  for (size_t i = 0; i < sizeof sn / sizeof *sn; i++)
    for (size_t j = 0; j < sizeof every / sizeof *every; j++)
      for (int nest = 0; nest < 2; nest++) {
        scases++;
        if (!strays(sn[i], every[j], j % 2 ? 200 : 100000, nest, 7 + i * 1000 + j * 10 + (size_t)nest)) {
          sbad++;
          fprintf(stderr, "  strays: n %zu every %u nest %d: wrong\n", sn[i], every[j], nest);
        }
      }
  CHECK(sbad == 0, "ivsort: %d of %d buffers in order but for strays (1 in 1 to 1 in 1000; near, far, strays of strays) "
        "sorted as qsort sorts them", scases - sbad, scases);
  int ubad = 0, ucases = 0;
  uint64_t useed = 977;
  uint32_t uk[] = {1, 2, 3, 5, 15, 40, NCS_IVRUNS - 1, NCS_IVRUNS};
  uint32_t ukept[] = {0, 1, 2, 100, 2048};
  for (size_t i = 0; i < sizeof uk / sizeof *uk; i++)
    for (size_t j = 0; j < sizeof ukept / sizeof *ukept; j++)
      for (int t = 0; t < 30; t++) { ucases++; ubad += !one_union(uk[i], ukept[j], &useed); }
  CHECK(ubad == 0, "ivruns_union: %d of %d buffers (kept intervals, then 1 to %d runs starting at, just after, inside or "
        "before them) give the ns they cover, in order, none touching", ucases - ubad, ucases, NCS_IVRUNS);
  int mbad = 0, mcases = 0, declined = 0;
  uint64_t seed = 2463534242ull;
  for (uint32_t k = 1; k <= NCS_IVRUNS; k = k < NCS_IVCHAINS + 4 ? k + 1 : k * 2)
    for (int t = 0; t < (k <= NCS_IVCHAINS + 4 ? 400 : 20); t++) {
      mcases++;
      int r = one_merge(k, t % 3 == 0 ? 2 : 40, &seed, 0);
      mbad += !r;
      declined += r == 2;
    }
  CHECK(mbad == 0, "ivmerge: %d of %d sets of 1 to %d runs (empty, chained, overlapping) give the ns they cover, in order, none "
        "touching, or are declined (%d, all past %d runs)", mcases - mbad, mcases, NCS_IVRUNS, declined, NCS_IVCHAINS);
  int cbad = 0;
  for (int t = 0; t < 20; t++) cbad += one_merge(NCS_IVRUNS, 2, &seed, 1) != 1;
  CHECK(cbad == 0, "ivmerge: %d runs one after another (one chain) merged, not declined (%d of 20 wrong)", NCS_IVRUNS, cbad);
  return check_done();
}
